// Context: resolve the RoCE profile, apply it (and our keepalive) to a UCP
// configuration, init UCP with tag + AM + wakeup.
#include <algorithm>
#include <cstring>

#include "switchagg/common/log.h"
#include "transport_internal.h"
#include "switchagg/ucx/ucp_config.h"

namespace switchagg::ucx {
namespace {

// Keepalive drives peer-failure detection where the transport gives no
// signal of its own: a few probes fit inside peer_timeout_ms.
Status applyKeepalive(ucp_config_t* config, const TransportOptions& options, RoceProfile& profile) {
  int64_t ms = std::max<int64_t>(options.peer_timeout_ms / 4, 50);
  return applyUcxSetting(config, "KEEPALIVE_INTERVAL", std::to_string(ms) + "ms", profile);
}

Status validate(const TransportOptions& o) {
  if (o.lanes < 0 || o.lanes > 64)
    return Status(Code::kInvalidArgument, "lanes must be 0 (auto) .. 64");
  if (o.cts_window == 0) return Status(Code::kInvalidArgument, "cts_window must be > 0");
  if (o.peer_timeout_ms <= 0) return Status(Code::kInvalidArgument, "peer_timeout_ms must be > 0");
  if (!o.enable_am && !o.enable_tag)
    return Status(Code::kInvalidArgument, "enable at least one of AM and tag");
  return Status::Ok();
}

// The sentinel context: TCP only (it exists to get peer error handling
// without giving up shared memory on the main context), tag feature for the
// wireup, wakeup for blocking waits, our keepalive.
ucp_context_h createSentinelContext(const TransportOptions& options) {
  ucp_config_t* config = nullptr;
  if (ucp_config_read(nullptr, nullptr, &config) != UCS_OK) return nullptr;
  RoceProfile scratch;
  ucp_context_h ctx = nullptr;
  if (ucp_config_modify(config, "TLS", "tcp") == UCS_OK &&
      applyKeepalive(config, options, scratch).ok()) {
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
    params.mt_workers_shared = options.workers_on_threads ? 1 : 0;
    if (ucp_init(&params, config, &ctx) != UCS_OK) ctx = nullptr;
  }
  ucp_config_release(config);
  if (ctx == nullptr) SA_WARN("ucx", "no TCP failure sentinel; dead peers surface as timeouts");
  return ctx;
}

}  // namespace

Context::Impl::~Impl() {
  if (sentinel != nullptr) ucp_cleanup(sentinel);
  if (ucp != nullptr) ucp_cleanup(ucp);
}

Context::Context(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Context::~Context() = default;

const TransportOptions& Context::options() const { return impl_->options; }
const RoceProfile& Context::profile() const { return impl_->profile; }
int Context::lanes() const { return impl_->lanes; }
FailureDetection Context::failureDetection() const { return impl_->failure_detection; }
UcxScaleHint Context::scaleHint() const { return impl_->scale_hint; }

Result<std::unique_ptr<Context>> Context::create(const TransportOptions& options) {
  SWITCHAGG_RETURN_IF_ERROR(validate(options));
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  // An agent client reaches its agent through one device: pin UCX to it,
  // so a rail's agent is fed over that rail (and UCX offers the agent no
  // address on another rail's subnet, which it could not reach).
  const std::string route_dev = options.route_to.empty() ? "" : routeNetdev(options.route_to);
  const bool pin = !route_dev.empty() && route_dev != "lo" && options.roce.netdev.empty() &&
                   options.roce.device.empty();
  RoceOptions roce = options.roce;
  if (pin) {
    roce.netdev = route_dev;  // with RDMA: the RoCE port on that netdev
    roce.max_rails = 1;
  }
  auto profile = resolveProfile(roce);
  if (!profile.ok()) return profile.status();
  impl->profile = std::move(profile.value());
  logProfileOnce(impl->profile);
  impl->lanes = options.lanes > 0 ? options.lanes : std::max(1, impl->profile.lanes);
  impl->failure_detection = options.failure_detection;
  if (impl->failure_detection == FailureDetection::kAuto)
    impl->failure_detection =
        impl->profile.rdma_present ? FailureDetection::kNode : FailureDetection::kSentinel;

  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) return statusFromUcs(st, "ucp_config_read");
  Status applied = applyProfile(config, impl->profile);
  if (applied.ok()) applied = applyKeepalive(config, options, impl->profile);
  if (applied.ok() && pin && !impl->profile.rdma_present) {
    applied = applyUcxSetting(config, "NET_DEVICES", route_dev, impl->profile);
    SA_DEBUG("ucx", "UCX on %s only: the route to %s", route_dev.c_str(),
             options.route_to.c_str());
  }
  if (applied.ok() && options.rndv_threshold > 0)
    applied = applyUcxSetting(config, "RNDV_THRESH", std::to_string(options.rndv_threshold),
                              impl->profile);
  if (!applied.ok()) {
    ucp_config_release(config);
    return applied;
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  // PeerGroup's clear-to-send control and data ride on tags, so tag is on
  // whenever AM is too; wakeup serves WaitMode::kBlocking.
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP | (options.enable_am ? UCP_FEATURE_AM : 0);
  params.mt_workers_shared = options.workers_on_threads ? 1 : 0;
  // A user's UCX_NUM_EPS / UCX_NUM_PPN still win: UCX prefers its
  // configuration to these hints.
  impl->scale_hint = ucxScaleHint(options.scale, impl->lanes);
  if (impl->scale_hint.num_eps > 0) {
    params.field_mask |= UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
    params.estimated_num_eps = impl->scale_hint.num_eps;
  }
  if (impl->scale_hint.num_ppn > 0) {
    params.field_mask |= UCP_PARAM_FIELD_ESTIMATED_NUM_PPN;
    params.estimated_num_ppn = impl->scale_hint.num_ppn;
  }
  st = ucp_init(&params, config, &impl->ucp);
  ucp_config_release(config);
  if (st != UCS_OK) return statusFromUcs(st, "ucp_init");
  // Node mode watches only a PeerGroup's local peers: users without tagged
  // groups (the agent and its clients) need no sentinel context.
  if (impl->failure_detection == FailureDetection::kSentinel ||
      (impl->failure_detection == FailureDetection::kNode && options.enable_tag))
    impl->sentinel = createSentinelContext(options);
  return std::unique_ptr<Context>(new Context(std::move(impl)));
}

}  // namespace switchagg::ucx
