// TransportOptions from SWITCHAGG_UCX_* (and, through roce_options.cc,
// SWITCHAGG_ROCE_*) environment variables: one table gives name, variable,
// default, help and parser; --help, switchagg-info and docs come from it.
#include <algorithm>
#include <cctype>
#include <functional>

#include "switchagg/common/config.h"
#include "switchagg/ucx/transport.h"

namespace switchagg::ucx {
namespace {

struct OptionSpec {
  OptionDoc doc;
  std::function<Status(const char* env, const std::string& text, TransportOptions* o)> set;
};

Status setLanes(const char* env, const std::string& text, TransportOptions* o) {
  if (text == "auto") {
    o->lanes = 0;
    return Status::Ok();
  }
  auto v = parseInt(env, text, 0, 64);
  if (!v.ok()) return v.status();
  o->lanes = static_cast<int>(*v);
  return Status::Ok();
}

auto sizeSetter(size_t TransportOptions::*field, uint64_t min) {
  return [field, min](const char* env, const std::string& text, TransportOptions* o) -> Status {
    auto v = parseSize(env, text);
    if (!v.ok()) return v.status();
    if (*v < min)
      return Status(Code::kInvalidArgument,
                    std::string(env) + ": must be at least " + std::to_string(min));
    o->*field = static_cast<size_t>(*v);
    return Status::Ok();
  };
}

Status setTimeout(const char* env, const std::string& text, TransportOptions* o) {
  auto v = parseDurationMs(env, text);
  if (!v.ok()) return v.status();
  if (*v <= 0) return Status(Code::kInvalidArgument, std::string(env) + ": must be > 0");
  o->peer_timeout_ms = *v;
  return Status::Ok();
}

Status setWait(const char* env, const std::string& text, TransportOptions* o) {
  auto v = parseChoice(env, text, {"blocking", "busy"});
  if (!v.ok()) return v.status();
  o->wait_mode = *v == "busy" ? WaitMode::kBusyPoll : WaitMode::kBlocking;
  return Status::Ok();
}

Status setFailureDetection(const char* env, const std::string& text, TransportOptions* o) {
  auto v = parseChoice(env, text, {"auto", "peer", "sentinel"});
  if (!v.ok()) return v.status();
  o->failure_detection = *v == "peer"       ? FailureDetection::kPeer
                         : *v == "sentinel" ? FailureDetection::kSentinel
                                            : FailureDetection::kAuto;
  return Status::Ok();
}

const std::vector<OptionSpec>& specs() {
  static const std::vector<OptionSpec> table = {
      {{"lanes", "SWITCHAGG_UCX_LANES", "auto",
        "endpoints (QPs) per peer; whole messages go round-robin across them. auto = 1 "
        "without RoCE, the RoCE profile's lane count with it"},
       setLanes},
      {{"cts_threshold", "SWITCHAGG_UCX_CTS_THRESHOLD", "64KiB",
        "PeerGroup messages of at least this size wait for the receiver's clear-to-send"},
       sizeSetter(&TransportOptions::cts_threshold, 1)},
      {{"cts_window", "SWITCHAGG_UCX_CTS_WINDOW", "8MiB",
        "most bytes a receiver admits in flight towards it (a larger single message is "
        "admitted alone)"},
       sizeSetter(&TransportOptions::cts_window, 1)},
      {{"peer_timeout", "SWITCHAGG_UCX_PEER_TIMEOUT", "2s",
        "bound on detecting a dead peer (sets UCX keepalive to a quarter of it) and on "
        "endpoint close"},
       setTimeout},
      {{"wait", "SWITCHAGG_UCX_WAIT", "blocking",
        "blocking: sleep on the worker's event fd between events; busy: poll (lowest "
        "latency, burns a core)"},
       setWait},
      {{"failure_detection", "SWITCHAGG_UCX_FAILURE_DETECTION", "auto",
        "peer: UCX peer error handling on every lane (no shared memory in UCX 1.13); "
        "sentinel: plain lanes plus one watched TCP endpoint per peer; auto: peer with an "
        "RDMA device, else sentinel"},
       setFailureDetection},
  };
  return table;
}

std::string roceName(const char* env) {
  std::string s = env;
  const std::string prefix = "SWITCHAGG_";
  if (s.rfind(prefix, 0) == 0) s = s.substr(prefix.size());
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  size_t first = s.find('_');  // "roce_rc_timeout" -> "roce.rc_timeout"
  if (first != std::string::npos) s[first] = '.';
  return s;
}

}  // namespace

Result<TransportOptions> TransportOptions::fromEnvironment() {
  TransportOptions o;
  for (const auto& spec : specs()) {
    const char* text = envOrNull(spec.doc.env);
    if (text != nullptr) SWITCHAGG_RETURN_IF_ERROR(spec.set(spec.doc.env, text, &o));
  }
  auto roce = roceOptionsFromEnvironment();
  if (!roce.ok()) return roce.status();
  o.roce = std::move(roce.value());
  return o;
}

const std::vector<OptionDoc>& transportOptionTable() {
  static const std::vector<OptionDoc> docs = [] {
    static std::vector<std::string> names;  // storage for the RoCE names
    std::vector<OptionDoc> out;
    for (const auto& spec : specs()) out.push_back(spec.doc);
    const auto& roce = roceOptionTable();
    names.reserve(roce.size());
    for (const auto& r : roce) names.push_back(roceName(r.env));
    for (size_t i = 0; i < roce.size(); ++i)
      out.push_back({names[i].c_str(), roce[i].env, roce[i].default_value, roce[i].help});
    return out;
  }();
  return docs;
}

}  // namespace switchagg::ucx
