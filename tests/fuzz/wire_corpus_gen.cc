// Writes fuzz_wire's seed corpus: every message type (mode 0) and a few
// whole sessions against the engine (mode 1). Usage: wire_corpus_gen DIR
#include <cstdio>
#include <string>
#include <vector>

#include "switchagg/agent/wire.h"

using namespace switchagg;
using namespace switchagg::agent::wire;

namespace {

Message base(MsgType t, uint8_t lease) {
  Message m;
  m.type = t;
  m.token[0] = lease;
  m.group_id = 5;
  return m;
}

std::vector<uint8_t> framed(const Message& m, const std::vector<uint8_t>& payload = {}) {
  return toFramed(encode(m), payload.empty() ? nullptr : payload.data(), payload.size());
}

Message contrib(uint32_t rank, uint64_t chunk, uint32_t window, uint32_t count) {
  Message m = base(MsgType::kContrib, 1);
  m.rank = rank;
  m.chunk = chunk;
  m.slot = static_cast<uint32_t>(chunk % window);
  m.dtype = Dtype::kFloat32;
  m.op = Op::kSum;
  m.count = count;
  m.call_elems = 2 * count;
  return m;
}

void write(const std::string& dir, const std::string& name, uint8_t mode,
           const std::vector<uint8_t>& bytes) {
  FILE* f = std::fopen((dir + "/" + name).c_str(), "wb");
  if (!f) return;
  std::fputc(mode, f);
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

// Appends one session step: [peer][u16 length][framed message].
void step(std::vector<uint8_t>& s, uint8_t peer, const std::vector<uint8_t>& msg) {
  s.push_back(peer);
  s.push_back(static_cast<uint8_t>(msg.size() & 0xff));
  s.push_back(static_cast<uint8_t>(msg.size() >> 8));
  s.insert(s.end(), msg.begin(), msg.end());
}

// A session's start: peer 0's HELLO, then both members of group 1 (lease 1,
// window 2) join with `flags`.
std::vector<uint8_t> helloAndJoin(uint32_t flags) {
  std::vector<uint8_t> s;
  step(s, 0, framed(base(MsgType::kHello, 1)));
  for (uint32_t r = 0; r < 2; ++r) {
    Message j = base(MsgType::kJoin, 1);
    j.size = 2;
    j.rank = r;
    j.window = 2;
    j.flags = flags;
    step(s, static_cast<uint8_t>(r), framed(j));
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::string dir = argv[1];
  const std::vector<uint8_t> payload(16, 0x3f);
  for (int t = 1; t <= kMaxMsgType; ++t) {
    Message m = base(static_cast<MsgType>(t), 1);
    m.size = 2;
    m.window = 2;
    m.slot_bytes = 4096;
    m.caps.add(Dtype::kFloat32, Op::kSum);
    m.reason = Reason::kMemberFailed;
    m.text = "rank 1 failed";
    m.dtype = Dtype::kFloat32;
    m.count = 4;
    m.call_elems = 4;
    if (m.type == MsgType::kContribRouted) {
      m.mode = kModeReduce;
      m.dest_lo = 0;
      m.dest_hi = 1;
    }
    const bool chunk = carriesPayload(m.type);
    write(dir, "msg_" + std::to_string(t), 0, framed(m, chunk ? payload : std::vector<uint8_t>{}));
  }
  // A good session: two members join, stream two chunks through window 2, leave.
  std::vector<uint8_t> good = helloAndJoin(0);
  std::vector<uint8_t> bad = good;
  for (uint64_t c = 0; c < 2; ++c)
    for (uint32_t r = 0; r < 2; ++r)
      step(good, static_cast<uint8_t>(r), framed(contrib(r, c, 2, 4), payload));
  for (uint32_t r = 0; r < 2; ++r) {
    Message l = base(MsgType::kLeave, 1);
    l.rank = r;
    step(good, static_cast<uint8_t>(r), framed(l));
  }
  write(dir, "session_good", 1, good);
  // Duplicate contribution, then a count mismatch in a second group of lease 2.
  step(bad, 0, framed(contrib(0, 0, 2, 4), payload));
  step(bad, 0, framed(contrib(0, 0, 2, 4), payload));
  write(dir, "session_duplicate", 1, bad);
  // Keepalives: two members that take WAITING; member 0 contributes, member
  // 1 is late (HELLOs pass the time) until WAITING went out, then comes.
  std::vector<uint8_t> late = helloAndJoin(kJoinFlagKeepalive | kJoinFlagBusy);
  step(late, 0, framed(contrib(0, 0, 2, 4), payload));
  for (int k = 0; k < 8; ++k) step(late, 1, framed(base(MsgType::kHello, 1)));
  step(late, 1, framed(contrib(1, 0, 2, 4), payload));
  write(dir, "session_late_member", 1, late);
  std::vector<uint8_t> fail = good;
  step(fail, 0xff, {});
  write(dir, "session_peer_failed", 1, fail);
  return 0;
}
