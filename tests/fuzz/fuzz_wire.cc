// libFuzzer target for the agent's data-plane wire protocol.
//
// Mode byte 0: the input is one framed message ([u16 header length][header]
// [body]); if it decodes, re-encoding and decoding again must give the same
// message (the encoder and decoder agree on every field).
// Mode byte 1: the input is a session ([u8 peer][u16 length][framed message]
// ...) fed to a real AggregationEngine behind two fake leases (tokens whose
// are 01 or 02 followed by zeros), with ticks, reductions and send completions in
// between: no input may crash it, and its slot accounting must stay within
// the two leases' 3 + 2 slots; every control message it sends decodes
// (WAITING keepalives included, every 20 ms of a chunk's wait).
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "aggregation_engine.h"
#include "switchagg/agent/wire.h"
#include "fuzz_check.h"

using switchagg::fuzz::check;
using namespace switchagg;
using namespace switchagg::agent;

namespace {

void roundTrip(const uint8_t* data, size_t size) {
  wire::Message m;
  if (wire::decodeFramed(data, size, &m) != wire::Reason::kNone) return;
  const std::vector<uint8_t> copy(static_cast<const uint8_t*>(m.payload),
                                  static_cast<const uint8_t*>(m.payload) + m.payload_bytes);
  const auto again = wire::toFramed(wire::encode(m), copy.data(), copy.size());
  wire::Message n;
  check(wire::decodeFramed(again.data(), again.size(), &n) == wire::Reason::kNone);
  check(n.type == m.type && n.token == m.token && n.group_id == m.group_id);
  check(n.size == m.size && n.rank == m.rank && n.window == m.window);
  check(n.slot_bytes == m.slot_bytes && n.slot == m.slot && n.chunk == m.chunk);
  check(n.call_elems == m.call_elems && n.count == m.count && n.reason == m.reason);
  check(n.dtype == m.dtype && n.op == m.op && n.caps == m.caps && n.text == m.text);
  check(n.payload_bytes == m.payload_bytes &&
        (m.payload_bytes == 0 || std::memcmp(n.payload, copy.data(), copy.size()) == 0));
}

class NullOutput : public EngineOutput {
 public:
  // Whatever the engine says decodes; a WAITING names a chunk that lacks
  // at least one member of a group no larger than the protocol allows.
  void sendControl(PeerId, wire::Frame f) override {
    wire::Message m;
    check(wire::decode(f.header.data(), f.header_bytes, f.body.empty() ? nullptr : f.body.data(),
                       f.body.size(), &m) == wire::Reason::kNone);
    if (m.type == wire::MsgType::kWaiting) {
      check(m.count >= 1 && m.rank < wire::kMaxGroupSize);
      ++waiting;
    }
  }
  uint64_t waiting = 0;
  void sendResult(PeerId, const uint8_t*, size_t, const void*, size_t, std::shared_ptr<SlotBuffers>,
                  uint64_t serial, uint32_t slot) override {
    pending.push_back({serial, slot});
  }
  std::vector<std::pair<uint64_t, uint32_t>> pending;
};

void session(const uint8_t* data, size_t size) {
  static ReducePool pool(1);
  NullOutput out;
  EngineConfig c;
  c.slot_bytes = 4096;
  c.memory_bytes = 1 << 20;
  c.member_timeout_ms = 100;
  c.keepalive_ms = 20;  // WAITING well within the member timeout
  AggregationEngine engine(
      c,
      [](const LeaseToken& token) -> std::optional<LeaseInfo> {
        static const std::string zeros(30, '0');
        if (token.hex() == "01" + zeros) return LeaseInfo{"a", 3};
        if (token.hex() == "02" + zeros) return LeaseInfo{"b", 2};
        return std::nullopt;
      },
      out, pool);
  int64_t now = 0;
  size_t at = 0;
  while (at + 3 <= size) {
    const PeerId peer = 1 + data[at] % 8;
    const size_t len = data[at + 1] | (static_cast<size_t>(data[at + 2]) << 8);
    at += 3;
    const size_t n = std::min(len, size - at);
    if (data[at - 3] == 0xff) {
      engine.onPeerFailed(peer, "fuzz");
    } else if (n >= 2) {
      const size_t hlen = std::min<size_t>(n - 2, data[at] | (data[at + 1] << 8));
      engine.onMessage(peer, data + at + 2, hlen, n - 2 > hlen ? data + at + 2 + hlen : nullptr,
                       n - 2 - hlen, now);
    }
    at += n;
    now += 7;
    engine.reduceReady();
    if (now % 3 == 0) {
      for (auto& [serial, slot] : out.pending) engine.sendDone(serial, slot);
      out.pending.clear();
    }
    if (now % 5 == 0) engine.tick(now);
  }
  const DataPlaneCounters k = engine.counters();
  check(k.slots_reserved <= 5 && k.slots_busy <= k.slots_reserved);
  engine.abortAll(wire::Reason::kShutdown, "end");
  check(engine.counters().slots_reserved == 0 && engine.liveGroups() == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  if (data[0] % 2 == 0)
    roundTrip(data + 1, size - 1);
  else
    session(data + 1, size - 1);
  return 0;
}
