// The data plane's counters are listed once (data_plane_counters.h); each
// one must add up over data-plane threads by its rule, and appear in
// /v1/status's "counters", in /metrics and in the docs. The rows are taken
// from the list itself here, so a counter added to it is checked in all of
// them; a counter added by hand beside the list does not compile.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "control_api.h"
#include "metrics.h"

using namespace switchagg;
using namespace switchagg::agent;
using nlohmann::json;

namespace {

struct Row {
  const char* field;
  uint64_t DataPlaneScalars::*member;
  CounterCombine combine;
  const char* metric;
  const char* type;
};

#define SWITCHAGG_TEST_ROW(field, combine, metric, type, help) \
  Row{#field, &DataPlaneScalars::field, CounterCombine::combine, metric,    \
      CounterType::type == CounterType::kCounter ? "counter" : "gauge"},
const std::vector<Row> kRows = {SWITCHAGG_DATA_PLANE_COUNTERS(SWITCHAGG_TEST_ROW)};
#undef SWITCHAGG_TEST_ROW

// Two threads' counters, every field a value no other field has; the second
// thread's larger for even rows, smaller for odd ones (so a max is neither
// always the first nor always the second).
DataPlaneCounters threadCounters(int thread) {
  DataPlaneCounters c;
  for (size_t i = 0; i < kRows.size(); ++i) {
    const uint64_t base = 1000 * (i + 1);
    const bool second_larger = i % 2 == 0;
    c.*kRows[i].member = base + ((thread == 1) == second_larger ? 700 + i : 3 + i);
  }
  c.rejected["bad_token"] = 5 + thread;
  c.bytes_in_by_job["42"] = 100 + thread;
  c.groups_by_job["42"] = 1;
  return c;
}

DataPlaneCounters twoThreadSum() {
  DataPlaneCounters sum;
  addThreadCounters(sum, threadCounters(0));
  addThreadCounters(sum, threadCounters(1));
  return sum;
}

uint64_t expected(const Row& row) {
  const uint64_t a = threadCounters(0).*row.member, b = threadCounters(1).*row.member;
  return row.combine == CounterCombine::kSum ? a + b : std::max(a, b);
}

class FakeDataPlane : public DataPlaneView {
 public:
  std::string address() const override { return "10.0.0.1:18515"; }
  DataPlaneCounters counters() const override { return twoThreadSum(); }
  std::vector<std::pair<Dtype, std::vector<Op>>> capabilities() const override { return {}; }
};

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(DataPlaneCounters, EveryCounterAddsUpOverThreadsByItsRule) {
  ASSERT_GE(kRows.size(), 17u);
  const DataPlaneCounters sum = twoThreadSum();
  for (const Row& row : kRows) {
    EXPECT_EQ(sum.*row.member, expected(row)) << row.field << " not added up over threads";
  }
  EXPECT_EQ(sum.rejected.at("bad_token"), 11u);
  EXPECT_EQ(sum.bytes_in_by_job.at("42"), 201u);
  EXPECT_EQ(sum.groups_by_job.at("42"), 2u);
}

TEST(DataPlaneCounters, StatusCarriesEveryCounterByItsFieldName) {
  AgentConfig config;
  LeaseTable leases({16, 8, 10});
  FakeDataPlane plane;
  ControlApi api(config, leases, &plane);
  HttpRequest req;
  req.method = "GET";
  req.target = req.path = "/v1/status";
  req.version = "HTTP/1.1";
  ControlResponse r = api.handle(req, Caller{true, 0, 0, "unix"});
  ASSERT_EQ(r.status, 200) << r.body;
  const json counters = json::parse(r.body).at("counters");
  for (const Row& row : kRows) {
    ASSERT_TRUE(counters.contains(row.field)) << row.field << " missing from /v1/status";
    EXPECT_EQ(counters.at(row.field).get<uint64_t>(), expected(row)) << row.field;
  }
  EXPECT_EQ(counters.at("rejected_total").get<uint64_t>(), 11u);
  EXPECT_EQ(counters.size(), kRows.size() + 1) << "a key in \"counters\" that is no counter";
}

TEST(DataPlaneCounters, MetricsCarryEveryCounterWithItsTypeAndHelp) {
  MetricsInput in;
  in.data = twoThreadSum();
  const std::string text = renderMetrics(in);
  for (const Row& row : kRows) {
    const std::string m = row.metric;
    EXPECT_NE(text.find("\n# HELP " + m + " "), std::string::npos) << m << " has no HELP";
    EXPECT_NE(text.find("\n# TYPE " + m + " " + row.type + "\n"), std::string::npos)
        << m << " missing or not a " << row.type;
    EXPECT_NE(text.find("\n" + m + " " + std::to_string(expected(row)) + "\n"), std::string::npos)
        << m << " missing or not the sum over threads (" << row.field << ")";
    EXPECT_EQ(m.rfind("switchagg_", 0), 0u) << m;
    EXPECT_EQ(std::string(row.type) == "counter", m.size() > 6 && m.substr(m.size() - 6) == "_total")
        << m << ": counters end in _total, gauges do not";
  }
}

TEST(DataPlaneCounters, EveryCounterIsDocumented) {
  const std::string admin = readFile(SWITCHAGG_SOURCE_DIR "/docs/admin.md");
  const std::string api = readFile(SWITCHAGG_SOURCE_DIR "/docs/control-api.md");
  ASSERT_FALSE(admin.empty());
  ASSERT_FALSE(api.empty());
  for (const Row& row : kRows) {
    EXPECT_NE(admin.find(std::string("`") + row.metric + "`"), std::string::npos)
        << row.metric << " is not in docs/admin.md's metric table";
    EXPECT_NE(api.find(std::string("`") + row.field + "`"), std::string::npos)
        << row.field << " is not in docs/control-api.md's counters";
  }
}

}  // namespace
