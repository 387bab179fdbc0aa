#include "comm_state.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "host_algorithms.h"
#include "peer_group_comm.h"
#include "process_runtime.h"
#include "switch_path.h"
#include "switchagg/common/config.h"
#include "switchagg/common/log.h"
#include "switchagg/ucx/thread_gate.h"
#include "switchagg/ucx/transport.h"

namespace switchagg::coll {
namespace {

// What each rank contributes to the address exchange.
struct ExchangeHeader {
  uint64_t host_id;
  uint32_t context_id;
  uint32_t address_bytes;  // 0: this rank has no working transport
  std::array<uint64_t, 2> busy_slots;  // PeerGroup tag slots held on this rank's worker
};

constexpr int kSetupAttempts = 8;

uint64_t fnv1a(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

CommState::CommState(const switchagg_coll_comm_info_t& info)
    : rank_(info.rank),
      size_(info.size),
      context_id_(info.context_id),
      domain_(ProcessRuntime::instance().takeDomain()),
      name_(info.name ? info.name : "?"),
      node_name_(processNodeName(info.node_name)),
      allgather_ctx_(info.allgather_ctx),
      allgather_(info.allgather) {
  if (ProcessRuntime::instance().params().tune_online) tuner_ = std::make_unique<Tuner>();
}

CommState::~CommState() {
  logSummary();
  if (tuner_ && rank_ == 0) {
    SelectionInput shape;
    shape.comm_size = size_;
    shape.ranks_per_node = layout_.max_ranks_per_node;
    shape.nodes = layout_.nodes;
    ProcessRuntime::instance().addTuned(formatTuneRules(tuner_->learnt(), shape));
  }
  switch_path_.reset();
  peer_group_.reset();
  ProcessRuntime::instance().releaseDomain(domain_);
}

void CommState::ensureSetup() {
  if (setup_done_) return;
  setup_done_ = true;
  Status st = exchangeAddresses();
  // With threads, another communicator's setup on some rank may take the
  // agreed tag slot between the exchange and the group's creation: every
  // rank sees that in the agreement (kNoResource) and tries again, now
  // seeing that slot busy.
  for (int attempt = 1; st.code() == Code::kNoResource && ucx::ThreadGate::enabled() &&
                        attempt < kSetupAttempts;
       ++attempt)
    st = exchangeAddresses();
  if (!st.ok() && rank_ == 0)
    SA_WARN("coll", "comm %s: host algorithms unavailable (%s); using the previous module",
            name_.c_str(), st.toString().c_str());
  if (hostReady()) switch_path_ = createSwitchPath(*this);
  if (rank_ == 0) {
    const auto& p = ProcessRuntime::instance().params();
    SA_INFO("coll",
            "comm %s (cid %u): %d ranks on %d nodes (max %d per node), host path %s, "
            "algorithm=%s offload=%s rules=%s",
            name_.c_str(), context_id_, size_, layout_.nodes, layout_.max_ranks_per_node,
            hostReady() ? "ready" : "unavailable", p.policy.forcedName().c_str(),
            offloadName(p.policy.offload), p.rules_path.empty() ? "none" : p.rules_path.c_str());
  }
}

Status CommState::allgather(const void* send, void* recv, size_t bytes) {
  if (ProcessRuntime::threadWithoutMpi()) return allgatherOverTransport(send, recv, bytes);
  // Waits for every rank: other threads' collectives go on meanwhile, and
  // the progress callback drives our workers (a peer may need them).
  ucx::ThreadGate::Release released;
  ProcessRuntime::OpenForProgress open;
  if (allgather_(allgather_ctx_, send, recv, bytes) != 0)
    return Status(Code::kIoError, "allgather over the previous coll module failed");
  return Status::Ok();
}

Status CommState::tuningAllgather(const void* send, void* recv, size_t bytes) {
  if (ProcessRuntime::mpiThreads() && hostReady()) return allgatherOverTransport(send, recv, bytes);
  return allgather(send, recv, bytes);
}

// The allgather of a thread that must not call MPI: every rank's bytes in
// its own slot of a zeroed vector, OR-reduced over the peer group (an OR of
// disjoint slots is their concatenation; recursive doubling: log2(p)
// rounds). Its waits are the host algorithms' (bounded by the stall
// timeout, naming the peer).
Status CommState::allgatherOverTransport(const void* send, void* recv, size_t bytes) {
  std::unique_ptr<HostComm> host = hostComm();
  if (!host)
    return Status(Code::kUnsupported,
                  "no host transport for an agreement off the MPI library's threads");
  const std::vector<uint8_t> mine(static_cast<const uint8_t*>(send),
                                  static_cast<const uint8_t*>(send) + bytes);
  auto* all = static_cast<uint8_t*>(recv);
  std::memset(all, 0, size_t(size_) * bytes);
  if (bytes) std::memcpy(all + size_t(rank_) * bytes, mine.data(), bytes);
  const AllreduceArgs args{nullptr, all, size_t(size_) * bytes, Dtype::kUint8, Op::kBor};
  return allreduceRecursiveDoubling(*host, args);
}

// Allgathers over the previous module: fixed-size headers, then the worker
// addresses padded to the longest, then whether each rank built its group. Every rank sees the same headers,
// so all agree on whether the host path can run.
Status CommState::exchangeAddresses() {
  layout_.node_of.assign(static_cast<size_t>(size_), 0);
  Result<ucx::Worker*> worker = ProcessRuntime::instance().worker(domain_);
  std::vector<uint8_t> address;
  if (worker.ok()) address = worker.value()->address();
  else SA_WARN("coll", "rank %d: UCX transport unavailable: %s", rank_,
               worker.status().toString().c_str());

  ExchangeHeader mine{fnv1a(node_name_), context_id_, static_cast<uint32_t>(address.size()), {}};
  if (worker.ok()) mine.busy_slots = worker.value()->busyGroupSlots();
  std::vector<ExchangeHeader> all(static_cast<size_t>(size_));
  SWITCHAGG_RETURN_IF_ERROR(allgather(&mine, all.data(), sizeof mine));
  std::vector<uint64_t> host_ids;
  std::vector<std::array<uint64_t, 2>> busy;
  size_t longest = 0;
  for (const ExchangeHeader& h : all) {
    host_ids.push_back(h.host_id);
    busy.push_back(h.busy_slots);
    longest = std::max<size_t>(longest, h.address_bytes);
    if (h.address_bytes == 0) return Status(Code::kUnsupported, "a rank has no UCX transport");
    if (h.context_id != context_id_)
      return Status(Code::kInternal, "ranks disagree on the communicator id");
  }
  layout_ = nodeLayoutFromHostIds(host_ids);

  std::vector<uint8_t> padded(longest, 0), gathered(longest * all.size());
  std::memcpy(padded.data(), address.data(), address.size());
  SWITCHAGG_RETURN_IF_ERROR(allgather(padded.data(), gathered.data(), longest));
  std::vector<std::vector<uint8_t>> addresses;
  for (size_t r = 0; r < all.size(); ++r) {
    const uint8_t* begin = gathered.data() + r * longest;
    addresses.emplace_back(begin, begin + all[r].address_bytes);
  }
  // Every rank computes the same slot from the same headers: the first one
  // free on all members, so live communicators never share tag space. With
  // threads, communicators set up at the same time start their search at
  // different slots (their ids differ), so they rarely race for one.
  const int start = ucx::ThreadGate::enabled()
                        ? 1 + int(context_id_ % uint32_t(ucx::PeerGroup::kMaxSlot))
                        : 1;
  const int slot = ucx::PeerGroup::firstCommonFreeSlot(busy, start);
  if (slot == 0)
    return Status(Code::kUnsupported,
                  "every peer-group tag slot (" + std::to_string(ucx::PeerGroup::kMaxSlot) +
                      ") is held by a live communicator on some rank");
  std::vector<std::vector<uint8_t>> kept_addresses = addresses;
  Result<std::unique_ptr<ucx::PeerGroup>> group = ucx::PeerGroup::create(
      *worker.value(), context_id_, rank_, std::move(addresses), slot, layout_.node_of);
  if (!group.ok())
    SA_WARN("coll", "rank %d: peer group: %s", rank_, group.status().toString().c_str());
  // Creating the group is local; agree on the outcome so that no rank runs
  // a host algorithm that another rank will not join.
  uint8_t ok = group.ok() ? 1 : 0;
  std::vector<uint8_t> oks(all.size());
  SWITCHAGG_RETURN_IF_ERROR(allgather(&ok, oks.data(), 1));
  if (std::find(oks.begin(), oks.end(), 0) != oks.end())
    return Status(Code::kNoResource, "a rank could not create its peer group");
  peer_group_ = std::move(group.value());
  addresses_ = std::move(kept_addresses);
  return Status::Ok();
}

const Decision& CommState::decide(const SelectionInput& in) {
  return decisions_.decide(ProcessRuntime::instance().selector(), in);
}

double nowUs() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Status CommState::tunerRecord(Algorithm served, double us) {
  return tuner_ ? record(*tuner_, served, us) : Status::Ok();
}

Tuner* CommState::routedTuner(CollKind op) {
  std::unique_ptr<Tuner>& t = routed_tuners_[size_t(op)];
  if (!t && ProcessRuntime::instance().params().tune_online) t = std::make_unique<Tuner>();
  return t.get();
}

Status CommState::routedTunerRecord(CollKind op, Algorithm served, double us) {
  Tuner* t = routed_tuners_[size_t(op)].get();
  return t ? record(*t, served, us) : Status::Ok();
}

Status CommState::routedPreviousDone(CollKind op) {
  double& start = routed_previous_start_us_[size_t(op)];
  if (start < 0) return Status::Ok();
  const double us = nowUs() - start;
  start = -1;
  return routedTunerRecord(op, Algorithm::kPrevious, us);
}

Status CommState::record(Tuner& tuner, Algorithm served, double us) {
  tuner.record(served, us);
  if (!tuner.needsAgreement()) return Status::Ok();
  const Tuner::Payload mine = tuner.payload();
  std::vector<double> all(Tuner::kAlgorithms * size_t(size_));
  Status st = tuningAllgather(mine.data(), all.data(), sizeof mine);
  if (!st.ok()) return st;
  if (rank_ == 0 && logEnabled(LogLevel::kDebug)) {
    std::string per_rank;
    for (size_t i = 0; i < all.size(); ++i) {
      if (std::isnan(all[i])) continue;
      char cell[64];
      snprintf(cell, sizeof cell, " r%zu:%s=%.1f", i / Tuner::kAlgorithms,
               algorithmName(static_cast<Algorithm>(i % Tuner::kAlgorithms)), all[i]);
      per_rank += cell;
    }
    SA_DEBUG("coll", "comm %s: tuning agreement, local us per rank:%s", name_.c_str(),
             per_rank.c_str());
  }
  tuner.agree(all);
  return Status::Ok();
}

Status CommState::previousDone() {
  if (previous_start_us_ < 0) return Status::Ok();
  const double us = nowUs() - previous_start_us_;
  previous_start_us_ = -1;
  return tunerRecord(Algorithm::kPrevious, us);
}

std::unique_ptr<HostComm> CommState::hostComm() {
  if (!peer_group_) return nullptr;
  return std::make_unique<PeerGroupComm>(*peer_group_, nextSequence(),
                                         ProcessRuntime::instance().params().stall);
}

uint64_t CommState::hostBytesSent() const {
  return peer_group_ ? peer_group_->counters().bytes_sent : 0;
}

void CommState::watchPeer(int peer) {
  if (!peer_group_ || peer == rank()) return;
  Status st = peer_group_->watch(peer);
  if (!st.ok()) SA_DEBUG("coll", "comm %s: watching rank %d: %s", name().c_str(), peer, st.toString().c_str());
}

bool CommState::peerFailed(int peer) const {
  return peer_group_ && peer != rank() && !peer_group_->peerStatus(peer).ok();
}

void CommState::recordServed(Algorithm a) {
  const auto i = static_cast<size_t>(a);
  ++counters_.served[i];
  counters_.last_path = algorithmName(a);
}

void CommState::recordLocal() {
  ++counters_.local;
  counters_.last_path = "local";
}

void CommState::recordFallback(const char* reason) {
  ++counters_.served[static_cast<size_t>(Algorithm::kPrevious)];
  counters_.last_path = "previous";
  // "selected" is announced by dispatch with the call's size and reason.
  if (reason == kFallbackSelected) {
    ++counters_.selected_previous;
    return;
  }
  if (counters_.fallback_reasons[reason]++ == 0 && rank_ == 0)
    SA_INFO("coll", "comm %s: allreduce handed to the previous module: %s", name_.c_str(),
            reason);
}

void CommState::logSummary() const {
  if (rank_ != 0 || !logEnabled(LogLevel::kInfo)) return;
  std::string served;
  for (const AlgorithmInfo& info : algorithmRegistry()) {
    const uint64_t n = counters_.served[static_cast<size_t>(info.id)];
    if (n) served += " " + std::string(info.name) + "=" + std::to_string(n);
  }
  if (counters_.local) served += " local=" + std::to_string(counters_.local);
  if (served.empty()) return;
  std::string reasons;
  if (counters_.selected_previous)
    reasons = std::string(kFallbackSelected) + "=" + std::to_string(counters_.selected_previous);
  for (const auto& [reason, n] : counters_.fallback_reasons)
    reasons += (reasons.empty() ? "" : ", ") + reason + "=" + std::to_string(n);
  SA_INFO("coll", "comm %s freed: allreduce calls:%s%s%s%s", name_.c_str(), served.c_str(),
          reasons.empty() ? "" : " (previous: ", reasons.c_str(), reasons.empty() ? "" : ")");
}

}  // namespace switchagg::coll
