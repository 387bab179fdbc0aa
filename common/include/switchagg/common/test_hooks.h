// Test-only fault points: variables the tests set to make a process fail on
// purpose at one exact point, which a real failure cannot hit reliably. Never
// for production; one table (listed by switchagg-info with the others, so a
// stray one in a job's environment shows) parses them for the coll
// component and the agent.
#pragma once

#include <cstdint>
#include <string>

#include "switchagg/common/config_table.h"

namespace switchagg {

// SWITCHAGG_TEST_CUT=RANK:CALL (runtime/switch_allreduce.cc, testCutNow):
// communicator rank RANK drops its agent group right after its
// one-round-trip call CALL succeeded, as if its connection had been cut.
struct TestCut {
  long rank = -1;  // -1: off
  unsigned long long call = 0;
};

// SWITCHAGG_TEST_EXIT_AFTER_SENDS=RANK:CALL (runtime/dispatch.cc): communicator
// rank RANK SIGKILLs itself inside its CALL-th host-algorithm allreduce on a
// communicator (1-based), once it has posted sends and one of its waits has
// completed (a peer is inside the call too): a peer dying mid-call, after
// its sends were posted. Same RANK:CALL form as TestCut.
using TestExitAfterSends = TestCut;

// SWITCHAGG_TEST_RECOVERY_KILL=RANK:CALL (runtime/switch_recovery_exchange.cc):
// communicator rank RANK SIGKILLs itself when its one-round-trip call CALL
// failed and its recovery starts, before it answers anyone: a member dying
// while the others recover that call (CALL 0: its first recovery). Same
// RANK:CALL form as TestCut.
using TestRecoveryKill = TestCut;

// SWITCHAGG_TEST_RECOVERY_KILL_ASKED=RANK:CALL (runtime/switch_recovery_links.cc):
// communicator rank RANK SIGKILLs itself when it takes the first recovery
// question about call CALL (0: any call), before it answers it: an
// answerer dying after its asker's question reached it.
using TestRecoveryKillAsked = TestCut;

// SWITCHAGG_AGENT_TEST_FAULT (daemon/data_plane.cc; the engine's side is
// EngineConfig's test_* fields): what the agent does to its N-th chunk
// result.
struct AgentTestFault {
  enum class Kind { kNone, kPartial, kMiss, kLate, kRevoke, kWedge };
  static constexpr uint32_t kNoMember = UINT32_MAX;
  Kind kind = Kind::kNone;
  uint64_t result = 0;         // N >= 1
  bool exit = false;           // partial:N:exit
  uint32_t member = kNoMember;  // miss:N:M, late:N:M:MS
  int64_t late_ms = 0;         // late:N:M:MS; wedge:N:MS
  std::string text;            // as given, for the agent's "armed" line
};

struct TestHooks {
  TestCut cut;
  TestExitAfterSends exit_after_sends;
  TestRecoveryKill recovery_kill;
  TestRecoveryKillAsked recovery_kill_asked;
  // SWITCHAGG_TEST_RECOVERY_ASK_ALL (runtime/switch_recovery.cc): recover a
  // failed call by asking every member, the protocol before the exchange of
  // final outcomes (for a benchmark or test comparing both in one build).
  bool recovery_ask_all = false;
  AgentTestFault agent_fault;
};

const ConfigTable<TestHooks>& testHooksTable();

}  // namespace switchagg
