// Active-message receive: every message reaches the handler whole and
// contiguous. Eager messages are handed over in place, inside progress();
// rendezvous messages are pulled with ucp_am_recv_data_nbx (started outside
// the UCX callback) into memory an AmPlacer chose or a buffer of our own,
// and delivered when the pull completes.
#include "switchagg/common/log.h"
#include "transport_internal.h"

namespace switchagg::ucx {
namespace {

void deliver(Worker::Impl* w, uint16_t id, ucp_ep_h reply_ep, const void* header,
             size_t header_length, const void* data, size_t length, uint64_t placed = 0) {
  auto it = w->am_slots.find(id);
  if (it == w->am_slots.end() || !it->second->handler) {
    if (placed && it != w->am_slots.end() && it->second->placer.release)
      it->second->placer.release(placed);
    return;
  }
  AmMessage msg{reply_ep ? w->endpointFor(reply_ep) : nullptr, header, header_length, data,
                length, placed};
  it->second->handler(msg);
}

void releasePlaced(Worker::Impl* w, const PendingAm& p) {
  if (!p.cookie) return;
  auto it = w->am_slots.find(p.id);
  if (it != w->am_slots.end() && it->second->placer.release) it->second->placer.release(p.cookie);
}

// The rendezvous pull of a PendingAm (hook id) finished: hand it over.
void rendezvousDone(void* ctx, uint64_t id, const Status& status, size_t) {
  auto* w = static_cast<Worker::Impl*>(ctx);
  auto it = w->pending_am.find(reinterpret_cast<PendingAm*>(id));
  if (it == w->pending_am.end()) return;
  std::unique_ptr<PendingAm> owned = std::move(it->second);
  w->pending_am.erase(it);
  if (!status.ok()) {
    SA_WARN("ucx", "active message %u (%zu bytes) lost: %s", owned->id, owned->length,
            status.toString().c_str());
    releasePlaced(w, *owned);
    return;
  }
  deliver(w, owned->id, owned->reply_ep, owned->header.data(), owned->header.size(),
          owned->target, owned->length, owned->cookie);
}

// Chooses where `pending` lands: the placer's memory, else a buffer of its own.
bool chooseTarget(Worker::Impl* w, PendingAm* pending) {
  auto slot = w->am_slots.find(pending->id);
  if (slot != w->am_slots.end() && slot->second->placer.place &&
      pending->length >= slot->second->placer.min_length) {
    const AmPlacement at = slot->second->placer.place(
        pending->reply_ep ? w->endpointFor(pending->reply_ep) : nullptr, pending->header.data(),
        pending->header.size(), pending->length);
    if (at.data && at.cookie) {
      pending->target = static_cast<uint8_t*>(at.data);
      pending->cookie = at.cookie;
      return true;
    }
  }
  pending->data.reset(new (std::nothrow) uint8_t[pending->length > 0 ? pending->length : 1]);
  pending->target = pending->data.get();
  if (pending->target) return true;
  SA_ERROR("ucx", "no memory for a %zu-byte active message; dropped", pending->length);
  return false;
}

// Starts the rendezvous pull of `pending` (descriptor `desc`).
void startRendezvous(Worker::Impl* w, PendingAm* pending, void* desc) {
  if (!chooseTarget(w, pending)) {
    ucp_am_data_release(w->ucp, desc);  // the sender's request fails
    w->pending_am.erase(pending);
    return;
  }
  Request::State& s = *pending->request.state();
  (void)req::begin(s, w, nullptr);
  s.hook = Hook{rendezvousDone, nullptr, w, reinterpret_cast<uint64_t>(pending)};
  ucp_request_param_t p{};
  p.cb.recv_am = req::amDataCallback;
  s.is_recv = true;
  req::prepare(s, p);
  ucs_status_ptr_t r = ucp_am_recv_data_nbx(w->ucp, desc, pending->target, pending->length, &p);
  req::attach(s, r, "am rendezvous receive", pending->length);
}

ucs_status_t amCallback(void* arg, const void* header, size_t header_length, void* data,
                        size_t length, const ucp_am_recv_param_t* param) {
  auto* slot = static_cast<AmSlot*>(arg);
  Worker::Impl* w = slot->worker;
  ucp_ep_h reply_ep =
      (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) ? param->reply_ep : nullptr;
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) == 0) {
    deliver(w, slot->id, reply_ep, header, header_length, data, length);
    return UCS_OK;
  }
  auto pending = std::make_unique<PendingAm>();
  pending->id = slot->id;
  pending->reply_ep = reply_ep;
  const auto* h = static_cast<const uint8_t*>(header);
  if (header_length > 0) pending->header.assign(h, h + header_length);
  pending->length = length;
  PendingAm* raw = pending.get();
  w->pending_am.emplace(raw, std::move(pending));
  std::weak_ptr<Worker::Impl*> alive = w->alive;
  w->defer([alive, raw, data] {
    auto token = alive.lock();
    if (!token || *token == nullptr) return;
    startRendezvous(*token, raw, data);
  });
  return UCS_INPROGRESS;
}

}  // namespace

Status Worker::setAmPlacer(uint16_t id, AmPlacer placer) {
  auto it = impl_->am_slots.find(id);
  if (it == impl_->am_slots.end())
    return Status(Code::kInvalidArgument,
                  "active message " + std::to_string(id) + ": a placer needs its handler first");
  it->second->placer = std::move(placer);
  return Status::Ok();
}

Result<std::shared_ptr<void>> Worker::mapMemory(void* data, size_t length) {
  ucp_mem_map_params_t p{};
  p.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  p.address = data;
  p.length = length;
  ucp_mem_h memh = nullptr;
  const ucs_status_t st = ucp_mem_map(impl_->ctx->ucp, &p, &memh);
  if (st != UCS_OK)
    return statusFromUcs(st, "ucp_mem_map of " + std::to_string(length) + " bytes");
  ucp_context_h ucp = impl_->ctx->ucp;
  return std::shared_ptr<void>(memh, [ucp](void* h) {
    (void)ucp_mem_unmap(ucp, static_cast<ucp_mem_h>(h));
  });
}

Status Worker::setAmHandler(uint16_t id, AmHandler handler) {
  auto& slot = impl_->am_slots[id];
  if (!slot) slot = std::make_unique<AmSlot>();
  slot->worker = impl_.get();
  slot->id = id;
  slot->handler = std::move(handler);
  ucp_am_handler_param_t p{};
  p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                 UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
  p.id = id;
  p.flags = UCP_AM_FLAG_WHOLE_MSG;
  p.cb = amCallback;
  p.arg = slot.get();
  return statusFromUcs(ucp_worker_set_am_recv_handler(impl_->ucp, &p), "set am handler");
}

}  // namespace switchagg::ucx
