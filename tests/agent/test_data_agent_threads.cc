// Several data-plane threads (data.plane_threads, docs/agent-protocol.md
// "Data-plane threads"): each lease's groups run on its home thread, whose
// address the control API hands the lease's jobs; thread 0 (data.listen)
// serves any lease; a thread above 0 refuses another thread's lease; a
// revocation reaches every thread; /v1/status sums the threads and lists
// each one's share. Real agent, real member processes.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "switchagg/agent/control_client.h"
#include "temp_dir.h"
#include "test_data_harness.h"

namespace switchagg::testing {
namespace {

class DataAgentThreads : public DataAgentTest {
 protected:
  // The data address of each thread, from /v1/status (thread 0 first).
  std::vector<std::string> threadAddresses() {
    std::vector<std::string> out;
    const auto s = status();
    for (const auto& t : s["data_threads"]) out.push_back(t.value("address", ""));
    if (out.empty()) ADD_FAILURE() << s.dump();
    return out;
  }
  // One lease per data-plane thread, index = thread: leases are made until
  // every thread's address has been handed out (a lease's home thread is
  // its token hashed; 40 tries leave a 3-thread agent a thread unseen with
  // probability 3 (2/3)^40 < 1e-6).
  std::vector<std::string> leasePerThread(const std::string& job, int slots = 1) {
    const std::vector<std::string> addresses = threadAddresses();
    std::vector<std::string> out(addresses.size());
    size_t found = 0;
    for (int i = 0; i < 40 && found < addresses.size(); ++i) {
      const std::string token = createLease(job + std::to_string(i), slots);
      for (size_t t = 0; t < addresses.size(); ++t)
        if (leaseAddress(token) == addresses[t] && out[t].empty()) {
          out[t] = token;
          job_of_[token] = job + std::to_string(i);
          ++found;
        }
    }
    EXPECT_EQ(found, addresses.size()) << "some data-plane thread got no lease in 40";
    return out;
  }
  std::map<std::string, std::string> job_of_;  // token -> job (leasePerThread)

  // Each thread's share in /v1/status, /metrics and `switchagg-ctl status`
  // after `tokens[t]`'s groups of `size` members ran on thread t alone: the
  // shares add up to the totals, and each job's bytes are on its home
  // thread and nowhere else.
  void expectThreadShares(const std::vector<std::string>& tokens, uint64_t size) {
    const auto s = status();
    ASSERT_EQ(s["data_threads"].size(), tokens.size()) << s.dump();
    std::map<std::string, uint64_t> sums;
    for (size_t t = 0; t < tokens.size(); ++t) {
      const auto& th = s["data_threads"][t];
      SCOPED_TRACE("thread " + std::to_string(t) + ": " + th.dump());
      EXPECT_EQ(th["index"], t);
      const std::string address = th["address"];
      EXPECT_EQ(std::to_string(th["port"].get<uint64_t>()), address.substr(address.rfind(':') + 1));
      for (const char* k : {"leases", "groups_active", "groups_created", "groups_aborted",
                            "bytes_in", "bytes_out", "contributions", "chunks_reduced",
                            "clients_connected"})
        sums[k] += th[k].get<uint64_t>();
      // Its job's bytes, all of them, and no other job's.
      const std::string job = job_of_[tokens[t]];
      EXPECT_EQ(th["bytes_in_by_job"].size(), 1u);
      EXPECT_GT(th["bytes_in"], 0);
      EXPECT_EQ(th["bytes_in_by_job"].value(job, uint64_t{0}), th["bytes_in"]);
      // One contribution per member per chunk; it did the work, so it used CPU.
      EXPECT_EQ(th["contributions"], size * th["chunks_reduced"].get<uint64_t>());
      EXPECT_GT(th["busy_ns"], 0);
      EXPECT_GE(th["leases"], 1);  // tokens[t]'s at least
    }
    for (const auto& [k, v] : sums) {
      if (k == "leases") continue;
      EXPECT_EQ(s["counters"][k], v) << k << ": " << s.dump();
    }
    EXPECT_EQ(s["leases"], sums["leases"]) << s.dump();
    // /metrics: a sample per thread, labelled with its index and address.
    auto m = agent::ControlClient({agent_->unixAddress()}).request("GET", "/metrics");
    ASSERT_TRUE(m.ok());
    for (const auto& th : s["data_threads"]) {
      const std::string labels = "{thread=\"" + std::to_string(th["index"].get<int>()) +
                                 "\",address=\"" + th["address"].get<std::string>() + "\"} ";
      for (const auto& [family, key] : std::vector<std::pair<std::string, std::string>>{
               {"switchagg_thread_bytes_in_total", "bytes_in"},
               {"switchagg_thread_bytes_out_total", "bytes_out"},
               {"switchagg_thread_contributions_total", "contributions"},
               {"switchagg_thread_leases", "leases"}})
        EXPECT_NE(m->body.find(family + labels + std::to_string(th[key].get<uint64_t>()) + "\n"),
                  std::string::npos)
            << family << labels << th[key] << " not in\n" << m->body;
      EXPECT_NE(m->body.find("switchagg_thread_busy_seconds_total" + labels), std::string::npos);
    }
    // switchagg-ctl status: a line per thread with its address and bytes in.
    ProcessResult ctl = runProcess({binaryPath("switchagg-ctl"), "--agent", agent_->unixAddress(),
                                    "status"});
    ASSERT_EQ(ctl.exit_code, 0) << ctl.err;
    for (const auto& th : s["data_threads"]) {
      const std::regex line("\n  " + std::to_string(th["index"].get<int>()) + " +" +
                            th["address"].get<std::string>() + " +[0-9]+ +[0-9]+ +" +
                            std::to_string(th["bytes_in"].get<uint64_t>()) + " ");
      EXPECT_TRUE(std::regex_search(ctl.out, line)) << th.dump() << "\n" << ctl.out;
    }
  }
};

// The dtype x op matrix, bit for bit, with a group of 3 on every thread at
// once; every thread served groups, and the counters are the threads' sums.
TEST_F(DataAgentThreads, EveryDtypeAndOpExactOnTwoAndThreeThreads) {
  for (int threads : {2, 3}) {
    SCOPED_TRACE("data.plane_threads=" + std::to_string(threads));
    ASSERT_NO_FATAL_FAILURE(startAgent({"data.plane_threads=" + std::to_string(threads)}));
    ASSERT_EQ(threadAddresses().size(), static_cast<size_t>(threads)) << status().dump();
    const std::vector<std::string> tokens = leasePerThread("matrix");
    std::vector<std::unique_ptr<Child>> all;
    for (const std::string& token : tokens) {
      auto g =
          startGroup({7, 3, token, {"--pairs", allPairs(), "--count", "3000", "--window", "1"}});
      for (auto& c : g) all.push_back(std::move(c));
    }
    expectAllOk(all, 100000);
    const auto s = status();
    for (const auto& t : s["data_threads"]) EXPECT_EQ(t["groups_created"], 1) << s.dump();
    EXPECT_EQ(s["counters"]["groups_aborted"], 0);
    expectThreadShares(tokens, 3);
    agent_->stop();
    agent_.reset();
  }
}

// A client at a thread above 0 with another thread's lease is refused as an
// unknown token (never served apart from the lease's other members); the
// same lease at data.listen (thread 0: fabric maps, addresses set by hand,
// older tools) is served.
TEST_F(DataAgentThreads, ALeaseAtAnotherThreadIsRefusedAndThreadZeroServesAny) {
  ASSERT_NO_FATAL_FAILURE(startAgent({"data.plane_threads=3"}));
  const std::vector<std::string> addresses = threadAddresses();
  ASSERT_EQ(addresses.size(), 3u);
  const std::vector<std::string> tokens = leasePerThread("wrong");
  auto wrong = startGroup({1, 1, tokens[2], {"--timeout", "5000"}}, addresses[1]);
  ASSERT_EQ(wrong[0]->wait(20000), 4) << wrong[0]->output();
  EXPECT_NE(wrong[0]->output().find("RESULT fail Denied connect"), std::string::npos)
      << wrong[0]->output();
  EXPECT_GE(status()["rejected"].value("bad_token", 0), 1);
  std::vector<std::unique_ptr<Child>> ok = startGroup({2, 2, tokens[2], {}}, addresses[0]);
  for (auto& c : startGroup({3, 2, tokens[1], {}}, addresses[0])) ok.push_back(std::move(c));
  expectAllOk(ok, 30000);
  const auto s = status();
  EXPECT_EQ(s["data_threads"][0]["groups_created"], 2) << s.dump();
  EXPECT_EQ(s["data_threads"][1]["groups_created"], 0) << s.dump();
  EXPECT_EQ(s["data_threads"][2]["groups_created"], 0) << s.dump();
}

// Deleting the leases aborts every group on every thread, the ones thread 0
// serves for another thread's lease too; the slots come back.
TEST_F(DataAgentThreads, ARevocationReachesEveryThread) {
  ASSERT_NO_FATAL_FAILURE(startAgent({"data.plane_threads=3"}));
  const std::vector<std::string> addresses = threadAddresses();
  std::vector<std::string> tokens = leasePerThread("revoked");
  ASSERT_EQ(tokens.size(), 3u);
  const std::vector<std::string> forever = {"--forever", "--dtype", "float32",   "--op", "sum",
                                            "--count",   "20000",   "--timeout", "20000"};
  std::vector<std::unique_ptr<Child>> all;
  for (size_t t = 0; t < 3; ++t)
    for (auto& c : startGroup({5, 2, tokens[t], forever})) all.push_back(std::move(c));
  // Thread 1's lease, served at thread 0 as well.
  for (auto& c : startGroup({6, 2, tokens[1], forever}, addresses[0])) all.push_back(std::move(c));
  for (auto& c : all) ASSERT_TRUE(c->waitForOutput("STREAMING", 30000)) << c->output();
  const auto before = status();
  for (const auto& t : before["data_threads"]) EXPECT_GE(t["groups_created"], 1) << before.dump();
  agent::ControlClient c({agent_->unixAddress()});
  auto leases = c.listLeases();
  ASSERT_TRUE(leases.ok());
  for (const auto& l : *leases) ASSERT_TRUE(deleteLease(l.job)) << l.job;
  const int64_t t0 = testNowMs();
  for (auto& m : all) {
    EXPECT_EQ(m->wait(10000), 2) << m->output();
    // The revocation's own reason: not the engines' 250 ms lease re-check
    // ("lease expired or deleted"), which would end them too, later.
    EXPECT_NE(m->output().find("(lease_revoked): lease revoked: lease deleted"), std::string::npos)
        << m->output();
  }
  EXPECT_LT(testNowMs() - t0, 10000);
  const auto s = waitStatus(
      [](const nlohmann::json& j) { return j["counters"]["slots_reserved"] == 0; }, 5000);
  EXPECT_EQ(s["counters"]["slots_reserved"], 0) << s.dump();
  EXPECT_EQ(s["counters"]["groups_active"], 0) << s.dump();
}

// data.threads_per_job = 2 on 3 threads: a lease's data_address lists its
// home thread and the next one (wrapping), its jobs stripe over both (one
// group per thread; here each stripe a group of its own, as a job's members
// form them), every dtype x op exact on each, and each thread counts its
// stripe's bytes under the job; the third thread refuses the lease unless it
// is thread 0 (which serves any). An agent with threads_per_job = 1 (the
// default) lists the home thread alone.
TEST_F(DataAgentThreads, ALeaseSpreadOverTwoThreadsIsServedOnBothAndRefusedOnTheThird) {
  ASSERT_NO_FATAL_FAILURE(startAgent({"data.plane_threads=3", "data.threads_per_job=2"}));
  const std::vector<std::string> addresses = threadAddresses();
  ASSERT_EQ(addresses.size(), 3u);
  EXPECT_NE(agent_->stderrText().find("each lease on 2 of them"), std::string::npos)
      << agent_->stderrText();
  // Leases until one's home is thread 1 (its spread: threads 1 and 2, thread
  // 0 out of it but serving any) and one's is thread 0 (spread 0 and 1):
  // 60 tries miss either with probability < 2 (2/3)^60.
  std::string token, job, home0;
  for (int i = 0; i < 60 && (token.empty() || home0.empty()); ++i) {
    const std::string t = createLease("spread" + std::to_string(i), 1);  // 60 fit the pool
    if (leaseAddress(t) == addresses[1] + "," + addresses[2]) token = t, job = "spread" + std::to_string(i);
    if (leaseAddress(t) == addresses[0] + "," + addresses[1]) home0 = t;
  }
  ASSERT_FALSE(token.empty()) << "no lease with home thread 1 in 60";
  ASSERT_FALSE(home0.empty()) << "no lease with home thread 0 in 60";
  // Every lease lists two threads, home first: home, home + 1 (mod 3).
  for (const auto& [t, address] : lease_addresses_) {
    const size_t comma = address.find(',');
    ASSERT_NE(comma, std::string::npos) << address;
    const auto home = std::find(addresses.begin(), addresses.end(), address.substr(0, comma));
    ASSERT_NE(home, addresses.end()) << address;
    EXPECT_EQ(address.substr(comma + 1), addresses[size_t(home - addresses.begin() + 1) % 3])
        << address;
  }
  std::vector<std::unique_ptr<Child>> all;
  for (size_t t : {1u, 2u})
    for (auto& c : startGroup({10 + t, 3, token, {"--pairs", allPairs(), "--count", "3000",
                                                   "--window", "1"}},
                              addresses[t]))
      all.push_back(std::move(c));
  expectAllOk(all, 100000);
  auto s = status();
  for (size_t t : {1u, 2u}) {
    const auto& th = s["data_threads"][t];
    EXPECT_EQ(th["groups_created"], 1) << s.dump();
    EXPECT_GT(th["bytes_in_by_job"].value(job, uint64_t{0}), 0u) << s.dump();
  }
  EXPECT_EQ(s["data_threads"][0]["groups_created"], 0) << s.dump();
  // A home-0 lease spreads to threads 0 and 1: thread 2 refuses it, naming
  // where it is served.
  auto wrong = startGroup({20, 1, home0, {"--timeout", "5000"}}, addresses[2]);
  ASSERT_EQ(wrong[0]->wait(20000), 4) << wrong[0]->output();
  EXPECT_NE(wrong[0]->output().find("RESULT fail Denied connect"), std::string::npos)
      << wrong[0]->output();
  EXPECT_NE(agent_->stderrText().find("(and the 1 after it)"), std::string::npos)
      << agent_->stderrText();
  // Thread 0 serves any lease, this one too.
  auto at0 = startGroup({21, 2, token, {}}, addresses[0]);
  expectAllOk(at0, 30000);
  agent_->stop();
  agent_.reset();
  // The default: one address per lease.
  lease_addresses_.clear();
  ASSERT_NO_FATAL_FAILURE(startAgent({"data.plane_threads=3"}));
  EXPECT_EQ(leaseAddress(createLease("one", 2)).find(','), std::string::npos);
  agent_->stop();
  agent_.reset();
  // A tree's leaf (its fabric map names a parent) never spreads: its
  // groups go to the spine whole.
  TempDir dir("leafspread");
  const std::string map = dir.path() + "/fabric.toml";
  std::ofstream(map) << "[[agent]]\nname = \"leaf\"\ncontrol = \"unix:/nonexistent\"\n"
                        "nodes = \"n1\"\nparent = \"spine\"\n\n[[agent]]\nname = \"spine\"\n"
                        "control = \"unix:/nonexistent2\"\ndata = \"127.0.0.1:9\"\n";
  lease_addresses_.clear();
  ASSERT_NO_FATAL_FAILURE(startAgent({"data.plane_threads=2", "data.threads_per_job=2",
                                      "fabric.map=" + map, "fabric.name=leaf"}));
  EXPECT_NE(agent_->stderrText().find("each lease on 1 of them"), std::string::npos)
      << agent_->stderrText();
  EXPECT_EQ(leaseAddress(createLease("leaf", 2)).find(','), std::string::npos);
}

// Stall isolation (docs/agent-protocol.md "Data-plane threads", case 3): job
// A on thread 1 is stalled twice over: its thread blocks for 8 s
// (SWITCHAGG_AGENT_TEST_FAULT=wedge:2:8000: a long reduction or a wedged UCX
// call) and another of its groups has a member that never sends. Job B on
// thread 0 starts once the thread is wedged: each of its 40 calls ends
// within its 2 s bound and all of them before the wedge ends, while A's
// member is still waiting. A's calls then end within their bounds (the
// wedged one right or failed as from a wedged agent, the unfed one failed).
TEST_F(DataAgentThreads, AStalledThreadOrJobDoesNotDelayAnotherThreadsJob) {
  constexpr int64_t kWedgeMs = 8000;
  setenv("SWITCHAGG_AGENT_TEST_FAULT", ("wedge:2:" + std::to_string(kWedgeMs)).c_str(), 1);
  startAgent({"data.plane_threads=2"});
  unsetenv("SWITCHAGG_AGENT_TEST_FAULT");
  ASSERT_TRUE(agent_);
  const std::vector<std::string> tokens = leasePerThread("iso", 8);  // slots for each group
  ASSERT_EQ(tokens.size(), 2u);
  const std::string& a = tokens[1];  // job A: thread 1
  const std::string& b = tokens[0];  // job B: thread 0 (its own lease's home)
  // A's group 2: rank 1 joins and never sends; rank 0 waits in its call.
  std::vector<std::unique_ptr<Child>> unfed;
  for (int rank : {0, 1}) {
    std::vector<std::string> argv = {binaryPath("test_data_member"), "--agent", leaseAddress(a),
                                     "--token", a, "--group", "2", "--size", "2", "--rank",
                                     std::to_string(rank), "--timeout", "20000", "--window", "1"};
    if (rank == 1) argv.insert(argv.end(), {"--delay", "30000"});
    unfed.push_back(Child::spawn(argv));
  }
  for (auto& c : unfed) ASSERT_TRUE(c->waitForOutput("STREAMING", 15000)) << c->output();
  // A's group 1 (two members, 5 chunks): its 2nd chunk result wedges thread 1.
  auto wedged = startGroup({1, 2, a, {"--count", "5000", "--window", "1", "--timeout", "30000"}});
  const int64_t wedge_deadline = testNowMs() + 15000;
  while (agent_->stderrText().find("data-plane thread wedged") == std::string::npos &&
         testNowMs() < wedge_deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const int64_t wedged_at = testNowMs();
  ASSERT_NE(agent_->stderrText().find("data-plane thread wedged"), std::string::npos)
      << "the wedge fault never fired within 15 s:\n"
      << agent_->stderrText() << "\nits member:\n" << wedged[0]->output();
  // Job B on thread 0: 40 calls, each bounded at 2 s.
  auto fed = startGroup({3, 2, b, {"--iters", "40", "--count", "3000", "--timeout", "2000"}});
  expectAllOk(fed, kWedgeMs - 500);
  const int64_t b_ms = testNowMs() - wedged_at;
  EXPECT_LT(b_ms, kWedgeMs) << "job B took until the wedge of thread 1 ended";
  EXPECT_EQ(wedged[0]->wait(0), -1) << "A's wedged call ended before B's: no overlap shown\n"
                                    << wedged[0]->output();
  std::printf("job B's 40 calls took %lld ms after thread 1 wedged for %lld ms\n",
              static_cast<long long>(b_ms), static_cast<long long>(kWedgeMs));
  // A's wedged call ends within its bound: exact after the wedge, or failed
  // as from a wedged agent (UCX's endpoint timeout on the silent thread).
  for (auto& m : wedged) {
    const int rc = m->wait(25000);
    EXPECT_TRUE(rc == 0 || (rc == 2 && m->output().find("RESULT fail PeerFailed") !=
                                           std::string::npos))
        << rc << "\n" << m->output();
  }
  // The unfed call cannot complete: its rank 0 fails (member timeout or its bound).
  EXPECT_EQ(unfed[0]->wait(25000), 2) << unfed[0]->output();
}

}  // namespace
}  // namespace switchagg::testing
