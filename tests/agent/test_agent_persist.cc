// state.lease_file at agent start-up, with real switchagg-agent processes:
// expired leases are dropped, a corrupt file is moved aside (the agent still
// starts), an unreadable one (EACCES, a directory in its place) is left
// untouched and the agent refuses to start, and without the key the agent
// writes nothing. The lease files
// here are written by hand in the documented format, not by the agent's code.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "agent_fixture.h"
#include "temp_dir.h"
#include "switchagg/agent/control_client.h"

namespace switchagg::testing {
namespace {

using nlohmann::json;

int64_t wallMs() {
  struct timeval tv {};
  gettimeofday(&tv, nullptr);
  return static_cast<int64_t>(tv.tv_sec) * 1000 + tv.tv_usec / 1000;
}

std::vector<std::string> filesIn(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  closedir(d);
  return out;
}

std::string readText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

json leaseEntry(const std::string& job, int slots, int64_t expires_wall_ms) {
  return {{"job", job}, {"uid", geteuid()}, {"slots", slots},
          {"token", std::string(31, 'a') + static_cast<char>('0' + slots)},
          {"ttl_ms", 3600000}, {"expires_at_wall_ms", expires_wall_ms},
          {"granted_at_wall_ms", expires_wall_ms - 3600000}};
}

class AgentPersist : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("UCX_LOG_LEVEL", "error", 0);
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override {
    if (agent_) agent_->stop();
  }
  void start(std::vector<std::string> sets) {
    AgentOptions o;
    o.sets = std::move(sets);
    o.tcp = false;
    auto a = AgentProcess::start(o);
    ASSERT_TRUE(a.ok()) << a.status().toString();
    agent_ = std::move(*a);
  }
  void write(const std::string& text) { std::ofstream(file_) << text; }
  std::vector<agent::LeaseView> leases() {
    agent::ControlClient c({agent_->unixAddress()});
    auto l = c.listLeases();
    EXPECT_TRUE(l.ok()) << l.status().toString();
    return l.ok() ? *l : std::vector<agent::LeaseView>{};
  }

  TempDir tmp_;
  const std::string dir_ = tmp_.path();
  const std::string file_ = dir_ + "/leases.json";
  std::unique_ptr<AgentProcess> agent_;
};

TEST_F(AgentPersist, LeasesExpiredWhileDownAreDroppedAndLogged) {
  const int64_t now = wallMs();
  json doc = {{"format", "switchagg-leases"}, {"version", 1}, {"draining", false},
              {"leases", {leaseEntry("gone", 2, now - 60000), leaseEntry("alive", 3, now + 600000)}}};
  write(doc.dump());
  ASSERT_NO_FATAL_FAILURE(start({"state.lease_file=" + file_}));
  auto list = leases();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].job, "alive");
  EXPECT_EQ(list[0].slots, 3);
  EXPECT_GT(list[0].expires_in_s, 500);
  EXPECT_LE(list[0].expires_in_s, 600);
  const std::string err = agent_->stderrText();
  EXPECT_NE(err.find("job gone (uid"), std::string::npos) << err;
  EXPECT_NE(err.find("expired"), std::string::npos) << err;
  // The file was rewritten with what was kept.
  EXPECT_EQ(readText(file_).find("\"gone\""), std::string::npos);
  EXPECT_NE(readText(file_).find("\"alive\""), std::string::npos);
}

TEST_F(AgentPersist, CorruptFileIsMovedAsideAndTheAgentStartsEmpty) {
  write("{\"format\": \"switchagg-leases\", \"version\": 1, \"leases\": [ {\"job\": tru");
  ASSERT_NO_FATAL_FAILURE(start({"state.lease_file=" + file_}));
  EXPECT_TRUE(leases().empty());
  const std::string err = agent_->stderrText();
  EXPECT_NE(err.find(file_ + " is unusable (not valid JSON)"), std::string::npos) << err;
  std::string aside;
  for (const std::string& n : filesIn(dir_)) {
    if (n.rfind("leases.json.corrupt-", 0) == 0) aside = dir_ + "/" + n;
  }
  ASSERT_FALSE(aside.empty()) << err;
  EXPECT_NE(readText(aside).find("\"job\": tru"), std::string::npos);
  EXPECT_NE(err.find("moved " + file_ + " aside to " + aside), std::string::npos) << err;

  // And it works: a new lease is saved to a fresh, private file.
  agent::ControlClient c({agent_->unixAddress()});
  auto l = c.createLease("after", -1, 2, 600);
  ASSERT_TRUE(l.ok()) << l.status().toString();
  struct stat sb {};
  ASSERT_EQ(stat(file_.c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 07777, 0600u);
  EXPECT_NE(readText(file_).find(l->token), std::string::npos);
}

// The agent as root without CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH, so a mode
// 0000 file really gives EACCES; it must exit without serving.
ProcessResult startWithoutDacOverride(const std::string& dir, const std::string& file) {
  return runProcess({"/usr/bin/setpriv", "--bounding-set=-dac_override,-dac_read_search",
                     binaryPath("switchagg-agent"), "--set", "state.lease_file=" + file, "--set",
                     "control.unix_socket=" + dir + "/agent.sock", "--set", "control.listen=",
                     "--set", "data.listen=127.0.0.1:0"},
                    -1, -1, {}, 20000);
}

TEST_F(AgentPersist, UnreadableFileIsLeftInPlaceAndTheAgentRefusesToStart) {
  const int64_t now = wallMs();
  json doc = {{"format", "switchagg-leases"}, {"version", 1}, {"draining", false},
              {"leases", {leaseEntry("keep", 3, now + 600000)}}};
  write(doc.dump());
  const std::string before = readText(file_);
  ASSERT_EQ(chmod(file_.c_str(), 0), 0);
  ProcessResult r = startWithoutDacOverride(dir_, file_);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("state.lease_file: cannot open " + file_ + ": Permission denied"),
            std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the file is left as it is and the agent does not start"), std::string::npos)
      << r.err;
  ASSERT_EQ(chmod(file_.c_str(), 0600), 0);
  EXPECT_EQ(readText(file_), before);  // not overwritten with an empty state
  EXPECT_EQ(filesIn(dir_), std::vector<std::string>{"leases.json"});  // nothing moved aside

  // Fixed, the next start serves the lease: none was lost.
  ASSERT_NO_FATAL_FAILURE(start({"state.lease_file=" + file_}));
  auto list = leases();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].job, "keep");
}

TEST_F(AgentPersist, DirectoryInPlaceOfTheFileIsLeftAndTheAgentRefusesToStart) {
  ASSERT_EQ(mkdir(file_.c_str(), 0700), 0);
  ProcessResult r = startWithoutDacOverride(dir_, file_);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("cannot read " + file_ + ": Is a directory"), std::string::npos) << r.err;
  struct stat sb {};
  ASSERT_EQ(stat(file_.c_str(), &sb), 0);
  EXPECT_TRUE(S_ISDIR(sb.st_mode));
  EXPECT_EQ(filesIn(dir_), std::vector<std::string>{"leases.json"});
}

// policy.max_ttl lowered while the agent was down: the restored lease stays
// but expires within the new bound (the review's bug: it kept 30 days).
TEST_F(AgentPersist, RestoredLeasesAreHeldToTheCurrentMaxTtl) {
  const int64_t now = wallMs();
  json entry = leaseEntry("long", 2, now + 29LL * 24 * 3600000);
  entry["ttl_ms"] = 30LL * 24 * 3600000;
  json doc = {{"format", "switchagg-leases"}, {"version", 1}, {"draining", false},
              {"leases", {entry}}};
  write(doc.dump());
  ASSERT_NO_FATAL_FAILURE(start({"state.lease_file=" + file_, "policy.max_ttl=1h",
                                 "policy.default_ttl=1h"}));
  auto list = leases();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_LE(list[0].expires_in_s, 3600);
  EXPECT_GT(list[0].expires_in_s, 3500);
  EXPECT_NE(agent_->stderrText().find("beyond policy.max_ttl: cut to 3600 s"), std::string::npos)
      << agent_->stderrText();
}

TEST_F(AgentPersist, WithoutTheKeyNothingIsWrittenAndStatusSaysOff) {
  ASSERT_NO_FATAL_FAILURE(start({}));
  agent::ControlClient c({agent_->unixAddress()});
  ASSERT_TRUE(c.createLease("mem", -1, 2, 600).ok());
  auto s = c.status();
  ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_EQ(s->lease_file, "");
  auto ctl = runProcess({binaryPath("switchagg-ctl"), "--agent", agent_->unixAddress(), "status"});
  EXPECT_EQ(ctl.exit_code, 0) << ctl.err;
  EXPECT_NE(ctl.out.find("persistence   off"), std::string::npos) << ctl.out;
  const std::string agent_dir = agent_->dir();
  EXPECT_EQ(agent_->stop(), 0);
  // The agent's own dir holds only what the fixture put there.
  for (const std::string& n : filesIn(agent_dir)) {
    EXPECT_EQ(n.find("lease"), std::string::npos) << n;
  }
  EXPECT_TRUE(filesIn(dir_).empty());
}

TEST_F(AgentPersist, StatusAndMetricsShowPersistence) {
  ASSERT_NO_FATAL_FAILURE(start({"state.lease_file=" + file_}));
  auto ctl = runProcess({binaryPath("switchagg-ctl"), "--agent", agent_->unixAddress(), "status"});
  EXPECT_EQ(ctl.exit_code, 0) << ctl.err;
  EXPECT_NE(ctl.out.find("persistence   on, " + file_ + " (0 save failures)"), std::string::npos)
      << ctl.out;
  // The directory vanishes: saves fail, are counted, and leases still work.
  ASSERT_EQ(std::system(("rm -rf '" + dir_ + "'").c_str()), 0);
  agent::ControlClient c({agent_->unixAddress()});
  ASSERT_TRUE(c.createLease("nodisk", -1, 2, 600).ok());
  ASSERT_TRUE(c.renewLease("nodisk", 900).ok());
  auto m = runProcess({binaryPath("switchagg-ctl"), "--agent", agent_->unixAddress(), "metrics"});
  EXPECT_NE(m.out.find("switchagg_lease_file_save_failures_total 2\n"), std::string::npos) << m.out;
  EXPECT_EQ(c.listLeases()->size(), 1u);
  EXPECT_NE(agent_->stderrText().find("lease file not saved"), std::string::npos);
  ASSERT_EQ(mkdir(dir_.c_str(), 0700), 0);
}

}  // namespace
}  // namespace switchagg::testing
