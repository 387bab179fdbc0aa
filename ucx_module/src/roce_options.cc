// RoceOptions from SWITCHAGG_ROCE_* environment variables: one table gives
// the variable, its default (RoceOptions' initializers), help text and
// parser (used by roceOptionsFromEnvironment, switchagg-info --help and
// docs/tuning.md).
#include "option_bindings.h"
#include "switchagg/common/config_table.h"
#include "switchagg/ucx/roce_profile.h"

namespace switchagg::ucx {
namespace {

using R = RoceOptions;

// "" means any device / netdev.
ConfigBinding<R> anyString(std::string R::*field) {
  ConfigBinding<R> b = stringField(field);
  b.get = [field](const R& o) { return (o.*field).empty() ? std::string("(any)") : o.*field; };
  return b;
}

// A duration ("2s", "500ms"); "0" keeps UCX's own default. Whole ms are
// plenty: the NIC rounds to 4.096 us * 2^n anyway.
ConfigBinding<R> rcTimeout() {
  return customField<R>(
      ConfigKind::kDuration,
      [](const std::string& key, R& o, const std::string& text) -> Status {
        auto ms = parseDurationMs(key, text);
        if (!ms.ok()) return ms.status();
        if (*ms > 10 * 60 * 1000) return Status(Code::kInvalidArgument, key + ": above 10m");
        o.rc_timeout_us = static_cast<int>(*ms * 1000);
        return Status::Ok();
      },
      [](const R& o) { return formatDurationMs(o.rc_timeout_us / 1000); });
}

const ConfigTable<R>& table() {
  static const ConfigTable<R> t({
      {"roce.sysfs_root", "SWITCHAGG_ROCE_SYSFS_ROOT",
       "where to read the GID tables (tests point it at shipped trees; the default also "
       "asks libibverbs)",
       stringField(&R::sysfs_root)},
      {"roce.device", "SWITCHAGG_ROCE_DEVICE", "RDMA device or device:port to use, e.g. mlx5_0:1",
       anyString(&R::device)},
      {"roce.netdev", "SWITCHAGG_ROCE_NETDEV", "prefer GIDs on this netdev (the job's traffic)",
       anyString(&R::netdev)},
      {"roce.dscp", "SWITCHAGG_ROCE_DSCP", "DSCP of the lossless (PFC) class; TC = DSCP << 2",
       intField(&R::dscp, 0, 63)},
      {"roce.ecn", "SWITCHAGG_ROCE_ECN", "mark packets ECN-capable (ECT(0)): TC 106 for DSCP 26",
       boolField(&R::ecn)},
      {"roce.sl", "SWITCHAGG_ROCE_SL", "Ethernet priority (PCP) of the lossless class, 0..7",
       intField(&R::sl, 0, 7)},
      {"roce.mtu", "SWITCHAGG_ROCE_MTU",
       "RoCE path MTU cap: auto (the port's MTU) or 512|1024|2048|4096, never above the port's",
       choiceField(&R::path_mtu, {{"auto", 0}, {"512", 512}, {"1024", 1024}, {"2048", 2048},
                                   {"4096", 4096}})},
      {"roce.rc_timeout", "SWITCHAGG_ROCE_RC_TIMEOUT",
       "RC ack timeout per try (duration; 0 = UCX default 1s); x (retries + 1) until a QP fails",
       rcTimeout()},
      {"roce.retry", "SWITCHAGG_ROCE_RETRY", "RC retry count, 0..7",
       intField(&R::rc_retry_count, 0, 7)},
      {"roce.ar", "SWITCHAGG_ROCE_AR", "adaptive routing where the fabric enables it on the SL",
       boolField(&R::adaptive_routing)},
      {"roce.path_factor", "SWITCHAGG_ROCE_PATH_FACTOR",
       "IB_ROCE_PATH_FACTOR: UDP source-port multiplier", intField(&R::path_factor, 1, 64)},
      {"roce.num_paths", "SWITCHAGG_ROCE_NUM_PATHS",
       "IB_NUM_PATHS per endpoint pair; 0 = UCX default", intField(&R::num_paths, 0, 64)},
      {"roce.rails", "SWITCHAGG_ROCE_RAILS",
       "RoCE ports (rails) UCX is given: all (every active port whose best GID is as good as "
       "the best port's and shares its GID index) or at most N of them, best first (1 = the "
       "single best port)",
       countOrWord(&R::max_rails, 0, 64, "all")},
  });
  return t;
}

}  // namespace

const std::vector<ConfigDoc>& roceOptionTable() {
  static const std::vector<ConfigDoc> docs = table().docs();
  return docs;
}

Result<RoceOptions> roceOptionsFromEnvironment() {
  RoceOptions options;
  SWITCHAGG_RETURN_IF_ERROR(table().applyEnvironment(options));
  return options;
}

}  // namespace switchagg::ucx
