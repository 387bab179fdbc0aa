#include "plugin_state.h"

#include <functional>
#include <vector>

#include "spank_log.h"

namespace switchagg::spank {
namespace {

constexpr int kModeOptionVal = 1;
constexpr int kSlotsOptionVal = 2;
constexpr int kReducersOptionVal = 3;

// Option callbacks see only their argument: they validate against the
// configuration loaded by slurm_spank_init in this process, and keep the
// value in `field` when `check` accepts it.
int keepOption(const char* optarg, int remote,
               const std::function<Status(const std::string&)>& check,
               std::optional<std::string> PluginState::*field) {
  std::string value = optarg != nullptr ? optarg : "";
  const Status st = check(value);
  if (!st.ok()) {
    if (!remote) logError("%s", st.message().c_str());
    return -1;
  }
  state().*field = value;
  return 0;
}

int onModeOption(int /*val*/, const char* optarg, int remote) {
  return keepOption(
      optarg, remote, [](const std::string& v) { return parseMode("--switch-agg", v).status(); },
      &PluginState::option_mode);
}

int onSlotsOption(int /*val*/, const char* optarg, int remote) {
  return keepOption(
      optarg, remote,
      [](const std::string& v) {
        return parseSlots("--switch-agg-slots", v, configOrDefaults().max_slots).status();
      },
      &PluginState::option_slots);
}

int onReducersOption(int /*val*/, const char* optarg, int remote) {
  return keepOption(
      optarg, remote,
      [](const std::string& v) { return parseReducers("--switch-agg-reducers", v).status(); },
      &PluginState::option_reducers);
}

// spank_option wants mutable C strings that outlive the plugin's use.
struct OptionText {
  std::string mode_usage, slots_usage;
};
OptionText& optionText() {
  static OptionText text;
  return text;
}

char kModeName[] = "switch-agg";
char kModeArg[] = "off|auto|require";
char kSlotsName[] = "switch-agg-slots";
char kSlotsArg[] = "N";
char kReducersName[] = "switch-agg-reducers";
char kReducersArg[] = "K";
char kReducersUsage[] = "reducer hosts of the nodes' pool (default: site's)";

// Slurm keeps pointers to these (registration and spank_option_getopt's
// cache), so they live as long as the plugin.
spank_option* modeOption() {
  static spank_option opt = {kModeName, kModeArg,       optionText().mode_usage.data(),
                             1,         kModeOptionVal, onModeOption};
  return &opt;
}
spank_option* slotsOption() {
  static spank_option opt = {kSlotsName, kSlotsArg,       optionText().slots_usage.data(),
                             1,          kSlotsOptionVal, onSlotsOption};
  return &opt;
}

spank_option* reducersOption() {
  static spank_option opt = {kReducersName,      kReducersArg,    kReducersUsage, 1,
                             kReducersOptionVal, onReducersOption};
  return &opt;
}

std::optional<std::string> getOption(spank_t sp, spank_option* opt,
                                     const std::optional<std::string>& stored) {
  char* arg = nullptr;
  if (spank_option_getopt(sp, opt, &arg) == ESPANK_SUCCESS && arg != nullptr) {
    return std::string(arg);
  }
  return stored;
}

}  // namespace

PluginState& state() {
  static PluginState s;
  return s;
}

bool loadConfig(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = 0; i < argc; ++i) args.emplace_back(argv[i] != nullptr ? argv[i] : "");
  bool was_broken = !state().config.ok();
  state().config = parsePluginArgs(args);
  if (!state().config.ok() && !was_broken) {
    logError("plugstack.conf: %s; switch aggregation is disabled until the line is fixed",
             state().config.status().message().c_str());
  }
  return state().config.ok();
}

const PluginConfig& configOrDefaults() {
  static const PluginConfig defaults;
  return state().config.ok() ? state().config.value() : defaults;
}

agent::ApiFailure configProblem() {
  return {agent::ApiError::kConfig, "plugstack.conf: " + state().config.status().message()};
}

int registerOptions(spank_t sp) {
  const PluginConfig& c = configOrDefaults();
  OptionText& text = optionText();
  // One line each in --help: Slurm wraps usage text after ~48 characters.
  text.mode_usage =
      std::string("auto=if available; require=or fail; default ") + modeName(c.default_mode);
  text.slots_usage = "switch slots to reserve, 1-" + std::to_string(c.max_slots) + " (default " +
                     (c.default_slots > 0 ? std::to_string(c.default_slots) : "agent's") + ")";
  modeOption()->usage = text.mode_usage.data();
  slotsOption()->usage = text.slots_usage.data();
  for (spank_option* opt : {modeOption(), slotsOption(), reducersOption()}) {
    spank_err_t rc = spank_option_register(sp, opt);
    if (rc != ESPANK_SUCCESS) {
      logError("cannot register --%s: %s", opt->name, spank_strerror(rc));
      return -1;
    }
  }
  return 0;
}

std::optional<std::string> getModeOption(spank_t sp) {
  return getOption(sp, modeOption(), state().option_mode);
}

std::optional<std::string> getSlotsOption(spank_t sp) {
  return getOption(sp, slotsOption(), state().option_slots);
}

std::optional<std::string> getReducersOption(spank_t sp) {
  return getOption(sp, reducersOption(), state().option_reducers);
}

std::optional<std::string> stepEnv(spank_t sp, const char* name) {
  char buf[256];
  if (spank_getenv(sp, name, buf, sizeof(buf)) != ESPANK_SUCCESS || buf[0] == '\0') {
    return std::nullopt;
  }
  return std::string(buf);
}

}  // namespace switchagg::spank
