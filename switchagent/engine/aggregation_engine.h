// AggregationEngine: the data plane's state machine, free of UCX so unit
// tests drive it directly. It validates every message against group state,
// reduces each slot in rank order as its contributions arrive (a running
// prefix; bitwise-identical results whatever the arrival order), stages
// the ones that came early,
// hands results and control messages to an EngineOutput, and aborts a group
// - never another - when one of its members misbehaves, fails, goes silent
// or its lease goes away. Semantics: docs/agent-protocol.md.
//
// One thread (the UCX worker's) calls everything except the counters, which
// it publishes under a mutex.
#pragma once

#include <cstdint>
#include <cstring>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "data_plane_view.h"
#include "reduce_pool.h"
#include "slot_pool.h"
#include "switchagg/agent/wire.h"

namespace switchagg::agent {

using PeerId = uint64_t;  // one client connection; 0 = none

// What the engine needs to know about a lease (from the LeaseTable).
struct LeaseInfo {
  std::string job;
  uint32_t slots = 0;
};
using LeaseLookup = std::function<std::optional<LeaseInfo>(const LeaseToken& token)>;

class EngineOutput {
 public:
  virtual ~EngineOutput() = default;
  // A control message (HELLO_ACK, JOIN_ACK, ABORT, ERROR); the frame owns its bytes.
  virtual void sendControl(PeerId to, wire::Frame frame) = 0;
  // RESULT of `slot`: header and payload live in `buffers`, which the output
  // keeps alive until the send completes (or fails), then it calls
  // AggregationEngine::sendDone(group_serial, slot).
  virtual void sendResult(PeerId to, const uint8_t* header, size_t header_bytes,
                          const void* payload, size_t bytes, std::shared_ptr<SlotBuffers> buffers,
                          uint64_t group_serial, uint32_t slot) = 0;
  // Tree groups: a message to this agent's parent (JOIN, a reduced chunk's
  // CONTRIB from `payload`, which `keep` keeps alive until the send
  // completes, LEAVE), over one connection made on first use. false: no
  // parent, or it cannot be reached (the caller aborts the group); a
  // connection that fails later is reported by onParentFailed.
  virtual bool sendUp(wire::Frame frame, const void* payload, size_t bytes,
                      std::shared_ptr<SlotBuffers> keep) {
    (void)frame, (void)payload, (void)bytes, (void)keep;
    return false;
  }
};

// The configured settings (EngineSettings, data_plane_view.h) and what
// the data plane adds.
struct EngineConfig : EngineSettings {
  // Total aggregation slots of the pool (the agent's [pool] slots,
  // LeaseLimits::pool_slots). Live groups never hold more than this many
  // slots together; 0 = no cap beyond the leases' own slot counts (which
  // the control plane keeps <= the pool).
  size_t pool_slots = 0;
  // Slot memory shared with the other data-plane threads' engines
  // (memory_bytes bounds the sum); nullptr = this engine's own.
  MemoryAccount memory_account;
  // This agent has a parent (fabric map): it serves tree JOINs
  // (kJoinFlagTree) by joining the parent; without one they are refused.
  bool has_parent = false;
  // Test-only fault point (SWITCHAGG_AGENT_TEST_FAULT=partial:N[:exit] or
  // miss:N:M, read by the data plane): the N-th chunk result this agent
  // sends goes to member 0 of its group only; with exit, the agent process
  // exits 100 ms after that send completed (the agent dies after some
  // members got a call's last result and others did not). miss: it goes to
  // every member but member M (test_miss_member), which never gets it (the
  // agent stalled past the bound for that member only); late:N:M:MS: member
  // M gets it test_late_ms later (a result arriving after the member's
  // bound); revoke:N: the N-th result goes to every member, then the
  // engine aborts every group of that group's lease as a revocation does
  // (revokeLease; the lease itself stays); wedge:N:MS: after sending it,
  // the engine's thread blocks test_wedge_ms (a long reduction or a wedged
  // UCX call), once per process: the first data-plane thread to reach N.
  // 0: off.
  static constexpr uint32_t kNoMissMember = UINT32_MAX;
  uint64_t test_partial_result = 0;
  bool test_partial_exit = false;
  uint32_t test_miss_member = kNoMissMember;
  int64_t test_late_ms = 0;
  bool test_revoke = false;
  int64_t test_wedge_ms = 0;
};

// A group's name: its lease token and its id; hashed without a string (the
// token is random, the id the job's: distinct ids never collide).
struct GroupKey {
  wire::Token token{};
  uint64_t id = 0;
  bool operator==(const GroupKey& o) const { return id == o.id && token == o.token; }
};
struct GroupKeyHash {
  size_t operator()(const GroupKey& k) const noexcept {
    uint64_t h;
    std::memcpy(&h, k.token.data(), sizeof h);
    return static_cast<size_t>(h ^ (k.id * 0x9E3779B97F4A7C15ull));
  }
};

struct Group;
struct Slot;
struct Piece;

class AggregationEngine {
 public:
  AggregationEngine(const EngineConfig& config, LeaseLookup lookup, EngineOutput& out,
                    ReducePool& pool);
  ~AggregationEngine();

  // One message from connection `from` (header/body as the AM delivered them).
  // `placed`: the body was received where placeContrib said (its cookie).
  void onMessage(PeerId from, const void* header, size_t header_bytes, const void* body,
                 size_t body_bytes, int64_t now_ms, uint64_t placed = 0);
  // A CONTRIB whose body (body_bytes) is about to be received by rendezvous
  // (docs/agent-protocol.md "Received into the slot"): where it may land,
  // the member's contribution buffer of its slot, reserved until the
  // message comes (onMessage with the cookie) or the receive ends without
  // it (releasePlacement); the buffers stay alive and counted until then.
  // {nullptr, 0}: not now (no such group, not this chunk's turn, a receive
  // into that buffer already in flight...): a buffer of the transport's.
  struct Placement {
    uint8_t* data = nullptr;
    uint64_t cookie = 0;
  };
  // Rendezvous bodies from this size on are placed (smaller ones go eagerly).
  static constexpr size_t kPlacedMinBytes = 4096;
  Placement placeContrib(PeerId from, const void* header, size_t header_bytes, size_t body_bytes);
  void releasePlacement(uint64_t cookie);
  size_t placementsInFlight() const { return reserved_.size() - reserved_free_.size(); }
  void onPeerFailed(PeerId peer, const std::string& why);
  // Tree groups: a message from the parent agent (JOIN_ACK, RESULT, ABORT,
  // ERROR for the groups this agent joined there), and the loss of the
  // parent's connection (aborts every tree group: kParentFailed).
  void onParentMessage(const void* header, size_t header_bytes, const void* body,
                       size_t body_bytes, int64_t now_ms);
  void onParentFailed(const std::string& why);
  void onPeerConnected();
  // Aborts every group of the lease.
  void revokeLease(const LeaseToken& token, const std::string& why);
  // Timeouts (join, silent members) and lease re-validation.
  void tick(int64_t now_ms);
  // Aborts everything (agent shutdown).
  void abortAll(wire::Reason reason, const std::string& why);

  // Slots whose contributions are complete and whose previous result has
  // left: reduce them (on the pool) and send the results.
  bool hasReducible() const;
  bool hasDeferred() const { return !ready_.empty(); }
  void reduceReady();
  // A RESULT send of (group, slot) completed (or failed).
  void sendDone(uint64_t group_serial, uint32_t slot);

  DataPlaneCounters counters() const;
  // What CAPACITY_ACK tells clients (link_mbps from EngineConfig).
  wire::Capacity capacity() const;
  static wire::CapTable capTable();
  // The float32 sum kernel's rate on one slot times the reduction threads.
  static uint32_t measureReduceMbps(size_t slot_bytes, size_t threads);
  size_t liveGroups() const { return groups_.size(); }
  // Slot buffer bytes allocated (active groups' and idle groups' kept ones).
  size_t slotMemory() const { return slots_.memoryInUse(); }
  // Slot buffers allocated from now on are registered with `mapper`.
  void setMemoryMapper(MemoryMapper mapper) { slots_.setMapper(std::move(mapper)); }

 private:
  // The test fault point (EngineConfig::test_partial_result).
  uint64_t results_sent_ = 0;
  uint64_t fault_serial_ = 0;
  uint32_t fault_slot_ = 0;
  bool fault_fired_ = false;
  int64_t fault_exit_at_ms_ = 0;
  // late:N:M:MS: the held send (its slot's sends_pending counts it, so the
  // result stays intact until it has left), sent by tick() once due.
  struct LateResult {
    PeerId to = 0;
    const uint8_t* header = nullptr;
    size_t header_bytes = 0;
    const void* payload = nullptr;
    size_t bytes = 0;
    std::shared_ptr<SlotBuffers> buffers;
    uint64_t serial = 0;
    uint32_t slot = 0;
    int64_t due_ms = 0;
  };
  std::optional<LateResult> late_;
  // revoke:N: the lease to revoke at the next reduceReady().
  std::optional<wire::Token> revoke_;
  void handleHello(PeerId from, const wire::Message& m);
  void handleCapacity(PeerId from, const wire::Message& m);
  void handleJoin(PeerId from, const wire::Message& m, int64_t now_ms);
  void handleContrib(PeerId from, const wire::Message& m, int64_t now_ms);
  void handleLeave(PeerId from, const wire::Message& m);
  bool checkContrib(Group& g, PeerId from, const wire::Message& m);
  bool checkSlot(Group& g, const wire::Message& m);
  wire::Reason contribProblem(const Group& g, PeerId from, const wire::Message& m,
                              std::string& why) const;
  wire::Reason slotProblem(const Group& g, const wire::Message& m, std::string& why) const;
  bool checkPieces(Group& g, const Slot& s);  // forwarded pieces tile the chunk in rank order
  void assemble(Group& g, uint32_t slot);     // a forwarded chunk's pieces into its result
  // What admitCall makes of a contribution (lease admission is control/'s Admit).
  enum class ChunkFate { kProceed, kDropped, kAborted };
  ChunkFate admitCall(Group& g, PeerId from, const wire::Message& m);
  const char* activate(Group& g);  // nullptr: the call holds its slots; else what is short
  void deactivate(Group& g);
  static size_t credit(const Group& g);  // one call's grant of the port's credit
  // Why a group the port's credit cannot hold was refused ("" if not that).
  std::string creditNote(const Group& g, const SlotGrant& grant) const;
  bool allocateBuffers(Group& g);  // evicts idle groups' buffers (LRU) to fit the budget
  void dropBuffers(Group& g);
  void publishSlots();
  void formGroup(Group& g);
  void reduceSlots(const std::vector<std::pair<Group*, uint32_t>>& batch);
  void foldPrefix(Group& g, uint32_t slot, const uint8_t* first);  // the running prefix
  void sendResults(Group& g, uint32_t slot);
  // Trees (engine_tree.cc).
  bool joinTree(Group& g, PeerId from, const wire::Message& m);  // a member's tree fields
  void joinParent(Group& g, int64_t now_ms);   // the formed leaf group joins the parent
  void parentJoined(Group& g, const wire::Message& ack);
  bool sendParentJoin(Group& g);  // the uplink JOIN (again without keepalive if refused)
  void relayWaiting(Group& g, const wire::Message& m);  // the parent's WAITING to members
  void sendMembersJoinAck(Group& g);
  bool checkTreeRoute(Group& g, Slot& s);  // a leaf's routed chunk: whole, tiled, wanted
  void sendUpward(Group& g, uint32_t slot, int64_t now_ms);  // a reduced chunk to the parent
  void parentResult(Group& g, const wire::Message& m);
  void leaveParent(Group& g);                  // the group ends here: LEAVE at the parent
  void endPinnedCall(Group& g);
  // Adds the tree group to `dead` (true) when its parent is overdue.
  bool tickTree(Group& g, int64_t now_ms,
                std::vector<std::pair<Group*, std::pair<wire::Reason, std::string>>>* dead);
  // tick(): WAITING to the members of g's oldest chunk that waits for others.
  void tellWaiting(Group& g, int64_t now_ms);
  void abortGroup(Group& g, wire::Reason reason, const std::string& why);
  void destroyGroup(Group& g);
  void reject(PeerId to, const wire::Message& m, wire::Reason reason, const std::string& why);
  void count(wire::Reason reason);
  Group* findGroup(const wire::Token& token, uint64_t group_id);

  // Receives into slot buffers in flight (placeContrib): cookie = index + 1.
  struct Reserved {
    uint64_t serial = 0, chunk = 0;
    uint32_t slot = 0, rank = 0;
    std::shared_ptr<SlotBuffers> buffers;  // alive and counted until it ends
  };
  std::vector<Reserved> reserved_;
  std::vector<uint32_t> reserved_free_;
  std::shared_ptr<SlotBuffers> takePlacement(uint64_t cookie);  // ends it; its buffers

  EngineConfig config_;
  LeaseLookup lookup_;
  EngineOutput& out_;
  ReducePool& pool_;
  SlotPool slots_;
  std::unordered_map<GroupKey, std::unique_ptr<Group>, GroupKeyHash> groups_;
  std::unordered_map<uint64_t, Group*> by_serial_;
  std::unordered_map<GroupKey, Group*, GroupKeyHash> by_up_;  // tree groups by parent token + id
  std::unordered_map<LeaseToken, size_t> groups_per_lease_;
  std::vector<std::pair<Group*, uint32_t>> ready_;  // complete slots awaiting reduction
  std::vector<std::pair<Group*, uint32_t>> batch_, later_;  // reduceReady's scratch
  uint64_t pass_ = 0;                                          // reduceReady passes so far
  std::vector<Piece> pieces_;  // pool tasks of one fold or pass (reused: no allocation)
  uint64_t next_serial_ = 1;
  uint64_t use_clock_ = 0;  // orders idle groups for buffer eviction
  uint32_t reduce_mbps_ = 0;               // measured in the constructor
  std::vector<uint32_t> turnaround_us_;    // recent batches, a ring
  size_t turnaround_next_ = 0;
  int64_t next_lease_check_ms_ = 0;
  std::vector<std::pair<LeaseToken, bool>> lease_checked_;  // tick's scratch: lease -> alive
  int64_t now_ms_ = 0;  // the clock of the last message or tick (reduceReady's, formGroup's)

  mutable std::mutex counters_mu_;
  DataPlaneCounters counters_;  // less the per-contribution ones below
  // Per-contribution counters, lock-free: this thread alone writes them (a
  // plain add, no locked instruction), counters() reads them from any thread.
  struct ContribCounters {
    std::atomic<uint64_t> bytes_in{0}, bytes_staged{0}, bytes_placed{0}, contributions{0};
    static void add(std::atomic<uint64_t>& c, uint64_t n) {
      c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }
  };
  ContribCounters contrib_counters_;
  // Credits at the port: contribution bytes received for chunks whose
  // result is not sent yet (this thread only), and the most ever (read by
  // counters() from any thread).
  uint64_t held_now_ = 0;
  std::atomic<uint64_t> held_max_{0};
  // Each job's bytes_in (Group::bytes_in_job points at its node, which stays
  // put); inserted under counters_mu_, the lock counters() iterates under.
  std::map<std::string, std::atomic<uint64_t>> job_bytes_in_;
};

}  // namespace switchagg::agent
