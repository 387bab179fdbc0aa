#include "data_plane_receive.h"

#include <memory>
#include <string>

#include "switchagg/common/log.h"

namespace switchagg::agent {

Status receiveIntoSlots(ucx::Worker& worker, AggregationEngine& engine,
                        std::function<PeerId(ucx::Endpoint*)> adopt) {
  ucx::Worker* w = &worker;
  auto warned = std::make_shared<bool>(false);
  engine.setMemoryMapper([w, warned](void* data, size_t bytes) -> std::shared_ptr<void> {
    auto mapped = w->mapMemory(data, bytes);
    if (mapped.ok()) return std::move(mapped.value());
    if (!*warned) {  // once: every allocation would fail the same way
      *warned = true;
      SA_WARN("agent",
              "slot memory not registered with UCX (%s): used unregistered, an RDMA "
              "transport stages received data through its own buffers",
              mapped.status().toString().c_str());
    }
    return nullptr;
  });
  AggregationEngine* e = &engine;
  return worker.setAmPlacer(
      wire::kAmToAgent,
      ucx::AmPlacer{AggregationEngine::kPlacedMinBytes,
                    [e, adopt = std::move(adopt)](ucx::Endpoint* from, const void* header,
                                                  size_t header_bytes,
                                                  size_t bytes) -> ucx::AmPlacement {
                      const PeerId id = from ? adopt(from) : 0;
                      if (id == 0) return {};
                      const AggregationEngine::Placement at =
                          e->placeContrib(id, header, header_bytes, bytes);
                      return {at.data, at.cookie};
                    },
                    [e](uint64_t cookie) { e->releasePlacement(cookie); }});
}

}  // namespace switchagg::agent
