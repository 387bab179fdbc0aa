// Receiver-driven admission (clear-to-send) and peer failure for PeerGroup.
// The receiver's window counts bytes it granted and has not yet received;
// a grant needs the matching receive posted, so admitted data always lands
// in a user buffer and never queues in UCX's unexpected list.
#include <algorithm>

#include "peer_group_impl.h"
#include "switchagg/common/log.h"

namespace switchagg::ucx {

void PeerGroup::Impl::startControl() {
  for (int i = 0; i < kControlReceives; ++i) {
    control_recvs.push_back(std::make_unique<ControlSlot>());
    postControlRecv(control_recvs.size() - 1);
  }
}

void PeerGroup::Impl::postControlRecv(size_t index) {
  ControlSlot& slot = *control_recvs[index];
  Request::State& s = *slot.request.state();
  (void)req::begin(s, w, nullptr);
  s.hook = Hook{controlReceived, nullptr, this, index};
  // Exact tag, full mask: a masked receive would put every incoming message
  // of the worker through UCX's slower wildcard search.
  req::postTagRecv(*w, controlTag(), ~0ull, &slot.msg, sizeof(slot.msg), s);
}

void PeerGroup::Impl::controlReceived(void* ctx, uint64_t index, const Status& st,
                                      size_t length) {
  auto* g = static_cast<Impl*>(ctx);
  if (!st.ok()) {
    SA_WARN("ucx", "group %u: control receive failed: %s", g->group_id, st.toString().c_str());
    return;
  }
  ControlMessage msg = g->control_recvs[index]->msg;
  g->postControlRecv(index);
  if (length == sizeof(ControlMessage)) {
    g->onControl(msg);
  } else {
    SA_WARN("ucx", "group %u: dropped a %zu-byte control message", g->group_id, length);
  }
}

void PeerGroup::Impl::controlSent(void* ctx, uint64_t slot, const Status&, size_t) {
  auto* g = static_cast<Impl*>(ctx);
  auto* raw = reinterpret_cast<ControlSlot*>(slot);
  g->control_sends.remove_if([raw](const auto& p) { return p.get() == raw; });
}

void PeerGroup::Impl::sendControl(int peer, const ControlMessage& msg) {
  auto slot = std::make_unique<ControlSlot>();
  slot->msg = msg;
  ControlSlot* raw = slot.get();
  control_sends.push_back(std::move(slot));
  Request::State& s = *raw->request.state();
  (void)req::begin(s, w, nullptr);
  s.hook = Hook{controlSent, nullptr, this, reinterpret_cast<uint64_t>(raw)};
  // A failed control send needs no action here: the lane's failure reaches
  // peerFailed(), which fails everything waiting on this peer.
  req::postTagSend(*peers[peer].lanes[0]->impl(), controlTag(), &raw->msg, sizeof(raw->msg), s);
}

void PeerGroup::Impl::onControl(const ControlMessage& msg) {
  if (msg.src >= peers.size()) {
    SA_WARN("ucx", "group %u: control message from unknown rank %u", group_id, msg.src);
    return;
  }
  if (msg.kind == ControlMessage::kRts) {
    onRts(msg);
  } else if (msg.kind == ControlMessage::kCts) {
    onCts(msg);
  } else if (msg.kind == ControlMessage::kRevoke) {
    onRevoke(msg);
  } else if (msg.kind == ControlMessage::kRevokeAck) {
    onRevokeAck(msg);
  } else {
    SA_WARN("ucx", "group %u: unknown control kind %u", group_id, msg.kind);
  }
}

void PeerGroup::Impl::onRts(const ControlMessage& msg) {
  const uint64_t key = messageKey(int(msg.src), msg.seq, msg.tag);
  auto it = recvs.find(key);
  if (it != recvs.end() && it->second.seq == msg.seq) {
    rtsFor(key, it->second, msg);
    tryGrant();
    return;
  }
  // A posted receive too small to be tracked (rare: the message will not
  // fit, UCX reports the truncation): admit it now.
  for (Request::State* st : pending_recvs.states(int(msg.src))) {
    if (st->link.tag != msg.tag || st->link.seq != msg.seq) continue;
    rtsFor(key, admit(key, *st), msg);
    tryGrant();
    return;
  }
  parked_rts[key] = msg;  // queued once the receive is posted
}

// Tracks a posted receive for admission; its completion hook releases it.
PeerGroup::Impl::RecvOp& PeerGroup::Impl::admit(uint64_t key, Request::State& s) {
  s.hook = Hook{recvDone, recvAbandoned, this, key};
  auto [it, inserted] = recvs.emplace(
      key, RecvOp{&s, s.link.peer, s.link.tag, s.link.seq, s.link.capacity});
  (void)inserted;
  return it->second;
}

// The sender of `op` is committed: it goes to the announced queue, or, if
// its credit is already out, that credit needs no revoking any more.
void PeerGroup::Impl::rtsFor(uint64_t key, RecvOp& op, const ControlMessage& rts) {
  if (op.grant == Grant::kGranted) {
    op.credit = false;
    return;
  }
  op.grant = Grant::kRtsQueued;
  op.grant_bytes = rts.length;
  rts_queue.push_back(key);
}

void PeerGroup::Impl::onCts(const ControlMessage& msg) {
  const uint64_t key = messageKey(int(msg.src), msg.seq, msg.tag);
  auto it = awaiting_cts.find(key);
  if (it != awaiting_cts.end() && it->second.seq == msg.seq) {
    SendOp op = it->second;
    awaiting_cts.erase(it);
    op.user->hook = Hook{};
    if (peers[op.peer].failed) {
      req::complete(*op.user, peers[op.peer].failure, 0);
      return;
    }
    postData(op.peer, op.tag, op.seq, op.data, op.length, *op.user);
    return;
  }
  // A credit ahead of the send; one for a message already sent is stale.
  auto next = streams.find(pairKey(int(msg.src), msg.tag));
  if (msg.seq >= (next == streams.end() ? 0 : next->second.send)) credits[key] = msg.seq;
}

bool PeerGroup::Impl::takeCredit(int peer, uint32_t tag, uint64_t seq) {
  if (credits.empty()) return false;
  auto it = credits.find(messageKey(peer, seq, tag));
  if (it == credits.end() || it->second > seq) return false;  // none, or for 256 later
  const bool mine = it->second == seq;
  credits.erase(it);
  return mine;
}

void PeerGroup::Impl::grant(uint64_t key, RecvOp& op, bool credit) {
  (void)key;
  op.grant = Grant::kGranted;
  op.credit = credit;
  inflight += op.grant_bytes;
  counters.max_inflight_to_me = std::max(counters.max_inflight_to_me, inflight);
  counters.cts_granted++;
  sendControl(op.src, ControlMessage{ControlMessage::kCts, uint32_t(rank), op.tag, 0, op.seq,
                                     op.grant_bytes});
}

// Announced senders first, FIFO: a large message at the head is not
// overtaken, so it cannot starve. Credits only while nobody announced
// waits; if the window is what holds an announced sender back, unused
// credits are asked back.
void PeerGroup::Impl::tryGrant() {
  for (;;) {
    if (!rts_queue.empty()) {
      auto it = recvs.find(rts_queue.front());
      if (it == recvs.end() || it->second.grant != Grant::kRtsQueued) {
        rts_queue.pop_front();
        continue;
      }
      if (!fits(it->second.grant_bytes)) return revokeIdleCredits();
      rts_queue.pop_front();
      grant(it->first, it->second, false);
      continue;
    }
    if (credit_queue.empty()) return;
    auto it = recvs.find(credit_queue.front());
    if (it == recvs.end() || it->second.grant != Grant::kCreditQueued) {
      credit_queue.pop_front();
      continue;
    }
    if (!fits(it->second.grant_bytes)) return;
    credit_queue.pop_front();
    grant(it->first, it->second, true);
  }
}

void PeerGroup::Impl::revokeIdleCredits() {
  for (auto& [key, op] : recvs) {
    if (op.grant != Grant::kGranted || !op.credit || op.revoking) continue;
    op.revoking = true;
    sendControl(op.src,
                ControlMessage{ControlMessage::kRevoke, uint32_t(rank), op.tag, 0, op.seq, 0});
  }
}

// Sender side: give the credit back if it is still unused.
void PeerGroup::Impl::onRevoke(const ControlMessage& msg) {
  const uint64_t key = messageKey(int(msg.src), msg.seq, msg.tag);
  auto it = credits.find(key);
  const bool unused = it != credits.end() && it->second == msg.seq;
  if (unused) credits.erase(it);
  sendControl(int(msg.src), ControlMessage{ControlMessage::kRevokeAck, uint32_t(rank), msg.tag,
                                           0, msg.seq, unused ? 1u : 0u});
}

// Receiver side: an unused credit frees its window share; the sender will
// announce itself (RTS) when it gets to that message. A used one means the
// data is on its way.
void PeerGroup::Impl::onRevokeAck(const ControlMessage& msg) {
  auto it = recvs.find(messageKey(int(msg.src), msg.seq, msg.tag));
  if (it == recvs.end() || it->second.seq != msg.seq || !it->second.revoking) return;
  RecvOp& op = it->second;
  op.revoking = false;
  op.credit = false;
  if (msg.length == 1 && op.grant == Grant::kGranted) {
    op.grant = Grant::kNone;
    inflight -= op.grant_bytes;
    counters.cts_revoked++;
    tryGrant();
  }
}

void PeerGroup::Impl::recvFinished(uint64_t id) {
  auto it = recvs.find(id);
  if (it == recvs.end()) return;
  if (it->second.grant == Grant::kGranted) inflight -= it->second.grant_bytes;
  recvs.erase(it);
  tryGrant();
}

void PeerGroup::Impl::peerFailed(int peer, const Status& status) {
  Peer& p = peers[peer];
  if (p.failed) return;
  // A peer that finished and exited closes its connections right after its
  // last sends; that data (and the acks of our sends) may still sit in the
  // data lanes when the sentinel reports the close. Drain them first, so
  // only what is really lost fails.
  for (int idle = 0, i = 0; idle < 2 && i < 10000; ++i)
    idle = ucp_worker_progress(w->ucp) != 0 ? 0 : idle + 1;
  w->runHooksFor(this);
  p.failed = true;
  p.failure = Status(Code::kPeerFailed, "group " + std::to_string(group_id) + " rank " +
                                            std::to_string(peer) + ": " + status.message());
  SA_DEBUG("ucx", "%s", p.failure.message().c_str());
  for (auto& lane : p.lanes) {
    lane->impl()->failed = true;  // fail fast, and close by force
    lane->impl()->failure = p.failure;
  }
  std::vector<Request::State*> sends;
  for (auto& [id, op] : inflight_sends)
    if (op.peer == peer && op.user->active) sends.push_back(op.user);
  for (Request::State* st : sends) req::abandon(*st, p.failure);  // hooks erase them
  for (auto it = awaiting_cts.begin(); it != awaiting_cts.end();) {
    if (it->second.peer == peer) {
      req::complete(*it->second.user, p.failure, 0);
      it = awaiting_cts.erase(it);
    } else {
      ++it;
    }
  }
  // Receives complete now; their deferred recvFinished() frees the window.
  for (Request::State* st : pending_recvs.states(peer))
    if (st->active) req::abandon(*st, p.failure);
  for (auto it = parked_rts.begin(); it != parked_rts.end();) {
    it = (int(it->second.src) == peer) ? parked_rts.erase(it) : std::next(it);
  }
  for (auto it = credits.begin(); it != credits.end();) {
    it = (int((it->first >> kSrcShift) & 0xffff) == peer) ? credits.erase(it) : std::next(it);
  }
}

}  // namespace switchagg::ucx
