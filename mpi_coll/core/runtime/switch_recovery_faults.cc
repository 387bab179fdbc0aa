// The recovery's test fault points (switch_recovery_state.h, test_hooks.h;
// never set in production): ask every member instead of the exchange, and
// a member SIGKILLed as its recovery starts or as it takes a question.
#include <chrono>
#include <csignal>
#include <cstdio>

#include "switch_recovery_state.h"
#include "switchagg/common/test_hooks.h"

namespace switchagg::coll::recovery {

bool askAllForced() {
  static const bool forced = [] {
    TestHooks hooks;
    (void)testHooksTable().applyEnvironment(hooks, "test.recovery_ask_all");  // bad: off
    return hooks.recovery_ask_all;
  }();
  return forced;
}

namespace {

// A test fault point of the RANK:CALL form (CALL 0: the first): SIGKILL
// once, saying so with the wall-clock time for the runner to measure from.
void killOnce(const TestCut& want, bool* fired, const char* variable, const char* what,
              const char* after, int rank, uint64_t call) {
  if (*fired || want.rank != rank || (want.call != 0 && want.call != call)) return;
  *fired = true;
  std::fprintf(stderr,
               "switchagg[coll] warning: test fault point %s: rank %d killed %s call %llu%s "
               "(at %lld ms)\n",
               variable, rank, what, static_cast<unsigned long long>(call), after,
               static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count()));
  std::fflush(stderr);
  std::raise(SIGKILL);
}

TestCut hookOf(const char* key, TestCut TestHooks::*field) {
  TestHooks hooks;
  (void)testHooksTable().applyEnvironment(hooks, key);  // bad: off
  return hooks.*field;
}

}  // namespace

void testKillAtRecovery(int rank, uint64_t call) {
  static const TestCut want = hookOf("test.recovery_kill", &TestHooks::recovery_kill);
  static bool fired = false;
  killOnce(want, &fired, "SWITCHAGG_TEST_RECOVERY_KILL", "as its recovery of",
           " starts", rank, call);
}

void testKillWhenAsked(int rank, uint64_t call) {
  static const TestCut want = hookOf("test.recovery_kill_asked", &TestHooks::recovery_kill_asked);
  static bool fired = false;
  killOnce(want, &fired, "SWITCHAGG_TEST_RECOVERY_KILL_ASKED", "asked about", "",
           rank, call);
}

}  // namespace switchagg::coll::recovery
