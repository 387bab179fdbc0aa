#include "switchagg/common/test_hooks.h"

#include <cstdio>
#include <cstring>

namespace switchagg {
namespace {

Status parseCut(const std::string& key, const std::string& text, TestCut* cut) {
  TestCut c;
  if (std::sscanf(text.c_str(), "%ld:%llu", &c.rank, &c.call) != 2)
    return invalidValue(key, text, "expected RANK:CALL");
  *cut = c;
  return Status::Ok();
}

std::string printCut(const TestCut& cut) {
  return cut.rank < 0 ? std::string() : std::to_string(cut.rank) + ":" + std::to_string(cut.call);
}

Status parseAgentFault(const std::string& key, const std::string& text, AgentTestFault* fault) {
  using Kind = AgentTestFault::Kind;
  const char* s = text.c_str();
  AgentTestFault f;
  unsigned long long n = 0;
  unsigned member = 0;
  long long ms = 0;
  char tail[16] = {};
  bool valid = false;
  if (std::strncmp(s, "partial:", 8) == 0) {
    f.kind = Kind::kPartial;
    valid = std::sscanf(s, "partial:%llu%15s", &n, tail) >= 1 &&
            (!tail[0] || std::strcmp(tail, ":exit") == 0);
    f.exit = tail[0] != 0;
  } else if (std::strncmp(s, "miss:", 5) == 0) {
    f.kind = Kind::kMiss;
    valid = std::sscanf(s, "miss:%llu:%u%15s", &n, &member, tail) == 2 &&
            member != AgentTestFault::kNoMember;
    f.member = member;
  } else if (std::strncmp(s, "revoke:", 7) == 0) {
    f.kind = Kind::kRevoke;
    valid = std::sscanf(s, "revoke:%llu%15s", &n, tail) == 1;
  } else if (std::strncmp(s, "late:", 5) == 0) {
    f.kind = Kind::kLate;
    valid = std::sscanf(s, "late:%llu:%u:%lld%15s", &n, &member, &ms, tail) == 3 &&
            member != AgentTestFault::kNoMember && ms > 0;
    f.member = member;
    f.late_ms = ms;
  } else if (std::strncmp(s, "wedge:", 6) == 0) {
    f.kind = Kind::kWedge;
    valid = std::sscanf(s, "wedge:%llu:%lld%15s", &n, &ms, tail) == 2 && ms > 0;
    f.late_ms = ms;
  }
  if (!valid || n == 0)
    return invalidValue(key, text,
                        "expected partial:N[:exit], miss:N:M, late:N:M:MS, revoke:N or "
                        "wedge:N:MS (N >= 1: the N-th chunk result; M: the member it is not sent "
                        "to, or sent MS > 0 ms late; revoke: its lease revoked after it; wedge: "
                        "its data-plane thread blocks MS ms after it)");
  f.result = n;
  f.text = text;
  *fault = f;
  return Status::Ok();
}

}  // namespace

const ConfigTable<TestHooks>& testHooksTable() {
  using H = TestHooks;
  static const ConfigTable<H> t({
      {"test.cut", "SWITCHAGG_TEST_CUT",
       "test only: RANK:CALL makes communicator rank RANK drop its agent group right after its "
       "one-round-trip call CALL succeeded, as if its connection had been cut (once per "
       "process; a bad value: off)",
       parsedField<H, TestCut>(&H::cut, ConfigKind::kString, parseCut, printCut)},
      {"test.exit_after_sends", "SWITCHAGG_TEST_EXIT_AFTER_SENDS",
       "test only: RANK:CALL makes communicator rank RANK SIGKILL itself inside its CALL-th "
       "host-algorithm allreduce (1-based), after it posted its sends and one wait completed, "
       "as a peer dying mid-call would (a bad value: off)",
       parsedField<H, TestExitAfterSends>(&H::exit_after_sends, ConfigKind::kString, parseCut,
                                          printCut)},
      {"test.recovery_kill", "SWITCHAGG_TEST_RECOVERY_KILL",
       "test only: RANK:CALL makes communicator rank RANK SIGKILL itself when the recovery of "
       "its failed one-round-trip call CALL (0: its first) starts, before it answers anyone (a "
       "bad value: off)",
       parsedField<H, TestRecoveryKill>(&H::recovery_kill, ConfigKind::kString, parseCut,
                                        printCut)},
      {"test.recovery_kill_asked", "SWITCHAGG_TEST_RECOVERY_KILL_ASKED",
       "test only: RANK:CALL makes communicator rank RANK SIGKILL itself when it takes the "
       "first recovery question about call CALL (0: any), before it answers it (a bad value: "
       "off)",
       parsedField<H, TestRecoveryKillAsked>(&H::recovery_kill_asked, ConfigKind::kString,
                                             parseCut, printCut)},
      {"test.recovery_ask_all", "SWITCHAGG_TEST_RECOVERY_ASK_ALL",
       "test only: 1 makes a member whose switch-path call failed ask every other member "
       "instead of running the exchange of final outcomes (the protocol before it)",
       boolField(&H::recovery_ask_all)},
      {"test.agent_fault", "SWITCHAGG_AGENT_TEST_FAULT",
       "test only: partial:N[:exit], miss:N:M, late:N:M:MS, revoke:N or wedge:N:MS makes the agent "
       "mishandle its N-th chunk result (docs/admin.md); the agent refuses a bad value",
       parsedField<H, AgentTestFault>(&H::agent_fault, ConfigKind::kString, parseAgentFault,
                                      [](const AgentTestFault& f) { return f.text; })},
  });
  return t;
}

}  // namespace switchagg
