// What the tasks get per mode and agent answer (task_plan.h), and the
// prolog's note (lease_note.h).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "lease_note.h"
#include "task_plan.h"
#include "temp_dir.h"

namespace switchagg::spank {
namespace {

const std::string kToken = "0123456789abcdef0123456789abcdef";

agent::LeaseView lease() {
  agent::LeaseView l;
  l.job = "42";
  l.token = kToken;
  l.data_address = "127.0.0.1:18515";
  l.slots = 4;
  return l;
}

TaskInputs inputs(Mode mode, agent::ApiResult<agent::LeaseView> token) {
  TaskInputs in;
  in.job = 42;
  in.mode = mode;
  in.token = std::move(token);
  return in;
}

std::string setValue(const TaskPlan& p, const std::string& name) {
  for (const auto& [n, v] : p.set) {
    if (n == name) return v;
  }
  return "<unset>";
}

using agent::ApiError;
using agent::ApiFailure;
const ApiFailure kUnreachable{ApiError::kUnreachable,
                              "cannot connect to agent at unix:/run/a.sock: Connection refused"};
const ApiFailure kQuota{ApiError::kQuotaExceeded, "pool has 0 of 16 slots free"};
const ApiFailure kPolicy{ApiError::kPolicyDenied, "uid 1000 may not create leases"};
const ApiFailure kDraining{ApiError::kDraining, "agent is draining"};
const ApiFailure kNotFound{ApiError::kNotFound, "no lease for job 42"};

TEST(SpankTaskPlan, LeaseGoesIntoTheTaskEnvironment) {
  for (Mode m : {Mode::kAuto, Mode::kRequire}) {
    TaskPlan p = planTaskEnv(inputs(m, lease()));
    EXPECT_EQ(setValue(p, kEnvAgent), "127.0.0.1:18515");
    EXPECT_EQ(setValue(p, kEnvLease), kToken);
    EXPECT_EQ(setValue(p, kEnvTaskMode), modeName(m));
    EXPECT_TRUE(p.warning.empty());
    EXPECT_TRUE(p.failure.empty());
  }
}

// An agent whose data-plane threads spread the lease (data.threads_per_job)
// lists an address per thread and one token: the tasks get the token once
// per address; a fabric view's tokens (one per agent already) stay as they are.
TEST(SpankTaskPlan, OneTokenForSeveralThreadAddressesIsRepeatedPerAddress) {
  agent::LeaseView l = lease();
  l.data_address = "10.0.0.1:18515,10.0.0.1:18514";
  TaskPlan p = planTaskEnv(inputs(Mode::kAuto, l));
  EXPECT_EQ(setValue(p, kEnvAgent), l.data_address);
  EXPECT_EQ(setValue(p, kEnvLease), kToken + "," + kToken);
  l.token = kToken + "," + std::string(32, 'f');
  p = planTaskEnv(inputs(Mode::kAuto, l));
  EXPECT_EQ(setValue(p, kEnvLease), l.token);
}

TEST(SpankTaskPlan, AFabricMapAddsTheAgentNamesAndTheMap) {
  agent::LeaseView l = lease();
  l.data_address = "10.0.0.1:1,10.0.0.2:1,10.0.0.9:1";
  l.agent_names = "leaf1,leaf2,spine";
  TaskInputs in = inputs(Mode::kAuto, l);
  in.fabric = "/etc/switchagg/fabric.toml";
  TaskPlan p = planTaskEnv(in);
  EXPECT_EQ(setValue(p, kEnvAgent), l.data_address);
  EXPECT_EQ(setValue(p, kEnvAgentNames), "leaf1,leaf2,spine");
  EXPECT_EQ(setValue(p, kEnvFabric), "/etc/switchagg/fabric.toml");
  EXPECT_TRUE(p.unset.empty());
  // One agent without a map: no names, and none left from an outer step.
  p = planTaskEnv(inputs(Mode::kAuto, lease()));
  EXPECT_EQ(setValue(p, kEnvAgentNames), "<unset>");
  EXPECT_EQ(setValue(p, kEnvFabric), "<unset>");
  EXPECT_EQ(p.unset, (std::vector<std::string>{kEnvAgentNames}));
}

TEST(SpankTaskPlan, OffTouchesNothingUnlessTheUserSaidOff) {
  TaskPlan quiet = planTaskEnv(inputs(Mode::kOff, lease()));
  EXPECT_TRUE(quiet.set.empty());
  EXPECT_TRUE(quiet.unset.empty());
  TaskInputs in = inputs(Mode::kOff, lease());
  in.explicit_mode = true;  // srun --switch-agg=off inside a job that holds a lease
  TaskPlan off = planTaskEnv(in);
  EXPECT_EQ(setValue(off, kEnvTaskMode), "off");
  EXPECT_EQ(setValue(off, kEnvLease), "<unset>");
  EXPECT_EQ(off.unset, (std::vector<std::string>{kEnvAgent, kEnvLease, kEnvAgentNames}));
}

TEST(SpankTaskPlan, RequireFailsWithTheReason) {
  struct Case {
    ApiFailure why;
    const char* says;
  };
  for (const Case& c : std::vector<Case>{{kUnreachable, "the switch agent is unreachable"},
                                         {kQuota, "quota exceeded (pool has 0 of 16 slots free)"},
                                         {kPolicy, "the agent's policy refused the lease"},
                                         {kDraining, "draining"},
                                         {kNotFound, "the job holds no lease"}}) {
    TaskPlan p = planTaskEnv(inputs(Mode::kRequire, c.why));
    EXPECT_NE(p.failure.find("job 42 requires switch aggregation (--switch-agg=require)"),
              std::string::npos)
        << p.failure;
    EXPECT_NE(p.failure.find(c.says), std::string::npos) << p.failure;
    EXPECT_TRUE(p.set.empty());
  }
}

TEST(SpankTaskPlan, AutoWarnsOnceAndRunsWithoutALease) {
  TaskPlan p = planTaskEnv(inputs(Mode::kAuto, kUnreachable));
  EXPECT_TRUE(p.failure.empty());
  EXPECT_EQ(p.warning.find("warning: job 42 runs without switch aggregation"), 0u) << p.warning;
  EXPECT_NE(p.warning.find("unreachable"), std::string::npos);
  EXPECT_EQ(p.warning.find('\n'), std::string::npos);
  EXPECT_EQ(setValue(p, kEnvTaskMode), "auto");
  EXPECT_EQ(p.unset, (std::vector<std::string>{kEnvAgent, kEnvLease, kEnvAgentNames}));
}

TEST(SpankTaskPlan, PrologNoteExplainsAMissingLease) {
  TaskInputs in = inputs(Mode::kRequire, kNotFound);
  in.prolog_error = "quota_exceeded";
  in.prolog_note = "quota exceeded (uid 1000 holds 32 of 32 slots)";
  TaskPlan p = planTaskEnv(in);
  EXPECT_NE(p.failure.find("no lease: quota exceeded (uid 1000 holds 32 of 32 slots)"), std::string::npos)
      << p.failure;
}

TEST(SpankTaskPlan, FailJobOnErrorFailsAutoOnErrorsButNotOnRefusals) {
  TaskInputs err = inputs(Mode::kAuto, kUnreachable);
  err.fail_job_on_error = true;
  TaskPlan p = planTaskEnv(err);
  EXPECT_NE(p.failure.find("fail_job_on_error=true"), std::string::npos) << p.failure;

  TaskInputs refused = inputs(Mode::kAuto, kQuota);
  refused.fail_job_on_error = true;
  EXPECT_TRUE(planTaskEnv(refused).failure.empty());

  // A refusal met by the prolog stays a refusal.
  TaskInputs noted = inputs(Mode::kAuto, kNotFound);
  noted.fail_job_on_error = true;
  noted.prolog_error = "policy_denied";
  noted.prolog_note = "the agent's policy refused the lease (no)";
  EXPECT_TRUE(planTaskEnv(noted).failure.empty());
  noted.prolog_error = "unreachable";
  EXPECT_FALSE(planTaskEnv(noted).failure.empty());
}

TEST(SpankTaskPlan, MessagesNeverCarryAToken) {
  // Even a lease without a token (a broken agent) must not leak anything.
  agent::LeaseView empty = lease();
  empty.token.clear();
  TaskPlan p = planTaskEnv(inputs(Mode::kRequire, empty));
  EXPECT_FALSE(p.failure.empty());
  EXPECT_EQ(p.failure.find(kToken), std::string::npos);
}

TEST(SpankExplain, RefusalsAreNotErrors) {
  EXPECT_TRUE(agent::isRefusal(ApiError::kQuotaExceeded));
  EXPECT_TRUE(agent::isRefusal(ApiError::kPolicyDenied));
  EXPECT_TRUE(agent::isRefusal(ApiError::kDraining));
  EXPECT_FALSE(agent::isRefusal(ApiError::kUnreachable));
  EXPECT_FALSE(agent::isRefusal(ApiError::kInternal));
  EXPECT_FALSE(agent::isRefusal(ApiError::kConfig));
  EXPECT_NE(explainLeaseFailure({ApiError::kConfig, "plugstack.conf: unknown key 'x'"})
                .find("misconfigured"),
            std::string::npos);
}

class SpankNote : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NE(dir_, ""); }
  switchagg::testing::TempDir tmp_{"note"};
  const std::string dir_ = tmp_.path();
};

TEST_F(SpankNote, WriteReadRemove) {
  const std::string state = dir_ + "/state";  // created on first write
  EXPECT_EQ(readNote(state, 7).error, "");
  ASSERT_TRUE(writeNote(state, 7, getuid(), getgid(), {"quota_exceeded", "quota exceeded (x)"}).ok());
  struct stat st {};
  ASSERT_EQ(stat(notePath(state, 7).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_uid, getuid());
  LeaseNote n = readNote(state, 7);
  EXPECT_EQ(n.error, "quota_exceeded");
  EXPECT_EQ(n.text, "quota exceeded (x)");
  // Rewriting (a requeued job) replaces it; newlines cannot forge lines.
  ASSERT_TRUE(writeNote(state, 7, getuid(), getgid(), {"unreachable", "a\nb"}).ok());
  EXPECT_EQ(readNote(state, 7).text, "a b");
  removeNote(state, 7);
  EXPECT_EQ(readNote(state, 7).error, "");
}

TEST_F(SpankNote, RefusesToFollowASymlink) {
  ASSERT_EQ(symlink("/etc/passwd", notePath(dir_, 9).c_str()), 0);
  EXPECT_EQ(readNote(dir_, 9).error, "");
}

}  // namespace
}  // namespace switchagg::spank
