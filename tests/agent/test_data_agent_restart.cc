// Lease persistence end to end (state.lease_file): the real agent is stopped
// (SIGTERM, as systemctl restart does) or SIGKILLed (a crash), started again
// on the same file, and the job's old token still joins groups on the new
// data plane, checked bit for bit by real member processes.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "switchagg/agent/control_client.h"
#include "temp_dir.h"
#include "test_data_harness.h"

namespace switchagg::testing {
namespace {

class DataAgentRestart : public DataAgentTest {
 protected:
  void SetUp() override { ASSERT_FALSE(tmp_.path().empty()); }
  void startPersistent() { startAgent({"state.lease_file=" + file_}); }
  std::vector<agent::LeaseView> leases() {
    agent::ControlClient c({agent_->unixAddress()});
    auto l = c.listLeases();
    EXPECT_TRUE(l.ok()) << l.status().toString();
    return l.ok() ? *l : std::vector<agent::LeaseView>{};
  }
  // Two members reduce with `token` on the current agent; all must agree.
  void expectTokenJoins(const std::string& token, uint64_t gid) {
    auto g = startGroup({gid, 2, token, {"--dtype", "float32", "--op", "sum", "--count", "5000"}});
    expectAllOk(g, 60000);
  }
  std::string fileText() {
    std::ifstream in(file_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  TempDir tmp_;  // outlives every agent of the test (TearDown stops them)
  const std::string file_ = tmp_.path() + "/leases.json";
};

TEST_F(DataAgentRestart, LeaseAndTokenSurviveSigtermRestart) {
  ASSERT_NO_FATAL_FAILURE(startPersistent());
  const std::string token = createLease("persist1", 6, 3600);
  ASSERT_EQ(token.size(), 32u);
  ASSERT_NO_FATAL_FAILURE(expectTokenJoins(token, 1));

  // Tokens are secrets: the file is the agent user's alone.
  struct stat sb {};
  ASSERT_EQ(stat(file_.c_str(), &sb), 0) << "no lease file written at " << file_;
  EXPECT_EQ(sb.st_mode & 07777, 0600u);
  EXPECT_EQ(sb.st_uid, geteuid());
  EXPECT_NE(fileText().find(token), std::string::npos);

  EXPECT_EQ(agent_->stop(), 0) << agent_->stderrText();
  // Shutdown aborted groups but kept the lease on disk.
  EXPECT_NE(fileText().find("\"persist1\""), std::string::npos) << fileText();

  ASSERT_NO_FATAL_FAILURE(startPersistent());
  auto list = leases();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].job, "persist1");
  EXPECT_EQ(list[0].slots, 6);
  EXPECT_EQ(list[0].uid, geteuid());
  EXPECT_EQ(list[0].ttl_s, 3600);
  EXPECT_GT(list[0].expires_in_s, 3000);
  EXPECT_LE(list[0].expires_in_s, 3600);
  const auto s = status();
  EXPECT_EQ(s["lease_file"], file_);
  EXPECT_EQ(s["lease_file_save_failures"], 0);
  EXPECT_EQ(s["slots_in_use"], 6);

  // The old token joins on the new process's data plane.
  ASSERT_NO_FATAL_FAILURE(expectTokenJoins(token, 2));

  // Slurm's epilog delete finds the lease, and the file forgets it.
  EXPECT_TRUE(deleteLease("persist1"));
  EXPECT_EQ(fileText().find("\"persist1\""), std::string::npos) << fileText();
}

TEST_F(DataAgentRestart, LeasesSurviveACrash) {
  ASSERT_NO_FATAL_FAILURE(startPersistent());
  const std::string token = createLease("crash1", 2, 3600);
  createLease("crash2", 4, 3600);
  EXPECT_TRUE(deleteLease("crash2"));
  agent_->kill();  // SIGKILL: nothing runs at exit, the file is all there is
  ASSERT_NO_FATAL_FAILURE(startPersistent());
  auto list = leases();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].job, "crash1");
  EXPECT_EQ(list[0].slots, 2);
  ASSERT_NO_FATAL_FAILURE(expectTokenJoins(token, 1));
}

}  // namespace
}  // namespace switchagg::testing
