// Private state behind the transport.h handles. One thread drives a Worker
// and everything built on it, so nothing here locks.
//
// Lifetimes: each UCX request carries its Request::State as user_data. A
// callback completes the state only if it is the state's current request (or
// the state is being posted: UCX may call back inside the *_nbx call). A
// Request destroyed while UCX still holds its operation leaves the State
// behind as a zombie, deleted by that operation's callback. Work that must
// not run inside a UCX callback (user failure handlers, accept callbacks,
// rendezvous AM receives, PeerGroup bookkeeping) is deferred to the end of
// Worker::progress().
#pragma once

#include <sys/socket.h>
#include <ucp/api/ucp.h>

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "switchagg/ucx/transport.h"

namespace switchagg::ucx {

// Translation of ucs_status_t into Status, in one place.
Status statusFromUcs(ucs_status_t status, const std::string& what);
// True for statuses that mean "the peer or the connection is gone".
bool isPeerError(ucs_status_t status);
int64_t nowMs();

struct Context::Impl {
  TransportOptions options;
  RoceProfile profile;
  int lanes = 1;
  // PeerGroup failure detection, resolved from options.failure_detection.
  FailureDetection failure_detection = FailureDetection::kPeer;
  UcxScaleHint scale_hint;  // what ucp_init was told
  ucp_context_h ucp = nullptr;
  // kSentinel: a TCP-only context whose workers carry the sentinel
  // endpoints, so the main worker never polls TCP sockets on its hot path.
  ucp_context_h sentinel = nullptr;
  ~Impl();
};

// An internal owner's continuation of an operation. `complete` runs deferred
// (outside UCX callbacks, at the end of Worker::progress) with the final
// status and must not touch the State (its Request may be gone by then);
// `abandon` runs when the Request is destroyed while active. Plain function
// pointers, so tracking a message allocates nothing. An owner that dies
// first calls Worker::Impl::forgetHooks(ctx).
struct Hook {
  void (*complete)(void* ctx, uint64_t id, const Status& status, size_t length) = nullptr;
  void (*abandon)(void* ctx, uint64_t id) = nullptr;
  void* ctx = nullptr;
  uint64_t id = 0;
};

struct PendingCompletion {
  Hook hook;
  Status status;
  size_t length;
};

// Intrusive membership of a pending receive in its owner's list (PeerGroup
// keeps one to fail receives from a dead peer). complete() unlinks it and
// counts the bytes, so tracking a receive costs no allocation or lookup.
struct PendingList;
struct PendingLink {
  PendingLink* prev = nullptr;
  PendingLink* next = nullptr;
  PendingList* list = nullptr;
  Request::State* state = nullptr;
  int peer = -1;
  uint32_t tag = 0;
  uint64_t seq = 0;
  size_t capacity = 0;
};

struct PendingList {
  PendingLink head;                 // circular, head is the sentinel
  uint64_t* bytes_done = nullptr;   // += length of each successful completion
  PendingList() { head.prev = head.next = &head; }
  PendingList(const PendingList&) = delete;
  PendingList& operator=(const PendingList&) = delete;
  bool empty() const { return head.next == &head; }
  void push(PendingLink& l) {
    l.list = this;
    l.prev = head.prev;
    l.next = &head;
    head.prev->next = &l;
    head.prev = &l;
  }
  static void unlink(PendingLink& l) {
    l.prev->next = l.next;
    l.next->prev = l.prev;
    l.prev = l.next = nullptr;
    l.list = nullptr;
  }
  // The states on the list (a copy: completing them unlinks).
  std::vector<Request::State*> states(int peer = -1) const {
    std::vector<Request::State*> out;
    for (const PendingLink* l = head.next; l != &head; l = l->next)
      if (peer < 0 || l->peer == peer) out.push_back(l->state);
    return out;
  }
};

struct Request::State {
  bool active = false;  // started and not yet completed
  bool done = false;
  Status status{Code::kInProgress, "not started"};
  size_t length = 0;
  void* ucx_req = nullptr;              // pending UCX request, if any
  bool posting = false;                 // inside the ucp_*_nbx call
  bool cancelling = false;              // completed by us; UCX's callback only frees
  bool zombie = false;                  // its Request is gone; callback deletes
  bool is_recv = false;                 // receives can be cancelled in UCX
  Worker::Impl* worker = nullptr;
  Endpoint::Impl* endpoint = nullptr;   // endpoint-bound op (never dereferenced)
  ucp_tag_recv_info_t tag_info{};
  Hook hook;  // internal owner's continuation (PeerGroup, AM rendezvous)
  PendingLink link;
};

namespace req {
// Resets `s` for a new operation; false if it is still in use (then
// beginFailure(s) says why).
bool begin(Request::State& s, Worker::Impl* worker, Endpoint::Impl* endpoint);
Status beginFailure(const Request::State& s);
void complete(Request::State& s, Status status, size_t length);
// Fills the callback and user_data fields for an operation on `s`.
void prepare(Request::State& s, ucp_request_param_t& p);
// Takes the result of a ucp_*_nbx call: NULL (done now), error, or a request.
void attach(Request::State& s, ucs_status_ptr_t ptr, const char* what, size_t length);
// Detaches from the UCX request (cancelling receives) and completes `s`.
void abandon(Request::State& s, Status status);
// Post on an already begun state (begin() first).
void postTagSend(Endpoint::Impl& ep, uint64_t tag, const void* data, size_t length,
                 Request::State& s);
void postTagRecv(Worker::Impl& w, uint64_t tag, uint64_t mask, void* data, size_t length,
                 Request::State& s);
void sendCallback(void* request, ucs_status_t status, void* user_data);
void recvCallback(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                  void* user_data);
void amDataCallback(void* request, ucs_status_t status, size_t length, void* user_data);
}  // namespace req

// One registered active-message id; `arg` of the UCX handler.
struct AmSlot {
  Worker::Impl* worker = nullptr;
  uint16_t id = 0;
  AmHandler handler;
  AmPlacer placer;
};

// A rendezvous active message being pulled into a contiguous buffer.
struct PendingAm {
  uint16_t id = 0;
  ucp_ep_h reply_ep = nullptr;
  std::vector<uint8_t> header;
  std::unique_ptr<uint8_t[]> data;
  uint8_t* target = nullptr;  // where it lands: data, or a placer's memory
  uint64_t cookie = 0;        // the placer's (0: not placed)
  size_t length = 0;
  Request request;
};

struct Worker::Impl {
  Context* context = nullptr;
  Context::Impl* ctx = nullptr;
  ucp_worker_h ucp = nullptr;
  int efd = -1;
  // Sentinel worker (see Context::Impl::sentinel), progressed at most every
  // kSentinelPeriodMs from progress() and woken by its fd in blocking waits.
  ucp_worker_h sentinel = nullptr;
  int sentinel_efd = -1;
  uint32_t progress_calls = 0;
  uint64_t sleeps = 0;  // blocking waits that armed the worker and slept
  int64_t next_sentinel_ms = 0;
  std::unordered_map<ucp_ep_h, Endpoint::Impl*> endpoints;  // live, for AM reply ep
  std::unordered_map<uint16_t, std::unique_ptr<AmSlot>> am_slots;
  std::unordered_map<PendingAm*, std::unique_ptr<PendingAm>> pending_am;
  std::function<void(Endpoint*, const Status&)> failure_handler;
  std::vector<std::function<void()>> deferred;
  std::vector<PendingCompletion> completions;
  std::vector<bool> group_slots;  // PeerGroup tag-field slots in use
  // Connections of closed groups kept while other groups live (threads:
  // see ~PeerGroup::Impl); closed with the last group.
  std::vector<std::unique_ptr<Endpoint>> retired_lanes, retired_sentinels;
  // Tokens held by deferred closures to notice that their owner died.
  std::shared_ptr<Worker::Impl*> alive;

  void defer(std::function<void()> fn) { deferred.push_back(std::move(fn)); }
  // An owner about to die: run its pending completions now (they drop its
  // references to finished Requests), or drop them unrun.
  void runHooksFor(void* ctx);
  void forgetHooks(void* ctx);
  bool runDeferred();
  bool progress();
  void progressSentinel();
  Status waitUntil(const std::function<bool()>& pred, int64_t timeout_ms);
  // waitUntil; `quiet`: a timeout's Status carries no message (nothing
  // allocated: Worker::waitIdle).
  Status waitFor(const std::function<bool()>& pred, int64_t timeout_ms, bool quiet);
  // waitFor over n workers at once (Worker::waitAny); more than
  // kMaxWaitWorkers spin instead of sleeping.
  static constexpr size_t kMaxWaitWorkers = 16;
  static Status waitOn(Impl* const* ws, size_t n, const std::function<bool()>& pred,
                       int64_t timeout_ms, bool quiet);
  Status flush(int64_t timeout_ms);
  Endpoint* endpointFor(ucp_ep_h ep) const;
  ~Impl();
};

struct Endpoint::Impl {
  Endpoint* owner = nullptr;
  Worker::Impl* worker = nullptr;
  ucp_worker_h ucp_worker = nullptr;  // the main or the sentinel worker
  ucp_ep_h ep = nullptr;
  bool failed = false;
  Status failure;
  std::string peer_name;
  ucp_err_handling_mode_t err_mode = UCP_ERR_HANDLING_MODE_PEER;
  void* user_data = nullptr;
  // Internal failure hook (PeerGroup), run deferred before the worker's.
  std::function<void(const Status&)> on_failure;

  // Starts a close; returns the UCX request to wait for (or nullptr).
  void* startClose();
  static void errorCallback(void* arg, ucp_ep_h ep, ucs_status_t status);
};

struct EndpointFactory {
  // Creates an Endpoint from filled ucp_ep_params (error handling is added).
  // UCP_ERR_HANDLING_MODE_NONE endpoints get no error callback; their owner
  // must detect failure another way (PeerGroup's sentinel).
  static Result<std::unique_ptr<Endpoint>> create(
      Worker::Impl* worker, ucp_ep_params_t params, std::string peer_name,
      ucp_err_handling_mode_t mode = UCP_ERR_HANDLING_MODE_PEER, bool on_sentinel = false);
  // `address` as Worker::address() returns it; on_sentinel connects the
  // sentinel workers instead of the main ones.
  static Result<std::unique_ptr<Endpoint>> toAddress(Worker::Impl* worker,
                                                     const std::vector<uint8_t>& address,
                                                     ucp_err_handling_mode_t mode,
                                                     bool on_sentinel = false);
};
// Worker::address() is "SAW1" | u32 length | main address | u32 length |
// sentinel address (length 0 without a sentinel worker). Anything else is
// taken as a bare UCP worker address.
struct WorkerAddress {
  std::vector<uint8_t> main;
  std::vector<uint8_t> sentinel;
};
WorkerAddress splitWorkerAddress(const std::vector<uint8_t>& bytes);
std::vector<uint8_t> joinWorkerAddress(const WorkerAddress& parts);

// "host:port" (numeric or DNS; "*" = any for listeners) to a socket address.
Status resolveSockaddr(const std::string& host_port, bool passive, sockaddr_storage* out,
                       socklen_t* out_len);
// Closes several endpoints in parallel, bounded by `timeout_ms` overall.
void closeEndpoints(Worker::Impl* worker, std::vector<std::unique_ptr<Endpoint>>& endpoints,
                    int64_t timeout_ms);

}  // namespace switchagg::ucx
