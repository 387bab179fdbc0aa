// libswitchagg_ucx public API: a small C++ layer over UCX's public UCP API.
//
//   Context  - ucp_context plus the resolved RoCEv2 profile it was built with
//   Worker   - one ucp_worker: progress (busy-poll or blocking wait), active-
//              message handlers, its address for out-of-band exchange
//   Endpoint - one connection (ucp_ep) with peer-failure detection
//   Listener - accepts connections on a socket address (the agent)
//   PeerGroup- ranks 0..n-1 addressed by worker addresses the caller exchanged
//              (MPI ranks): lazy endpoints, K lanes per peer (whole messages
//              round-robin), receiver-driven admission (clear-to-send) for
//              large messages, nonblocking tagged send/recv
//
// Every call returns Status; nothing aborts and no wait is unbounded: waits
// take a timeout and a failed peer surfaces as Code::kPeerFailed within
// TransportOptions::peer_timeout_ms. Not thread-safe: one thread drives a
// Worker and everything built on it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "switchagg/common/config_table.h"
#include "switchagg/common/status.h"
#include "switchagg/ucx/roce_profile.h"

namespace switchagg::ucx {

enum class WaitMode { kBusyPoll, kBlocking };

// How a PeerGroup notices a dead peer. UCX 1.13 drops shared-memory
// transports from endpoints with peer error handling, so:
//   kPeer     - every lane uses UCP_ERR_HANDLING_MODE_PEER (RDMA/TCP lanes;
//               intra-node traffic loses shared memory)
//   kSentinel - lanes use no error handling (shared memory stays usable) and
//               one extra PEER-mode TCP endpoint per peer, on a separate
//               sentinel worker, watches the peer; its failure fails every
//               lane to that peer
//   kNode     - by locality: lanes to ranks of the same node as kSentinel
//               (shared memory, watched by the sentinel), lanes to other
//               nodes as kPeer. Needs the caller's node of every rank
//               (PeerGroup::create); without it every peer counts as remote
//   kAuto     - kNode when an RDMA device is present (RC transports would
//               treat a dead peer as fatal without error handling), else
//               kSentinel
enum class FailureDetection { kAuto, kPeer, kSentinel, kNode };

// The job's scale as the caller knows it; 0 = unknown. UCX sizes its
// transport choice with it (ucp_init's estimated_num_eps / _ppn): with more
// endpoints than a transport serves well (RC: UCX_RC_MLX5_MAX_NUM_EPS, 256 in
// UCX 1.13) it takes a scalable one (DC) where the host has it.
struct JobScale {
  int ranks = 0;           // processes of the job (MPI_COMM_WORLD's size)
  int ranks_per_node = 0;  // the most processes that share one node
};

// The scale the MPI launcher announces in the environment: Open MPI's
// OMPI_COMM_WORLD_SIZE / _LOCAL_SIZE, MPICH's PMI_SIZE / MPI_LOCALNRANKS,
// else Slurm's SLURM_NTASKS / SLURM_TASKS_PER_NODE ("4(x2),3": the most).
// `env` looks a variable up (nullptr = unset); values that do not parse as
// positive counts leave that field unknown.
JobScale jobScaleFromLauncher(const std::function<const char*(const char*)>& env);

// What Context::create passes to ucp_init for a scale; 0 = not passed
// (UCX's NUM_EPS / NUM_PPN "auto"). Endpoints: one per lane towards every
// other rank, at least 1.
struct UcxScaleHint {
  size_t num_eps = 0;
  size_t num_ppn = 0;
};
UcxScaleHint ucxScaleHint(const JobScale& scale, int lanes);

struct TransportOptions {
  RoceOptions roce;                    // see roce_profile.h
  JobScale scale;                      // told to UCX; the MPI layer fills it
  int lanes = 0;                       // endpoints per peer; 0 = auto (1 without RoCE)
  size_t cts_threshold = 64 * 1024;    // messages >= this wait for clear-to-send
  size_t cts_window = 8u << 20;        // max bytes in flight towards one receiver
  int64_t peer_timeout_ms = 2000;      // failure detection bound
  WaitMode wait_mode = WaitMode::kBlocking;
  // kBlocking: how long a wait keeps polling after the last event before it
  // sleeps (microseconds; 0 = sleep on the first idle round).
  int64_t spin_us = 0;
  FailureDetection failure_detection = FailureDetection::kAuto;
  bool enable_am = true;               // UCP_FEATURE_AM (agent data plane)
  bool enable_tag = true;              // UCP_FEATURE_TAG (host algorithms)
  // Several workers of the context progress on different threads at once
  // (UCX's mt_workers_shared: the context's shared parts take locks).
  bool workers_on_threads = false;
  // > 0: messages below this size go eagerly (UCX RNDV_THRESH), unless the
  // user set UCX_RNDV_THRESH. The agent data plane sets it above its largest
  // chunk: over TCP, UCX's automatic threshold (~8 KiB) sends every chunk by
  // rendezvous, an extra round trip through both progress loops per chunk
  // (6x the latency of 8-32 KiB switch calls here; BENCHMARKS.md).
  size_t rndv_threshold = 0;
  // "host:port" of the one peer this context talks to (an agent client):
  // UCX gets only the network device the route to it leaves through (the
  // rail whose subnet the agent is on: docs/tuning.md "Rails"), unless that
  // is loopback or the user named a device (SWITCHAGG_ROCE_DEVICE/NETDEV,
  // UCX_NET_DEVICES). "" = every device, as the profile says.
  std::string route_to;

  // Reads SWITCHAGG_UCX_* environment variables over the defaults
  // (names, defaults and help: transportOptionTable()).
  static Result<TransportOptions> fromEnvironment();
};

// {name, env var, default, help} for every TransportOptions and RoceOptions
// key; used by --help, switchagg-info and the docs.
const std::vector<ConfigDoc>& transportOptionTable();

// The local network device ("eth1") a connection to "host:port" leaves
// through, from the kernel's routing table; "" when unknown.
std::string routeNetdev(const std::string& host_port);

class Worker;
class Endpoint;

class Context {
 public:
  // Resolves the RoCE profile (sysfs/ibverbs discovery + options), applies it
  // with ucp_config_modify (user-set UCX_* environment wins), inits UCP.
  static Result<std::unique_ptr<Context>> create(const TransportOptions& options);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const TransportOptions& options() const;
  const RoceProfile& profile() const;
  int lanes() const;  // resolved lane count
  FailureDetection failureDetection() const;  // resolved: kPeer, kSentinel or kNode
  // What ucp_init was told (ucxScaleHint of options().scale and lanes()).
  UcxScaleHint scaleHint() const;
  struct Impl;
  Impl* impl() { return impl_.get(); }

 private:
  explicit Context(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A completion handle for nonblocking operations. Owned by the caller; must
// outlive the operation (wait for it or cancel by destroying its Worker).
class Request {
 public:
  Request();
  ~Request();
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  bool done() const;
  const Status& status() const;  // valid once done()
  size_t length() const;         // received bytes, once done()
  struct State;
  State* state() { return state_.get(); }
  const State* state() const { return state_.get(); }

 private:
  std::unique_ptr<State> state_;
};

// What amSend runs when its send completes (see Endpoint::amSend).
struct SendCompletion {
  void (*fn)(void* ctx, uint64_t id, const Status& status, size_t length) = nullptr;
  void* ctx = nullptr;
  uint64_t id = 0;
};

// Payload of an active message as the handler sees it: always the whole
// message, contiguous; valid only during the handler call.
struct AmMessage {
  Endpoint* from;           // connection it arrived on (nullptr if unknown)
  const void* header;
  size_t header_length;
  const void* data;
  size_t length;
  // Non-zero: a rendezvous message received straight into the memory an
  // AmPlacer chose (data points there); the placer's cookie.
  uint64_t placed = 0;
};
using AmHandler = std::function<void(const AmMessage&)>;

// Where a rendezvous active message's data lands (Worker::setAmPlacer).
// `place` runs outside UCX callbacks, before the receive starts, for every
// rendezvous message of at least `min_length` bytes: it returns the
// destination (length bytes; nullptr: a buffer of the worker's own) and a
// non-zero cookie. The memory must stay valid until the message is
// delivered (AmMessage::placed = cookie) or `release(cookie)` runs (the
// receive failed or was cancelled: the peer died, the endpoint closed);
// exactly one of the two happens, unless the Worker is destroyed first.
struct AmPlacement {
  void* data = nullptr;
  uint64_t cookie = 0;
};
struct AmPlacer {
  size_t min_length = 0;
  std::function<AmPlacement(Endpoint* from, const void* header, size_t header_length,
                            size_t length)>
      place;
  std::function<void(uint64_t cookie)> release;
};

// The wait hook: while any Worker waits (waitUntil and what is built on
// it), it calls `hook` at least every kWaitHookTickMs, from the waiting
// thread, outside UCX callbacks, never nested (a wait inside the hook does
// not call it again). The MPI layer sets it so that a rank blocked in one of
// switchagg's calls still progresses its other pending MPI operations - MPI
// requires it: a nonblocking collective on another communicator, which a
// peer may be waiting for before it can join this call. nullptr: none.
using WaitHook = void (*)();
void setWaitHook(WaitHook hook);
constexpr int kWaitHookTickMs = 1;

class Worker {
 public:
  static Result<std::unique_ptr<Worker>> create(Context& context);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // This worker's address for out-of-band exchange (PeerGroup,
  // connectAddress). Opaque bytes: it also carries the sentinel worker's.
  std::vector<uint8_t> address() const;
  // PeerGroup tag slots held by live groups on this worker: bit s of the
  // 128-bit mask (word s / 64) is set when slot s is taken; bit 0 (raw tag
  // users) always is.
  std::array<uint64_t, 2> busyGroupSlots() const;
  // One round of progress; returns true if anything happened.
  bool progress();
  // How often a blocking wait of this worker armed it and slept (tests,
  // counters; see TransportOptions::spin_us).
  uint64_t sleeps() const;
  // Progress until `pred` holds or `timeout_ms` passes (kTimeout). Blocks in
  // the kernel between events in WaitMode::kBlocking.
  Status waitUntil(const std::function<bool()>& pred, int64_t timeout_ms);
  // waitUntil over several workers at once (a striped call's connections,
  // each with its own worker): progresses them all each round and, in
  // WaitMode::kBlocking, sleeps on every one's event fd together (at most
  // 16 workers; more spin). One worker: exactly waitUntil.
  static Status waitAny(const std::vector<Worker*>& workers, const std::function<bool()>& pred,
                        int64_t timeout_ms);
  // waitUntil for an event loop's idle wait, where running out of time is
  // no error: true when `pred` holds. Allocates nothing (the timeout's
  // message is never built): the agent's data-plane threads wait so.
  bool waitIdle(const std::function<bool()>& pred, int64_t timeout_ms);
  Status wait(Request& request, int64_t timeout_ms);
  Status waitAll(const std::vector<Request*>& requests, int64_t timeout_ms);
  // Completes every operation this worker has started towards its peers,
  // including UCX's own protocol replies (a rendezvous receive's ack goes
  // out after the receive completes): afterwards no peer's request waits
  // for this worker to progress again. Needs no peer to act unless a
  // transport's buffers are full; bounded by timeout_ms (kTimeout).
  Status flush(int64_t timeout_ms);

  // Active messages (ids 0..63). The handler runs inside progress().
  Status setAmHandler(uint16_t id, AmHandler handler);
  // Rendezvous messages of `id` (set after its handler) go where the placer says.
  Status setAmPlacer(uint16_t id, AmPlacer placer);
  // Registers [data, data + length) with UCX (ucp_mem_map) so an RDMA
  // transport can place received data there directly; the returned handle
  // unmaps it when destroyed. Fails where UCX cannot map it.
  Result<std::shared_ptr<void>> mapMemory(void* data, size_t length);
  // Nonblocking tagged receive on the raw 64-bit UCP tag space: matches when
  // (incoming & tag_mask) == (tag & tag_mask). PeerGroup owns tags with any
  // of the top 8 bits set; raw users keep them zero (see docs/transport.md).
  Status tagRecv(uint64_t tag, uint64_t tag_mask, void* data, size_t length, Request& request);

  // Runs `fn` at the end of the current (or next) progress(), outside UCX
  // callbacks: where an active-message handler must send (a reply), it
  // posts the send here.
  void post(std::function<void()> fn);

  // Called when an endpoint of this worker fails (peer died / closed).
  void setFailureHandler(std::function<void(Endpoint*, const Status&)> handler);

  Context& context();
  struct Impl;
  Impl* impl() { return impl_.get(); }

 private:
  explicit Worker(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class Endpoint {
 public:
  // Client side: connect to a listener at "host:port".
  static Result<std::unique_ptr<Endpoint>> connect(Worker& worker, const std::string& host_port);
  // Connect to a worker address obtained out of band.
  static Result<std::unique_ptr<Endpoint>> connectAddress(Worker& worker,
                                                          const std::vector<uint8_t>& address);
  ~Endpoint();  // closes (flushes) the endpoint, bounded by peer_timeout_ms
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  // Nonblocking AM send; `header` and `data` must stay valid until done.
  Status amSend(uint16_t id, const void* header, size_t header_length, const void* data,
                size_t length, Request& request);
  // The same, completed by a call instead of a look at the Request: once
  // the send started (an Ok return), `done` runs exactly once with its
  // outcome (success or the peer's failure; never if the Request is
  // destroyed while the send is in flight), deferred to the end of a
  // progress round of this endpoint's worker, outside UCX callbacks. An
  // error return: the send did not start and `done` never runs. A plain
  // function and two words, so a send allocates nothing.
  Status amSend(uint16_t id, const void* header, size_t header_length, const void* data,
                size_t length, Request& request, const SendCompletion& done);
  // Nonblocking tagged send/receive on this endpoint's worker.
  Status tagSend(uint64_t tag, const void* data, size_t length, Request& request);

  bool failed() const;
  // Gives up on the peer: the endpoint counts as failed from now on, and its
  // close (destructor) is forced, cancelling operations still in flight
  // instead of waiting for a peer that does not answer (a stalled one would
  // otherwise leave UCX a half-closed endpoint with live requests).
  void abandon();
  // The UCX transports this endpoint's lanes use, e.g. "sysv/memory cma/memory"
  // (from ucp_ep_print_info; for logs, tests and benchmarks).
  std::string transports() const;
  std::string peerName() const;  // "127.0.0.1:18515" or "worker <hash>"
  void* userData() const;        // free slot for the owner (e.g. agent session)
  void setUserData(void* p);
  struct Impl;
  Impl* impl() { return impl_.get(); }

 private:
  friend struct EndpointFactory;  // internal: wraps UCX endpoints
  explicit Endpoint(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class Listener {
 public:
  // Listens on "host:port" (port 0 = any; see port()). Each accepted
  // connection becomes an Endpoint handed to `on_accept` (ownership moves).
  static Result<std::unique_ptr<Listener>> listen(
      Worker& worker, const std::string& host_port,
      std::function<void(std::unique_ptr<Endpoint>)> on_accept);
  ~Listener();
  uint16_t port() const;
  struct Impl;

 private:
  explicit Listener(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Counters a PeerGroup keeps; tests and benchmarks read them.
struct PeerGroupCounters {
  uint64_t messages_sent = 0;
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  uint64_t cts_granted = 0;              // clear-to-send grants (credits) issued
  uint64_t cts_waits = 0;                // sends that waited for a CTS
  uint64_t cts_credits_used = 0;         // large sends that found a credit, went at once
  uint64_t cts_revoked = 0;              // credits taken back unused (window was needed)
  uint64_t max_inflight_to_me = 0;       // high-water mark of admitted bytes
  std::vector<uint64_t> lane_messages;   // messages sent per lane index
};

// Ranks addressed by the worker addresses the caller exchanged (e.g. with
// the previous coll module's allgather). Endpoints are created lazily on
// first use and reused. Tags are per group: `tag` is the caller's 32-bit
// value; source rank and group id are folded in by the group.
class PeerGroup {
 public:
  // Tag slots a group lives in: 1..kMaxSlot on each worker. With slot 0
  // the group takes 1 + group_id % kMaxSlot, which only works if every
  // member computes the same slot and none holds a live group there;
  // callers that can exchange data agree on a slot free on every member
  // instead (Worker::busyGroupSlots) and pass it.
  static constexpr int kMaxSlot = 127;
  // `node_of`: an id of each rank's node (equal = same node), which
  // FailureDetection::kNode needs; empty = unknown (every peer remote).
  static Result<std::unique_ptr<PeerGroup>> create(Worker& worker, uint32_t group_id, int rank,
                                                   std::vector<std::vector<uint8_t>> addresses,
                                                   int slot = 0, std::vector<int> node_of = {});
  // The first slot from `start` on (wrapping round) whose bit is clear in
  // every mask of `busy` (masks as returned by Worker::busyGroupSlots, one
  // per member); 0 if none is.
  static int firstCommonFreeSlot(const std::vector<std::array<uint64_t, 2>>& busy,
                                 int start = 1);
  ~PeerGroup();
  int rank() const;
  int size() const;

  Status isend(int peer, uint32_t tag, const void* data, size_t length, Request& request);
  Status irecv(int peer, uint32_t tag, void* data, size_t length, Request& request);
  // Blocking helpers bounded by `timeout_ms`.
  Status send(int peer, uint32_t tag, const void* data, size_t length, int64_t timeout_ms);
  Status recv(int peer, uint32_t tag, void* data, size_t length, int64_t timeout_ms);
  Status sendrecv(int to, const void* sbuf, size_t slen, int from, void* rbuf, size_t rlen,
                  uint32_t tag, int64_t timeout_ms);

  // Makes the connections to `peer` now, as its first send or receive
  // would (its lanes and, where failure detection uses them, its failure
  // sentinel), so its death is noticed from then on even if nothing is
  // sent to it. Both sides should call it at the same point of the group's
  // life (e.g. one collective step), as they would reach a first send.
  Status watch(int peer);
  // Ok until `peer` is known failed (its sentinel, a lane or a timeout
  // said so), then that failure.
  Status peerStatus(int peer) const;

  const PeerGroupCounters& counters() const;
  // One line per lane (and the failure sentinel) naming its transports;
  // connects to `peer` if needed. "" for a bad or failed rank.
  std::string describePeer(int peer);
  // Where an unfinished request of this group stands, for a stall report:
  // "send to rank 3 (tag 0x..., 262144 bytes): waiting for clear-to-send",
  // "... handed to UCX, not completed", "receive from rank 1 (...): credit
  // granted, no data yet", ... "" for a request this group does not hold.
  std::string describePending(const Request& request) const;
  Worker& worker();
  struct Impl;

 private:
  explicit PeerGroup(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace switchagg::ucx
