// switchagg-ctl over a fabric map with three real agents: one lease per job
// on every agent the nodes need (all or nothing), one address and token
// per agent in the exports, delete frees every agent; an agent refusing
// (draining) or dead leaves no lease anywhere; renew extends the lease on
// every agent and names each agent that failed. As a tree (a, b leaves of
// spine c), a job over both leaves leases on a, b and c, all or nothing.
#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <regex>

#include "agent_fixture.h"
#include "switchagg/agent/control_client.h"
#include "temp_dir.h"

using namespace switchagg;
using namespace switchagg::agent;
using namespace switchagg::testing;

namespace {

struct Fabric {
  // Stripes: a: n[1-2], b: n[3-4], c: n5. Tree: a and b leaves of spine c.
  std::vector<std::unique_ptr<AgentProcess>> agents;
  TempDir dir{"fabric"};
  std::string map;

  // spread_b: agent b runs 2 data-plane threads and spreads each lease over
  // both (data.threads_per_job = 2).
  bool start(bool tree = false, bool pool = false, bool spread_b = false) {
    const char* names[] = {"a", "b", "c"};
    const char* nodes[] = {"\"n[1-2]\"", "[\"n3\", \"n4\"]", "\"n5\""};
    std::string text;
    for (int i = 0; i < 3; ++i) {
      // One data-plane thread: a lease's data address is then data.listen's,
      // compared exactly below (several: tests/agent/test_data_agent_threads.cc).
      auto agent = AgentProcess::start(AgentOptions::withSets(
          spread_b && i == 1 ? std::vector<std::string>{"data.plane_threads=2", "data.threads_per_job=2"}
                             : std::vector<std::string>{"data.plane_threads=1"}));
      EXPECT_TRUE(agent.ok()) << agent.status().toString();
      if (!agent.ok()) return false;
      text += std::string("[[agent]]\nname = \"") + names[i] + "\"\ncontrol = \"" +
              (*agent)->unixAddress() + "\"\n";
      if (!pool && (!tree || i < 2)) text += std::string("nodes = ") + nodes[i] + "\n";
      if (tree && i < 2) text += "parent = \"c\"\n";
      // a names its data address; b and c leave it to what the agent reports.
      if (i == 0) text += "data = \"" + (*agent)->dataAddress() + "\"\n";
      agents.push_back(std::move(*agent));
    }
    // A reducer pool: a, b and c together serve n[1-5], 3 of them by default.
    if (pool)
      text += "[[pool]]\nname = \"p\"\nagents = [\"a\", \"b\", \"c\"]\nnodes = \"n[1-5]\"\n";
    map = dir.path() + "/fabric.toml";
    std::ofstream(map) << text;
    return true;
  }
  // The job's lease at agent k, if it has one.
  std::optional<LeaseView> leaseAt(size_t k, const std::string& job) {
    ApiResult<std::vector<LeaseView>> leases = ControlClient(agents[k]->unixAddress()).listLeases();
    EXPECT_TRUE(leases.ok()) << leases.status().toString();
    if (!leases.ok()) return std::nullopt;
    for (const LeaseView& l : *leases)
      if (l.job == job) return l;
    return std::nullopt;
  }
  // The job's lease's remaining seconds at agent k (-1: none).
  int64_t expiresIn(size_t k, const std::string& job) {
    std::optional<LeaseView> l = leaseAt(k, job);
    return l ? l->expires_in_s : -1;
  }
  bool hasLease(size_t k, const std::string& job) { return leaseAt(k, job).has_value(); }
};

ProcessResult ctl(std::vector<std::string> args, const std::vector<std::string>& env = {}) {
  args.insert(args.begin(), binaryPath("switchagg-ctl"));
  return runProcess(args, -1, -1, env);
}

// lease create --job JOB --nodes NODES --fabric MAP, then `extra`.
ProcessResult leaseCreate(const std::string& map, const std::string& job, const std::string& nodes,
                          const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args{"lease", "create", "--job", job, "--nodes", nodes, "--fabric", map};
  args.insert(args.end(), extra.begin(), extra.end());
  return ctl(args);
}

// lease delete over the whole map; afterwards no agent holds the job's lease.
// Returns what it printed.
std::string deleteEverywhere(Fabric& f, const std::string& job) {
  ProcessResult r = ctl({"lease", "delete", "--job", job, "--fabric", f.map});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (size_t k = 0; k < f.agents.size(); ++k) EXPECT_FALSE(f.hasLease(k, job)) << k;
  return r.out;
}

std::string exportOf(const std::string& out, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex(name + "=([^ \n]*)"))) return "";
  return m[1];
}

TEST(CtlFabric, LeaseOnEveryAgentTheNodesNeedAndDeleteFreesAll) {
  Fabric f;
  ASSERT_TRUE(f.start());
  ProcessResult r = leaseCreate(f.map, "j1", "n[2-3]", {"--slots", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("on 2 agent(s) (a, b)"), std::string::npos) << r.out;
  EXPECT_EQ(exportOf(r.out, "SWITCHAGG_AGENT"),
            f.agents[0]->dataAddress() + "," + f.agents[1]->dataAddress());
  const std::string tokens = exportOf(r.out, "SWITCHAGG_LEASE");
  EXPECT_TRUE(std::regex_match(tokens, std::regex("[0-9a-f]{32},[0-9a-f]{32}"))) << tokens;
  EXPECT_EQ(exportOf(r.out, "SWITCHAGG_AGENT_NAMES"), "a,b");
  EXPECT_EQ(exportOf(r.out, "SWITCHAGG_FABRIC"), f.map);
  EXPECT_TRUE(f.hasLease(0, "j1"));
  EXPECT_TRUE(f.hasLease(1, "j1"));
  EXPECT_FALSE(f.hasLease(2, "j1"));
  // The tokens are each agent's own: agent b's token answers at b.
  ApiResult<LeaseView> at_b = ControlClient(f.agents[1]->unixAddress()).fetchToken("j1");
  ASSERT_TRUE(at_b.ok());
  EXPECT_EQ(tokens.substr(33), at_b->token);

  // token with the map from the environment; the same exports again.
  r = ctl({"lease", "token", "--job", "j1", "--nodes", "n3,n1"}, {"SWITCHAGG_FABRIC=" + f.map});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(exportOf(r.out, "SWITCHAGG_LEASE"), tokens) << "map order, not node order";

  // A hostfile in Open MPI's format.
  const std::string hostfile = f.dir.path() + "/hosts";
  std::ofstream(hostfile) << "# job hosts\nn5 slots=4\n\nn4\n";
  r = ctl({"lease", "create", "--job", "j2", "--hostfile", hostfile, "--fabric", f.map});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(b, c)"), std::string::npos) << r.out;

  const std::string deleted = deleteEverywhere(f, "j1");
  EXPECT_NE(deleted.find("deleted on 2 of 3 agent(s)"), std::string::npos) << deleted;
  EXPECT_TRUE(f.hasLease(2, "j2"));
}

// A reducer pool: --reducers K leases on K of the pool's agents (the same K
// for the same job: token finds them again), delete and renew by nodes
// reach whichever agents hold it, and a K the pool cannot give is a usage
// error naming the pool.
TEST(CtlFabric, ReducerPoolGivesAJobKAgents) {
  Fabric f;
  ASSERT_TRUE(f.start(false, true));
  ProcessResult r = leaseCreate(f.map, "p1", "n[1-5]", {"--reducers", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("on 2 agent(s)"), std::string::npos) << r.out;
  const std::string names = exportOf(r.out, "SWITCHAGG_AGENT_NAMES");
  int held = 0;
  for (size_t k = 0; k < 3; ++k) held += f.hasLease(k, "p1") ? 1 : 0;
  EXPECT_EQ(held, 2) << names;
  ProcessResult t =
      ctl({"lease", "token", "--job", "p1", "--nodes", "n2", "--fabric", f.map, "--reducers", "2"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_EQ(exportOf(t.out, "SWITCHAGG_LEASE"), exportOf(r.out, "SWITCHAGG_LEASE"));
  EXPECT_EQ(exportOf(t.out, "SWITCHAGG_AGENT_NAMES"), names);
  // The pool's default (all three) for another job.
  r = leaseCreate(f.map, "p2", "n4", {"--slots", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(exportOf(r.out, "SWITCHAGG_AGENT_NAMES"), "a,b,c");
  // Renew and delete by nodes: the agents holding p1, not the default K.
  r = ctl({"lease", "renew", "--job", "p1", "--nodes", "n1", "--fabric", f.map});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("renewed on 2 of 3 agent(s)"), std::string::npos) << r.out;
  r = ctl({"lease", "delete", "--job", "p1", "--nodes", "n1", "--fabric", f.map});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("deleted on 2 of 3 agent(s)"), std::string::npos) << r.out;
  for (size_t k = 0; k < 3; ++k) EXPECT_FALSE(f.hasLease(k, "p1")) << k;
  r = leaseCreate(f.map, "p3", "n1", {"--reducers", "4"});
  EXPECT_EQ(r.exit_code, 2) << r.out;  // usage
  EXPECT_NE(r.err.find("reducers=4: pool 'p' has 3 agent(s)"), std::string::npos) << r.err;
  deleteEverywhere(f, "p2");
}

TEST(CtlFabric, OneAgentRefusingLeavesNoLeaseAnywhere) {
  Fabric f;
  ASSERT_TRUE(f.start());
  ASSERT_TRUE(ControlClient(f.agents[1]->unixAddress()).drain(true).ok());
  ProcessResult r = leaseCreate(f.map, "j", "n[1-5]");
  EXPECT_EQ(r.exit_code, 5) << r.err;  // draining
  EXPECT_NE(r.err.find("agent 'b'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("draining"), std::string::npos) << r.err;
  for (size_t k = 0; k < 3; ++k) EXPECT_FALSE(f.hasLease(k, "j")) << k;
  // A lease that existed before the call is not the call's to undo.
  ASSERT_TRUE(ControlClient(f.agents[0]->unixAddress()).createLease("old", -1, 1, 600).ok());
  r = leaseCreate(f.map, "old", "n1,n3");
  EXPECT_EQ(r.exit_code, 5) << r.err;
  EXPECT_TRUE(f.hasLease(0, "old"));
}

TEST(CtlFabric, OneAgentDeadLeavesNoLeaseAnywhere) {
  Fabric f;
  ASSERT_TRUE(f.start());
  f.agents[2]->kill();
  ProcessResult r = leaseCreate(f.map, "j", "n[1-5]", {"--timeout", "2s"});
  EXPECT_EQ(r.exit_code, 3) << r.err;  // unreachable
  EXPECT_NE(r.err.find("agent 'c'"), std::string::npos) << r.err;
  EXPECT_FALSE(f.hasLease(0, "j"));
  EXPECT_FALSE(f.hasLease(1, "j"));
  // delete still frees the live agents and says which one it could not reach.
  ASSERT_TRUE(ControlClient(f.agents[0]->unixAddress()).createLease("k", -1, 1, 600).ok());
  r = ctl({"lease", "delete", "--job", "k", "--fabric", f.map, "--timeout", "2s"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("agent 'c'"), std::string::npos) << r.err;
  EXPECT_FALSE(f.hasLease(0, "k"));
}

// An agent whose data-plane threads spread a lease (b: 2 threads, 2 per
// job) is one stripe per thread in a job striped over plain agents or a
// reducer pool: its addresses in its order, its name and token repeated;
// in a tree it stays one stripe (its first address).
TEST(CtlFabric, AnAgentSpreadingALeaseIsOneStripePerThreadExceptInATree) {
  for (const bool pool : {false, true}) {
    SCOPED_TRACE(pool ? "reducer pool" : "plain agents");
    Fabric f;
    ASSERT_TRUE(f.start(false, pool, /*spread_b=*/true));
    ProcessResult r = leaseCreate(f.map, "s", pool ? "n1" : "n[2-3]", {"--slots", "2"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ApiResult<LeaseView> at_b = ControlClient(f.agents[1]->unixAddress()).fetchToken("s");
    ASSERT_TRUE(at_b.ok());
    ASSERT_NE(at_b->data_address.find(','), std::string::npos) << at_b->data_address;
    ApiResult<LeaseView> at_a = ControlClient(f.agents[0]->unixAddress()).fetchToken("s");
    ASSERT_TRUE(at_a.ok());
    std::string want = f.agents[0]->dataAddress() + "," + at_b->data_address;
    std::string tokens = at_a->token + "," + at_b->token + "," + at_b->token;
    std::string names = "a,b,b";
    if (pool) {
      ApiResult<LeaseView> at_c = ControlClient(f.agents[2]->unixAddress()).fetchToken("s");
      ASSERT_TRUE(at_c.ok());
      want += "," + at_c->data_address;
      tokens += "," + at_c->token;
      names += ",c";
    }
    EXPECT_EQ(exportOf(r.out, "SWITCHAGG_AGENT"), want) << r.out;
    EXPECT_EQ(exportOf(r.out, "SWITCHAGG_LEASE"), tokens) << r.out;
    EXPECT_EQ(exportOf(r.out, "SWITCHAGG_AGENT_NAMES"), names) << r.out;
    // token gives the same exports again.
    r = ctl({"lease", "token", "--job", "s", "--nodes", pool ? "n1" : "n[2-3]", "--fabric", f.map});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(exportOf(r.out, "SWITCHAGG_AGENT"), want) << r.out;
    EXPECT_EQ(exportOf(r.out, "SWITCHAGG_LEASE"), tokens) << r.out;
    deleteEverywhere(f, "s");
  }
  Fabric t;
  ASSERT_TRUE(t.start(/*tree=*/true, false, /*spread_b=*/true));
  ProcessResult r = leaseCreate(t.map, "t", "n4,n1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ApiResult<LeaseView> at_b = ControlClient(t.agents[1]->unixAddress()).fetchToken("t");
  ASSERT_TRUE(at_b.ok());
  const std::string b_first = at_b->data_address.substr(0, at_b->data_address.find(','));
  EXPECT_EQ(exportOf(r.out, "SWITCHAGG_AGENT"),
            t.agents[0]->dataAddress() + "," + b_first + "," + t.agents[2]->dataAddress());
  EXPECT_EQ(exportOf(r.out, "SWITCHAGG_AGENT_NAMES"), "a,b,c");
  deleteEverywhere(t, "t");
}

TEST(CtlFabric, TreeLeaseCoversBothLeavesAndTheSpine) {
  Fabric f;
  ASSERT_TRUE(f.start(/*tree=*/true));
  ProcessResult r = leaseCreate(f.map, "t", "n4,n1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("on 3 agent(s) (a, b, c; a tree, the last one its spine)"),
            std::string::npos)
      << r.out;
  for (size_t k = 0; k < 3; ++k) EXPECT_TRUE(f.hasLease(k, "t")) << k;
  EXPECT_EQ(exportOf(r.out, "SWITCHAGG_AGENT"), f.agents[0]->dataAddress() + "," +
                                                    f.agents[1]->dataAddress() + "," +
                                                    f.agents[2]->dataAddress());
  EXPECT_TRUE(std::regex_match(exportOf(r.out, "SWITCHAGG_LEASE"),
                               std::regex("[0-9a-f]{32},[0-9a-f]{32},[0-9a-f]{32}")));
  EXPECT_EQ(exportOf(r.out, "SWITCHAGG_AGENT_NAMES"), "a,b,c");
  EXPECT_EQ(exportOf(r.out, "SWITCHAGG_FABRIC"), f.map);
  // Inside one leaf: that leaf only.
  r = leaseCreate(f.map, "u", "n3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(exportOf(r.out, "SWITCHAGG_AGENT_NAMES"), "b");
  EXPECT_FALSE(f.hasLease(0, "u"));
  EXPECT_FALSE(f.hasLease(2, "u"));
  // token gives the same exports again; delete frees all three.
  r = ctl({"lease", "token", "--job", "t", "--nodes", "n[1-4]", "--fabric", f.map});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(exportOf(r.out, "SWITCHAGG_AGENT_NAMES"), "a,b,c");
  const std::string deleted = deleteEverywhere(f, "t");
  EXPECT_NE(deleted.find("deleted on 3 of 3 agent(s)"), std::string::npos) << deleted;
  EXPECT_TRUE(f.hasLease(1, "u"));
}

TEST(CtlFabric, TreeSpineRefusingOrDeadLeavesNothingOnTheLeaves) {
  Fabric f;
  ASSERT_TRUE(f.start(/*tree=*/true));
  ASSERT_TRUE(ControlClient(f.agents[2]->unixAddress()).drain(true).ok());
  ProcessResult r = leaseCreate(f.map, "t", "n[1-4]");
  EXPECT_EQ(r.exit_code, 5) << r.err;  // draining
  EXPECT_NE(r.err.find("agent 'c'"), std::string::npos) << r.err;
  for (size_t k = 0; k < 3; ++k) EXPECT_FALSE(f.hasLease(k, "t")) << k;
  f.agents[2]->kill();
  r = leaseCreate(f.map, "t", "n[1-4]", {"--timeout", "2s"});
  EXPECT_EQ(r.exit_code, 3) << r.err;  // unreachable
  EXPECT_NE(r.err.find("agent 'c'"), std::string::npos) << r.err;
  EXPECT_FALSE(f.hasLease(0, "t"));
  EXPECT_FALSE(f.hasLease(1, "t"));
}

TEST(CtlFabric, BadInputIsAUsageErrorNamingTheProblem) {
  TempDir dir("fabric");
  const std::string map = dir.path() + "/fabric.toml";
  std::ofstream(map)
      << "[[agent]]\nname = \"a\"\ncontrol = \"unix:/nonexistent\"\nnodes = \"n1\"\n";
  ProcessResult r = leaseCreate(map, "j", "n2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("node n2 is served by no agent"), std::string::npos) << r.err;
  r = ctl({"lease", "create", "--job", "j", "--nodes", "n1", "--fabric", dir.path() + "/none"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("cannot read fabric map"), std::string::npos) << r.err;
  r = ctl({"lease", "create", "--job", "j", "--fabric", map});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("needs --nodes or --hostfile"), std::string::npos) << r.err;
  r = leaseCreate(map, "j", "n[1-");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--nodes: unbalanced"), std::string::npos) << r.err;
  // renew reaches the map's agent (none here) and names it.
  r = ctl({"lease", "renew", "--job", "j", "--nodes", "n1", "--fabric", map});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("agent 'a'"), std::string::npos) << r.err;
  r = ctl({"lease", "renew", "--job", "j", "--nodes", "n2", "--fabric", map});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("node n2 is served by no agent"), std::string::npos) << r.err;
}

TEST(CtlFabric, RenewExtendsEveryAgentAndNamesEachThatFailed) {
  Fabric f;
  ASSERT_TRUE(f.start());
  ProcessResult r = leaseCreate(f.map, "j", "n[1-5]", {"--ttl", "60s"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (size_t k = 0; k < 3; ++k) EXPECT_LE(f.expiresIn(k, "j"), 60) << k;
  r = ctl({"lease", "renew", "--job", "j", "--nodes", "n[1-5]", "--fabric", f.map, "--ttl", "1h"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("renewed on 3 of 3 agent(s) (a, b, c)"), std::string::npos) << r.out;
  for (size_t k = 0; k < 3; ++k) EXPECT_GT(f.expiresIn(k, "j"), 3000) << k;

  // Without nodes: every agent of the map that holds the job's lease.
  ASSERT_TRUE(ControlClient(f.agents[1]->unixAddress()).createLease("one", -1, 1, 60).ok());
  r = ctl({"lease", "renew", "--job", "one", "--fabric", f.map, "--ttl", "1h"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("renewed on 1 of 3 agent(s)"), std::string::npos) << r.out;
  EXPECT_GT(f.expiresIn(1, "one"), 3000);
  r = ctl({"lease", "renew", "--job", "nobody", "--fabric", f.map});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("no lease for job nobody"), std::string::npos) << r.err;

  // Agent b lost the lease and agent c is dead: both named, and agent a's
  // lease is still renewed (a job keeps what it can).
  ASSERT_TRUE(ControlClient(f.agents[1]->unixAddress()).deleteLease("j").ok());
  f.agents[2]->kill();
  r = ctl({"lease", "renew", "--job", "j", "--nodes", "n[1-5]", "--fabric", f.map, "--ttl", "2h",
           "--timeout", "2s"});
  EXPECT_EQ(r.exit_code, 1) << r.err;  // the first failure: b's not_found
  EXPECT_NE(r.err.find("agent 'b'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("agent 'c'"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("agent 'a'"), std::string::npos) << r.err;
  EXPECT_GT(f.expiresIn(0, "j"), 2 * 3600 - 60);
}

}  // namespace
