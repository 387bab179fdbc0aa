// The fabric map's parser and the hostlist expansion (fabric_map.h).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

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
parent = "a"
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
  EXPECT_EQ(m->agents()[1].parent, "a");
  EXPECT_EQ(m->agentOf("gpu07")->name, "b");
  EXPECT_EQ(m->agentOf("n9"), nullptr);
  // Map order, each once, whatever the order of the nodes asked for.
  auto both = m->agentsFor({"gpu07", "n2", "n4", "n1"});
  ASSERT_TRUE(both.ok());
  ASSERT_EQ(both->size(), 2u);
  EXPECT_EQ((*both)[0]->name, "a");
  EXPECT_EQ((*both)[1]->name, "b");
  auto one = m->agentsFor({"n5"});
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0]->name, "b");
  auto none = m->agentsFor({"n1", "zz"});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("node zz is served by no agent"), std::string::npos);
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

TEST(FabricMap, ShippedExampleParses) {
  Result<FabricMap> m = FabricMap::load(SWITCHAGG_SOURCE_DIR "/config/fabric.toml");
  ASSERT_TRUE(m.ok()) << m.status().toString();
  EXPECT_EQ(m->agents().size(), 2u);
  EXPECT_EQ(m->agentOf("gpu1")->name, "leaf2");
  EXPECT_EQ(m->agentOf("node16")->name, "leaf1");
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
