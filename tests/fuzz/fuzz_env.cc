// libFuzzer target: SWITCHAGG_* environment values, as every part reads them
// (config_table.h: ConfigTable::applyEnvironment over each table with
// variables: the PMPI library's, the switch path's, the process's, logging,
// test hooks, the control client's, malloc tuning, the job's environment
// and the agent's; the UCX transport's and RoCE's, read whole). The input
// is NAME=value (up to a NUL), as a shell would export it; a NAME that is
// no variable picks one by its bytes. Properties checked beyond "no crash /
// no sanitizer report":
//  * a refused value says why, naming the variable;
//  * an accepted value of a table's key prints (the --print-config /
//    switchagg-info form) to text the same key accepts again and prints
//    alike (a round trip), and the key's default text is accepted too.
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "agent_config.h"
#include "fuzz_check.h"
#include "switchagg/agent/control_client.h"
#include "switchagg/agent/job_environment.h"
#include "switchagg/agent/malloc_tuning.h"
#include "switchagg/coll/pmpi_params.h"
#include "switchagg/coll/process_settings.h"
#include "switchagg/coll/switch_settings.h"
#include "switchagg/common/config_table.h"
#include "switchagg/common/log_config.h"
#include "switchagg/common/test_hooks.h"
#include "switchagg/ucx/roce_profile.h"
#include "switchagg/ucx/transport.h"

using switchagg::fuzz::check;
using namespace switchagg;

namespace {

using Variable = std::function<void(const std::string& value)>;
using Variables = std::vector<std::pair<std::string, Variable>>;

template <typename T>
void tryValue(const ConfigTable<T>& table, size_t index, const std::string& value) {
  const ConfigKey<T>& k = table.keys()[index];
  T config{};
  check(setenv(k.env, value.c_str(), 1) == 0);
  const Status st = table.applyEnvironment(config, k.name);
  unsetenv(k.env);
  if (!st.ok()) {
    check(st.message().find(k.env) != std::string::npos);
    return;
  }
  const std::string printed = k.get(config);
  T again{};
  const Status st2 = k.set(k.env, again, printed);
  check(st2.ok() || printed.empty());  // an empty string prints as nothing
  if (st2.ok()) check(k.get(again) == printed);
  T fresh{};
  check(k.defaultText().empty() || k.set(k.env, fresh, k.defaultText()).ok());
}

template <typename T>
void addTable(const ConfigTable<T>& table, Variables* vars) {
  for (size_t i = 0; i < table.keys().size(); ++i)
    if (table.keys()[i].env)
      vars->push_back({table.keys()[i].env,
                       [&table, i](const std::string& value) { tryValue(table, i, value); }});
}

// A variable read with all of its part's (no printer): refused or not.
template <typename F>
void addWhole(const std::vector<ConfigDoc>& docs, F read, Variables* vars) {
  for (const ConfigDoc& d : docs) {
    if (!d.env) continue;
    const std::string env = d.env;
    vars->push_back({env, [env, read](const std::string& value) {
                       check(setenv(env.c_str(), value.c_str(), 1) == 0);
                       const Status st = read();
                       unsetenv(env.c_str());
                       check(st.ok() || st.message().find(env) != std::string::npos);
                     }});
  }
}

const Variables& variables() {
  static const Variables vars = [] {
    Variables v;
    addTable(coll::pmpiParamsTable(), &v);
    addTable(coll::switchSettingsTable(), &v);
    addTable(coll::processSettingsTable(), &v);
    addTable(logSettingsTable(), &v);
    addTable(testHooksTable(), &v);
    addTable(agent::controlEnvironmentTable(), &v);
    addTable(agent::mallocTuningTable(), &v);
    addTable(agent::jobEnvironmentTable(), &v);
    addTable(agent::agentConfigTable(), &v);
    addWhole(ucx::roceOptionTable(), [] { return ucx::roceOptionsFromEnvironment().status(); }, &v);
    std::vector<ConfigDoc> transport;
    for (const ConfigDoc& d : ucx::transportOptionTable())
      if (d.env && std::string(d.env).rfind("SWITCHAGG_ROCE_", 0) != 0) transport.push_back(d);
    addWhole(transport, [] { return ucx::TransportOptions::fromEnvironment().status(); }, &v);
    return v;
  }();
  return vars;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  const Variables& vars = variables();
  std::string text(reinterpret_cast<const char*>(data), size);
  text = text.substr(0, text.find('\0'));  // a variable's value ends at a NUL
  const size_t eq = text.find('=');
  const std::string name = text.substr(0, eq);
  const std::string value = eq == std::string::npos ? "" : text.substr(eq + 1);
  for (const auto& [env, run] : vars) {
    if (env == name) return run(value), 0;
  }
  const size_t pick = std::accumulate(name.begin(), name.end(), size_t(0),
                                      [](size_t a, char c) { return a * 31 + uint8_t(c); });
  vars[pick % vars.size()].second(value);
  return 0;
}
