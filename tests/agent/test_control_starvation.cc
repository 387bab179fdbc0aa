// The control-plane starvation attack (issue: 200 TCP connections holding
// half a request line made every Unix-socket request fail "overloaded"),
// against a real agent: while an unprivileged flood holds the TCP port, and
// then the Unix socket too, admin requests over the Unix socket and
// munge-authenticated requests over TCP each complete within 1 s, and the
// attack shows in /metrics and in a rate-limited log line.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "agent_fixture.h"
#include "switchagg/agent/control_client.h"
#include "temp_dir.h"

namespace switchagg::testing {
namespace {

using agent::ControlClient;
using agent::ControlClientOptions;
using Clock = std::chrono::steady_clock;

// switchagg-test-control-flood in the background, as uid nobody.
class Flood {
 public:
  Flood(const std::string& address, int connections) {
    pid_ = fork();
    if (pid_ == 0) {
      setsid();
      std::string bin = binaryPath("switchagg-test-control-flood");
      std::string n = std::to_string(connections);
      execl("/usr/bin/setpriv", "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
            bin.c_str(), "--address", address.c_str(), "--connections", n.c_str(), "--seconds",
            "60", "--reopen-ms", "1000", static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  ~Flood() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }
  bool running() const { return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }

 private:
  pid_t pid_ = -1;
};

int64_t msSince(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

// A sample of GET /metrics, e.g. "switchagg_control_shed_total{listener=\"tcp\",...}".
uint64_t metric(ControlClient& c, const std::string& name) {
  auto m = c.request("GET", "/metrics");
  if (!m.ok()) return 0;
  size_t at = m->body.find("\n" + name + " ");
  if (at == std::string::npos) return 0;
  return std::strtoull(m->body.c_str() + at + name.size() + 2, nullptr, 10);
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class ControlStarvation : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(munge_dir_.path(), "");
    auto munged = MungeDaemon::start(munge_dir_.path());
    ASSERT_TRUE(munged.ok()) << munged.status().toString();
    munged_ = std::move(*munged);
    auto a = AgentProcess::start(AgentOptions::withSets(
        {"control.munge_socket=" + munged_->socket(), "agent.log_level=info"}));
    ASSERT_TRUE(a.ok()) << a.status().toString();
    agent_ = std::move(*a);
  }
  void TearDown() override {
    agent_.reset();
    munged_.reset();
  }

  // Every kind of request the attack must not stop, each timed: the admin
  // CLI and a lease create/delete over the Unix socket, and a lease create
  // over TCP with a munge credential (the remote prolog's path).
  // Rounds are 250 ms apart, so the flood re-opens its connections
  // several times while they run.
  void expectServedWithinOneSecond(int rounds) {
    ControlClient local(agent_->unixAddress());
    ControlClientOptions o;
    o.address = agent_->tcpAddress();
    o.munge_socket = munged_->socket();
    ControlClient remote(o);
    int64_t worst = 0;
    for (int i = 0; i < rounds; ++i) {
      auto t0 = Clock::now();
      ProcessResult ctl =
          runProcess({binaryPath("switchagg-ctl"), "--agent", agent_->unixAddress(), "status"});
      int64_t ms = msSince(t0);
      EXPECT_EQ(ctl.exit_code, 0) << ctl.err;
      EXPECT_LT(ms, 1000) << "switchagg-ctl status took " << ms << " ms";
      worst = std::max(worst, ms);

      const std::string job = "starve" + std::to_string(i);
      t0 = Clock::now();
      auto l = local.createLease(job, 1000, 1, 60);
      ms = msSince(t0);
      EXPECT_TRUE(l.ok()) << l.status().toString();
      EXPECT_LT(ms, 1000) << "unix lease create took " << ms << " ms";
      worst = std::max(worst, ms);
      EXPECT_TRUE(local.deleteLease(job).ok());

      t0 = Clock::now();
      auto r = remote.createLease(job + "r", 1000, 1, 60);
      ms = msSince(t0);
      EXPECT_TRUE(r.ok()) << r.status().toString();
      EXPECT_LT(ms, 1000) << "munge TCP lease create took " << ms << " ms";
      worst = std::max(worst, ms);
      EXPECT_TRUE(remote.deleteLease(job + "r").ok());
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    std::printf("worst request latency under attack: %lld ms\n", static_cast<long long>(worst));
  }

  // Waits (up to 10 s) until the agent has shed 150 connections for `reason`
  // on `listener`: the flood is real and the agent sees it.
  void waitForShed(const std::string& listener, const std::string& reason) {
    ControlClient local(agent_->unixAddress());
    const std::string name = "switchagg_control_shed_total{listener=\"" + listener +
                             "\",reason=\"" + reason + "\"}";
    auto t0 = Clock::now();
    while (metric(local, name) < 150 && msSince(t0) < 10000) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_GE(metric(local, name), 150u) << "the " << listener << " flood never reached the agent";
  }

  switchagg::testing::TempDir munge_dir_{"munge", 0755};  // other uids reach munged's socket
  std::unique_ptr<MungeDaemon> munged_;
  std::unique_ptr<AgentProcess> agent_;
};

TEST_F(ControlStarvation, TcpFloodDoesNotStarveTheUnixSocketOrMungeClients) {
  auto t0 = Clock::now();
  Flood flood(agent_->tcpAddress(), 200);
  ASSERT_NO_FATAL_FAILURE(waitForShed("tcp", "evicted_peer_limit"));
  ASSERT_TRUE(flood.running());
  expectServedWithinOneSecond(16);
  EXPECT_TRUE(flood.running());
  const std::string err = agent_->stderrText();
  size_t lines = count(err, "control: tcp connections over budget");
  EXPECT_GE(lines, 1u) << err;
  EXPECT_LE(lines, 1 + static_cast<size_t>(msSince(t0) / 10000) + 1) << "not rate-limited:\n" << err;
}

TEST_F(ControlStarvation, UnixFloodOfAnotherUserDoesNotStarveRoot) {
  Flood tcp(agent_->tcpAddress(), 200);
  Flood unix_flood(agent_->unixAddress(), 200);
  ASSERT_NO_FATAL_FAILURE(waitForShed("unix", "evicted_peer_limit"));
  expectServedWithinOneSecond(8);
  EXPECT_NE(agent_->stderrText().find("control: unix connections over budget"), std::string::npos);
}

}  // namespace
}  // namespace switchagg::testing
