// Request: completion handles, and the one place ucs_status_t becomes Status.
#include <time.h>

#include <utility>

#include "transport_internal.h"

namespace switchagg::ucx {

// Deadlines are in milliseconds: the coarse clock (a few ms resolution)
// serves them at a tenth of the cost of CLOCK_MONOTONIC on a VM, and every
// wait reads it.
int64_t nowMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

bool isPeerError(ucs_status_t status) {
  switch (status) {
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_REJECTED:
    case UCS_ERR_NOT_CONNECTED:
    case UCS_ERR_IO_ERROR:
    case UCS_ERR_TIMED_OUT:
    case UCS_ERR_SHMEM_SEGMENT:  // a dead peer's shared memory is gone
      return true;
    default:
      return false;
  }
}

Status statusFromUcs(ucs_status_t status, const std::string& what) {
  if (status == UCS_OK) return Status::Ok();
  std::string msg = what + ": " + ucs_status_string(status);
  if (isPeerError(status)) return Status(Code::kPeerFailed, msg);
  // Every other status UCX names here, and its code; the rest are internal.
  static constexpr std::pair<ucs_status_t, Code> kCodes[] = {
      {UCS_INPROGRESS, Code::kInProgress},
      {UCS_ERR_CANCELED, Code::kAborted},
      {UCS_ERR_NO_MEMORY, Code::kNoResource},
      {UCS_ERR_NO_RESOURCE, Code::kNoResource},
      {UCS_ERR_EXCEEDS_LIMIT, Code::kNoResource},
      {UCS_ERR_INVALID_PARAM, Code::kInvalidArgument},
      {UCS_ERR_INVALID_ADDR, Code::kInvalidArgument},
      {UCS_ERR_MESSAGE_TRUNCATED, Code::kProtocol},
      {UCS_ERR_UNSUPPORTED, Code::kUnsupported},
      {UCS_ERR_NO_DEVICE, Code::kUnsupported},
  };
  for (const auto& [known, code] : kCodes)
    if (status == known) return Status(code, msg);
  return Status(Code::kInternal, msg);
}

Request::Request() : state_(std::make_unique<State>()) {}

Request::~Request() {
  State* s = state_.get();
  if (s->active) {
    Hook hook = s->hook;
    s->hook = Hook{};
    req::abandon(*s, Status(Code::kAborted, "request destroyed"));
    if (hook.abandon != nullptr) hook.abandon(hook.ctx, hook.id);
  }
  if (s->ucx_req != nullptr) {
    // UCX still owns an operation on this state (a send, or a receive whose
    // cancel is not immediate): its callback deletes the state.
    s->zombie = true;
    (void)state_.release();
  }
}

bool Request::done() const { return state_->done; }
const Status& Request::status() const { return state_->status; }
size_t Request::length() const { return state_->length; }

namespace req {

Status beginFailure(const Request::State& s) {
  if (s.active) return Status(Code::kInvalidArgument, "request is still in use");
  return Status(Code::kInvalidArgument, "request's cancelled operation is still draining");
}

// status() is only meaningful once done(), so it is not reset here: that
// keeps string work off the per-message path.
bool begin(Request::State& s, Worker::Impl* worker, Endpoint::Impl* endpoint) {
  if (s.active || s.ucx_req != nullptr) return false;
  s.active = true;
  s.done = false;
  s.length = 0;
  s.worker = worker;
  s.endpoint = endpoint;
  s.cancelling = false;
  s.is_recv = false;
  s.hook = Hook{};
  return true;
}

void complete(Request::State& s, Status status, size_t length) {
  s.active = false;
  s.done = true;
  s.status = std::move(status);
  s.length = length;
  if (s.link.list != nullptr) {
    if (s.status.ok() && s.link.list->bytes_done != nullptr) *s.link.list->bytes_done += length;
    PendingList::unlink(s.link);
  }
  if (s.hook.complete != nullptr && s.worker != nullptr)
    s.worker->completions.push_back(PendingCompletion{s.hook, s.status, length});
  s.hook = Hook{};
}

// A send on an endpoint fails because the peer or the connection did
// (UCX purges them with the endpoint's error, or CANCELED on a forced
// close), so it is the peer's failure unless the status says the call was
// wrong. The endpoint is not dereferenced: it may be gone by now.
static Status opStatus(Request::State& s, ucs_status_t status, const char* what) {
  if (status == UCS_OK) return Status::Ok();
  if (s.endpoint != nullptr && status != UCS_ERR_INVALID_PARAM && status != UCS_ERR_NO_MEMORY &&
      status != UCS_ERR_MESSAGE_TRUNCATED)
    return Status(Code::kPeerFailed,
                  std::string(what) + ": peer failed (" + ucs_status_string(status) + ")");
  return statusFromUcs(status, what);
}

void prepare(Request::State& s, ucp_request_param_t& p) {
  p.op_attr_mask |= UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.user_data = &s;
  s.posting = true;
}

void attach(Request::State& s, ucs_status_ptr_t ptr, const char* what, size_t length) {
  s.posting = false;
  if (!s.active) {
    // The callback already ran inside the call and freed the request.
  } else if (ptr == nullptr) {
    complete(s, Status::Ok(), length);
  } else if (UCS_PTR_IS_ERR(ptr)) {
    complete(s, opStatus(s, UCS_PTR_STATUS(ptr), what), 0);
  } else {
    s.ucx_req = ptr;
    s.length = length;  // a send's size, reported on completion
  }
}

void abandon(Request::State& s, Status status) {
  if (s.ucx_req != nullptr) {
    s.cancelling = true;
    // Receives cancel at once (the callback runs inside ucp_request_cancel
    // and clears ucx_req); sends finish inside UCX and their callback then
    // only frees the request.
    if (s.worker != nullptr && s.is_recv) ucp_request_cancel(s.worker->ucp, s.ucx_req);
  }
  complete(s, std::move(status), 0);
}

// The state to complete for this callback, or nullptr if it is not ours
// any more (cancelled, or a zombie that is deleted here).
static Request::State* claim(void* request, void* user_data) {
  auto* s = static_cast<Request::State*>(user_data);
  if (s->posting) return s;
  if (s->ucx_req != request) return nullptr;
  s->ucx_req = nullptr;
  if (s->zombie) {
    delete s;
    return nullptr;
  }
  if (s->cancelling) {
    s->cancelling = false;
    return nullptr;
  }
  return s;
}

void sendCallback(void* request, ucs_status_t status, void* user_data) {
  Request::State* s = claim(request, user_data);
  ucp_request_free(request);
  if (s != nullptr) complete(*s, opStatus(*s, status, "send"), s->length);
}

void recvCallback(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
                  void* user_data) {
  Request::State* s = claim(request, user_data);
  size_t length = (status == UCS_OK && info != nullptr) ? info->length : 0;
  ucp_request_free(request);
  if (s != nullptr) complete(*s, opStatus(*s, status, "receive"), length);
}

void amDataCallback(void* request, ucs_status_t status, size_t length, void* user_data) {
  Request::State* s = claim(request, user_data);
  ucp_request_free(request);
  if (s != nullptr) complete(*s, opStatus(*s, status, "am receive"), length);
}

void postTagSend(Endpoint::Impl& ep, uint64_t tag, const void* data, size_t length,
                 Request::State& s) {
  s.endpoint = &ep;
  ucp_request_param_t p{};
  p.cb.send = sendCallback;
  prepare(s, p);
  attach(s, ucp_tag_send_nbx(ep.ep, data, length, tag, &p), "tag send", length);
}

// Always through the callback: UCX 1.13 leaves recv_info unset on an
// immediate completion, and the length matters.
void postTagRecv(Worker::Impl& w, uint64_t tag, uint64_t mask, void* data, size_t length,
                 Request::State& s) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  p.cb.recv = recvCallback;
  s.is_recv = true;
  prepare(s, p);
  attach(s, ucp_tag_recv_nbx(w.ucp, data, length, tag, mask, &p), "tag receive", 0);
}

}  // namespace req
}  // namespace switchagg::ucx
