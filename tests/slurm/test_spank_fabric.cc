// The SPANK plugin's lease calls with fabric= set (agent_link.h), against
// two real agents: the prolog's create puts the job's lease on every agent
// its nodes need, the task's token fetch gives one address and token per
// agent (what SWITCHAGG_AGENT / SWITCHAGG_LEASE get), the epilog's delete
// frees every agent; a refusing agent leaves nothing; a bad node list or map
// is a configuration failure naming the problem. Without fabric= the calls
// are the single agent's, unchanged. The tasks' plan with the map also
// carries SWITCHAGG_AGENT_NAMES and SWITCHAGG_FABRIC; as a tree (a and b
// leaves of a third agent) the job's lease covers both leaves and the spine.
#include <gtest/gtest.h>

#include <fstream>

#include "agent_fixture.h"
#include "agent_link.h"
#include "task_plan.h"
#include "temp_dir.h"

namespace switchagg::spank {
namespace {

using testing::AgentOptions;
using testing::AgentProcess;

const JobRequest kOneSlot{Mode::kRequire, 1, 0};

class SpankFabric : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string text;
    const char* names[] = {"a", "b"};
    for (int i = 0; i < 2; ++i) {
      // One data-plane thread: a lease's data address is then data.listen's,
      // compared exactly below (several: tests/agent/test_data_agent_threads.cc).
      auto agent = AgentProcess::start(AgentOptions::withSets({"data.plane_threads=1"}));
      ASSERT_TRUE(agent.ok()) << agent.status().toString();
      text += std::string("[[agent]]\nname = \"") + names[i] + "\"\ncontrol = \"" +
              (*agent)->unixAddress() + "\"\nnodes = \"n" + std::to_string(i + 1) + "\"\n";
      agents_.push_back(std::move(*agent));
    }
    config_.fabric = dir_.path() + "/fabric.toml";
    std::ofstream(config_.fabric) << text;
  }
  bool hasLease(size_t k, const std::string& job) {
    return agent::ControlClient(agents_[k]->unixAddress()).fetchToken(job).ok();
  }
  // What the job's tasks get from the token fetch (context_remote.cc).
  TaskPlan taskPlan(const std::string& nodelist, uint32_t job, int reducers = 0) {
    TaskInputs in;
    in.job = job;
    in.mode = Mode::kRequire;
    in.fabric = config_.fabric;
    in.token = fetchJobToken(config_, nodelist, std::to_string(job), reducers);
    return planTaskEnv(in);
  }
  static std::string valueOf(const TaskPlan& p, const std::string& name) {
    for (const auto& [n, v] : p.set)
      if (n == name) return v;
    return "<unset>";
  }

  std::vector<std::unique_ptr<AgentProcess>> agents_;
  testing::TempDir dir_{"spank-fabric"};
  PluginConfig config_;
};

TEST_F(SpankFabric, PrologTaskAndEpilogCoverEveryAgentOfTheJob) {
  agent::ApiResult<agent::LeaseView> made = createJobLease(config_, "n[1-2]", "77", -1, kOneSlot);
  ASSERT_TRUE(made.ok()) << made.status().toString();
  EXPECT_TRUE(made->created);
  EXPECT_EQ(made->data_address, agents_[0]->dataAddress() + "," + agents_[1]->dataAddress());
  EXPECT_EQ(made->token.size(), 65u) << "two 32-hex tokens and a comma";
  agent::ApiResult<agent::LeaseView> task = fetchJobToken(config_, "n[1-2]", "77", 0);
  ASSERT_TRUE(task.ok()) << task.status().toString();
  EXPECT_EQ(task->token, made->token);
  EXPECT_EQ(task->data_address, made->data_address);
  EXPECT_EQ(task->agent_names, "a,b");
  TaskPlan plan = taskPlan("n[1-2]", 77);
  ASSERT_TRUE(plan.failure.empty()) << plan.failure;
  EXPECT_EQ(valueOf(plan, kEnvAgent), made->data_address);
  EXPECT_EQ(valueOf(plan, kEnvAgentNames), "a,b");
  EXPECT_EQ(valueOf(plan, kEnvFabric), config_.fabric);
  // A job on one agent's nodes gets exactly one address and one token.
  agent::ApiResult<agent::LeaseView> one = createJobLease(config_, "n2", "78", -1, kOneSlot);
  ASSERT_TRUE(one.ok()) << one.status().toString();
  EXPECT_EQ(one->data_address, agents_[1]->dataAddress());
  EXPECT_EQ(one->token.size(), 32u);
  EXPECT_FALSE(hasLease(0, "78"));
  EXPECT_EQ(valueOf(taskPlan("n2", 78), kEnvAgentNames), "b") << "one agent of a map: named too";

  agent::ApiResult<bool> gone = deleteJobLease(config_, "77");
  ASSERT_TRUE(gone.ok()) << gone.status().toString();
  EXPECT_TRUE(*gone);
  EXPECT_FALSE(hasLease(0, "77"));
  EXPECT_FALSE(hasLease(1, "77"));
  EXPECT_TRUE(hasLease(1, "78"));
  gone = deleteJobLease(config_, "77");
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(*gone) << "nothing left to delete";
}

TEST_F(SpankFabric, ATreeJobLeasesOnBothLeavesAndTheSpine) {
  // One data-plane thread: a lease's data address is then data.listen's,
  // compared exactly below (several: tests/agent/test_data_agent_threads.cc).
  auto spine = AgentProcess::start(AgentOptions::withSets({"data.plane_threads=1"}));
  ASSERT_TRUE(spine.ok()) << spine.status().toString();
  agents_.push_back(std::move(*spine));
  std::string text;
  const char* names[] = {"a", "b"};
  for (int i = 0; i < 2; ++i)
    text += std::string("[[agent]]\nname = \"") + names[i] + "\"\ncontrol = \"" +
            agents_[i]->unixAddress() + "\"\nnodes = \"n" + std::to_string(i + 1) +
            "\"\nparent = \"s\"\n";
  text += "[[agent]]\nname = \"s\"\ncontrol = \"" + agents_[2]->unixAddress() + "\"\n";
  std::ofstream(config_.fabric) << text;

  agent::ApiResult<agent::LeaseView> made = createJobLease(config_, "n[1-2]", "90", -1, kOneSlot);
  ASSERT_TRUE(made.ok()) << made.status().toString();
  for (size_t k = 0; k < 3; ++k) EXPECT_TRUE(hasLease(k, "90")) << k;
  TaskPlan plan = taskPlan("n[1-2]", 90);
  ASSERT_TRUE(plan.failure.empty()) << plan.failure;
  EXPECT_EQ(valueOf(plan, kEnvAgent), agents_[0]->dataAddress() + "," + agents_[1]->dataAddress() +
                                          "," + agents_[2]->dataAddress());
  EXPECT_EQ(valueOf(plan, kEnvAgentNames), "a,b,s");
  EXPECT_EQ(valueOf(plan, kEnvFabric), config_.fabric);
  agent::ApiResult<bool> gone = deleteJobLease(config_, "90");
  ASSERT_TRUE(gone.ok()) << gone.status().toString();
  for (size_t k = 0; k < 3; ++k) EXPECT_FALSE(hasLease(k, "90")) << k;
  // The spine refusing leaves nothing on the leaves.
  ASSERT_TRUE(agent::ControlClient(agents_[2]->unixAddress()).drain(true).ok());
  made = createJobLease(config_, "n[1-2]", "91", -1, kOneSlot);
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.failure().message.find("agent 's'"), std::string::npos) << made.failure().message;
  for (size_t k = 0; k < 3; ++k) EXPECT_FALSE(hasLease(k, "91")) << k;
}

// A reducer pool (a and b serve n[1-4] together): the job's
// --switch-agg-reducers=1 gives it one of them in the prolog, and the task's
// token fetch with the same request finds that one again; without a map, or
// asking more than the pool has, is a configuration failure naming it.
TEST_F(SpankFabric, AReducerPoolJobGetsItsKAgentsInPrologAndTask) {
  std::string text;
  const char* names[] = {"a", "b"};
  for (int i = 0; i < 2; ++i)
    text += std::string("[[agent]]\nname = \"") + names[i] + "\"\ncontrol = \"" +
            agents_[i]->unixAddress() + "\"\n";
  text += "[[pool]]\nname = \"reducers\"\nagents = [\"a\", \"b\"]\nnodes = \"n[1-4]\"\n";
  std::ofstream(config_.fabric) << text;
  const JobRequest one{Mode::kRequire, 1, 1};
  agent::ApiResult<agent::LeaseView> made = createJobLease(config_, "n[1-3]", "95", -1, one);
  ASSERT_TRUE(made.ok()) << made.status().toString();
  EXPECT_EQ(made->token.size(), 32u) << "one agent, one token";
  EXPECT_NE(hasLease(0, "95"), hasLease(1, "95")) << "exactly one of the pool";
  TaskPlan plan = taskPlan("n[1-3]", 95, 1);
  ASSERT_TRUE(plan.failure.empty()) << plan.failure;
  EXPECT_EQ(valueOf(plan, kEnvAgentNames), made->agent_names);
  EXPECT_EQ(valueOf(plan, kEnvAgent), made->data_address);
  // The pool's default: both.
  made = createJobLease(config_, "n4", "96", -1, kOneSlot);
  ASSERT_TRUE(made.ok()) << made.status().toString();
  EXPECT_EQ(made->agent_names, "a,b");
  agent::ApiResult<agent::LeaseView> three =
      createJobLease(config_, "n1", "97", -1, JobRequest{Mode::kRequire, 1, 3});
  ASSERT_FALSE(three.ok());
  EXPECT_NE(three.failure().message.find("reducers=3: pool 'reducers' has 2 agent(s)"),
            std::string::npos)
      << three.failure().message;
  for (const char* job : {"95", "96"}) ASSERT_TRUE(deleteJobLease(config_, job).ok());
  for (size_t k = 0; k < 2; ++k) EXPECT_FALSE(hasLease(k, "95") || hasLease(k, "96")) << k;
  PluginConfig no_map;
  agent::ApiResult<agent::LeaseView> bare = createJobLease(no_map, "n1", "98", -1, one);
  ASSERT_FALSE(bare.ok());
  EXPECT_NE(bare.failure().message.find("this site has no fabric map"), std::string::npos)
      << bare.failure().message;
}

TEST_F(SpankFabric, ARefusingAgentLeavesNoLeaseAndIsNamed) {
  ASSERT_TRUE(agent::ControlClient(agents_[1]->unixAddress()).drain(true).ok());
  agent::ApiResult<agent::LeaseView> made = createJobLease(config_, "n[1-2]", "79", -1, kOneSlot);
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.error(), agent::ApiError::kDraining);
  EXPECT_NE(made.failure().message.find("agent 'b'"), std::string::npos) << made.failure().message;
  EXPECT_FALSE(hasLease(0, "79"));
}

TEST_F(SpankFabric, BadNodeListOrMapIsAConfigFailure) {
  agent::ApiResult<agent::LeaseView> r = createJobLease(config_, "", "80", -1, kOneSlot);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), agent::ApiError::kConfig);
  EXPECT_NE(r.failure().message.find("SLURM_JOB_NODELIST"), std::string::npos);
  r = fetchJobToken(config_, "n[1-3]", "80", 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), agent::ApiError::kConfig);
  EXPECT_NE(r.failure().message.find("node n3 is served by no agent"), std::string::npos)
      << r.failure().message;
  PluginConfig missing = config_;
  missing.fabric = dir_.path() + "/none.toml";
  agent::ApiResult<bool> d = deleteJobLease(missing, "80");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error(), agent::ApiError::kConfig);
  EXPECT_NE(d.failure().message.find("cannot read fabric map"), std::string::npos);
}

TEST_F(SpankFabric, WithoutAFabricMapTheControlAgentServesAlone) {
  PluginConfig single;
  single.control = agents_[0]->unixAddress();
  agent::ApiResult<agent::LeaseView> made = createJobLease(single, "", "81", -1, kOneSlot);
  ASSERT_TRUE(made.ok()) << made.status().toString();
  EXPECT_EQ(made->data_address, agents_[0]->dataAddress());
  EXPECT_TRUE(hasLease(0, "81"));
  EXPECT_FALSE(hasLease(1, "81"));
  agent::ApiResult<bool> gone = deleteJobLease(single, "81");
  ASSERT_TRUE(gone.ok());
  EXPECT_TRUE(*gone);
}

}  // namespace
}  // namespace switchagg::spank
