// Multi-process harness for the data-plane tests: a real switchagg-agent
// (AgentProcess), leases through the real control API, and group members as
// real test_data_member processes whose output and exit codes we check.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent_fixture.h"

namespace switchagg::testing {

// One child process with its stdout+stderr captured.
class Child {
 public:
  static std::unique_ptr<Child> spawn(const std::vector<std::string>& argv);
  ~Child();  // SIGKILLs and reaps if still running
  // Reads output until `needle` appears or timeout; true if it appeared.
  bool waitForOutput(const std::string& needle, int64_t timeout_ms);
  // Waits for exit; returns the exit code, 128+signal, or -1 on timeout.
  int wait(int64_t timeout_ms);
  void kill(int sig);
  const std::string& output() const { return out_; }
  pid_t pid() const { return pid_; }

 private:
  void pump(int64_t timeout_ms);
  pid_t pid_ = -1;
  int fd_ = -1;
  int exit_code_ = -1;
  std::string out_;
};

struct MemberSpec {
  uint64_t group = 1;
  int size = 1;
  std::string token;
  std::vector<std::string> extra;  // more test_data_member flags
};

class DataAgentTest : public ::testing::Test {
 protected:
  // Starts the agent with small slots so vectors span many chunks.
  void startAgent(std::vector<std::string> sets = {});
  void TearDown() override;
  std::string createLease(const std::string& job, int slots, int64_t ttl_s = 600);
  // The data_address the agent gave the lease with this token (its home
  // data-plane thread's); the agent's data.listen for a token not created here.
  std::string leaseAddress(const std::string& token) const;
  bool deleteLease(const std::string& job);
  nlohmann::json status();
  // The agent's status counters hold these values (name, value).
  void expectCounters(const std::vector<std::pair<std::string, int64_t>>& want);
  // Starts `spec.size` members (ranks 0..size-1).
  // `address`: where they connect; "" = the lease's data_address (its home
  // data-plane thread).
  std::vector<std::unique_ptr<Child>> startGroup(const MemberSpec& spec,
                                                 const std::string& address = "");
  // Waits for every member; expects exit 0 and "RESULT ok"; returns outputs.
  void expectAllOk(std::vector<std::unique_ptr<Child>>& members, int64_t timeout_ms);
  // Polls /v1/status until pred(status) or timeout; returns the last status.
  nlohmann::json waitStatus(const std::function<bool(const nlohmann::json&)>& pred,
                            int64_t timeout_ms);

  std::unique_ptr<AgentProcess> agent_;
  std::map<std::string, std::string> lease_addresses_;  // token -> data_address
};

int64_t testNowMs();
// Every (dtype, op) the agent advertises, as test_data_member --pairs.
std::string allPairs();

}  // namespace switchagg::testing
