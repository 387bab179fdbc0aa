#include "test_data_harness.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "switchagg/agent/control_client.h"
#include "switchagg/common/reduce.h"

namespace switchagg::testing {

int64_t testNowMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

std::unique_ptr<Child> Child::spawn(const std::vector<std::string>& argv) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return nullptr;
  const pid_t pid = fork();
  if (pid < 0) return nullptr;
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  auto c = std::unique_ptr<Child>(new Child());
  c->pid_ = pid;
  c->fd_ = fds[0];
  return c;
}

Child::~Child() {
  if (exit_code_ < 0 && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (fd_ >= 0) close(fd_);
}

void Child::pump(int64_t timeout_ms) {
  if (fd_ < 0) return;
  pollfd p{fd_, POLLIN, 0};
  if (poll(&p, 1, static_cast<int>(std::max<int64_t>(timeout_ms, 0))) <= 0) return;
  char buf[4096];
  const ssize_t n = read(fd_, buf, sizeof buf);
  if (n > 0) {
    out_.append(buf, static_cast<size_t>(n));
  } else {
    close(fd_);
    fd_ = -1;
  }
}

bool Child::waitForOutput(const std::string& needle, int64_t timeout_ms) {
  const int64_t deadline = testNowMs() + timeout_ms;
  while (out_.find(needle) == std::string::npos) {
    if (fd_ < 0 || testNowMs() >= deadline) return false;
    pump(deadline - testNowMs());
  }
  return true;
}

int Child::wait(int64_t timeout_ms) {
  const int64_t deadline = testNowMs() + timeout_ms;
  while (exit_code_ < 0) {
    while (fd_ >= 0 && testNowMs() < deadline) pump(std::min<int64_t>(50, deadline - testNowMs()));
    int st = 0;
    const pid_t r = waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      exit_code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      break;
    }
    if (testNowMs() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return exit_code_;
}

void Child::kill(int sig) {
  if (exit_code_ < 0) ::kill(pid_, sig);
}

void DataAgentTest::startAgent(std::vector<std::string> sets) {
  // UCX prints warnings on stdout, where the fixture expects the ready line.
  setenv("UCX_LOG_LEVEL", "error", 0);
  AgentOptions o;
  o.sets = {"data.slot_bytes=4096", "data.member_timeout=3s", "pool.slots=64",
            "policy.max_slots_per_job=16", "policy.max_slots_per_user=64"};
  // SWITCHAGG_TEST_PLANE_THREADS=N runs every data-agent test on N
  // data-plane threads (the agent's default is one per core, at most 4).
  if (const char* n = std::getenv("SWITCHAGG_TEST_PLANE_THREADS"); n && *n)
    o.sets.push_back(std::string("data.plane_threads=") + n);
  o.sets.insert(o.sets.end(), sets.begin(), sets.end());
  o.tcp = false;
  auto a = AgentProcess::start(o);
  ASSERT_TRUE(a.ok()) << a.status().toString();
  agent_ = std::move(a.value());
  // A new agent process here listens on new ports (data.listen's port is
  // 0): leases it kept are reached at its data.listen, which serves any.
  lease_addresses_.clear();
}

void DataAgentTest::TearDown() {
  if (agent_) agent_->stop();
}

std::string DataAgentTest::createLease(const std::string& job, int slots, int64_t ttl_s) {
  agent::ControlClient c({agent_->unixAddress()});
  auto l = c.createLease(job, -1, slots, ttl_s);
  EXPECT_TRUE(l.ok()) << l.status().toString();
  if (!l.ok()) return std::string();
  lease_addresses_[l->token] = l->data_address;
  return l->token;
}

std::string allPairs() {
  std::string out;
  for (int d = 1; d <= kNumDtypes; ++d)
    for (int o = 1; o <= kNumOps; ++o)
      if (reduceSupported(static_cast<Dtype>(d), static_cast<Op>(o)))
        out += std::string(out.empty() ? "" : ",") + dtypeName(static_cast<Dtype>(d)) + "/" +
               opName(static_cast<Op>(o));
  return out;
}

std::string DataAgentTest::leaseAddress(const std::string& token) const {
  auto it = lease_addresses_.find(token);
  return it == lease_addresses_.end() ? agent_->dataAddress() : it->second;
}

bool DataAgentTest::deleteLease(const std::string& job) {
  agent::ControlClient c({agent_->unixAddress()});
  auto r = c.deleteLease(job);
  return r.ok() && *r;
}

nlohmann::json DataAgentTest::status() {
  agent::ControlClient c({agent_->unixAddress()});
  auto r = c.request("GET", "/v1/status");
  if (!r.ok() || r->http_status != 200) return nlohmann::json::object();
  return nlohmann::json::parse(r->body, nullptr, false);
}

void DataAgentTest::expectCounters(const std::vector<std::pair<std::string, int64_t>>& want) {
  const nlohmann::json s = status();
  for (const auto& [name, value] : want) EXPECT_EQ(s["counters"][name], value) << name;
}

nlohmann::json DataAgentTest::waitStatus(const std::function<bool(const nlohmann::json&)>& pred,
                                         int64_t timeout_ms) {
  const int64_t deadline = testNowMs() + timeout_ms;
  nlohmann::json s = status();
  while (!pred(s) && testNowMs() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    s = status();
  }
  return s;
}

std::vector<std::unique_ptr<Child>> DataAgentTest::startGroup(const MemberSpec& spec,
                                                               const std::string& address) {
  std::vector<std::unique_ptr<Child>> out;
  for (int r = 0; r < spec.size; ++r) {
    std::vector<std::string> argv = {binaryPath("test_data_member"),
                                     "--agent",
                                     address.empty() ? leaseAddress(spec.token) : address,
                                     "--token",
                                     spec.token,
                                     "--group",
                                     std::to_string(spec.group),
                                     "--size",
                                     std::to_string(spec.size),
                                     "--rank",
                                     std::to_string(r)};
    argv.insert(argv.end(), spec.extra.begin(), spec.extra.end());
    auto c = Child::spawn(argv);
    EXPECT_NE(c, nullptr);
    if (c) out.push_back(std::move(c));
  }
  return out;
}

void DataAgentTest::expectAllOk(std::vector<std::unique_ptr<Child>>& members, int64_t timeout_ms) {
  const int64_t deadline = testNowMs() + timeout_ms;
  for (size_t i = 0; i < members.size(); ++i) {
    const int rc = members[i]->wait(deadline - testNowMs());
    EXPECT_EQ(rc, 0) << "member " << i << ":\n" << members[i]->output();
    EXPECT_NE(members[i]->output().find("RESULT ok"), std::string::npos) << members[i]->output();
  }
}

}  // namespace switchagg::testing
