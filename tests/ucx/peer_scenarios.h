// Scenarios the test peer runs; see test_peer.cc for the line protocol.
#pragma once

#include <string>
#include <vector>

#include "switchagg/ucx/transport.h"

namespace switchagg::test {

struct PeerEnv {
  std::string scenario;
  int rank = 0;
  int size = 0;
  ucx::Worker* worker = nullptr;
};

void say(const std::string& line);
[[noreturn]] void fail(const std::string& why);
void check(const Status& st, const std::string& what);
// Prints ADDR, reads every rank's address back.
std::vector<std::vector<uint8_t>> exchange(const std::vector<uint8_t>& mine, int size);

void runScenario(const PeerEnv& env);
// Tagged PeerGroup scenarios (peer_scenarios_tag.cc).
void runMessages(const PeerEnv& env, ucx::PeerGroup& group);
void runAdmission(const PeerEnv& env, ucx::PeerGroup& group);
void runIdle(const PeerEnv& env, ucx::PeerGroup& group);
void runRevoke(const PeerEnv& env, ucx::PeerGroup& group);
// Listener / active-message scenarios (peer_scenarios_am.cc).
void runAm(const PeerEnv& env);
void runAmIdle(const PeerEnv& env);

}  // namespace switchagg::test
