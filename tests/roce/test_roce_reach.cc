// Does each RoCE knob reach the transport configuration UCX really uses?
// UCX 1.13 silently ignores a ucp_config_modify key that no transport table
// matches (IB_GID_INDEX, TCP_SNDBUF), so reading back the ucp_config_t cache
// proves nothing. Here every expectation is checked against configs built
// the way UCX builds them for rc/dc/ud on mlx5 and verbs (uct_config_read:
// defaults + environment, then uct_config_modify of each cached key), using
// UCX's own parser and print functions, independent of the library's walker.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "switchagg/ucx/roce_profile.h"
#include "switchagg/ucx/ucp_config.h"

namespace switchagg::ucx {
namespace {

const char* const kIbTransports[] = {"rc_mlx5", "rc_verbs", "dc_mlx5", "ud_mlx5", "ud_verbs"};
const char* const kUserVars[] = {"UCX_RC_MLX5_SL", "UCX_IB_SL", "UCX_UD_SL", "UCX_RC_TIMEOUT",
                                 "UCX_IB_GID_INDEX"};

const ucs_config_global_list_entry_t* tableNamed(const std::string& name) {
  loadUcxTransportModules();
  const ucs_config_global_list_entry_t* found = nullptr;
  forEachUcxConfigTable([&](const ucs_config_global_list_entry_t* e) {
    if (name == e->name) found = e;
  });
  return found;
}

// uct_config_read + uct_config_modify(cached...) + what `ucx_info -c` would
// print for that config: {UCX_RC_MLX5_SL: "3", ...}.
std::map<std::string, std::string> uctView(
    const std::string& table, const std::vector<std::pair<std::string, std::string>>& cached) {
  const ucs_config_global_list_entry_t* e = tableNamed(table);
  EXPECT_NE(e, nullptr) << "UCX has no '" << table << "' table";
  if (e == nullptr) return {};
  std::unique_ptr<void, decltype(&std::free)> opts(std::calloc(1, e->size), &std::free);
  EXPECT_EQ(ucs_config_parser_fill_opts(opts.get(), e->table, "UCX_", e->prefix, 0), UCS_OK);
  for (const auto& [k, v] : cached)
    ucs_config_parser_set_value(opts.get(), e->table, k.c_str(), v.c_str());
  char* buf = nullptr;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  ucs_config_parser_print_opts(f, "", opts.get(), e->table, e->prefix, "UCX_",
                               UCS_CONFIG_PRINT_CONFIG);
  std::fclose(f);
  ucs_config_parser_release_opts(opts.get(), e->table);
  std::map<std::string, std::string> out;
  std::istringstream lines(std::string(buf, len));
  std::free(buf);
  for (std::string line; std::getline(lines, line);) {
    const size_t eq = line.find('=');
    if (line.rfind("UCX_", 0) == 0 && eq != std::string::npos)
      out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

class RoceReach : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kUserVars) unsetenv(v);
    ASSERT_EQ(ucp_config_read(nullptr, nullptr, &config_), UCS_OK);
  }
  void TearDown() override {
    ucp_config_release(config_);
    for (const char* v : kUserVars) unsetenv(v);
  }
  // Every knob away from UCX's default, so an ignored key shows.
  static RoceProfile fullProfile() {
    RoceOptions o;
    o.sysfs_root = std::string(SWITCHAGG_ROCE_SYSFS_DIR) + "/mixed_v1_v2";
    o.ecn = true;
    o.num_paths = 2;
    o.path_factor = 2;
    o.rc_retry_count = 6;
    auto p = resolveProfile(o);
    EXPECT_TRUE(p.ok()) << p.status().toString();
    return p.ok() ? *p : RoceProfile{};
  }
  std::map<std::string, std::string> view(const std::string& table) {
    return uctView(table, cachedTransportKeys(config_));
  }
  ucp_config_t* config_ = nullptr;
};

// The test that would have caught a RoCE profile that is a no-op: after
// applyProfile, the configs UCX builds for rc/dc/ud (mlx5 and verbs) and the
// IB memory domain hold every value of the profile.
TEST_F(RoceReach, EveryKnobReachesEveryIbTransport) {
  RoceProfile p = fullProfile();
  ASSERT_GT(p.path_mtu, 0);
  ASSERT_TRUE(applyProfile(config_, p).ok());
  EXPECT_EQ(view("IB memory domain")["UCX_IB_GID_INDEX"], "3");
  for (const char* tl : kIbTransports) {
    const std::string t(tl);
    const std::string pre = "UCX_" + upper(t) + "_";
    auto v = view(t + " transport");
    EXPECT_EQ(v[pre + "SL"], "3") << t;
    EXPECT_EQ(v[pre + "TRAFFIC_CLASS"], "106") << t;
    EXPECT_EQ(v[pre + "PATH_MTU"], std::to_string(p.path_mtu)) << t;
    EXPECT_EQ(v[pre + "ROCE_PATH_FACTOR"], "2") << t;
    EXPECT_EQ(v[pre + "NUM_PATHS"], "2") << t;
    if (t.rfind("ud_", 0) != 0) {  // RC_ keys: rc_* and dc (DC embeds the RC table)
      EXPECT_EQ(v[pre + "TIMEOUT"], "4000000.00us") << t;
      EXPECT_EQ(v[pre + "RETRY_COUNT"], "6") << t;
    }
    if (t.find("mlx5") != std::string::npos) {
      EXPECT_EQ(v[pre + "AR_ENABLE"], "try") << t;
    }
  }
}

// What the library reports (switchagg-info) is the same view.
TEST_F(RoceReach, EffectiveConfigMatchesUcxsOwnView) {
  RoceProfile p = fullProfile();
  ASSERT_TRUE(applyProfile(config_, p).ok());
  std::vector<std::string> keys;
  for (const auto& kv : p.ucx_settings) keys.push_back(kv.first);
  auto eff = effectiveTransportConfig(config_, keys);
  ASSERT_TRUE(eff.ok()) << eff.status().toString();
  std::map<std::string, int> per_table;
  for (const UcxEffectiveValue& e : *eff) {
    EXPECT_EQ(view(e.table)[e.name], e.value) << e.name;
    EXPECT_EQ(e.source.rfind("profile ", 0), 0u) << e.name << " " << e.source;
    per_table[e.table]++;
  }
  for (const char* tl : kIbTransports)
    EXPECT_GE(per_table[std::string(tl) + " transport"], 5) << tl;
  EXPECT_EQ(per_table["IB memory domain"], 1);
}

// The spellings UCX 1.13 ignores through ucp_config_modify are rejected, and
// would indeed change nothing.
TEST_F(RoceReach, PrefixedMemoryDomainKeysAreRejected) {
  for (const char* key : {"IB_GID_INDEX", "TCP_SNDBUF", "RC_MLX5_SL", "UD_VERBS_TIMEOUT"}) {
    EXPECT_TRUE(fieldsReachedBy(key).empty()) << key;
    EXPECT_EQ(checkUcxSetting(key, "3").code(), Code::kInvalidArgument) << key;
  }
  auto before = uctView("IB memory domain", {});
  EXPECT_EQ(uctView("IB memory domain", {{"IB_GID_INDEX", "3"}}), before);
  EXPECT_EQ(uctView("IB memory domain", {{"GID_INDEX", "3"}})["UCX_IB_GID_INDEX"], "3");
}

// The library's model of UCX's name matching, checked field by field
// against UCX's parser for every IB, tcp and shared-memory table.
TEST_F(RoceReach, FieldNamesAgreeWithUcxParser) {
  int checked = 0;
  for (const UcxField& f : ucxConfigFields()) {
    if (f.consumed_by_ucp) continue;
    const ucs_config_global_list_entry_t* e = f.entry;
    std::unique_ptr<void, decltype(&std::free)> opts(std::calloc(1, e->size), &std::free);
    ASSERT_EQ(ucs_config_parser_fill_opts(opts.get(), e->table, "SA_NOENV_", e->prefix, 0), UCS_OK);
    char dfl[256] = "";
    f.field->parser.write(dfl, sizeof(dfl) - 1, static_cast<char*>(opts.get()) + f.offset,
                          f.field->parser.arg);
    for (const std::string& m : f.modify_names) {
      EXPECT_EQ(ucs_config_parser_set_value(opts.get(), e->table, m.c_str(), dfl), UCS_OK)
          << f.table << ": " << m;
    }
    const std::string own = f.name.substr(4);  // the table's own prefix + field
    if (std::find(f.modify_names.begin(), f.modify_names.end(), own) == f.modify_names.end()) {
      EXPECT_EQ(ucs_config_parser_set_value(opts.get(), e->table, own.c_str(), dfl),
                UCS_ERR_NO_ELEM)
          << f.table << ": " << own;
    }
    ucs_config_parser_release_opts(opts.get(), e->table);
    ++checked;
  }
  EXPECT_GT(checked, 300);
}

// A user's variable for one transport wins there; the others still get the
// profile's value through keys that do not reach the user's transport.
TEST_F(RoceReach, UserTransportVariableWinsOnlyWhereItApplies) {
  setenv("UCX_RC_MLX5_SL", "5", 1);
  RoceProfile p = fullProfile();
  ASSERT_TRUE(applyProfile(config_, p).ok());
  std::map<std::string, std::string> applied(p.applied.begin(), p.applied.end());
  EXPECT_EQ(applied.count("IB_SL"), 0u);
  EXPECT_EQ(applied.count("RC_SL"), 0u);
  EXPECT_EQ(applied["UD_SL"], "3");
  EXPECT_EQ(applied["DC_SL"], "3");
  ASSERT_EQ(p.left_to_user.size(), 1u);
  EXPECT_EQ(p.left_to_user[0], std::make_pair(std::string("RC_MLX5_SL"), std::string("5")));
  EXPECT_EQ(view("rc_mlx5 transport")["UCX_RC_MLX5_SL"], "5");
  EXPECT_EQ(view("dc_mlx5 transport")["UCX_DC_MLX5_SL"], "3");
  EXPECT_EQ(view("ud_mlx5 transport")["UCX_UD_MLX5_SL"], "3");
  EXPECT_EQ(view("ud_verbs transport")["UCX_UD_VERBS_SL"], "3");
  // rc_verbs shares every modify key with rc_mlx5 (RC_SL, IB_SL): UCX's own.
  EXPECT_EQ(view("rc_verbs transport")["UCX_RC_VERBS_SL"], "auto");
  // The other knobs are untouched by the user's SL.
  EXPECT_EQ(view("rc_mlx5 transport")["UCX_RC_MLX5_TRAFFIC_CLASS"], "106");
}

// UCX reads UCX_UD_SL for both ud transports and UCX_RC_TIMEOUT for rc and
// dc: the profile leaves exactly those and still sets the rest.
TEST_F(RoceReach, FamilyVariablesWin) {
  setenv("UCX_UD_SL", "1", 1);
  setenv("UCX_RC_TIMEOUT", "2s", 1);
  RoceProfile p = fullProfile();
  ASSERT_TRUE(applyProfile(config_, p).ok());
  std::map<std::string, std::string> applied(p.applied.begin(), p.applied.end());
  EXPECT_EQ(applied["RC_SL"], "3");
  EXPECT_EQ(applied.count("RC_TIMEOUT"), 0u);
  std::map<std::string, std::string> left(p.left_to_user.begin(), p.left_to_user.end());
  EXPECT_EQ(left["UD_SL"], "1");
  EXPECT_EQ(left["RC_TIMEOUT"], "2s");
  for (const char* tl : kIbTransports) {
    const std::string t(tl), pre = "UCX_" + upper(t) + "_";
    auto v = view(t + " transport");
    EXPECT_EQ(v[pre + "SL"], t.rfind("ud_", 0) == 0 ? "1" : "3") << t;
    if (t.rfind("ud_", 0) != 0) {
      EXPECT_EQ(v[pre + "TIMEOUT"], "2000000.00us") << t;
    }
  }
}

// `ucx_info -c -f` (the installed UCX's own tool) as {section: {variables}},
// e.g. {"rc_mlx5 transport": {"UCX_RC_MLX5_SL", ...}}.
std::map<std::string, std::set<std::string>> ucxInfoSections() {
  std::map<std::string, std::set<std::string>> sections;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen("ucx_info -c -f 2>/dev/null", "r"), pclose);
  if (!pipe) return sections;
  std::string text;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), pipe.get())) > 0;) text.append(buf, n);
  std::istringstream lines(text);
  const std::string tail = " configuration";
  std::string current;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("# ", 0) == 0 && line.size() > tail.size() + 2 &&
        line.compare(line.size() - tail.size(), tail.size(), tail) == 0 &&
        line.find("UCX library") == std::string::npos) {
      current = line.substr(2, line.size() - 2 - tail.size());
    } else if (line.rfind("UCX_", 0) == 0 && line.find('=') != std::string::npos) {
      sections[current].insert(line.substr(0, line.find('=')));
    }
  }
  return sections;
}

// Independent oracle for the names: every key the profile emits lands on
// variables that ucx_info lists in the right table, on every IB transport
// that has the field.
TEST_F(RoceReach, EmittedKeysLandOnVariablesUcxInfoLists) {
  auto sections = ucxInfoSections();
  ASSERT_GT(sections.size(), 8u) << "ucx_info (package ucx-utils) must be installed";
  const std::map<std::string, std::set<std::string>> expected = {
      {"GID_INDEX", {"IB memory domain"}},
      {"IB_TRAFFIC_CLASS", {"rc_mlx5", "rc_verbs", "dc_mlx5", "ud_mlx5", "ud_verbs"}},
      {"IB_SL", {"rc_mlx5", "rc_verbs", "dc_mlx5", "ud_mlx5", "ud_verbs"}},
      {"IB_PATH_MTU", {"rc_mlx5", "rc_verbs", "dc_mlx5", "ud_mlx5", "ud_verbs"}},
      {"IB_ROCE_PATH_FACTOR", {"rc_mlx5", "rc_verbs", "dc_mlx5", "ud_mlx5", "ud_verbs"}},
      {"IB_NUM_PATHS", {"rc_mlx5", "rc_verbs", "dc_mlx5", "ud_mlx5", "ud_verbs"}},
      {"RC_TIMEOUT", {"rc_mlx5", "rc_verbs", "dc_mlx5"}},
      {"RC_RETRY_COUNT", {"rc_mlx5", "rc_verbs", "dc_mlx5"}},
      {"IB_AR_ENABLE", {"rc_mlx5", "dc_mlx5", "ud_mlx5"}},
      {"NET_DEVICES", {"UCP context"}},
  };
  RoceProfile p = fullProfile();
  ASSERT_EQ(p.ucx_settings.size(), expected.size());
  for (const auto& [key, value] : p.ucx_settings) {
    ASSERT_EQ(expected.count(key), 1u) << "unexpected key " << key;
    std::set<std::string> reached;
    for (const UcxField* f : fieldsReachedBy(key)) {
      EXPECT_EQ(sections[f->table].count(f->name), 1u) << key << " -> " << f->name;
      const std::string t = f->table;
      reached.insert(t.size() > 10 && t.compare(t.size() - 10, 10, " transport") == 0
                         ? t.substr(0, t.size() - 10)
                         : t);
    }
    EXPECT_EQ(reached, expected.at(key)) << key;
  }
  // The spellings UCX ignores reach nothing, though ucx_info lists them.
  EXPECT_EQ(sections["IB memory domain"].count("UCX_IB_GID_INDEX"), 1u);
  EXPECT_TRUE(fieldsReachedBy("IB_GID_INDEX").empty());
  EXPECT_EQ(sections["rc_mlx5 transport"].count("UCX_RC_MLX5_SL"), 1u);
  EXPECT_TRUE(fieldsReachedBy("RC_MLX5_SL").empty());
}

}  // namespace
}  // namespace switchagg::ucx
