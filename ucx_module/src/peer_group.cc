// PeerGroup: ranks by worker address, lazy lanes, tag folding, nonblocking
// send/receive and their blocking helpers. Clear-to-send and failure
// handling live in peer_group_admission.cc. Layout: peer_group_impl.h.
#include "peer_group_impl.h"

#include <algorithm>

#include "switchagg/common/log.h"
#include "switchagg/ucx/thread_gate.h"

namespace switchagg::ucx {

PeerGroup::Impl::~Impl() {
  SA_DEBUG("ucx", "group %u rank %d: closing", group_id, rank);
  w->runHooksFor(this);  // forget Requests that finished since the last progress
  *alive = nullptr;
  control_recvs.clear();  // Request destructors cancel the posted receives
  control_sends.clear();
  const Status aborted(Code::kAborted, "peer group destroyed");
  for (auto& [id, op] : awaiting_cts) req::complete(*op.user, aborted, 0);
  awaiting_cts.clear();
  for (Request::State* st : pending_recvs.states()) req::abandon(*st, aborted);
  recvs.clear();
  for (auto& [id, op] : inflight_sends) req::abandon(*op.user, aborted);
  inflight_sends.clear();
  w->forgetHooks(this);
  // Flush the worker first: UCX answers a peer's rendezvous (ATS) on
  // endpoints of its own, which closing our lanes does not flush. Then lanes
  // (what we sent), sentinels last: a peer must not see us "fail" while our
  // last messages or acks are still on their way.
  (void)w->flush(w->ctx->options.peer_timeout_ms);
  std::vector<std::unique_ptr<Endpoint>> lanes_out, sentinels;
  for (auto& peer : peers) {
    for (auto& lane : peer.lanes) lanes_out.push_back(std::move(lane));
    sentinels.push_back(std::move(peer.sentinel));
  }
  w->group_slots[slot] = false;
  // UCX pairs a new endpoint with the peer's endpoint of the same creation
  // order between the two workers. One thread creates groups and lanes in
  // the same order on every rank, so pairs stay within a group; threads do
  // not, and closing this group's endpoints could fail another live group
  // whose peer endpoints are paired with them. So with threads they stay
  // open until the worker's last group closes.
  auto keep = [](std::vector<std::unique_ptr<Endpoint>>& from,
                 std::vector<std::unique_ptr<Endpoint>>& to) {
    for (auto& e : from)
      if (e) to.push_back(std::move(e));
    from.clear();
  };
  if (ThreadGate::enabled()) {
    keep(lanes_out, w->retired_lanes);
    keep(sentinels, w->retired_sentinels);
    if (std::find(w->group_slots.begin() + 1, w->group_slots.end(), true) != w->group_slots.end())
      return;
    lanes_out.swap(w->retired_lanes);
    sentinels.swap(w->retired_sentinels);
  }
  closeEndpoints(w, lanes_out, w->ctx->options.peer_timeout_ms);
  closeEndpoints(w, sentinels, w->ctx->options.peer_timeout_ms);
}

Status PeerGroup::Impl::checkPeer(int peer) const {
  if (peer < 0 || peer >= static_cast<int>(peers.size()))
    return Status(Code::kInvalidArgument, "rank " + std::to_string(peer) + " not in group of " +
                                              std::to_string(peers.size()));
  if (peers[peer].failed) return peers[peer].failure;
  return Status::Ok();
}

// A PEER-mode endpoint whose failure fails the whole peer: a lane, or for a
// peer watched by a sentinel the one endpoint between the two sentinel
// workers.
Result<std::unique_ptr<Endpoint>> PeerGroup::Impl::watchedEndpoint(int peer) {
  auto ep = EndpointFactory::toAddress(w, addresses[peer], UCP_ERR_HANDLING_MODE_PEER,
                                       watchedBySentinel(peer));
  if (!ep.ok()) return ep.status();
  std::weak_ptr<Impl*> token = alive;
  ep.value()->impl()->on_failure = [token, peer](const Status& st) {
    auto t = token.lock();
    if (t && *t != nullptr) (*t)->peerFailed(peer, st);
  };
  return ep;
}

// Lanes are created together on first use, for receives too: an endpoint
// to the source is what notices that it died. Lanes to oneself never fail
// and skip error handling (PEER mode has no shared-memory or self path).
Status PeerGroup::Impl::ensureLanes(int peer) {
  Peer& p = peers[peer];
  if (!p.lanes.empty()) return Status::Ok();
  const bool sentinel = watchedBySentinel(peer) && peer != rank;
  const bool plain = sentinel || peer == rank;
  for (int i = 0; i < lanes; ++i) {
    auto ep = plain ? EndpointFactory::toAddress(w, addresses[peer], UCP_ERR_HANDLING_MODE_NONE)
                    : watchedEndpoint(peer);
    if (!ep.ok()) {
      p.lanes.clear();
      return ep.status();
    }
    p.lanes.push_back(std::move(ep.value()));
  }
  if (sentinel) {
    auto watch = watchedEndpoint(peer);
    if (watch.ok()) {
      p.sentinel = std::move(watch.value());
    } else {
      // No sentinel (no TCP, or the peer has none): still usable, but a
      // dead peer now only shows as a timeout.
      static std::atomic<bool> warned{false};
      if (!warned.exchange(true))
        SA_WARN("ucx", "no failure sentinel possible (%s); dead peers surface as timeouts",
                watch.status().toString().c_str());
    }
  }
  return Status::Ok();
}

void PeerGroup::Impl::trackSend(int peer, uint32_t tag, size_t length, Request::State& s) {
  const uint64_t id = next_id++;
  inflight_sends[id] = InflightSend{peer, &s, tag, length};
  s.hook = Hook{sendDone, sendAbandoned, this, id};
}

void PeerGroup::Impl::sendDone(void* ctx, uint64_t id, const Status&, size_t) {
  static_cast<Impl*>(ctx)->inflight_sends.erase(id);
}

void PeerGroup::Impl::sendAbandoned(void* ctx, uint64_t id) {
  static_cast<Impl*>(ctx)->inflight_sends.erase(id);
}

void PeerGroup::Impl::ctsAbandoned(void* ctx, uint64_t id) {
  static_cast<Impl*>(ctx)->awaiting_cts.erase(id);
}

void PeerGroup::Impl::recvDone(void* ctx, uint64_t id, const Status&, size_t) {
  static_cast<Impl*>(ctx)->recvFinished(id);
}

void PeerGroup::Impl::recvAbandoned(void* ctx, uint64_t id) {
  static_cast<Impl*>(ctx)->recvFinished(id);
}

void PeerGroup::Impl::postData(int peer, uint32_t tag, uint64_t seq, const void* data,
                               size_t length, Request::State& s) {
  Peer& p = peers[peer];
  uint32_t lane = p.next_lane++ % static_cast<uint32_t>(p.lanes.size());
  counters.messages_sent++;
  counters.bytes_sent += length;
  counters.lane_messages[lane]++;
  req::postTagSend(*p.lanes[lane]->impl(), dataTag(rank, seq, tag), data, length, s);
  if (s.active) trackSend(peer, tag, length, s);
}

PeerGroup::PeerGroup(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PeerGroup::~PeerGroup() = default;

int PeerGroup::firstCommonFreeSlot(const std::vector<std::array<uint64_t, 2>>& busy,
                                   int start) {
  if (start < 1 || start > kMaxSlot) start = 1;
  for (int i = 0; i < kMaxSlot; ++i) {
    const int slot = 1 + (start - 1 + i) % kMaxSlot;
    const uint64_t bit = uint64_t(1) << (slot % 64);
    bool free_everywhere = true;
    for (const auto& mask : busy) free_everywhere = free_everywhere && !(mask[slot / 64] & bit);
    if (free_everywhere) return slot;
  }
  return 0;
}

Result<std::unique_ptr<PeerGroup>> PeerGroup::create(Worker& worker, uint32_t group_id, int rank,
                                                     std::vector<std::vector<uint8_t>> addresses,
                                                     int slot, std::vector<int> node_of) {
  const int size = static_cast<int>(addresses.size());
  if (size == 0 || size > kMaxGroupRanks)
    return Status(Code::kInvalidArgument, "group size must be 1.." + std::to_string(kMaxGroupRanks));
  if (rank < 0 || rank >= size) return Status(Code::kInvalidArgument, "rank outside the group");
  if (!node_of.empty() && node_of.size() != addresses.size())
    return Status(Code::kInvalidArgument, "node_of must name a node for every rank");
  Worker::Impl* w = worker.impl();
  if (slot < 0 || slot > kMaxSlot)
    return Status(Code::kInvalidArgument, "group tag slot " + std::to_string(slot) +
                                              " outside 1.." + std::to_string(kMaxSlot));
  if (slot == 0) slot = 1 + static_cast<int>(group_id % kMaxSlot);
  if (w->group_slots[slot])
    return Status(Code::kInvalidArgument,
                  "group id " + std::to_string(group_id) + ": tag slot " + std::to_string(slot) +
                      " is held by a live group on this worker");
  auto impl = std::make_unique<Impl>();
  impl->worker = &worker;
  impl->w = w;
  impl->group_id = group_id;
  impl->slot = slot;
  impl->group_bits = uint64_t(slot) << kGroupShift;
  impl->rank = rank;
  impl->addresses = std::move(addresses);
  const Context& ctx = worker.context();
  impl->lanes = ctx.lanes();
  impl->detection = ctx.failureDetection();
  impl->node_of = std::move(node_of);
  impl->cts_threshold = ctx.options().cts_threshold;
  impl->cts_window = ctx.options().cts_window;
  impl->counters.lane_messages.assign(impl->lanes, 0);
  impl->peers.resize(size);
  impl->pending_recvs.bytes_done = &impl->counters.bytes_received;
  impl->alive = std::make_shared<Impl*>(impl.get());
  w->group_slots[slot] = true;
  impl->startControl();
  return std::unique_ptr<PeerGroup>(new PeerGroup(std::move(impl)));
}

std::string PeerGroup::describePeer(int peer) {
  if (!impl_->checkPeer(peer).ok() || !impl_->ensureLanes(peer).ok()) return "";
  const auto& p = impl_->peers[peer];
  std::string out;
  for (size_t i = 0; i < p.lanes.size(); ++i)
    out += "lane " + std::to_string(i) + ": " + p.lanes[i]->transports() + "\n";
  if (p.sentinel) out += "sentinel: " + p.sentinel->transports() + "\n";
  return out;
}

namespace {

std::string messageName(const char* dir, int peer, uint32_t tag, size_t bytes) {
  char buf[128];
  snprintf(buf, sizeof buf, "%s rank %d (tag 0x%x, %zu bytes)", dir, peer, tag, bytes);
  return buf;
}

}  // namespace

std::string PeerGroup::describePending(const Request& request) const {
  const Impl& g = *impl_;
  const Request::State* s = request.state();
  if (!s->active) return "";
  const std::string group = "group " + std::to_string(g.group_id) + ": ";
  for (const auto& [key, op] : g.awaiting_cts)
    if (op.user == s)
      return group + messageName("send to", op.peer, op.tag, op.length) +
             ": announced (RTS), waiting for the receiver's clear-to-send";
  for (const auto& [id, op] : g.inflight_sends)
    if (op.user == s)
      return group + messageName("send to", op.peer, op.tag, op.length) +
             ": handed to UCX, its completion needs the receiver's progress";
  if (s->link.list != nullptr) {
    const PendingLink& l = s->link;
    std::string what = group + messageName("receive from", l.peer, l.tag, l.capacity) + ": ";
    auto it = g.recvs.find(Impl::messageKey(l.peer, l.seq, l.tag));
    if (it == g.recvs.end() || it->second.user != s) return what + "posted, no data yet";
    switch (it->second.grant) {
      case Impl::Grant::kGranted:
        return what + (it->second.credit
                           ? "credit granted, the sender has not sent the message yet"
                           : "clear-to-send granted to the announced sender, data not complete");
      case Impl::Grant::kRtsQueued: return what + "sender announced, waiting for window";
      case Impl::Grant::kCreditQueued: return what + "posted, waiting for window to grant a credit";
      default: return what + "posted, sender not announced";
    }
  }
  return group + "request in progress";
}

int PeerGroup::rank() const { return impl_->rank; }
int PeerGroup::size() const { return static_cast<int>(impl_->peers.size()); }
const PeerGroupCounters& PeerGroup::counters() const { return impl_->counters; }
Status PeerGroup::watch(int peer) {
  SWITCHAGG_RETURN_IF_ERROR(impl_->checkPeer(peer));
  return impl_->ensureLanes(peer);
}
Status PeerGroup::peerStatus(int peer) const { return impl_->checkPeer(peer); }
Worker& PeerGroup::worker() { return *impl_->worker; }

// What a send and a receive both do first: the message's number on its
// (peer, tag) stream and its key; a large one (>= cts_threshold, under
// admission) is refused while an earlier message of the stream still holds
// that key (256 outstanding); then the request begins and the number is taken.
Status PeerGroup::Impl::beginPost(Request::State& s, int peer, uint32_t tag, size_t length,
                                  Direction dir, Post* post) {
  Stream& st = stream(peer, tag);
  uint64_t& next_seq = dir == kSend ? st.send : st.recv;
  post->seq = next_seq;
  post->key = messageKey(peer, next_seq, tag);
  post->large = length >= cts_threshold;
  if (post->large && (dir == kSend ? awaiting_cts.count(post->key) : recvs.count(post->key)) != 0)
    return Status(
        Code::kNoResource,
        std::string(dir == kSend ? "256 sends already waiting" : "256 receives already pending") +
            " for rank " + std::to_string(peer) + " tag " + std::to_string(tag));
  if (!req::begin(s, w, nullptr)) return req::beginFailure(s);
  ++next_seq;
  return Status::Ok();
}

Status PeerGroup::isend(int peer, uint32_t tag, const void* data, size_t length,
                        Request& request) {
  Impl& g = *impl_;
  if (!g.ready(peer)) {
    SWITCHAGG_RETURN_IF_ERROR(g.checkPeer(peer));
    SWITCHAGG_RETURN_IF_ERROR(g.ensureLanes(peer));
  }
  Request::State& s = *request.state();
  Impl::Post post;
  SWITCHAGG_RETURN_IF_ERROR(g.beginPost(s, peer, tag, length, Impl::kSend, &post));
  const bool credit = g.takeCredit(peer, tag, post.seq);
  if (post.large && credit) g.counters.cts_credits_used++;
  if (!post.large || credit) {
    g.postData(peer, tag, post.seq, data, length, s);
    return (s.done && !s.status.ok()) ? s.status : Status::Ok();
  }
  g.awaiting_cts.emplace(post.key, Impl::SendOp{&s, peer, tag, post.seq, data, length});
  s.hook = Hook{nullptr, Impl::ctsAbandoned, &g, post.key};
  g.counters.cts_waits++;
  g.sendControl(peer,
                ControlMessage{ControlMessage::kRts, uint32_t(g.rank), tag, 0, post.seq, length});
  return Status::Ok();
}

Status PeerGroup::irecv(int peer, uint32_t tag, void* data, size_t length, Request& request) {
  Impl& g = *impl_;
  if (!g.ready(peer)) {
    Status peer_state = g.checkPeer(peer);
    if (peer_state.code() == Code::kPeerFailed)
      return g.recvFromFailed(peer, tag, data, length, request);
    SWITCHAGG_RETURN_IF_ERROR(peer_state);
    SWITCHAGG_RETURN_IF_ERROR(g.ensureLanes(peer));
  }
  Request::State& s = *request.state();
  Impl::Post post;
  SWITCHAGG_RETURN_IF_ERROR(g.beginPost(s, peer, tag, length, Impl::kRecv, &post));
  const uint64_t seq = post.seq;
  const uint64_t key = post.key;
  s.link.state = &s;
  s.link.peer = peer;
  s.link.tag = tag;
  s.link.seq = seq;
  s.link.capacity = length;
  g.pending_recvs.push(s.link);
  Impl::RecvOp* op = nullptr;
  // Room for an admitted message: tracked for admission and earns a credit.
  if (post.large) {
    op = &g.admit(key, s);
    op->grant = Impl::Grant::kCreditQueued;
    op->grant_bytes = length;
    g.credit_queue.push_back(key);
  }
  if (!g.parked_rts.empty()) {
    auto parked = g.parked_rts.find(key);
    if (parked != g.parked_rts.end() && parked->second.seq == seq) {
      ControlMessage rts = parked->second;
      g.parked_rts.erase(parked);
      if (op == nullptr) op = &g.admit(key, s);
      g.rtsFor(key, *op, rts);
    }
  }
  req::postTagRecv(*g.w, g.dataTag(peer, seq, tag), ~0ull, data, length, s);
  if (op != nullptr) g.tryGrant();
  return (s.done && !s.status.ok()) ? s.status : Status::Ok();
}

// A peer that sent its last messages and exited is "failed", but what it
// sent before is still deliverable: UCX holds it as unexpected. Match it if
// it is there (eager; the receive completes inside the post), else fail.
Status PeerGroup::Impl::recvFromFailed(int peer, uint32_t tag, void* data, size_t length,
                                       Request& request) {
  Request::State& s = *request.state();
  if (!req::begin(s, w, nullptr)) return req::beginFailure(s);
  const uint64_t seq = stream(peer, tag).recv++;
  req::postTagRecv(*w, dataTag(peer, seq, tag), ~0ull, data, length, s);
  if (s.done) {
    if (s.status.ok()) counters.bytes_received += s.length;
    return s.status;
  }
  req::abandon(s, peers[peer].failure);
  return peers[peer].failure;
}

Status PeerGroup::send(int peer, uint32_t tag, const void* data, size_t length,
                       int64_t timeout_ms) {
  Request r;
  SWITCHAGG_RETURN_IF_ERROR(isend(peer, tag, data, length, r));
  return impl_->worker->wait(r, timeout_ms);
}

Status PeerGroup::recv(int peer, uint32_t tag, void* data, size_t length, int64_t timeout_ms) {
  Request r;
  SWITCHAGG_RETURN_IF_ERROR(irecv(peer, tag, data, length, r));
  return impl_->worker->wait(r, timeout_ms);
}

Status PeerGroup::sendrecv(int to, const void* sbuf, size_t slen, int from, void* rbuf,
                           size_t rlen, uint32_t tag, int64_t timeout_ms) {
  Request rr, sr;
  SWITCHAGG_RETURN_IF_ERROR(irecv(from, tag, rbuf, rlen, rr));
  SWITCHAGG_RETURN_IF_ERROR(isend(to, tag, sbuf, slen, sr));
  return impl_->worker->waitAll({&rr, &sr}, timeout_ms);
}

}  // namespace switchagg::ucx
