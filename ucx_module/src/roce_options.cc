// RoceOptions from SWITCHAGG_ROCE_* environment variables: one table gives
// the variable, its default, help text and parser (used by
// roceOptionsFromEnvironment, switchagg-info --help and docs/tuning.md).
#include <functional>

#include "switchagg/common/config.h"
#include "switchagg/ucx/roce_profile.h"

namespace switchagg::ucx {
namespace {

struct RoceOptionSpec {
  RoceOptionDoc doc;
  std::function<Status(const char* env, const std::string& text, RoceOptions* o)> set;
};

template <typename Field>
auto intSetter(Field RoceOptions::*field, int64_t lo, int64_t hi) {
  return [field, lo, hi](const char* env, const std::string& text, RoceOptions* o) -> Status {
    auto v = parseInt(env, text, lo, hi);
    if (!v.ok()) return v.status();
    o->*field = static_cast<Field>(*v);
    return Status::Ok();
  };
}

auto boolSetter(bool RoceOptions::*field) {
  return [field](const char* env, const std::string& text, RoceOptions* o) -> Status {
    auto v = parseBool(env, text);
    if (!v.ok()) return v.status();
    o->*field = *v;
    return Status::Ok();
  };
}

auto stringSetter(std::string RoceOptions::*field) {
  return [field](const char*, const std::string& text, RoceOptions* o) -> Status {
    o->*field = text;
    return Status::Ok();
  };
}

Status setMtu(const char* env, const std::string& text, RoceOptions* o) {
  auto v = parseChoice(env, text, {"auto", "512", "1024", "2048", "4096"});
  if (!v.ok()) return v.status();
  o->path_mtu = *v == "auto" ? 0 : std::stoi(*v);
  return Status::Ok();
}

Status setTimeout(const char* env, const std::string& text, RoceOptions* o) {
  // A duration ("2s", "500ms"); "0" keeps UCX's own default. Whole ms are
  // plenty: the NIC rounds to 4.096 us * 2^n anyway.
  auto ms = parseDurationMs(env, text);
  if (!ms.ok()) return ms.status();
  if (*ms > 10 * 60 * 1000) return Status(Code::kInvalidArgument, std::string(env) + ": above 10m");
  o->rc_timeout_us = static_cast<int>(*ms * 1000);
  return Status::Ok();
}

const std::vector<RoceOptionSpec>& specs() {
  static const std::vector<RoceOptionSpec> table = {
      {{"SWITCHAGG_ROCE_SYSFS_ROOT", kDefaultSysfsRoot,
        "where to read the GID tables (tests point it at shipped trees; the default also "
        "asks libibverbs)"},
       stringSetter(&RoceOptions::sysfs_root)},
      {{"SWITCHAGG_ROCE_DEVICE", "(any)", "RDMA device or device:port to use, e.g. mlx5_0:1"},
       stringSetter(&RoceOptions::device)},
      {{"SWITCHAGG_ROCE_NETDEV", "(any)", "prefer GIDs on this netdev (the job's traffic)"},
       stringSetter(&RoceOptions::netdev)},
      {{"SWITCHAGG_ROCE_DSCP", "26", "DSCP of the lossless (PFC) class; TC = DSCP << 2"},
       intSetter(&RoceOptions::dscp, 0, 63)},
      {{"SWITCHAGG_ROCE_ECN", "0", "mark packets ECN-capable (ECT(0)): TC 106 for DSCP 26"},
       boolSetter(&RoceOptions::ecn)},
      {{"SWITCHAGG_ROCE_SL", "3", "Ethernet priority (PCP) of the lossless class, 0..7"},
       intSetter(&RoceOptions::sl, 0, 7)},
      {{"SWITCHAGG_ROCE_MTU", "auto",
        "RoCE path MTU cap: auto (the port's MTU) or 512|1024|2048|4096, never above the port's"},
       setMtu},
      {{"SWITCHAGG_ROCE_RC_TIMEOUT", "4s",
        "RC ack timeout per try (duration; 0 = UCX default 1s); x (retries + 1) until a QP fails"},
       setTimeout},
      {{"SWITCHAGG_ROCE_RETRY", "7", "RC retry count, 0..7"},
       intSetter(&RoceOptions::rc_retry_count, 0, 7)},
      {{"SWITCHAGG_ROCE_AR", "1", "adaptive routing where the fabric enables it on the SL"},
       boolSetter(&RoceOptions::adaptive_routing)},
      {{"SWITCHAGG_ROCE_PATH_FACTOR", "1", "IB_ROCE_PATH_FACTOR: UDP source-port multiplier"},
       intSetter(&RoceOptions::path_factor, 1, 64)},
      {{"SWITCHAGG_ROCE_NUM_PATHS", "0", "IB_NUM_PATHS per endpoint pair; 0 = UCX default"},
       intSetter(&RoceOptions::num_paths, 0, 64)},
  };
  return table;
}

}  // namespace

const std::vector<RoceOptionDoc>& roceOptionTable() {
  static const std::vector<RoceOptionDoc> docs = [] {
    std::vector<RoceOptionDoc> out;
    for (const RoceOptionSpec& s : specs()) out.push_back(s.doc);
    return out;
  }();
  return docs;
}

Result<RoceOptions> roceOptionsFromEnvironment() {
  RoceOptions options;
  for (const RoceOptionSpec& s : specs()) {
    const char* value = envOrNull(s.doc.env);
    if (value) SWITCHAGG_RETURN_IF_ERROR(s.set(s.doc.env, value, &options));
  }
  return options;
}

}  // namespace switchagg::ucx
