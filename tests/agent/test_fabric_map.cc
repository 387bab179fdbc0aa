// The fabric map's parser and the hostlist expansion (fabric_map.h).
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "switchagg/agent/fabric_map.h"
#include "switchagg/common/config.h"

namespace switchagg::agent {
namespace {

const char kTwo[] = R"(
[[agent]]
name = "a"
control = "unix:/run/a.sock"
data = "127.0.0.1:1"
nodes = "n[1-3]"

[[agent]]
name = "b"
control = "127.0.0.1:2"
data = "127.0.0.1:3"
nodes = ["n[4-5]", "gpu07"]
)";

std::string errorOf(const std::string& text) {
  Result<FabricMap> m = FabricMap::parse(text, "t.toml");
  EXPECT_FALSE(m.ok()) << text;
  return m.ok() ? "" : m.status().message();
}

std::string agent(const std::string& name, const std::string& nodes,
                  const std::string& extra = "") {
  return "[[agent]]\nname = \"" + name + "\"\ncontrol = \"unix:/x/" + name +
         "\"\ndata = \"h:1\"\nnodes = " + nodes + "\n" + extra + "\n";
}

// An agent without nodes (a spine, if some agent names it as parent).
std::string spine(const std::string& name, const std::string& extra = "") {
  return "[[agent]]\nname = \"" + name + "\"\ncontrol = \"unix:/x/" + name + "\"\n" + extra + "\n";
}

// Two racks under spine s, and a stripe agent r outside the tree.
std::string treeMap() {
  return agent("l1", "\"n[1-2]\"", "parent = \"s\"") + agent("r", "\"n9\"") +
         agent("l2", "\"n[3-4]\"", "parent = \"s\"") + spine("s");
}

TEST(Hostlist, Expands) {
  Result<std::vector<std::string>> h = expandHostlist("n[01-03,7],gpu1, x[9-10]y");
  ASSERT_TRUE(h.ok()) << h.status().toString();
  EXPECT_EQ(*h, (std::vector<std::string>{"n01", "n02", "n03", "n7", "gpu1", "x9y", "x10y"}));
}

TEST(Hostlist, RejectsBadInput) {
  for (const char* bad : {"n[1-", "n1]", "n[3-1]", "n[a-b]", "n[1-2][3]", "a,,b", ""}) {
    Result<std::vector<std::string>> h = expandHostlist(bad);
    EXPECT_FALSE(h.ok()) << bad;
  }
  EXPECT_FALSE(expandHostlist("n[0-99999]").ok());  // over the cap
}

TEST(FabricMap, ParsesAndPlaces) {
  Result<FabricMap> m = FabricMap::parse(kTwo, "t.toml");
  ASSERT_TRUE(m.ok()) << m.status().toString();
  ASSERT_EQ(m->agents().size(), 2u);
  EXPECT_EQ(m->agents()[1].nodes, (std::vector<std::string>{"n4", "n5", "gpu07"}));
  EXPECT_EQ(m->agents()[1].parent, "");
  EXPECT_EQ(m->agentOf("gpu07")->name, "b");
  EXPECT_EQ(m->agentOf("n9"), nullptr);
  // Map order, each once, whatever the order of the nodes asked for.
  auto both = m->agentsFor({"gpu07", "n2", "n4", "n1"});
  ASSERT_TRUE(both.ok());
  ASSERT_EQ(both->size(), 2u);
  EXPECT_EQ((*both)[0]->name, "a");
  EXPECT_EQ((*both)[1]->name, "b");
  EXPECT_FALSE(FabricMap::isTree(*both)) << "stripes";
  auto one = m->agentsFor({"n5"});
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0]->name, "b");
  auto none = m->agentsFor({"n1", "zz"});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("node zz is served by no agent"), std::string::npos);
}

std::vector<std::string> namesOf(const std::vector<const FabricAgent*>& agents) {
  std::vector<std::string> out;
  for (const FabricAgent* a : agents) out.push_back(a->name);
  return out;
}

TEST(FabricMap, TreePlacesLeavesThenTheSpine) {
  Result<FabricMap> m = FabricMap::parse(treeMap(), "t.toml");
  ASSERT_TRUE(m.ok()) << m.status().toString();
  EXPECT_TRUE(m->find("s")->nodes.empty());
  EXPECT_EQ(namesOf(m->childrenOf("s")), (std::vector<std::string>{"l1", "l2"}));
  EXPECT_TRUE(m->childrenOf("l1").empty());
  // Both leaves: leaves in map order (not node order), then the spine.
  auto both = m->agentsFor({"n4", "n1", "n2"});
  ASSERT_TRUE(both.ok()) << both.status().toString();
  EXPECT_EQ(namesOf(*both), (std::vector<std::string>{"l1", "l2", "s"}));
  EXPECT_TRUE(FabricMap::isTree(*both));
  // Inside one leaf: that leaf only, the spine takes no part.
  auto one = m->agentsFor({"n3", "n4"});
  ASSERT_TRUE(one.ok()) << one.status().toString();
  EXPECT_EQ(namesOf(*one), (std::vector<std::string>{"l2"}));
  EXPECT_FALSE(FabricMap::isTree(*one));
  // A leaf and an agent without a parent: named, refused.
  auto mixed = m->agentsFor({"n1", "n9"});
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.status().message().find("agent 'l1' (a leaf of 's') and agent 'r' (no parent)"),
            std::string::npos)
      << mixed.status().message();
  EXPECT_NE(mixed.status().message().find("not supported"), std::string::npos);
  EXPECT_EQ(mixed.status().code(), Code::kInvalidArgument);
  // The same with the parentless agent first in map order.
  auto mixed2 = m->agentsFor({"n9", "n3"});
  ASSERT_FALSE(mixed2.ok());
  EXPECT_NE(mixed2.status().message().find("agent 'l2' (a leaf of 's') and agent 'r'"),
            std::string::npos)
      << mixed2.status().message();
}

TEST(FabricMap, LeavesOfTwoSpinesAreRefused) {
  Result<FabricMap> m =
      FabricMap::parse(agent("l1", "\"n1\"", "parent = \"s1\"") +
                           agent("l2", "\"n2\"", "parent = \"s2\"") + spine("s1") + spine("s2"),
                       "t.toml");
  ASSERT_TRUE(m.ok()) << m.status().toString();
  auto one = m->agentsFor({"n2"});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(namesOf(*one), (std::vector<std::string>{"l2"}));
  auto two = m->agentsFor({"n1", "n2"});
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.status().message().find(
                "agent 'l1' (a leaf of 's1') and agent 'l2' (a leaf of 's2'): a job under two "
                "spines is not supported"),
            std::string::npos)
      << two.status().message();
}

TEST(FabricMap, TreeErrorsNameTheAgent) {
  // A spine that serves nodes itself.
  EXPECT_NE(errorOf(agent("l1", "\"n1\"", "parent = \"s\"") + agent("s", "\"n2\""))
                .find("agent 's' is the parent of agent 'l1' and must serve no nodes itself"),
            std::string::npos);
  // Three levels: l1 -> m -> s.
  EXPECT_NE(
      errorOf(agent("l1", "\"n1\"", "parent = \"m\"") + spine("m", "parent = \"s\"") + spine("s"))
          .find("agent 'm': trees deeper than two levels (leaf → spine) are not supported"),
      std::string::npos);
  // No nodes and nobody's parent.
  EXPECT_NE(errorOf(agent("l1", "\"n1\"") + spine("s")).find("agent 's': missing key 'nodes'"),
            std::string::npos);
}

TEST(FabricMap, ErrorsNameTheProblem) {
  EXPECT_NE(errorOf("").find("no [[agent]]"), std::string::npos);
  EXPECT_NE(errorOf("[x]\n" + agent("a", "\"n1\"")).find("x: unknown key"), std::string::npos);
  EXPECT_NE(errorOf(agent("a", "\"n1\"", "colour = \"red\"")).find("agent #1.colour: unknown key"),
            std::string::npos);
  EXPECT_NE(errorOf(agent("a", "\"n1\"") + agent("a", "\"n2\"")).find("agent 'a': defined twice"),
            std::string::npos);
  EXPECT_NE(errorOf(agent("a", "\"n[1-3]\"") + agent("b", "\"n3\""))
                .find("node n3 is served by both agent 'a' and agent 'b'"),
            std::string::npos);
  EXPECT_NE(errorOf(agent("a", "\"n1\"", "parent = \"zz\"")).find("parent 'zz' is not an agent"),
            std::string::npos);
  EXPECT_NE(errorOf(agent("a", "\"n1\"", "parent = \"b\"") + agent("b", "\"n2\"", "parent = \"a\""))
                .find("parents form a cycle"),
            std::string::npos);
  EXPECT_NE(errorOf(agent("a", "\"n1\"", "parent = \"a\"")).find("parents form a cycle"),
            std::string::npos);
  EXPECT_NE(errorOf("[[agent]]\nname = \"a\"\ndata = \"h:1\"\nnodes = \"n1\"\n")
                .find("agent 'a': missing key 'control'"),
            std::string::npos);
  EXPECT_NE(errorOf(agent("a", "\"n[2-1]\"")).find("agent 'a'.nodes: range '2-1'"),
            std::string::npos);
  EXPECT_NE(errorOf(agent("a", "3")).find("expected a hostlist string"), std::string::npos);
  EXPECT_NE(
      errorOf(
          "[[agent]]\nname = \"a\"\ncontrol = \"unix:/x\"\ndata = \"nocolon\"\nnodes = \"n1\"\n")
          .find("agent 'a'.data: 'nocolon' is not host:port"),
      std::string::npos);
  EXPECT_NE(errorOf("[[agent]\n").find("t.toml:1"), std::string::npos);  // TOML syntax, with a line
}

// A reducer pool: r1..r4 on reducer hosts serve every node of n[1-8]
// together; agent x serves n9 alone.
std::string poolMap(const std::string& extra = "") {
  return spine("r1") + spine("r2") + spine("r3") + spine("r4") + agent("x", "\"n9\"") +
         "[[pool]]\nname = \"reducers\"\nagents = [\"r1\", \"r2\", \"r3\", \"r4\"]\n"
         "nodes = \"n[1-8]\"\n" +
         extra + "\n";
}

std::vector<std::string> namesOf(const Result<std::vector<const FabricAgent*>>& agents) {
  std::vector<std::string> out;
  if (agents.ok())
    for (const FabricAgent* a : agents.value()) out.push_back(a->name);
  return out;
}

TEST(FabricPool, AJobGetsKOfThePoolInPoolOrderTheSameForEveryCaller) {
  Result<FabricMap> m = FabricMap::parse(poolMap(), "t.toml");
  ASSERT_TRUE(m.ok()) << m.status().toString();
  ASSERT_EQ(m->pools().size(), 1u);
  EXPECT_EQ(m->poolOf("n3")->name, "reducers");
  EXPECT_EQ(m->poolOf("n9"), nullptr);
  const std::vector<std::string> nodes = {"n1", "n2", "n5"};
  // Default: every agent of the pool.
  EXPECT_EQ(namesOf(m->agentsFor(nodes)), (std::vector<std::string>{"r1", "r2", "r3", "r4"}));
  // K = 2: two agents, consecutive from where the job id points, in pool
  // order; the same for the same job whatever the caller (prolog, task).
  std::set<std::vector<std::string>> seen;
  for (int job = 1000; job < 1040; ++job) {
    const PoolRequest r{2, std::to_string(job)};
    const std::vector<std::string> got = namesOf(m->agentsFor(nodes, r));
    ASSERT_EQ(got.size(), 2u);
    EXPECT_LT(got[0], got[1]);
    EXPECT_EQ(got, namesOf(m->agentsFor({"n8"}, r)));
    seen.insert(got);
  }
  // Jobs spread over the pool: every consecutive pair turns up.
  EXPECT_EQ(seen.size(), 4u);
  // Outside the pool, as before; reducers asked there is an error.
  EXPECT_EQ(namesOf(m->agentsFor({"n9"})), std::vector<std::string>{"x"});
  EXPECT_NE(m->agentsFor({"n9"}, {2, "7"})
                .status()
                .message()
                .find("reducers=2: the job's nodes are in no reducer pool"),
            std::string::npos);
  EXPECT_NE(m->agentsFor(nodes, {5, "7"})
                .status()
                .message()
                .find("reducers=5: pool 'reducers' has 4 agent(s)"),
            std::string::npos);
  EXPECT_NE(m->agentsFor({"n1", "n9"})
                .status()
                .message()
                .find("node n1 is in pool 'reducers' and node n9 in no pool"),
            std::string::npos);
}

TEST(FabricPool, TheAdminDefaultAndItsErrors) {
  Result<FabricMap> m = FabricMap::parse(poolMap("reducers = 3"), "t.toml");
  ASSERT_TRUE(m.ok()) << m.status().toString();
  EXPECT_EQ(m->agentsFor({"n1"}, {0, "42"})->size(), 3u);  // the pool's default
  EXPECT_EQ(m->agentsFor({"n1"}, {1, "42"})->size(), 1u);  // the job's own K wins
  EXPECT_NE(errorOf(poolMap("reducers = 5"))
                .find("pool 'reducers'.reducers: expected an integer from 1 to 4"),
            std::string::npos);
  EXPECT_NE(errorOf(poolMap("colour = 1")).find("pool #1.colour: unknown key"), std::string::npos);
  EXPECT_NE(errorOf(poolMap() + "[[pool]]\nname = \"p2\"\nagents = [\"r1\"]\nnodes = \"m1\"\n")
                .find("agent 'r1' is in more than one pool"),
            std::string::npos);
  EXPECT_NE(errorOf(poolMap() + agent("y", "\"n4\"")).find("node n4 is served by both"),
            std::string::npos);
  EXPECT_NE(
      errorOf(agent("x", "\"n9\"") + "[[pool]]\nname = \"p\"\nagents = [\"x\"]\nnodes = \"m1\"\n")
          .find("agent 'x' serves nodes of its own"),
      std::string::npos);
  EXPECT_NE(
      errorOf(agent("x", "\"n9\"") + "[[pool]]\nname = \"p\"\nagents = [\"q\"]\nnodes = \"m1\"\n")
          .find("agent 'q' is not an [[agent]] of the map"),
      std::string::npos);
  EXPECT_NE(errorOf(treeMap() + "[[pool]]\nname = \"p\"\nagents = [\"s\"]\nnodes = \"m1\"\n")
                .find("agent 's' is part of a tree"),
            std::string::npos);
  // An agent without nodes must be a spine or in a pool.
  EXPECT_NE(errorOf(spine("r1") + agent("x", "\"n9\"")).find("or an agent of a [[pool]]"),
            std::string::npos);
}

// A rail pool: agent k is rail k's; every job takes all of them in rail
// order (stripe k on rail k), whatever its id; asking for fewer is an error
// naming the rails.
TEST(FabricPool, ARailPoolGivesEveryJobEveryRailInRailOrder) {
  Result<FabricMap> m = FabricMap::parse(poolMap("rails = true"), "t.toml");
  ASSERT_TRUE(m.ok()) << m.status().toString();
  EXPECT_TRUE(m->pools()[0].rails);
  for (int job = 1000; job < 1010; ++job)
    EXPECT_EQ(namesOf(m->agentsFor({"n1", "n4"}, {0, std::to_string(job)})),
              (std::vector<std::string>{"r1", "r2", "r3", "r4"}));
  EXPECT_EQ(m->agentsFor({"n1"}, {4, "7"})->size(), 4u);
  EXPECT_NE(m->agentsFor({"n1"}, {2, "7"})
                .status()
                .message()
                .find("reducers=2: pool 'reducers' is one agent per rail; a job takes all 4"),
            std::string::npos);
  EXPECT_NE(errorOf(poolMap("rails = true\nreducers = 2"))
                .find("a rail pool's jobs take all 4 agents (one per rail), not 2"),
            std::string::npos);
  EXPECT_NE(errorOf(poolMap("rails = 1")).find("pool 'reducers'.rails: expected true or false"),
            std::string::npos);
  Result<FabricMap> plain = FabricMap::parse(poolMap(), "t.toml");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->pools()[0].rails);
}

TEST(FabricMap, ShippedExampleParses) {
  Result<FabricMap> m = FabricMap::load(SWITCHAGG_SOURCE_DIR "/config/fabric.toml");
  ASSERT_TRUE(m.ok()) << m.status().toString();
  EXPECT_EQ(m->agents().size(), 3u);
  EXPECT_EQ(m->agentOf("gpu1")->name, "leaf2");
  EXPECT_EQ(m->agentOf("node16")->name, "leaf1");
  // A two-leaf tree: a job over both racks leases from both leaves and the spine.
  auto both = m->agentsFor({"node01", "node17"});
  ASSERT_TRUE(both.ok()) << both.status().toString();
  EXPECT_EQ(namesOf(*both), (std::vector<std::string>{"leaf1", "leaf2", "spine"}));
}

// The admin guide's example map parses, with its tree (parent) checked.
TEST(FabricMap, AdminGuideExampleParses) {
  std::ifstream in(SWITCHAGG_SOURCE_DIR "/docs/admin.md");
  ASSERT_TRUE(in);
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const size_t section = doc.find("## Fabric map");
  ASSERT_NE(section, std::string::npos);
  const size_t open = doc.find("```toml\n", section);
  ASSERT_NE(open, std::string::npos);
  const size_t close = doc.find("```", open + 8);
  Result<FabricMap> m = FabricMap::parse(doc.substr(open + 8, close - open - 8), "admin.md");
  ASSERT_TRUE(m.ok()) << m.status().toString();
  EXPECT_EQ(m->agents().size(), 3u);
  EXPECT_EQ(m->find("leaf2")->parent, "spine");
}

TEST(FabricMap, EnvListsRoundTrip) {
  EXPECT_EQ(joinList({"a:1", "b:2"}), "a:1,b:2");
  EXPECT_EQ(splitList("a:1,b:2"), (std::vector<std::string>{"a:1", "b:2"}));
  EXPECT_EQ(splitList("a:1"), (std::vector<std::string>{"a:1"}));
  EXPECT_EQ(splitList(""), (std::vector<std::string>{}));
  EXPECT_EQ(splitList("a,,"), (std::vector<std::string>{"a", "", ""}));
}

}  // namespace
}  // namespace switchagg::agent
