// PeerGroup internals: tag layout, lanes and the clear-to-send protocol.
//
// 64-bit UCP tag of a PeerGroup message:
//
//   63   62..56   55..40     39..32   31..0
//   ctl  group    src rank   seq      user tag          data:    ctl = 0
//   1    group    0          0        0                 control: ctl = 1
//
// group = the group's tag slot, 1..127 (slot 0 stays free for raw
// Worker::tagRecv users; the creator picks a slot free on every member, or
// 1 + group_id % 127), src = sending rank (< 65536), seq = count of earlier messages
// with the same (src, dst, user tag), mod 256. Receives match all 64 bits,
// so the n-th receive posted for (src, tag) takes exactly the n-th message
// sent for it, whatever lane each travelled on and whether it waited for a
// clear-to-send: MPI's non-overtaking rule per (src, dst, tag), as long as
// fewer than 256 messages of one (src, tag) are outstanding at once.
//
// Admission of messages >= cts_threshold works with receiver credits. The
// receiver queues every posted receive that can hold >= cts_threshold
// bytes; in FIFO order, when its admitted-but-unfinished bytes plus the
// receive's capacity fit cts_window (or nothing else is admitted) it sends
// CTS {tag, seq, bytes} to the source: a credit for that one message. A
// sender with a credit in hand sends at once on the next lane; without one
// it sends RTS {tag, seq, length} and waits (an RTS also queues a receive
// whose buffer was too small to earn a credit). `seq` here is the full
// 64-bit count, so a credit for a message that went eagerly is recognised
// as stale and dropped. Senders that announced themselves (RTS) go first;
// if the window is held by credits while such a sender waits, the receiver
// asks its unused credits back (REVOKE / ack): a credit to a sender that is
// itself waiting on this receiver can never deadlock the group. Control
// messages are small eager sends on lane 0 into always-posted receives.
#pragma once

#include <deque>
#include <list>
#include <memory>
#include <unordered_map>
#include <vector>

#include "transport_internal.h"

namespace switchagg::ucx {

constexpr uint64_t kCtrlBit = 1ull << 63;
constexpr int kGroupShift = 56;
constexpr uint64_t kGroupMask = 0x7full << kGroupShift;
constexpr int kSrcShift = 40;
constexpr int kSeqShift = 32;
constexpr int kMaxGroupRanks = 1 << 16;
constexpr int kControlReceives = 8;

struct ControlMessage {
  enum Kind : uint32_t { kRts = 1, kCts = 2, kRevoke = 3, kRevokeAck = 4 };
  uint32_t kind;
  uint32_t src;     // rank that sent this control message
  uint32_t tag;
  uint32_t reserved;
  uint64_t seq;     // full count of (src, dst, tag) messages before this one
  uint64_t length;  // RTS: message length; CTS: bytes granted; ack: 1 = unused
};

struct PeerGroup::Impl {
  Worker* worker = nullptr;
  Worker::Impl* w = nullptr;
  uint32_t group_id = 0;
  int slot = 0;
  uint64_t group_bits = 0;
  int rank = 0;
  std::vector<std::vector<uint8_t>> addresses;
  int lanes = 1;
  FailureDetection detection = FailureDetection::kPeer;  // resolved
  std::vector<int> node_of;                              // empty: unknown
  // Lanes to `peer` go without error handling, watched by a sentinel
  // endpoint: every peer in kSentinel, the same node's in kNode.
  bool watchedBySentinel(int peer) const {
    if (detection == FailureDetection::kSentinel) return true;
    return detection == FailureDetection::kNode && !node_of.empty() &&
           node_of[size_t(peer)] == node_of[size_t(rank)];
  }
  size_t cts_threshold = 0;
  size_t cts_window = 0;
  PeerGroupCounters counters;
  std::shared_ptr<Impl*> alive;

  struct Peer {
    std::vector<std::unique_ptr<Endpoint>> lanes;
    std::unique_ptr<Endpoint> sentinel;  // watchedBySentinel(peer) only
    uint32_t next_lane = 0;
    bool failed = false;
    Status failure;
  };
  std::vector<Peer> peers;
  // Next message sequence numbers per pairKey(peer, tag).
  struct Stream {
    uint64_t send = 0;
    uint64_t recv = 0;
  };
  std::unordered_map<uint64_t, Stream> streams;
  // One-entry cache in front of `streams` (nodes never move): loops and
  // ping-pongs hit the same (peer, tag) again and again.
  uint64_t cached_pair = ~0ull;
  Stream* cached_stream = nullptr;
  Stream& stream(int peer, uint32_t tag) {
    const uint64_t k = pairKey(peer, tag);
    if (k != cached_pair) {
      cached_stream = &streams[k];
      cached_pair = k;
    }
    return *cached_stream;
  }
  PendingList pending_recvs;  // every posted receive (failure, teardown)
  uint64_t next_id = 1;

  struct SendOp {  // waiting for clear-to-send
    Request::State* user;
    int peer;
    uint32_t tag;
    uint64_t seq;
    const void* data;
    size_t length;
  };
  std::unordered_map<uint64_t, SendOp> awaiting_cts;  // messageKey -> send
  std::unordered_map<uint64_t, uint64_t> credits;     // messageKey -> seq granted
  struct InflightSend {
    int peer;
    Request::State* user;
    uint32_t tag;
    size_t length;
  };
  // Data sends UCX has not completed: failed by peerFailed(), since lanes
  // without error handling may never complete them.
  std::unordered_map<uint64_t, InflightSend> inflight_sends;

  enum class Grant { kNone, kCreditQueued, kRtsQueued, kGranted };
  struct RecvOp {
    Request::State* user;
    int src;
    uint32_t tag;
    uint64_t seq;
    size_t capacity;
    Grant grant = Grant::kNone;
    bool credit = false;    // granted before its sender announced itself
    bool revoking = false;  // REVOKE sent, ack pending
    uint64_t grant_bytes = 0;
  };
  // Receives under admission (room for >= cts_threshold, or an RTS came).
  std::unordered_map<uint64_t, RecvOp> recvs;  // messageKey -> receive
  std::unordered_map<uint64_t, ControlMessage> parked_rts;  // RTS before its receive
  std::deque<uint64_t> rts_queue;     // announced senders waiting for window, FIFO
  std::deque<uint64_t> credit_queue;  // posted receives waiting for a credit, FIFO
  uint64_t inflight = 0;              // granted bytes not yet received

  struct ControlSlot {
    ControlMessage msg{};
    Request request;
  };
  std::vector<std::unique_ptr<ControlSlot>> control_recvs;
  std::list<std::unique_ptr<ControlSlot>> control_sends;

  ~Impl();
  static uint64_t pairKey(int peer, uint32_t tag) { return uint64_t(uint32_t(peer)) << 32 | tag; }
  // The tag bits below the group: (rank, seq mod 256, tag).
  static uint64_t messageKey(int src, uint64_t seq, uint32_t tag) {
    return uint64_t(uint32_t(src)) << kSrcShift | (seq & 0xff) << kSeqShift | tag;
  }
  uint64_t dataTag(int src, uint64_t seq, uint32_t tag) const {
    return group_bits | messageKey(src, seq, tag);
  }
  uint64_t controlTag() const { return kCtrlBit | group_bits; }

  // Fast path: a valid, live rank whose lanes exist.
  bool ready(int peer) const {
    return peer >= 0 && peer < static_cast<int>(peers.size()) && !peers[peer].failed &&
           !peers[peer].lanes.empty();
  }
  Status checkPeer(int peer) const;
  // The start of isend()/irecv() (peer_group.cc).
  enum Direction { kSend, kRecv };
  struct Post {
    uint64_t seq = 0;
    uint64_t key = 0;
    bool large = false;  // >= cts_threshold: under admission
  };
  Status beginPost(Request::State& s, int peer, uint32_t tag, size_t length, Direction dir,
                   Post* post);
  Status recvFromFailed(int peer, uint32_t tag, void* data, size_t length, Request& request);
  Status ensureLanes(int peer);
  Result<std::unique_ptr<Endpoint>> watchedEndpoint(int peer);
  void trackSend(int peer, uint32_t tag, size_t length, Request::State& s);
  void postData(int peer, uint32_t tag, uint64_t seq, const void* data, size_t length,
                Request::State& s);
  // Takes a credit for message `seq` to `peer` if one is here (dropping
  // stale ones for that slot).
  bool takeCredit(int peer, uint32_t tag, uint64_t seq);
  // Clear-to-send (peer_group_admission.cc).
  void startControl();
  void postControlRecv(size_t index);
  void sendControl(int peer, const ControlMessage& msg);
  void onControl(const ControlMessage& msg);
  void onRts(const ControlMessage& msg);
  void onCts(const ControlMessage& msg);
  void onRevoke(const ControlMessage& msg);
  void onRevokeAck(const ControlMessage& msg);
  void rtsFor(uint64_t key, RecvOp& op, const ControlMessage& rts);
  RecvOp& admit(uint64_t key, Request::State& s);
  bool fits(uint64_t bytes) const { return inflight == 0 || inflight + bytes <= cts_window; }
  void grant(uint64_t key, RecvOp& op, bool credit);
  void revokeIdleCredits();
  void tryGrant();
  void recvFinished(uint64_t id);  // releases an admitted receive's window share
  void peerFailed(int peer, const Status& status);

  // Hook thunks (ctx = this, id = operation id / slot).
  static void sendDone(void* ctx, uint64_t id, const Status&, size_t);
  static void sendAbandoned(void* ctx, uint64_t id);
  static void ctsAbandoned(void* ctx, uint64_t id);
  static void recvDone(void* ctx, uint64_t id, const Status& st, size_t length);
  static void recvAbandoned(void* ctx, uint64_t id);
  static void controlReceived(void* ctx, uint64_t index, const Status& st, size_t length);
  static void controlSent(void* ctx, uint64_t slot, const Status&, size_t);
};

}  // namespace switchagg::ucx
