// The agent's test-only fault point (SWITCHAGG_AGENT_TEST_FAULT, docs/admin.md):
// parsed once per data-plane thread into its engine's config.
#include "aggregation_engine.h"
#include "data_thread.h"
#include "switchagg/common/log.h"
#include "switchagg/common/test_hooks.h"

namespace switchagg::agent {

Status armTestFault(EngineConfig& ec) {
  static_assert(AgentTestFault::kNoMember == EngineConfig::kNoMissMember);
  TestHooks hooks;  // a bad value stops the agent, naming the variable
  SWITCHAGG_RETURN_IF_ERROR(testHooksTable().applyEnvironment(hooks, "test.agent_fault"));
  const AgentTestFault& f = hooks.agent_fault;
  if (f.kind == AgentTestFault::Kind::kNone) return Status::Ok();
  ec.test_partial_result = f.result;
  ec.test_partial_exit = f.exit;
  ec.test_miss_member = f.member;
  ec.test_late_ms = f.kind == AgentTestFault::Kind::kLate ? f.late_ms : 0;
  ec.test_wedge_ms = f.kind == AgentTestFault::Kind::kWedge ? f.late_ms : 0;
  ec.test_revoke = f.kind == AgentTestFault::Kind::kRevoke;
  SA_WARN("agent", "test fault armed: %s", f.text.c_str());
  return Status::Ok();
}

}  // namespace switchagg::agent
