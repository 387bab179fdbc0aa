// The agent's data-plane wire protocol (v1), shared by the agent and the
// data-plane client. No UCX here: a message is an active-message *header*
// (fixed size per type, at most kMaxHeaderBytes) plus a *body* (payload
// chunk, capability table or error text) that travels as the AM data, so
// neither side copies a payload to frame it.
//
// Header layout, little-endian:
//   0 magic u32 "SAGW" | 4 version u8 | 5 type u8 | 6 reserved u16 (0)
//   8 token[16] (lease token, raw) | 24 group_id u64 | 32.. type fields
// Type fields and semantics: docs/agent-protocol.md.
//
// decode() validates everything that does not need agent state (magic,
// version, type, exact lengths, reserved bits, dtype/op, rank < size,
// count * dtype size == body length, capability table, text); the engine
// checks the rest (token, group, slot, chunk, duplicates, mismatches).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "switchagg/agent/lease_token.h"
#include "switchagg/common/dtype.h"

namespace switchagg::agent::wire {

constexpr uint32_t kMagic = 0x57474153;  // bytes "SAGW"
constexpr uint8_t kVersion = 1;
constexpr uint16_t kAmToAgent = 40;   // active-message id, client -> agent
constexpr uint16_t kAmToClient = 41;  // active-message id, agent -> client
constexpr size_t kTokenBytes = 16;
constexpr size_t kCommonHeaderBytes = 32;
constexpr size_t kMaxHeaderBytes = 80;  // CONTRIB_ROUTED; every other type <= 64
constexpr uint32_t kMaxGroupSize = 4096;
constexpr uint32_t kMaxWindow = 4096;
constexpr uint32_t kMaxSlotBytes = 64u << 20;
// UCX rendezvous threshold of both data-plane sides: above any message, so
// every chunk goes eagerly (rendezvous costs each chunk an extra round trip
// through both progress loops; BENCHMARKS.md, switch_eager).
constexpr size_t kEagerThresholdBytes = size_t(kMaxSlotBytes) + kMaxHeaderBytes + 1;
constexpr size_t kMaxTextBytes = 512;
// JOIN flags (the JOIN's last field, 0 before they existed; an agent that
// predates them refuses a nonzero value as malformed, so a client that got
// ERROR(malformed) for a flagged JOIN joins again without flags).
constexpr uint32_t kJoinFlagBusy = 1;  // the member understands ERROR(busy)
// The member speaks CONTRIB_ROUTED and flagged RESULTs (reduce, reduce-
// scatter, allgather, bcast). An agent that predates it refuses the JOIN as
// malformed; the client then joins with kJoinFlagBusy alone and serves only
// allreduce and barrier through that agent.
constexpr uint32_t kJoinFlagRouted = 2;
// Trees (docs/agent-protocol.md "Trees"). kJoinFlagTree: the member joins a
// leaf agent's part of a group that spans several leaves; the JOIN's body
// (kTreeJoinBodyBytes) names the parent's lease token, this leaf's index
// among the group's leaves and their number. The leaf joins the parent
// itself, with kJoinFlagUplink: that member is a child agent, and the group
// holds its window for its whole life (no per-call busy refusal: a leaf
// cannot take back chunks it already forwarded). An agent that predates
// trees refuses both flags as malformed; a tree JOIN is never retried flat.
constexpr uint32_t kJoinFlagTree = 4;
constexpr uint32_t kJoinFlagUplink = 8;
// Routed calls through trees (docs/agent-protocol.md "Trees", "Routed calls
// through a tree"): a tree member that sets it with kJoinFlagRouted sends
// CONTRIB_ROUTED with an up-range (kRouteUp). An agent before it refuses the
// JOIN as malformed; the client joins the tree again without both (routed
// calls then stay off that communicator). A leaf whose members all set it
// joins its parent with kJoinFlagRouted.
constexpr uint32_t kJoinFlagTreeRouted = 16;
// Keepalives (docs/agent-protocol.md "Waiting members"): the member takes
// WAITING, which the agent sends while a chunk it contributed to waits for
// other members; its bound for the call then runs from the last WAITING.
// An agent that predates it refuses the JOIN as malformed; the client joins
// again without it (and keeps its plain wall-time bound).
constexpr uint32_t kJoinFlagKeepalive = 32;
constexpr uint32_t kJoinKnownFlags = kJoinFlagBusy | kJoinFlagRouted | kJoinFlagTree |
                                     kJoinFlagUplink | kJoinFlagTreeRouted | kJoinFlagKeepalive;
constexpr size_t kTreeJoinBodyBytes = 16 + 4 + 4;  // parent token, leaf index, leaves

// CONTRIB_ROUTED modes.
// kModeReduce: payload = the chunk's count elements, reduced over members;
// a chunk's sole destination may send none and combine its own part with
// the others' result itself (its link then carries (p-1)/p of a ring's).
constexpr uint8_t kModeReduce = 1;
constexpr uint8_t kModeForward = 2;  // payload = this member's piece of the chunk (maybe none)
// CONTRIB_ROUTED route flags (the u8 after mode; 0 outside trees).
// kRouteUp: a tree member's chunk; the header's last u32 is the up-range
// (up_lo u16, up_hi u16: the leaves that want the chunk's payload).
// kRouteNoDest: no member of this leaf wants it (dest_lo = dest_hi = 0).
constexpr uint8_t kRouteUp = 1;
constexpr uint8_t kRouteNoDest = 2;
// RESULT flags (the u16 after op; 0 for an allreduce's RESULT).
constexpr uint16_t kResultNoPayload = 1;  // header only: this member is not a destination
constexpr uint16_t kResultForward = 2;    // the chunk was forwarded, not reduced (op byte 0)
constexpr uint16_t kResultKnownFlags = kResultNoPayload | kResultForward;

using Token = LeaseToken;
static_assert(LeaseToken::kBytes == kTokenBytes);

// What an agent tells about its own speed (CAPACITY_ACK; 0 = unknown): its
// aggregate reduction rate in MB/s of input (all its reduction threads,
// float32 sum at its slot size, measured at start-up), its data link in
// Mbit/s (the admin's data.link_mbps), and its median turnaround per chunk
// batch in microseconds (last contribution in -> results out, from its own
// recent chunks).
struct Capacity {
  uint32_t reduce_mbps = 0;
  uint32_t link_mbps = 0;
  uint32_t turnaround_us = 0;
};

enum class MsgType : uint8_t {
  kHello = 1,     // client -> agent: is my token valid? what can you do?
  kHelloAck = 2,  // agent -> client: max window, slot bytes, capabilities
  kJoin = 3,      // client -> agent: join group (size, rank, window request)
  kJoinAck = 4,   // agent -> every member once all joined: window, slot bytes
  kContrib = 5,   // client -> agent: one chunk of a member's vector
  kResult = 6,    // agent -> every member: the reduced chunk
  kLeave = 7,     // client -> agent: member leaves the group
  kAbort = 8,     // agent -> members: the group is dead (reason, text)
  kError = 9,     // agent -> sender: this message was rejected (reason, text)
  // Added after v1's first release, compatibly: a client asks, an agent that
  // predates them answers ERROR(bad_type) and the client goes on without.
  kCapacity = 10,     // client -> agent: what can you do, how fast?
  kCapacityAck = 11,  // agent -> client: measured reduce rate, link rate, turnaround
  // Added after kJoinFlagRouted (only in groups whose members all set it):
  // one chunk of a routed call - reduced or forwarded, its result sent only
  // to members [dest_lo, dest_hi] (the others get a header-only RESULT).
  kContribRouted = 12,
  // Added with kJoinFlagKeepalive (sent only to members whose JOIN set it):
  // chunk `chunk`, which this member contributed, still waits for `count`
  // members, the lowest of them `rank`. Informational: it changes no state
  // at the agent and answers nothing.
  kWaiting = 13,
};
constexpr int kMaxMsgType = 13;

// Why a message was rejected or a group aborted. Wire-stable: append only.
enum class Reason : uint16_t {
  kNone = 0,
  kBadToken = 1,      // unknown or expired lease token
  kMalformed = 2,     // undecodable: bad magic, length, reserved bits, text
  kVersion = 3,       // protocol version not spoken here
  kBadType = 4,       // unknown message type, or one the receiver never accepts
  kBadDtypeOp = 5,    // dtype/op not valid or not reducible together
  kUnknownGroup = 6,  // no such group for this lease
  kSizeMismatch = 7,  // members disagree on the group size
  kRankOutOfRange = 8,
  kDuplicateJoin = 9,      // rank already joined (or left) this group
  kNoResource = 10,        // no free slots in the lease or the pool
  kSlotOutOfRange = 11,    // slot >= window or slot != chunk % window
  kChunkOutOfWindow = 12,  // chunk not the one this slot expects next
  kDuplicateContribution = 13,
  kCountMismatch = 14,  // element count / call size differs between members
  kOpMismatch = 15,     // dtype or op differs between members
  kOversize = 16,       // chunk larger than the slot
  kWrongMember = 17,    // message for a rank from another connection
  kNotJoined = 18,      // contribution before the group formed
  kMemberFailed = 19,   // a member's connection failed
  kMemberTimeout = 20,  // a member silent for member_timeout_ms
  kMemberLeft = 21,     // a member left while the group was in use
  kJoinTimeout = 22,    // not all members joined in time
  kLeaseRevoked = 23,   // lease deleted or expired
  kShutdown = 24,       // agent shutting down
  // Added to v1 compatibly: sent only to members whose JOIN set
  // kJoinFlagBusy (an older client's decoder would take an unknown reason
  // for a broken agent). ERROR to each member contributing to a call the
  // agent refused because its lease (or the pool, or memory) had no slots
  // free for it right then: that call is dropped, the group lives on.
  kBusy = 25,
  // Added with kJoinFlagRouted (sent only in routed groups): members
  // disagree on a routed chunk's mode or destinations, or forwarded pieces
  // do not tile the chunk in rank order.
  kRouteMismatch = 26,
  // Added with trees (sent only in tree groups): the leaf's parent agent
  // cannot be reached, refused the group, aborted it or stopped answering.
  kParentFailed = 27,
};
constexpr int kMaxReason = 27;
const char* reasonName(Reason r);  // "bad_token", ... (metrics labels)

// Ops the agent reduces per dtype: bit (1 << op value) in mask[dtype value].
struct CapTable {
  std::array<uint16_t, kNumDtypes + 1> mask{};
  bool supports(Dtype d, Op o) const;
  void add(Dtype d, Op o);
  bool operator==(const CapTable& other) const { return mask == other.mask; }
};

// One decoded (or to-be-encoded) message. Fields unused by a type stay 0.
struct Message {
  MsgType type = MsgType::kHello;
  Token token{};
  uint64_t group_id = 0;
  uint32_t size = 0;        // JOIN, JOIN_ACK
  uint32_t rank = 0;        // JOIN, JOIN_ACK, CONTRIB, LEAVE; WAITING: lowest missing rank
  uint32_t window = 0;      // JOIN (request, 0 = as many as allowed), JOIN_ACK, HELLO_ACK (max)
  uint32_t flags = 0;       // JOIN (kJoinFlag*)
  // JOIN with kJoinFlagTree: the parent's lease token, this leaf's index
  // among the group's leaves, how many leaves the group spans (>= 2).
  Token parent_token{};
  uint32_t tree_index = 0, tree_size = 0;
  uint32_t slot_bytes = 0;  // HELLO_ACK, JOIN_ACK
  uint32_t slot = 0;        // CONTRIB, RESULT
  uint64_t chunk = 0;       // CONTRIB, RESULT, WAITING, ERROR (the rejected chunk, if any)
  uint64_t call_elems = 0;  // CONTRIB, RESULT: elements of the whole allreduce
  Dtype dtype = Dtype::kInt32;
  Op op = Op::kSum;
  uint32_t count = 0;             // CONTRIB, RESULT: elements in this chunk; WAITING: members missing
  // CONTRIB_ROUTED: kModeReduce or kModeForward; the members that receive
  // the chunk's result, [dest_lo, dest_hi]; forward: where this member's
  // piece (payload_bytes / dtype size elements, maybe 0) starts in the chunk.
  uint8_t mode = 0;
  uint32_t dest_lo = 0, dest_hi = 0;
  uint32_t piece_offset = 0;
  // CONTRIB_ROUTED in a tree group: kRoute* flags; with kRouteUp the
  // leaves [up_lo, up_hi] that want the chunk's payload.
  uint8_t route_flags = 0;
  uint32_t up_lo = 0, up_hi = 0;
  uint16_t result_flags = 0;      // RESULT: kResult* (0: an allreduce result)
  Reason reason = Reason::kNone;  // ABORT, ERROR
  CapTable caps;                  // HELLO_ACK, JOIN_ACK
  Capacity capacity;              // CAPACITY_ACK
  std::string text;               // ABORT, ERROR (printable ASCII, <= kMaxTextBytes)
  const void* payload = nullptr;  // CONTRIB, RESULT: points into the decoded body
  size_t payload_bytes = 0;
};

// Encoded header plus the body the encoder owns (capability table, text).
// CONTRIB/RESULT bodies are the caller's payload, passed alongside.
struct Frame {
  std::array<uint8_t, kMaxHeaderBytes> header{};
  size_t header_bytes = 0;
  std::vector<uint8_t> body;
};

// Encodes `m` (the caller vouches for its fields; encode clamps text).
Frame encode(const Message& m);
// Header length of a type (0 if unknown).
size_t headerBytes(MsgType t);
// Whether a type's body is the caller's payload (a chunk or a piece of one:
// CONTRIB, RESULT, CONTRIB_ROUTED), passed alongside its Frame.
bool carriesPayload(MsgType t);

// Decodes and validates. Returns kNone and fills *out, or the reason.
// out->payload points into `body` (valid as long as body is).
Reason decode(const void* header, size_t header_bytes, const void* body, size_t body_bytes,
              Message* out);

// One contiguous buffer "[u16 header_bytes][header][body]": used by the
// fuzzer, its corpus and tests; UCX carries header and body separately.
std::vector<uint8_t> toFramed(const Frame& f, const void* payload = nullptr,
                              size_t payload_bytes = 0);
Reason decodeFramed(const void* data, size_t bytes, Message* out);

}  // namespace switchagg::agent::wire
