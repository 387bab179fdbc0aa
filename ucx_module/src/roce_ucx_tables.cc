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

}  // namespace switchagg::ucx
