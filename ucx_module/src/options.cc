// TransportOptions from SWITCHAGG_UCX_* (and, through roce_options.cc,
// SWITCHAGG_ROCE_*) environment variables: one table gives name, variable,
// help and parser, TransportOptions' initializers the defaults; --help,
// switchagg-info and docs come from it.
#include "option_bindings.h"
#include "switchagg/common/config_table.h"
#include "switchagg/ucx/transport.h"

namespace switchagg::ucx {
namespace {

using T = TransportOptions;

const ConfigTable<T>& table() {
  constexpr uint64_t kAny = UINT64_MAX;
  static const ConfigTable<T> t({
      {"lanes", "SWITCHAGG_UCX_LANES",
       "endpoints (QPs) per peer; whole messages go round-robin across them. auto = 1 "
       "without RoCE, the RoCE profile's lane count with it",
       countOrWord(&T::lanes, 0, 64, "auto")},
      {"cts_threshold", "SWITCHAGG_UCX_CTS_THRESHOLD",
       "PeerGroup messages of at least this size wait for the receiver's clear-to-send",
       sizeField(&T::cts_threshold, 1, kAny)},
      {"cts_window", "SWITCHAGG_UCX_CTS_WINDOW",
       "most bytes a receiver admits in flight towards it (a larger single message is "
       "admitted alone)",
       sizeField(&T::cts_window, 1, kAny)},
      {"peer_timeout", "SWITCHAGG_UCX_PEER_TIMEOUT",
       "bound on detecting a dead peer (sets UCX keepalive to a quarter of it) and on "
       "endpoint close",
       durationField(&T::peer_timeout_ms, 1, INT64_MAX)},
      {"wait", "SWITCHAGG_UCX_WAIT",
       "blocking: sleep on the worker's event fd between events; busy: poll (lowest "
       "latency, burns a core)",
       choiceField(&T::wait_mode, {{"blocking", WaitMode::kBlocking}, {"busy", WaitMode::kBusyPoll}})},
      {"spin_us", "SWITCHAGG_UCX_SPIN_US",
       "blocking waits poll this many microseconds after the last event before they "
       "sleep (an answer within it costs no wake-up; 0 = sleep at once)",
       intField(&T::spin_us, 0, 1000000)},
      {"failure_detection", "SWITCHAGG_UCX_FAILURE_DETECTION",
       "peer: UCX peer error handling on every lane (no shared memory in UCX 1.13); "
       "sentinel: plain lanes plus one watched TCP endpoint per peer; node: sentinel "
       "towards ranks of the same node (shared memory), peer towards other nodes; auto: "
       "node with an RDMA device, else sentinel",
       choiceField(&T::failure_detection, {{"auto", FailureDetection::kAuto},
                                           {"peer", FailureDetection::kPeer},
                                           {"sentinel", FailureDetection::kSentinel},
                                           {"node", FailureDetection::kNode}})},
  });
  return t;
}

}  // namespace

Result<TransportOptions> TransportOptions::fromEnvironment() {
  TransportOptions o;
  SWITCHAGG_RETURN_IF_ERROR(table().applyEnvironment(o));
  auto roce = roceOptionsFromEnvironment();
  if (!roce.ok()) return roce.status();
  o.roce = std::move(roce.value());
  return o;
}

const std::vector<ConfigDoc>& transportOptionTable() {
  static const std::vector<ConfigDoc> docs = [] {
    std::vector<ConfigDoc> out = table().docs();
    for (const ConfigDoc& r : roceOptionTable()) out.push_back(r);
    return out;
  }();
  return docs;
}

}  // namespace switchagg::ucx
