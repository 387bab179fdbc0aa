// LeaseStore and LeaseTable persistence without processes: the file format's
// edge cases, the atomic write, and what a restored table keeps.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "agent_config.h"
#include "temp_dir.h"
#include "lease_store.h"
#include "lease_table.h"

namespace switchagg::agent {
namespace {

Lease lease(const std::string& job, int slots, int64_t expires_wall, int64_t granted_wall,
            uint32_t uid = 1000) {
  Lease l;
  l.job = job;
  l.uid = uid;
  l.slots = slots;
  static int serial = 0;  // distinct tokens, as the agent's would be
  const char* hex = "0123456789abcdef";
  ++serial;
  l.token = *LeaseToken::fromHex(std::string(30, 'b') + hex[(serial >> 4) & 15] + hex[serial & 15]);
  l.ttl_ms = 3600000;
  l.expires_at_ms = expires_wall;
  l.granted_at_wall_ms = granted_wall;
  return l;
}

class LeaseStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(dir_.empty()); }
  std::vector<std::string> files() {
    std::vector<std::string> out;
    DIR* d = opendir(dir_.c_str());
    while (dirent* e = d ? readdir(d) : nullptr) {
      if (e->d_name[0] != '.') out.push_back(e->d_name);
    }
    if (d) closedir(d);
    return out;
  }
  void write(const std::string& text) { std::ofstream(file_) << text; }
  // A table with `limits` restored from `state` written to the file.
  std::unique_ptr<LeaseTable> restored(const LeaseFileState& state, LeaseLimits limits) {
    write(encodeLeaseFile(state));
    auto t = std::make_unique<LeaseTable>(limits);
    Status st = t->attachStore(std::make_unique<LeaseStore>(file_));
    EXPECT_TRUE(st.ok()) << st.toString();
    return t;
  }
  switchagg::testing::TempDir tmp_;
  const std::string dir_ = tmp_.path();
  const std::string file_ = dir_ + "/leases.json";
};

TEST_F(LeaseStoreTest, RoundTripKeepsEveryField) {
  LeaseFileState s;
  s.draining = true;
  s.leases = {lease("1234_7", 3, 5000000, 4000000, 42), lease("99+0", 1, 6000000, 3000000)};
  Result<LeaseFileState> back = decodeLeaseFile(encodeLeaseFile(s));
  ASSERT_TRUE(back.ok()) << back.status().toString();
  EXPECT_TRUE(back->draining);
  ASSERT_EQ(back->leases.size(), 2u);
  const Lease& a = back->leases[0];
  EXPECT_EQ(a.job, "1234_7");
  EXPECT_EQ(a.uid, 42u);
  EXPECT_EQ(a.slots, 3);
  EXPECT_EQ(a.token, s.leases[0].token);
  EXPECT_EQ(a.ttl_ms, 3600000);
  EXPECT_EQ(a.expires_at_ms, 5000000);
  EXPECT_EQ(a.granted_at_wall_ms, 4000000);
}

TEST_F(LeaseStoreTest, DecodeRefusesWhatItDidNotWrite) {
  LeaseFileState s;
  s.leases = {lease("1", 2, 10, 1)};
  const std::string good = encodeLeaseFile(s);
  auto bad = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    size_t p = t.find(from);
    EXPECT_NE(p, std::string::npos) << from;
    return t.replace(p, from.size(), to);
  };
  struct Case {
    std::string text, why;
  } cases[] = {
      {"", "not valid JSON"},
      {"[]", "not a JSON object"},
      {bad("switchagg-leases", "other"), "\"format\""},
      {bad("\"version\": 1", "\"version\": 2"), "unsupported \"version\""},
      {bad("\"draining\": false", "\"draining\": 0"), "\"draining\""},
      {bad("\"job\": \"1\"", "\"job\": \"a/b\""), "leases[0].job"},
      {bad("\"slots\": 2", "\"slots\": 0"), "leases[0].slots is out of range"},
      {bad("\"slots\": 2", "\"slots\": \"2\""), "leases[0].slots is missing"},
      {bad("bbbb", "BBBB"), "leases[0].token"},
      {bad("\"ttl_ms\": 3600000", "\"ttl_ms\": 5"), "leases[0].ttl_ms"},
      {bad("\"uid\": 1000", "\"uid\": -1"), "leases[0].uid"},
  };
  for (const Case& c : cases) {
    Result<LeaseFileState> r = decodeLeaseFile(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.status().message().find(c.why), std::string::npos) << r.status().message();
  }
  LeaseFileState twice;
  twice.leases = {lease("7", 1, 10, 1), lease("7", 1, 10, 1)};
  EXPECT_NE(decodeLeaseFile(encodeLeaseFile(twice)).status().message().find("job 7 twice"),
            std::string::npos);
  twice.leases[1].job = "8";
  twice.leases[1].token = twice.leases[0].token;
  EXPECT_NE(decodeLeaseFile(encodeLeaseFile(twice)).status().message().find("token used twice"),
            std::string::npos);
}

TEST_F(LeaseStoreTest, AtomicWriteIsPrivateAndLeavesNoTempFile) {
  ::umask(0);  // the file must be 0600 whatever the umask
  ASSERT_TRUE(writeFileAtomically(file_, "one").ok());
  ASSERT_TRUE(writeFileAtomically(file_, "two").ok());
  ::umask(022);
  struct stat sb {};
  ASSERT_EQ(stat(file_.c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 07777, 0600u);
  EXPECT_EQ(files(), std::vector<std::string>{"leases.json"});
  std::ifstream in(file_);
  std::string text;
  in >> text;
  EXPECT_EQ(text, "two");
  Status st = writeFileAtomically(dir_ + "/missing/leases.json", "x");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find(dir_ + "/missing/leases.json"), std::string::npos) << st.message();
}

TEST_F(LeaseStoreTest, MissingFileIsEmptyCorruptFileIsMovedAsideStaleTempRemoved) {
  LeaseStore store(file_);
  std::ofstream(file_ + ".tmp-AbC123") << "left by a crash mid-save";
  std::ofstream(dir_ + "/other.tmp-AbC123") << "not ours";
  EXPECT_TRUE(store.load()->leases.empty());
  EXPECT_EQ(files(), std::vector<std::string>{"other.tmp-AbC123"});
  ASSERT_EQ(unlink((dir_ + "/other.tmp-AbC123").c_str()), 0);
  write("garbage");
  EXPECT_TRUE(store.load()->leases.empty());
  std::vector<std::string> f = files();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].rfind("leases.json.corrupt-", 0), 0u) << f[0];
}

TEST_F(LeaseStoreTest, RestoreDropsExpiredAndKeepsOldestWithinAShrunkPool) {
  const int64_t now = wallNowMs();
  LeaseFileState s;
  s.leases = {lease("newest", 4, now + 600000, now - 1000),
              lease("expired", 4, now - 1, now - 9000000),
              lease("oldest", 4, now + 600000, now - 5000000),
              lease("middle", 4, now + 600000, now - 3000000)};
  auto t = restored(s, LeaseLimits{8, 8, 64});  // the pool shrank to 8: two of three fit
  EXPECT_FALSE(t->findByJob("expired"));
  EXPECT_TRUE(t->findByJob("oldest"));
  EXPECT_TRUE(t->findByJob("middle"));
  EXPECT_FALSE(t->findByJob("newest"));
  EXPECT_EQ(t->slotsInUse(), 8);
  // Tokens still resolve, the file now holds what was kept.
  EXPECT_TRUE(t->findByToken(s.leases[2].token));
  Result<LeaseFileState> onDisk = decodeLeaseFile([&] {
    std::ifstream in(file_);
    std::stringstream b;
    b << in.rdbuf();
    return b.str();
  }());
  ASSERT_TRUE(onDisk.ok());
  EXPECT_EQ(onDisk->leases.size(), 2u);
}

TEST_F(LeaseStoreTest, RestoreAppliesQuotasAndClampsToTheTtl) {
  const int64_t now = wallNowMs();
  LeaseFileState s;
  s.draining = true;
  s.leases = {lease("big", 6, now + 600000, now - 10), lease("far", 2, now + 99000000, now)};
  auto t = restored(s, LeaseLimits{64, 4, 64});  // max_slots_per_job shrank to 4
  EXPECT_FALSE(t->findByJob("big"));
  std::optional<Lease> far = t->findByJob("far");
  ASSERT_TRUE(far);
  // The wall clock said 27 h left of a 1 h lease: it gets at most its TTL.
  EXPECT_LE(far->expires_at_ms - steadyNowMs(), 3600000);
  EXPECT_TRUE(t->draining());
}

TEST_F(LeaseStoreTest, EveryChangeIsSavedAndFailuresAreCountedNotFatal) {
  LeaseTable t(LeaseLimits{});
  ASSERT_TRUE(t.attachStore(std::make_unique<LeaseStore>(file_)).ok());
  auto onDisk = [&] {
    std::ifstream in(file_);
    std::stringstream b;
    b << in.rdbuf();
    Result<LeaseFileState> r = decodeLeaseFile(b.str());
    EXPECT_TRUE(r.ok()) << r.status().toString();
    return r.ok() ? *r : LeaseFileState{};
  };
  ASSERT_TRUE(t.create("a", 1000, 2, 60000).ok());
  ASSERT_TRUE(t.create("b", 1000, 2, 1000).ok());
  EXPECT_EQ(onDisk().leases.size(), 2u);
  ASSERT_TRUE(t.renew("a", 120000).ok());
  EXPECT_EQ(onDisk().leases[0].ttl_ms, 120000);
  EXPECT_EQ(t.expireAt(steadyNowMs() + 5000), 1);  // b expires
  ASSERT_EQ(onDisk().leases.size(), 1u);
  t.setDraining(true);
  EXPECT_TRUE(onDisk().draining);
  EXPECT_EQ(t.store()->saveFailures(), 0u);
  int aborted = 0;
  t.setRevokeCallback([&](const Lease&, const std::string&) { ++aborted; });
  t.abortGroups("restart");
  EXPECT_EQ(aborted, 1);
  EXPECT_EQ(onDisk().leases.size(), 1u);  // aborting groups keeps the lease
  EXPECT_TRUE(t.remove("a", "deleted"));
  EXPECT_TRUE(onDisk().leases.empty());

  t.setDraining(false);
  ASSERT_EQ(std::system(("rm -rf '" + dir_ + "'").c_str()), 0);
  EXPECT_TRUE(t.create("c", 1000, 2, 60000).ok());  // in memory it still works
  EXPECT_EQ(t.store()->saveFailures(), 1u);
  ASSERT_EQ(mkdir(dir_.c_str(), 0700), 0);
}

// The review's bug: policy.max_ttl was not applied to restored leases. A
// lease granted for 30 days under an old policy, restored under a 1 h
// max_ttl, is kept but expires within the hour; the file says so too.
TEST_F(LeaseStoreTest, RestoreCutsARemainingTimeBeyondMaxTtl) {
  const int64_t now = wallNowMs();
  const int64_t kDay = 24 * 3600000LL;
  LeaseFileState s;
  s.leases = {lease("long", 2, now + 29 * kDay, now - kDay), lease("short", 2, now + 600000, now)};
  s.leases[0].ttl_ms = 30 * kDay;
  LeaseLimits limits;
  limits.max_ttl_ms = 3600000;
  auto t = restored(s, limits);
  std::optional<Lease> kept = t->findByJob("long");
  ASSERT_TRUE(kept);
  EXPECT_LE(kept->expires_at_ms - steadyNowMs(), 3600000);
  EXPECT_GT(kept->expires_at_ms - steadyNowMs(), 3500000);
  EXPECT_EQ(kept->ttl_ms, 3600000);
  std::optional<Lease> other = t->findByJob("short");
  ASSERT_TRUE(other);
  EXPECT_LE(other->expires_at_ms - steadyNowMs(), 600000);  // within bounds: untouched
  // A renew asking beyond max_ttl is refused by the same check.
  ApiResult<Lease> r = t->renew("long", 2 * 3600000);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), ApiError::kQuotaExceeded);
  EXPECT_NE(r.status().message().find("policy.max_ttl"), std::string::npos);
}

// A lease file that cannot be read is not a corrupt one: it stays where it
// is, untouched, and attaching fails with a message naming it and errno.
TEST_F(LeaseStoreTest, UnreadableFileIsLeftInPlaceAndAttachFails) {
  ASSERT_EQ(mkdir(file_.c_str(), 0700), 0);  // a directory where the file should be
  LeaseTable t(LeaseLimits{});
  Status st = t.attachStore(std::make_unique<LeaseStore>(file_));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Code::kIoError);
  EXPECT_NE(st.message().find(file_), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("Is a directory"), std::string::npos) << st.message();
  EXPECT_EQ(files(), std::vector<std::string>{"leases.json"});  // nothing moved aside or written
  EXPECT_EQ(t.store(), nullptr);
  EXPECT_TRUE(t.create("x", 1000, 1, 60000).ok());  // and no save happens
  struct stat sb {};
  ASSERT_EQ(stat(file_.c_str(), &sb), 0);
  EXPECT_TRUE(S_ISDIR(sb.st_mode));
}

TEST(LeaseFileKey, ValidatedWithErrorsNamingTheKey) {
  AgentConfig c;
  EXPECT_TRUE(applyOverrides({"state.lease_file=/var/lib/switchagg/leases.json"}, &c).ok());
  EXPECT_EQ(c.lease_file, "/var/lib/switchagg/leases.json");
  EXPECT_TRUE(applyOverrides({"state.lease_file="}, &c).ok());
  EXPECT_EQ(c.lease_file, "");
  for (const char* bad : {"leases.json", "/var/lib/switchagg/"}) {
    Status st = applyOverrides({std::string("state.lease_file=") + bad}, &c);
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_EQ(st.message().rfind("state.lease_file: invalid value", 0), 0u) << st.message();
  }
  EXPECT_TRUE(applyToml("[state]\nlease_file = \"/x/leases.json\"\n", "t.toml", &c).ok());
  EXPECT_EQ(c.lease_file, "/x/leases.json");
  Status st = applyToml("[state]\nleases = \"/x\"\n", "t.toml", &c);
  EXPECT_NE(st.message().find("state.leases: unknown key (keys in [state]: lease_file)"),
            std::string::npos) << st.message();
  EXPECT_EQ(AgentConfig{}.lease_file, "");  // off by default: today's behaviour
}

}  // namespace
}  // namespace switchagg::agent
