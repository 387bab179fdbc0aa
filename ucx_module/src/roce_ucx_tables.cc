// Compiled only where configure found UCX's internal configuration API to
// match what is read here (SWITCHAGG_UCX_INTERNAL_TABLES; UCX 1.13): other
// releases get ucx_tables_public.cc instead.
//
// UCX 1.13's configuration tables seen the way UCX itself reads them: which
// environment variables and which ucp_config_modify keys reach each field,
// and the value each transport/memory-domain field will really have.
//
// Why (UCX v1.13.1 source): ucp_config_modify() caches any key that is not a
// UCP context or UCS global key; ucp_fill_tl_md() and ucp_worker_iface_open()
// later apply the cache to every md/iface config with uct_config_modify(),
// i.e. ucs_config_parser_set_value(config, tl_table, key). That matcher
// (ucs_config_parser_set_value_internal) knows the names of embedded tables
// ("RC_", "IB_", "UD_", "DC_") but NOT the transport's own prefix
// ("RC_MLX5_", "TCP_", the IB memory domain's "IB_"), while the environment
// (ucs_config_apply_config_vars) accepts every prefix on the path, the
// outermost last. walk() below mirrors both.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>

#include "switchagg/common/config.h"
#include "switchagg/ucx/ucp_config.h"
#include "ucp_config_internal.h"

namespace switchagg::ucx {
namespace {

bool isTable(const ucs_config_field_t* f) {
  return f->parser.read == ucs_config_sscanf_table;
}
bool isDeprecated(const ucs_config_field_t* f) {
  return f->offset == UCS_CONFIG_DEPRECATED_FIELD_OFFSET;
}
bool isAlias(const ucs_config_field_t* f) {
  return f->dfl_value == nullptr;
}
const ucs_config_field_t* subTable(const ucs_config_field_t* f) {
  return static_cast<const ucs_config_field_t*>(f->parser.arg);
}

// Fields of one table by absolute offset inside its config struct.
using FieldMap = std::map<size_t, UcxField>;

UcxField& fieldAt(FieldMap& fields, const ucs_config_global_list_entry_t* entry, size_t offset,
                  const ucs_config_field_t* f) {
  UcxField& out = fields[offset];
  out.entry = entry;
  out.offset = offset;
  if (out.field == nullptr || isAlias(out.field)) out.field = f;  // prefer the real field
  return out;
}

// ucs_config_apply_config_vars() (environment) and
// ucs_config_parser_set_value_internal() (ucp_config_modify's cached keys)
// recurse the same way: a sub-table is tried with its own name as prefix,
// then with the prefix inherited from above. They differ in the first call:
// the environment starts with the table's own prefix (RC_MLX5_, TCP_, ...),
// set_value starts with none, which is why that prefix never matches a key.
// Names are collected in the order UCX applies them (the last one wins).
void walk(const ucs_config_global_list_entry_t* entry, const ucs_config_field_t* table, size_t base,
          const char* prefix, bool recurse, std::vector<std::string> UcxField::*names,
          FieldMap& out) {
  for (const ucs_config_field_t* f = table; f->name != nullptr; ++f) {
    if (isDeprecated(f)) continue;
    if (isTable(f)) {
      if (recurse) walk(entry, subTable(f), base + f->offset, f->name, true, names, out);
      if (prefix != nullptr) walk(entry, subTable(f), base + f->offset, prefix, false, names, out);
    } else {
      (fieldAt(out, entry, base + f->offset, f).*names)
          .push_back(std::string(prefix ? prefix : "") + f->name);
    }
  }
}

// Keys of these tables are consumed by ucp_config_modify itself (UCP
// context, UCS global options); the cache only reaches uct's md, transport
// and connection-manager tables (UCM and read-only UCS options: nowhere).
bool isUcpTable(const ucs_config_global_list_entry_t* e) {
  return std::strcmp(e->name, "UCP context") == 0 || std::strcmp(e->name, "UCS global") == 0;
}

bool endsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

bool isUctTable(const ucs_config_global_list_entry_t* e) {
  const std::string name = e->name;
  return endsWith(name, " transport") || endsWith(name, " memory domain") ||
         endsWith(name, " connection manager");
}

// A name reached twice (RC_ over RC_) counts where UCX applies it last.
void dedupeKeepingLast(std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (auto it = names.rbegin(); it != names.rend(); ++it)
    if (std::find(out.begin(), out.end(), *it) == out.end()) out.insert(out.begin(), *it);
  names = std::move(out);
}

std::vector<UcxField> buildFieldList() {
  loadUcxTransportModules();
  std::vector<UcxField> all;
  forEachUcxConfigTable([&all](const ucs_config_global_list_entry_t* entry) {
    if (!isUcpTable(entry) && !isUctTable(entry)) return;
    FieldMap fields;
    walk(entry, entry->table, 0, entry->prefix, true, &UcxField::env_names, fields);
    walk(entry, entry->table, 0, nullptr, true, &UcxField::modify_names, fields);
    for (auto& [offset, f] : fields) {
      if (f.env_names.empty() || f.field == nullptr) continue;
      dedupeKeepingLast(f.env_names);
      dedupeKeepingLast(f.modify_names);
      f.table = entry->name;
      f.name = "UCX_" + f.env_names.back();  // outermost prefix: what ucx_info -c prints
      f.consumed_by_ucp = isUcpTable(entry);
      all.push_back(std::move(f));
    }
  });
  return all;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  for (const std::string& x : v)
    if (x == s) return true;
  return false;
}

// Owns one config struct filled the way uct_config_read() fills it:
// defaults, then ucx.conf and the environment (UCX_ + the table's prefix).
class FilledConfig {
 public:
  explicit FilledConfig(const ucs_config_global_list_entry_t* entry) : entry_(entry) {}
  ~FilledConfig() {
    if (filled_) ucs_config_parser_release_opts(opts_.get(), entry_->table);
  }
  FilledConfig(const FilledConfig&) = delete;
  FilledConfig& operator=(const FilledConfig&) = delete;

  Status fill() {
    opts_.reset(std::calloc(1, entry_->size));
    if (!opts_) return Status(Code::kInternal, "out of memory");
    ucs_status_t st =
        ucs_config_parser_fill_opts(opts_.get(), entry_->table, "UCX_", entry_->prefix, 0);
    if (st != UCS_OK) {
      return Status(Code::kInvalidArgument, std::string("UCX rejects the environment for ") +
                                                entry_->name + ": " + ucs_status_string(st));
    }
    filled_ = true;
    return Status::Ok();
  }
  // uct_config_modify(): the same parser call on the same table.
  bool modify(const std::string& key, const std::string& value) {
    return ucs_config_parser_set_value(opts_.get(), entry_->table, key.c_str(), value.c_str()) ==
           UCS_OK;
  }
  std::string valueOf(const UcxField& f) const {
    char buf[256] = "";
    f.field->parser.write(buf, sizeof(buf) - 1, static_cast<char*>(opts_.get()) + f.offset,
                          f.field->parser.arg);
    return buf;
  }

 private:
  const ucs_config_global_list_entry_t* entry_;
  std::unique_ptr<void, decltype(&std::free)> opts_{nullptr, &std::free};
  bool filled_ = false;
};

}  // namespace

bool ucxInternalTablesInspected() {
  return true;
}

const std::vector<UcxField>& ucxConfigFields() {
  static const std::vector<UcxField> fields = buildFieldList();
  return fields;
}

std::vector<const UcxField*> fieldsReachedBy(const std::string& key) {
  std::vector<const UcxField*> ucp, uct;
  for (const UcxField& f : ucxConfigFields()) {
    if (contains(f.modify_names, key)) (f.consumed_by_ucp ? ucp : uct).push_back(&f);
  }
  return ucp.empty() ? uct : ucp;  // a UCP key is never cached for transports
}

std::optional<std::string> userVariable(const UcxField& field) {
  for (auto it = field.env_names.rbegin(); it != field.env_names.rend(); ++it) {
    if (envOrNull(("UCX_" + *it).c_str()) != nullptr) return *it;
  }
  return std::nullopt;
}

Result<std::vector<UcxEffectiveValue>> effectiveUcxValues(
    const std::vector<std::pair<std::string, std::string>>& cached,
    const std::vector<const UcxField*>& fields) {
  std::vector<UcxEffectiveValue> out;
  std::map<const ucs_config_global_list_entry_t*, std::unique_ptr<FilledConfig>> configs;
  for (const UcxField* f : fields) {
    if (f->consumed_by_ucp) continue;  // those live in ucp_config_t itself
    auto& config = configs[f->entry];
    if (!config) {
      config = std::make_unique<FilledConfig>(f->entry);
      SWITCHAGG_RETURN_IF_ERROR(config->fill());
      for (const auto& [k, v] : cached) config->modify(k, v);  // in cache order, as UCX does
    }
    UcxEffectiveValue v{f->table, f->name, config->valueOf(*f), "default"};
    if (auto user = userVariable(*f)) v.source = "environment UCX_" + *user;
    for (const auto& kv : cached)
      if (contains(f->modify_names, kv.first)) v.source = "profile " + kv.first;
    out.push_back(std::move(v));
  }
  return out;
}

namespace {

bool sameField(const UcxField* a, const UcxField* b) {
  return a->entry == b->entry && a->offset == b->offset;
}

bool allIn(const std::vector<const UcxField*>& sub, const std::vector<const UcxField*>& set) {
  for (const UcxField* f : sub) {
    bool found = false;
    for (const UcxField* g : set) found = found || sameField(f, g);
    if (!found) return false;
  }
  return true;
}

// Keys that reach only fields in `free` (ucp_config_modify cannot name one
// transport: RC_SL is rc_verbs + rc_mlx5 + dc_mlx5), widest first, until
// every field of `free` that some such key reaches is covered.
std::vector<std::string> coveringKeys(const std::vector<const UcxField*>& free) {
  std::vector<std::pair<std::string, std::vector<const UcxField*>>> candidates;
  for (const UcxField* f : free) {
    for (const std::string& key : f->modify_names) {
      auto reach = fieldsReachedBy(key);
      if (allIn(reach, free)) candidates.emplace_back(key, std::move(reach));
    }
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  std::vector<std::string> keys;
  std::vector<const UcxField*> covered;
  for (const auto& [key, reach] : candidates) {
    if (allIn(reach, covered)) continue;
    keys.push_back(key);
    covered.insert(covered.end(), reach.begin(), reach.end());
  }
  return keys;
}

}  // namespace

Status applyUcxSetting(ucp_config_t* config, const std::string& key, const std::string& value,
                       RoceProfile& profile) {
  SWITCHAGG_RETURN_IF_ERROR(checkUcxSetting(key, value));
  const std::vector<const UcxField*> reached = fieldsReachedBy(key);
  if (reached.empty()) {
    return Status(Code::kInvalidArgument, "'" + key +
                                              "' reaches no UCP or transport setting in UCX " +
                                              ucp_get_version_string() + " (ignored if set)");
  }
  std::vector<const UcxField*> free;
  bool user_set = false;
  for (const UcxField* f : reached) {
    if (auto var = userVariable(*f)) {
      addLeftToUser(profile, *var);
      user_set = true;
    } else {
      free.push_back(f);
    }
  }
  if (!user_set) return modifyUcpConfig(config, key, value, profile);
  for (const std::string& narrower : coveringKeys(free))
    SWITCHAGG_RETURN_IF_ERROR(modifyUcpConfig(config, narrower, value, profile));
  return Status::Ok();
}

std::string ucxEnvName(const std::string& key) {
  auto reached = fieldsReachedBy(key);
  for (const UcxField* f : reached)
    if (std::find(f->env_names.begin(), f->env_names.end(), key) != f->env_names.end()) return key;
  return reached.empty() ? key : reached.front()->name.substr(4);
}

Status checkUcxSetting(const std::string& key, const std::string& value) {
  loadUcxTransportModules();
  bool known = false;
  Status bad_value;
  forEachUcxConfigTable([&](ucs_config_global_list_entry_t* entry) {
    if (!bad_value.ok()) return;
    std::unique_ptr<void, decltype(&std::free)> opts(std::calloc(1, entry->size), &std::free);
    if (!opts) return;
    // Defaults only (no environment), so a user's odd UCX_* cannot interfere.
    if (ucs_config_parser_fill_opts(opts.get(), entry->table, "SWITCHAGG_UNUSED_PREFIX_", nullptr,
                                    1) != UCS_OK)
      return;
    ucs_status_t st =
        ucs_config_parser_set_value(opts.get(), entry->table, key.c_str(), value.c_str());
    ucs_config_parser_release_opts(opts.get(), entry->table);
    if (st == UCS_OK) {
      known = true;
    } else if (st != UCS_ERR_NO_ELEM) {
      bad_value =
          Status(Code::kInvalidArgument, "UCX rejects " + key + "=" + value + " (" + entry->name +
                                             ": " + ucs_status_string(st) + ")");
    }
  });
  if (!bad_value.ok()) return bad_value;
  if (!known) {
    return Status(Code::kInvalidArgument, "UCX " + std::string(ucp_get_version_string()) +
                                              " has no configuration key '" + key +
                                              "' (see ucx_info -c -f)");
  }
  return Status::Ok();
}

Result<std::vector<UcxEffectiveValue>> effectiveTransportConfig(
    ucp_config_t* config, const std::vector<std::string>& keys) {
  if (config == nullptr) return Status(Code::kInvalidArgument, "effectiveTransportConfig: null");
  std::vector<const UcxField*> fields;
  for (const std::string& key : keys) {
    for (const UcxField* f : fieldsReachedBy(key))
      if (std::find(fields.begin(), fields.end(), f) == fields.end()) fields.push_back(f);
  }
  return effectiveUcxValues(cachedTransportKeys(config), fields);
}

}  // namespace switchagg::ucx
