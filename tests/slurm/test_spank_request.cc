// Option / environment values and their precedence (job_request.h).
#include <gtest/gtest.h>

#include "job_request.h"

namespace switchagg::spank {
namespace {

PluginConfig site(Mode mode = Mode::kOff, int default_slots = 0, int max_slots = 8) {
  PluginConfig c;
  c.default_mode = mode;
  c.default_slots = default_slots;
  c.max_slots = max_slots;
  return c;
}

TEST(SpankSlots, RangeIsOneToMaxSlots) {
  EXPECT_EQ(*parseSlots("--switch-agg-slots", "1", 8), 1);
  EXPECT_EQ(*parseSlots("--switch-agg-slots", "8", 8), 8);
  for (const char* bad : {"0", "-3", "9", "100000000000", "4x", "", "two"}) {
    Result<int> r = parseSlots("--switch-agg-slots", bad, 8);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("valid: an integer from 1 to 8"), std::string::npos)
        << r.status().message();
    EXPECT_EQ(r.status().message().rfind("--switch-agg-slots: invalid value", 0), 0u);
  }
}

TEST(SpankRequest, EncodeDecodeRoundTrip) {
  for (JobRequest r : {JobRequest{Mode::kRequire, 4}, JobRequest{Mode::kAuto, 0},
                       JobRequest{Mode::kOff, 0}}) {
    Result<JobRequest> back = decodeRequest(encodeRequest(r));
    ASSERT_TRUE(back.ok()) << encodeRequest(r);
    EXPECT_EQ(*back, r);
  }
  EXPECT_EQ(encodeRequest({Mode::kRequire, 4}), "mode=require,slots=4");
  EXPECT_EQ(encodeRequest({Mode::kAuto, 0}), "mode=auto");
  for (const char* bad : {"", "slots=4", "mode=maybe", "mode=auto,color=red", "mode=auto,slots=x"}) {
    EXPECT_FALSE(decodeRequest(bad).ok()) << bad;
  }
}

TEST(SpankRequest, NothingSaidGivesSiteDefaults) {
  Result<ResolvedRequest> r = resolveRequest({}, site(Mode::kAuto, 2));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->request, (JobRequest{Mode::kAuto, 2}));
  EXPECT_FALSE(r->explicit_mode);
}

TEST(SpankRequest, OptionBeatsEnvironmentBeatsRecordBeatsDefault) {
  RequestSources s;
  s.recorded = "mode=off,slots=1";
  EXPECT_EQ(resolveRequest(s, site(Mode::kAuto))->request, (JobRequest{Mode::kOff, 1}));
  s.env_mode = "auto";
  s.env_slots = "3";
  EXPECT_EQ(resolveRequest(s, site())->request, (JobRequest{Mode::kAuto, 3}));
  s.option_mode = "require";
  EXPECT_EQ(resolveRequest(s, site())->request, (JobRequest{Mode::kRequire, 3}));
  s.option_slots = "5";
  Result<ResolvedRequest> r = resolveRequest(s, site());
  EXPECT_EQ(r->request, (JobRequest{Mode::kRequire, 5}));
  EXPECT_TRUE(r->explicit_mode);
}

TEST(SpankRequest, SlotsAloneKeepTheSiteMode) {
  RequestSources s;
  s.option_slots = "6";
  Result<ResolvedRequest> r = resolveRequest(s, site(Mode::kAuto, 2));
  EXPECT_EQ(r->request, (JobRequest{Mode::kAuto, 6}));
  EXPECT_FALSE(r->explicit_mode);
}

TEST(SpankRequest, BadValuesNameTheirSource) {
  RequestSources env;
  env.env_mode = "bogus";
  Result<ResolvedRequest> r = resolveRequest(env, site());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "SWITCHAGG_JOB_MODE: invalid value 'bogus' (valid: off, auto, require)");

  RequestSources slots;
  slots.env_slots = "99";
  r = resolveRequest(slots, site());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("SWITCHAGG_JOB_SLOTS"), std::string::npos);

  RequestSources opt;
  opt.option_mode = "sometimes";
  opt.env_mode = "auto";  // a valid environment does not hide a bad option
  r = resolveRequest(opt, site());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--switch-agg:"), std::string::npos);
}

TEST(SpankRequest, TheCommandLineHidesLaterSources) {
  // The first source that says something wins; later ones are not even read.
  RequestSources s;
  s.env_mode = "junk";
  s.env_slots = "junk";
  s.recorded = "junk";
  s.env_reducers = "junk";
  s.option_mode = "auto";
  s.option_slots = "2";
  s.option_reducers = "3";
  Result<ResolvedRequest> r = resolveRequest(s, site());
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ(r->request, (JobRequest{Mode::kAuto, 2, 3}));
}

// --switch-agg-reducers / SWITCHAGG_JOB_REDUCERS: K of the nodes' reducer
// pool, recorded at submission like the slots so the prolog and every step
// ask for the same K (and so reach the same agents).
TEST(SpankRequest, ReducersTravelWithTheRequest) {
  EXPECT_EQ(encodeRequest({Mode::kRequire, 4, 2}), "mode=require,slots=4,reducers=2");
  EXPECT_EQ(*decodeRequest("mode=auto,reducers=3"), (JobRequest{Mode::kAuto, 0, 3}));
  EXPECT_FALSE(decodeRequest("mode=auto,reducers=x").ok());
  RequestSources s;
  s.recorded = "mode=require,reducers=2";
  EXPECT_EQ(resolveRequest(s, site())->request, (JobRequest{Mode::kRequire, 0, 2}));
  s.env_reducers = "3";
  EXPECT_EQ(resolveRequest(s, site())->request.reducers, 3);
  s.option_reducers = "1";
  EXPECT_EQ(resolveRequest(s, site())->request.reducers, 1);
  EXPECT_EQ(resolveRequest({}, site())->request.reducers, 0) << "default: the pool's";
  for (const char* bad : {"0", "65", "two", ""}) {
    RequestSources b;
    b.env_reducers = bad;
    Result<ResolvedRequest> r = resolveRequest(b, site());
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().message().rfind("SWITCHAGG_JOB_REDUCERS: invalid value", 0), 0u)
        << r.status().message();
    EXPECT_NE(r.status().message().find("an integer from 1 to 64"), std::string::npos);
  }
}

}  // namespace
}  // namespace switchagg::spank
