// libFuzzer target: how a rank handles the agent's frames (the data
// client's protocol state, switchagent/client/client_core.h, without UCX).
// A bad or stale agent must fail the call, never corrupt memory.
//
// The input is a script. Its first bytes shape a member (group size, rank)
// and the agent's answers; then the member connects (HELLO_ACK), joins
// (JOIN_ACK) and runs up to three calls (allreduce out of place or in
// place, routed reduce or forward, maybe with overlapping input and output)
// while the agent's frames arrive: well-formed RESULTs of chunks in flight
// (maybe with one field corrupted), raw frames, ERROR/ABORT (busy or not,
// for this call or another), stale HELLO_ACK/JOIN_ACK/CAPACITY_ACK,
// keepalives (WAITING) for a chunk in flight, answered, not sent, of another
// call or group, or malformed. The
// member sends what the window admits after every frame (sends complete at
// once); a script that ends mid-call times out. Properties checked beyond
// "no crash / no sanitizer report" (buffers are allocated to their exact
// size, so ASan reports any write outside the caller's buffer):
//  * a call that ends Ok received every chunk once, and its output holds
//    for every element what a RESULT the member accepted delivered for it;
//  * a call that fails leaves the group dead with a non-empty message; a
//    refused (busy) one leaves it usable; either way `send` is untouched,
//    and an in-place (staged) output still holds the input;
//  * a declined call leaves the group as it was; the counters add up;
//  * a WAITING is taken only for a chunk of the call in progress that was
//    sent and not answered, and then extends the call's deadline within
//    the wait limit, never before its own bound; any other is ignored
//    (or, undecodable, fails the connection).
// Striped calls (the call's kind byte & 64): the member's call is stripe k
// of K (equal or weighted by the script: stripeOf, and stripeRoutedCall for
// routed calls, as StripedGroup cuts them) of a vector whose buffers are
// allocated whole; the K ranges tile the vector; the stripe writes nothing
// of the caller's output outside its own part. Partial input (& 128): the
// caller's input is ready in steps (setInputReady through stripeInputReady,
// as a node leaders' pipeline feeds it); no chunk goes out before its
// input is ready. Partial results: resultsReady() never shrinks, and every
// element it reports is already final in the caller's output (allreduce,
// not staged); stripedResultsReady puts it at the stripe's place.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "client_core.h"
#include "fuzz_check.h"
#include "switchagg/common/reduce.h"

using switchagg::fuzz::check;
using namespace switchagg;
using namespace switchagg::agent;

namespace {

class Script {
 public:
  Script(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  bool empty() const { return at_ >= n_; }
  uint8_t u8() { return at_ < n_ ? p_[at_++] : 0; }
  uint16_t u16() { return static_cast<uint16_t>(u8() | (u8() << 8)); }
  uint32_t u32() { return u16() | (static_cast<uint32_t>(u16()) << 16); }
  // `bytes` bytes for a payload: the script's next ones, repeated.
  std::vector<uint8_t> fill(size_t bytes) {
    std::vector<uint8_t> out(bytes);
    const size_t k = std::min<size_t>(n_ - std::min(at_, n_), 64);
    for (size_t i = 0; i < bytes; ++i) out[i] = k ? p_[at_ + i % k] : uint8_t(i);
    at_ += k;
    return out;
  }
  std::vector<uint8_t> take(size_t bytes) {
    bytes = std::min(bytes, n_ - std::min(at_, n_));
    std::vector<uint8_t> out(p_ + at_, p_ + at_ + bytes);
    at_ += bytes;
    return out;
  }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t at_ = 0;
};

const wire::Token kToken = *LeaseToken::fromHex("5a5a0102030405060708090a0b0c0d0e");
constexpr uint64_t kGroup = 77;

wire::CapTable everyPair() {
  wire::CapTable caps;
  for (int d = 1; d <= kNumDtypes; ++d)
    for (int o = 1; o <= kNumOps; ++o)
      if (isValidDtype(uint8_t(d)) && isValidOp(uint8_t(o)) &&
          reduceSupported(Dtype(d), Op(o)))
        caps.add(Dtype(d), Op(o));
  return caps;
}

// One frame as the agent's active message: header, then body or payload.
struct Sent {
  wire::Frame frame;
  std::vector<uint8_t> data;
};

Sent frameOf(const wire::Message& m, std::vector<uint8_t> payload = {}) {
  Sent s{wire::encode(m), {}};
  s.data = s.frame.body.empty() ? std::move(payload) : s.frame.body;
  return s;
}

// The member's side of one call: its buffers and what the oracle expects.
struct Call {
  bool routed = false, forward = false, in_place = false, staged = false;
  Dtype dtype = Dtype::kInt32;
  Op op = Op::kSum;
  size_t esize = 0, total = 0;
  std::vector<uint8_t> in, in_copy;  // the input (forward: this member's piece)
  size_t in_off = 0;                 // bytes: where this stripe's input starts in `in`
  // Striped: stripe k of K over [r.begin, r.begin + r.count) of `total`.
  size_t stripes = 1, k = 0;
  StripeRange r{0, 0};
  std::vector<StripeRange> ranges;
  // Partial input: how many of the vector's elements are ready (total: all).
  size_t input_ready = 0;
  size_t results_ready = 0;  // the last resultsReady()
  std::vector<uint8_t> own_out;      // the output when not aliasing `in`
  uint8_t* out = nullptr;            // where results land ([want_begin, want_end))
  std::vector<uint8_t> expect;       // per wanted element, its delivered bytes
  std::vector<uint8_t> delivered;    // per wanted element
};

class Harness {
 public:
  explicit Harness(Script& s) : s_(s) {}

  void run() {
    const uint8_t shape = s_.u8();
    const int size = 1 + shape % 4;
    const int rank = (shape >> 2) % size;
    if (!connect()) return;
    g_.info.group_id = kGroup;
    g_.info.size = size;
    g_.info.rank = rank;
    c_.groups[kGroup] = &g_;
    if (!join()) return;
    for (int k = 0; k < 3 && !s_.empty() && !g_.dead && !c_.failed; ++k) call();
    checkCounters();
  }

 private:
  // Feeds one frame; notes what each newly received chunk delivered.
  void feed(const Sent& s, Call* call) {
    const std::vector<uint8_t> before = g_.received;
    const uint64_t base = g_.base;
    c_.onFrame(s.frame.header.data(), s.frame.header_bytes, s.data.empty() ? nullptr : s.data.data(),
               s.data.size());
    if (!call || !g_.active || base != g_.base) return;
    for (size_t rel = 0; rel < g_.received.size(); ++rel) {
      if (before[rel] || !g_.received[rel]) continue;
      ++accepted_;
      wire::Message m;
      check(wire::decode(s.frame.header.data(), s.frame.header_bytes,
                         s.data.empty() ? nullptr : s.data.data(), s.data.size(),
                         &m) == wire::Reason::kNone);
      check(m.type == wire::MsgType::kResult && m.chunk == g_.base + rel);
      note(*call, rel, m);
    }
  }

  // What chunk `rel`'s accepted RESULT `m` delivers for the wanted elements.
  void note(Call& call, size_t rel, const wire::Message& m) {
    const size_t c0 = rel * g_.chunk_elems, c1 = c0 + m.count;
    const size_t lo = std::max(c0, g_.want_begin), hi = std::min(c1, g_.want_end);
    if (lo >= hi) return;
    uint8_t* dst = call.expect.data() + (lo - g_.want_begin) * call.esize;
    const size_t bytes = (hi - lo) * call.esize;
    if (m.result_flags & wire::kResultNoPayload) {
      // Only a chunk this member forwarded whole: its own piece.
      check(call.forward && g_.in_begin <= c0 && c1 <= g_.in_end);
      std::memcpy(dst, call.in_copy.data() + call.in_off + (lo - g_.in_begin) * call.esize, bytes);
    } else {
      check(m.payload_bytes == m.count * call.esize);
      std::memcpy(dst, static_cast<const uint8_t*>(m.payload) + (lo - c0) * call.esize, bytes);
      uint32_t dlo = 0, dhi = 0;
      destinations(g_, c0, c1, &dlo, &dhi);
      if (call.routed && keepsOwn(g_, dlo, dhi))
        check(reduceInto(call.dtype, call.op, dst,
                         call.in_copy.data() + call.in_off + lo * call.esize, hi - lo)
                  .ok());
    }
    std::fill(call.delivered.begin() + (lo - g_.want_begin),
              call.delivered.begin() + (hi - g_.want_begin), 1);
  }

  wire::Message base(wire::MsgType type) {
    wire::Message m;
    m.type = type;
    m.token = kToken;
    m.group_id = kGroup;
    return m;
  }

  // HELLO_ACK, JOIN_ACK or CAPACITY_ACK with the script's figures.
  Sent ack(uint8_t which) {
    const uint8_t pick = which % 3;
    wire::Message m = base(pick == 0   ? wire::MsgType::kHelloAck
                           : pick == 1 ? wire::MsgType::kJoinAck
                                       : wire::MsgType::kCapacityAck);
    if (pick == 0) m.group_id = 0;
    m.size = static_cast<uint32_t>(g_.info.size);
    m.rank = static_cast<uint32_t>(g_.info.rank);
    const uint8_t w = s_.u8();
    m.window = 1 + w % 6;
    if (w >= 250) m.size += 1;  // another size: refused
    const uint16_t sb = s_.u16();
    m.slot_bytes = sb >= 65000 ? wire::kMaxSlotBytes : 1 + sb % 96;
    m.caps = everyPair();
    if (sb & 0x8000) m.caps.mask[s_.u8() % m.caps.mask.size()] = 0;
    m.capacity = {s_.u32(), s_.u32(), s_.u32()};
    return frameOf(m);
  }

  // An ERROR or ABORT with the script's reason, chunk and group.
  Sent refusal() {
    const uint8_t b = s_.u8();
    wire::Message m = base(b & 1 ? wire::MsgType::kAbort : wire::MsgType::kError);
    m.reason = (b & 6) == 0 ? wire::Reason::kBusy : wire::Reason(1 + s_.u8() % wire::kMaxReason);
    if (b & 8) m.group_id = s_.u8();
    const uint8_t c = s_.u8();
    m.chunk = g_.base + (c & 0x80 ? uint64_t(-1) - c : c % 8);
    if (b & 16) m.text = "fuzz";
    return frameOf(m);
  }

  // A WAITING for a chunk near the call's (in flight, answered, not sent
  // yet, the previous call's), maybe for another group, maybe malformed (no
  // member missing: undecodable).
  Sent waiting() {
    const uint8_t b = s_.u8();
    wire::Message m = base(wire::MsgType::kWaiting);
    m.chunk = g_.base + b % 8 - ((b & 0x80) ? (g_.n_chunks ? g_.n_chunks : 1) : 0);
    m.count = (b & 0x40) ? 0 : 1 + s_.u8() % 4;
    m.rank = s_.u8() % 4;
    if (b & 0x20) m.group_id += 1;
    return frameOf(m);
  }

  // Feeds a WAITING; checks what taking it (or not) means.
  void feedWaiting(Call& call) {
    const Sent w = waiting();
    wire::Message m;
    const bool valid = wire::decode(w.frame.header.data(), w.frame.header_bytes, nullptr, 0, &m) ==
                       wire::Reason::kNone;
    const uint64_t before = g_.counters.keepalives;
    const size_t received = g_.n_received;
    const bool in_flight = valid && m.group_id == kGroup && m.chunk >= g_.base &&
                           m.chunk - g_.base < g_.next_send &&
                           !g_.received[static_cast<size_t>(m.chunk - g_.base)];
    feed(w, &call);
    check(g_.n_received == received);  // a keepalive never delivers a result
    if (!valid) return check(c_.failed);
    check(!c_.failed);
    check(g_.counters.keepalives == before + (in_flight ? 1 : 0));
    if (!in_flight) return;
    check(g_.waiting_ms > 0 && g_.waiting_missing == m.count && g_.waiting_rank == m.rank);
    const int64_t bound = clientNowMs() - 10, timeout = 100;
    check(g_.deadline(bound, timeout, 0) == bound);  // no wait limit: no extension
    const int64_t d = g_.deadline(bound, timeout, 500);
    check(d > bound && d <= bound + 500);
    check(g_.timedOut(timeout).code() == Code::kTimeout &&
          g_.timedOut(timeout).message().find("member(s)") != std::string::npos);
  }

  // A raw frame: [u8 header bytes][header][u16 data bytes][data].
  Sent raw() {
    Sent s;
    const std::vector<uint8_t> h = s_.take(std::min<size_t>(s_.u8(), wire::kMaxHeaderBytes));
    std::copy(h.begin(), h.end(), s.frame.header.begin());
    s.frame.header_bytes = h.size();
    s.data = s_.take(s_.u16() % 1024);
    return s;
  }

  // A RESULT of a chunk in flight (or near), as the agent would send it to
  // this member, then maybe one field corrupted.
  Sent result(const Call& call) {
    const uint8_t pick = s_.u8();
    const size_t rel = g_.next_send ? pick % (g_.next_send + (pick >> 7)) : pick % 2;
    wire::Message m = base(wire::MsgType::kResult);
    m.chunk = g_.base + rel;
    m.slot = static_cast<uint32_t>(m.chunk % g_.info.window);
    m.call_elems = g_.count;
    m.dtype = g_.dtype;
    m.op = g_.op;
    const size_t c0 = std::min(rel * g_.chunk_elems, g_.count);
    m.count = static_cast<uint32_t>(std::min(g_.chunk_elems, g_.count - c0));
    const size_t c1 = c0 + m.count;
    const bool wants = std::max(c0, g_.want_begin) < std::min(c1, g_.want_end);
    if (call.forward) m.result_flags |= wire::kResultForward;
    const bool own = call.forward && g_.in_begin <= c0 && c1 <= g_.in_end;
    if (call.routed && (!wants || (own && (pick & 0x40))))
      m.result_flags |= wire::kResultNoPayload;
    const uint8_t bad = s_.u8();
    switch (bad % 24) {
      case 0: m.chunk += 1 + (bad >> 5); break;
      case 1: m.slot += 1; break;
      case 2: m.count += (bad & 32) ? 1 : uint32_t(-1); break;
      case 3: m.dtype = Dtype(1 + (bad >> 4) % kNumDtypes); break;
      case 4: m.op = Op(1 + (bad >> 4) % kNumOps); break;
      case 5: m.result_flags ^= uint16_t(1 + (bad >> 6) % 3); break;
      case 6: m.call_elems += 1; break;
      case 7: m.token = wire::Token{}; break;
      case 8: m.group_id += 1; break;
      case 9: m.chunk -= g_.n_chunks ? g_.n_chunks : 1; break;  // the previous call's
      default: break;
    }
    std::vector<uint8_t> payload;
    if (!(m.result_flags & wire::kResultNoPayload))
      payload = s_.fill(std::min<size_t>(size_t(m.count) * std::max<size_t>(dtypeSize(m.dtype), 1),
                                         1 << 16));  // a wrapped count: any size
    return frameOf(m, std::move(payload));
  }

  // HELLO_ACK (or a refusal, or garbage) until the connection is up.
  bool connect() {
    c_.token = kToken;
    while (!c_.hello_done && !c_.failed && !s_.empty()) {
      const uint8_t e = s_.u8();
      feed(e % 4 == 0 ? raw() : e % 4 == 1 ? refusal() : ack(0), nullptr);
    }
    if (c_.failed) check(!c_.failure.ok() && !c_.failure.message().empty());
    if (!c_.hello_done || c_.failed) return false;
    if (!c_.hello_status.ok()) {
      check(!c_.hello_status.message().empty());
      return false;
    }
    check(c_.agent.slot_bytes >= 1 && c_.agent.slot_bytes <= wire::kMaxSlotBytes);
    c_.capacity_done = true;
    return true;
  }

  bool join() {
    while (!g_.acked && !g_.dead && !c_.failed && !s_.empty()) {
      const uint8_t e = s_.u8();
      feed(e % 4 == 0 ? raw() : e % 4 == 1 ? refusal() : ack(e % 4 == 2 ? 1 : e >> 2), nullptr);
    }
    if (g_.dead || c_.failed) {
      check(!g_.failure.ok() && !g_.failure.message().empty());
      return false;
    }
    if (!g_.acked) return false;
    check(g_.info.window >= 1 && g_.info.window <= wire::kMaxWindow);
    check(g_.info.slot_bytes >= 1 && g_.info.slot_bytes <= wire::kMaxSlotBytes);
    return true;
  }

  // Sets up the script's call; false when the member declined it.
  bool start(Call& call) {
    const uint8_t kind = s_.u8();
    call.routed = kind & 2;
    call.forward = call.routed && (kind & 4);
    call.in_place = !call.routed && (kind & 1);
    call.dtype = Dtype(1 + s_.u8() % kNumDtypes);
    call.op = Op(1 + s_.u8() % kNumOps);
    call.esize = std::max<size_t>(dtypeSize(call.dtype), 1);
    call.total = s_.u8() % 97;
    if (!cut(call, kind)) return false;
    const size_t S = call.r.begin, n = call.r.count;
    if (!call.routed) {
      call.in = s_.fill(call.total * call.esize);
      call.in_copy = call.in;
      if (!call.in_place) call.own_out.assign(call.total * call.esize, 0xee);
      uint8_t* recv = call.in_place ? call.in.data() : call.own_out.data();
      call.in_off = S * call.esize;
      call.out = recv + call.in_off;
      const Status st = n == 0 ? Status(Code::kInvalidArgument, "empty")
                               : g_.prepareCall(call.dtype, call.op, call.in.data() + call.in_off,
                                                call.out, n);
      if (!st.ok()) return false;
      call.staged = call.in_place;
    } else {
      RoutedCall r;
      r.kind = call.forward ? RoutedCall::Kind::kForward : RoutedCall::Kind::kReduce;
      r.dtype = call.dtype;
      r.op = call.op;
      r.total = call.total;
      if (kind & 8) {  // the members' wanted bounds
        r.want.assign(size_t(g_.info.size) + 1, 0);
        for (size_t i = 1; i < r.want.size(); ++i)
          r.want[i] = std::min(call.total, r.want[i - 1] + s_.u8() % 40);
        r.want.back() = call.total;
        // Maybe invalid (one stripe only: StripedGroup cuts bounds the MPI
        // layer computed, it does not check them first).
        if ((kind & 16) && call.stripes == 1) r.want[s_.u8() % r.want.size()] += 1;
      }
      size_t b = 0, e = call.total;
      if (r.want.size() == size_t(g_.info.size) + 1 && std::is_sorted(r.want.begin(), r.want.end()))
        r.wanted(g_.info.rank, &b, &e);
      b = std::min(b, call.total);
      e = std::min(std::max(e, b), call.total);
      if (call.forward) {
        r.in_begin = std::min<size_t>(s_.u8(), call.total);
        r.in_end = std::min<size_t>(r.in_begin + s_.u8(), call.total);
      } else {
        r.in_end = call.total;
      }
      call.in = s_.fill((r.in_end - r.in_begin) * call.esize);
      call.in_copy = call.in;
      r.in = call.in.empty() ? nullptr : call.in.data();
      // Output over the input (staged until the call succeeded; a striped
      // group stages the whole call instead: one stripe only here).
      if (!call.forward && (kind & 32) && e > b && call.stripes == 1) {
        r.out = call.in.data() + b * call.esize;
      } else {
        call.own_out.assign((e - b) * call.esize, 0xee);
        r.out = call.own_out.empty() ? nullptr : call.own_out.data();
      }
      // This stripe's call, as StripedGroup::startRouted makes it.
      const RoutedCall sc =
          call.stripes == 1 ? r
                            : stripeRoutedCall(r, g_.info.rank, S, n, call.esize,
                                               static_cast<uint8_t*>(r.out));
      if (sc.in) call.in_off = size_t(static_cast<const uint8_t*>(sc.in) - call.in.data());
      size_t sb = 0, se = sc.total;
      if (sc.want.size() == size_t(g_.info.size) + 1 && std::is_sorted(sc.want.begin(), sc.want.end()))
        sc.wanted(g_.info.rank, &sb, &se);
      sb = std::min(sb, sc.total);
      se = std::min(std::max(se, sb), sc.total);
      // The stripe's input and output lie within the caller's buffers.
      check(call.in_off + (sc.in_end - sc.in_begin) * call.esize <= call.in.size());
      if (sc.out && se > sb && !call.own_out.empty())
        check(static_cast<uint8_t*>(sc.out) >= call.own_out.data() &&
              static_cast<uint8_t*>(sc.out) + (se - sb) * call.esize <=
                  call.own_out.data() + call.own_out.size());
      const Status st = sc.total == 0 ? Status(Code::kInvalidArgument, "empty")
                                      : g_.prepareRouted(sc);
      if (!st.ok()) return false;
      check(g_.want_begin == sb && g_.want_end == se);
      call.out = static_cast<uint8_t*>(sc.out);
      call.staged = g_.out != g_.recv;
    }
    if (kind & 128) {  // partial input: the caller's first elements only
      call.input_ready = s_.u8() % (call.total + 1);
      g_.setInputReady(stripeInputReady(call.input_ready, call.r));
    } else {
      call.input_ready = call.total;
    }
    call.expect.assign((g_.want_end - g_.want_begin) * call.esize, 0);
    call.delivered.assign(g_.want_end - g_.want_begin, 0);
    return true;
  }

  // Striped (kind & 64): this member's call is stripe k of K (1..4; the
  // script's weights or equal) of the vector; the K ranges must tile it.
  // An empty stripe is skipped as StripedGroup skips it (a decline here).
  bool cut(Call& call, uint8_t kind) {
    if (!(kind & 64)) {
      call.r = {0, call.total};
      call.ranges = {call.r};
      return true;
    }
    const uint8_t b = s_.u8();
    call.stripes = 1 + b % 4;
    call.k = (b >> 2) % call.stripes;
    std::vector<uint32_t> weights;
    if (b & 0x40)
      for (size_t i = 0; i < call.stripes; ++i) weights.push_back((b & 0x80) ? s_.u8() : 1 + s_.u8() % 8);
    size_t next = 0;
    for (size_t i = 0; i < call.stripes; ++i) {
      const StripeRange r = weights.empty() ? stripeOf(call.total, i, call.stripes)
                                            : stripeOf(call.total, i, weights);
      check(r.begin == next && r.begin + r.count <= call.total);
      // Weighted: within one element of total · w_i / sum (floor cuts).
      uint64_t sum = 0;
      for (uint32_t w : weights) sum += w;
      if (stripesWeighted(weights)) {
        const uint64_t want = uint64_t(call.total) * weights[i], got = uint64_t(r.count) * sum;
        check(got + sum > want && want + sum > got);
      }
      next = r.begin + r.count;
      call.ranges.push_back(r);
    }
    check(next == call.total);
    call.r = call.ranges[call.k];
    if (getenv("FUZZ_CLIENT_TRACE"))
      fprintf(stderr, "fuzz_client: stripe %zu of %zu%s: [%zu, %zu) of %zu\n", call.k,
              call.stripes, weights.empty() ? "" : " (weighted)", call.r.begin,
              call.r.begin + call.r.count, call.total);
    return call.r.count > 0 || (call.total == 0);
  }

  // Sends what the window admits (a send completes at once here), never a
  // chunk whose input is not ready.
  void pump(const Call& call) {
    size_t slot = 0;
    while (g_.windowAdmits(&slot)) {
      check(slot < g_.info.window);
      ++g_.next_send;
    }
    // The stripe's part of the caller's ready elements, by hand.
    const size_t ready = call.input_ready <= call.r.begin
                             ? 0
                             : std::min(call.input_ready - call.r.begin, call.r.count);
    check(g_.next_send <= g_.n_chunks &&
          (ready >= call.r.count || g_.next_send * g_.chunk_elems <= ready));
  }

  // Partial results: never fewer than before, only received chunks, and
  // (an allreduce written straight to the caller) already final there; at
  // the stripe's place in the whole vector.
  void checkResultsReady(Call& call) {
    const size_t ready = g_.resultsReady();
    check(ready >= call.results_ready && ready <= g_.count);
    call.results_ready = ready;
    if (call.staged) return check(ready == 0);
    for (size_t c = 0; c * g_.chunk_elems < ready; ++c) check(g_.received[c] == 1);
    if (!call.routed && ready > 0) {
      check(std::memcmp(call.out, call.expect.data(), ready * call.esize) == 0);
      check(std::all_of(call.delivered.begin(), call.delivered.begin() + ready,
                        [](uint8_t d) { return d == 1; }));
    }
    std::vector<uint8_t> running(call.stripes, 0), done(call.stripes, 0);
    for (size_t i = 0; i < call.k; ++i) running[i] = done[i] = 1;  // earlier stripes finished
    running[call.k] = 1;
    const size_t whole = stripedResultsReady(call.total, call.ranges, running, done,
                                             [&](size_t i) { return i == call.k ? ready : 0; });
    check(whole == call.r.begin + ready);
    if (getenv("FUZZ_CLIENT_TRACE") && ready > 0)
      fprintf(stderr, "fuzz_client: results ready: %zu of the stripe's %zu (%zu of %zu)\n", ready,
              g_.count, whole, call.total);
  }

  void call() {
    const GroupCore before = g_;
    Call call;
    if (!start(call)) {
      check(!g_.active && !g_.dead && g_.next_chunk == before.next_chunk);
      check(g_.counters.failures == before.counters.failures);
      return;
    }
    check(g_.active && g_.n_chunks > 0);
    Status outcome = Status(Code::kTimeout, "fuzz script ended");
    for (;;) {
      pump(call);
      checkResultsReady(call);
      if (c_.failed) {
        outcome = c_.failure;
        break;
      }
      if (g_.dead) {
        outcome = g_.failure;
        break;
      }
      if (g_.n_received == g_.n_chunks) {
        outcome = Status::Ok();
        break;
      }
      if (g_.refused) {
        outcome = busyStatus();
        break;
      }
      if (s_.empty()) break;
      const uint8_t e = s_.u8() % 16;
      if (e == 15) break;  // the caller's deadline
      if (e == 13) {
        feedWaiting(call);
        continue;
      }
      if (e == 14 && call.input_ready < call.total) {  // more of the input is ready
        call.input_ready = std::min<size_t>(call.total, call.input_ready + 1 + s_.u8() % 32);
        g_.setInputReady(stripeInputReady(call.input_ready, call.r));
        continue;
      }
      feed(e == 0 ? raw() : e <= 10 ? result(call) : e <= 12 ? refusal() : ack(e), &call);
    }
    const size_t received = g_.n_received;
    const Status ended = g_.endCall(outcome, c_.counters);
    // Whatever the outcome, the caller's output outside this stripe's part
    // is untouched (the other stripes' agents write it).
    if (!call.own_out.empty() && call.out) {
      const size_t lo = size_t(call.out - call.own_out.data());
      const size_t hi = lo + (g_.want_end - g_.want_begin) * call.esize;
      check(lo <= hi && hi <= call.own_out.size());
      check(std::all_of(call.own_out.begin(), call.own_out.begin() + lo, [](uint8_t b) { return b == 0xee; }));
      check(std::all_of(call.own_out.begin() + hi, call.own_out.end(), [](uint8_t b) { return b == 0xee; }));
    }
    if (getenv("FUZZ_CLIENT_TRACE"))  // how each call ended (checking seeds)
      fprintf(stderr, "fuzz_client: call of %zu chunks, %zu received: %s\n", g_.n_chunks,
              received, ended.toString().c_str());
    check(!g_.active);
    check(g_.next_chunk == before.next_chunk + g_.n_chunks);
    if (outcome.ok()) {
      check(ended.ok() && !g_.dead && received == g_.n_chunks);
      check(std::all_of(g_.received.begin(), g_.received.end(), [](uint8_t r) { return r == 1; }));
      check(std::all_of(call.delivered.begin(), call.delivered.end(),
                        [](uint8_t d) { return d == 1; }));
      if (!call.expect.empty()) check(std::memcmp(call.out, call.expect.data(), call.expect.size()) == 0);
      // The input is untouched but where the output is it (in place: the
      // stripe's part; a routed output over the input: the wanted range).
      const size_t out_bytes = (g_.want_end - g_.want_begin) * call.esize;
      const size_t skip_lo = call.staged ? size_t(call.out - call.in.data()) : call.in.size();
      const size_t skip_hi = call.staged ? skip_lo + out_bytes : call.in.size();
      check(std::equal(call.in.begin(), call.in.begin() + skip_lo, call.in_copy.begin()));
      check(std::equal(call.in.begin() + skip_hi, call.in.end(), call.in_copy.begin() + skip_hi));
      ++ok_;
      return;
    }
    // Failed or refused: the input is intact (staged output included).
    check(call.in == call.in_copy);
    check(!ended.ok() && !ended.message().empty());
    if (outcome.code() == Code::kBusy) {
      check(ended.code() == Code::kBusy && !g_.dead);
      ++busy_;
    } else {
      check(g_.dead && !g_.failure.ok() && !g_.failure.message().empty());
      ++failed_;
    }
  }

  void checkCounters() {
    check(g_.counters.chunks_received == accepted_ && c_.counters.chunks_received == accepted_);
    check(g_.counters.allreduces == ok_ && g_.counters.busy == busy_ &&
          g_.counters.failures == failed_);
    check(g_.counters.keepalives == c_.counters.keepalives);
  }

  Script& s_;
  ClientCore c_;
  GroupCore g_;
  uint64_t accepted_ = 0, ok_ = 0, busy_ = 0, failed_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  Script s(data, size);
  Harness(s).run();
  return 0;
}
