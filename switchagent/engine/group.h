// Group: one communicator of one job at the agent (lease token + group id),
// its members and its window of slots. Internal to the aggregation engine.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "aggregation_engine.h"
#include "slot_pool.h"
#include "switchagg/agent/wire.h"

namespace switchagg::agent {

struct Member {
  PeerId peer = 0;
  bool joined = false;
  bool left = false;
  uint32_t window_request = 0;
  bool understands_busy = false;  // its JOIN set kJoinFlagBusy
  bool understands_routed = false;  // its JOIN set kJoinFlagRouted
  bool uplink = false;              // a child agent (its JOIN set kJoinFlagUplink)
  bool understands_waiting = false;  // its JOIN set kJoinFlagKeepalive
  uint64_t next_chunk = 0;        // one past the highest chunk it contributed
};

// A call the agent refused (no slots free when its first chunk came): its
// chunks [begin, end) are dropped; each member is told busy once.
struct RefusedCall {
  uint64_t begin = 0, end = 0;
  std::vector<uint8_t> told;  // per rank
};

// One slot of a group's window: collects chunk `expect_chunk`, then
// A chunk's routing mode: 0 for a plain CONTRIB.
inline uint8_t modeOf(const wire::Message& m) {
  return m.type == wire::MsgType::kContribRouted ? m.mode : 0;
}

// expect_chunk + window, ... (slot = chunk mod window).
struct Slot {
  uint64_t expect_chunk = 0;
  uint32_t arrived = 0;
  std::vector<uint8_t> have;  // per rank: contributed to expect_chunk
  // Per rank: its chunk expect_chunk is being received straight into its
  // contribution buffer (placeContrib); nothing reads that buffer meanwhile.
  std::vector<uint8_t> receiving;
  uint32_t count = 0;         // elements, fixed by the first contribution
  uint64_t call_elems = 0;
  Dtype dtype = Dtype::kInt32;
  Op op = Op::kSum;
  // Routed chunks (CONTRIB_ROUTED): the mode (0: a plain CONTRIB), the
  // members that get the result's payload, and (forward) each member's
  // piece [piece_off, piece_off + piece_len) of the chunk, in elements.
  uint8_t mode = 0;
  uint32_t dest_lo = 0, dest_hi = 0;
  std::vector<uint32_t> piece_off, piece_len;
  // Tree groups' routed chunks: the members' route flags (kRoute*), the
  // leaves that want the payload [up_lo, up_hi], and (forward) the part of
  // the chunk this leaf's members sent, [up_off, up_off + up_len).
  uint8_t route_flags = 0;
  uint32_t up_lo = 0, up_hi = 0;
  uint32_t up_off = 0, up_len = 0;
  // Plain chunks (mode 0): members 0..folded-1 are reduced into the result
  // already, a running prefix in rank order (engine_contrib.cc): member j
  // is folded once members 0..j are in and the previous chunk's result has
  // left the buffer (sends_pending == 0); the others wait in their
  // contribution buffers.
  uint32_t folded = 0;
  int64_t first_ms = 0;        // first contribution of this chunk arrived
  bool ready = false;          // every member contributed; queued for reduction
  // Tree groups: the reduced chunk went up to the parent, whose RESULT
  // (since up_ms) completes the slot.
  bool up_pending = false;
  int64_t up_ms = 0;
  uint32_t sends_pending = 0;  // RESULT sends of the previous chunk still reading
  uint64_t arrived_bytes = 0;  // contribution bytes of expect_chunk received (credits)
};

struct Group {
  uint64_t serial = 0;  // unique per agent run; names the group in send completions
  GroupKey key;
  std::string job;
  std::atomic<uint64_t>* bytes_in_job = nullptr;  // its job's bytes_in counter (one writer)
  wire::Token token{};
  uint64_t id = 0;
  uint32_t size = 0;
  uint32_t joined = 0, left = 0, busy = 0;
  bool formed = false;
  int64_t created_ms = 0;
  SlotGrant grant;              // window and chunk size, fixed at formation
  wire::CapTable caps;          // what JOIN_ACK says (a tree's: the parent's too)
  uint32_t lease_slots = 0;     // the lease's slots (its budget for active calls)
  bool busy_aware = false;      // every member understands ERROR(busy)
  bool routed_aware = false;    // every member's JOIN set kJoinFlagRouted
  // Per-call activation: a call holds the window's slots from its first
  // contribution until its last result is sent.
  bool active = false;
  uint64_t next_call = 0;       // first chunk of the next call (chunks count on across calls)
  uint64_t call_end = 0;        // active: one past the call's last chunk
  uint64_t call_left = 0;       // active: chunks of the call whose results are not sent yet
  uint64_t last_use = 0;        // engine use clock at the last call's end (LRU of idle buffers)
  // Pinned (tree groups, and groups with a child agent as member): the
  // window's slots are held from formation to the end; in_call marks a call.
  bool pinned = false;
  bool in_call = false;
  // Tree (kJoinFlagTree): this agent is the group's leaf number tree_index
  // of tree_size; it joined the parent under parent_token (up_key), and
  // JOIN_ACKs its members once the parent's came (up_joined). up_gone: the
  // parent aborted the group or its connection failed (nothing more goes up).
  bool tree = false;
  wire::Token parent_token{};
  uint32_t tree_index = 0, tree_size = 0;
  GroupKey up_key;
  bool has_up_key = false;  // this group owns up_key in the engine's by_up_
  bool up_joined = false, up_gone = false;
  // The uplink JOIN asked the parent for WAITING (kJoinFlagKeepalive), which
  // the leaf relays to its members (docs/agent-protocol.md "Waiting
  // members", case 11); cleared when a parent that predates it refused it.
  bool up_keepalive = false;
  int64_t formed_ms = 0;
  int64_t waiting_told_ms = 0;  // the last WAITING sent to its members (tick)
  uint64_t held_bytes = 0;  // contribution bytes of chunks not answered yet (credits)
  uint64_t share_pass = 0, share_bytes = 0;  // fair share: bytes taken in pass share_pass
  std::vector<RefusedCall> refused;
  std::vector<Member> members;
  std::vector<Slot> slots;
  std::shared_ptr<SlotBuffers> buffers;
};

// One pool task of a reduction: elements [begin, end) of a slot, members
// [from, to) folded into its result (from > 0: into the running prefix
// already there; plain chunks), or (a routed reduce) every member that sent
// a piece. `first`: member from's data while it is still in the message
// rather than in its buffer (engine_contrib.cc).
struct Piece {
  Group* group;
  uint32_t slot;
  size_t begin, end;  // elements
  uint32_t from, to;  // members
  const uint8_t* first;
};

inline GroupKey groupKey(const wire::Token& token, uint64_t group_id) { return {token, group_id}; }

// The header fields of a message that carries slot `slot`'s current chunk
// (a RESULT to members, a leaf's CONTRIB to its parent): the caller adds
// what differs (rank, flags).
wire::Message chunkMessage(wire::MsgType type, const wire::Token& token, uint64_t group_id,
                           const Slot& s, uint32_t slot);
// The header fields of group `g`'s JOIN (to its parent, under `token`) or
// JOIN_ACK (to its members): a group of `size` with g's window; the caller
// adds what differs (rank, flags, slot bytes, caps).
wire::Message joinMessage(wire::MsgType type, const wire::Token& token, const Group& g,
                          uint32_t size);

}  // namespace switchagg::agent
