// engine_bench: the agent's aggregation engine alone, in one process, no
// network. Member threads encode their CONTRIB headers with the real wire
// codec (wire::encode) into rings; one data-plane thread takes them in
// rank order, hands each with its body to the engine (onMessage), reduces
// what is ready and completes the result sends at once. Measured on the
// data-plane thread's CPU clock (the machine is shared: wall time would
// count other processes), side by side with this machine's `a += b` loop
// over the same bytes (the bound: folding member j into the running result
// is one such pass).
//
//   engine_bench --mode rate --members M --bytes B --seconds S [--delivery D]
//       [--window W] (slots of the group, default 4) [--order inorder|reverse]
//     input GB/s of the data-plane thread; D = inplace (the body is read
//     where the member wrote it: what an RDMA placement into the slot leaves
//     the CPU), eager (the transport first copies it into a heap buffer it
//     allocates, as UCX's eager reassembly does), placed (the engine says
//     where, the transport copies it there once: UCX over TCP receiving
//     into the slot; only in builds with SWITCHAGG_BENCH_PLACED)
//   engine_bench --mode bound --members M --bytes B --seconds S
//     `a += b` over M inputs of B bytes into one result, input GB/s: with
//     common's reduceInto (the kernels the engine runs: this CPU's widest
//     vectors) and as a plain loop at -O3
//   engine_bench --mode turnaround --members M [--bytes 8] [--chunks N]
//     CPU microseconds per contribution (onMessage) and per result
//     (reduceReady, its M sends, their completions), 8-byte chunks
//
// Output: one `key=value` line per run (benchmarks/engine_bench.sh).
#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "aggregation_engine.h"
#include "reduce_pool.h"
#include "switchagg/agent/wire.h"
#include "switchagg/common/reduce.h"

using namespace switchagg;
using namespace switchagg::agent;

namespace {

double cpuNow() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// Results "sent": completed right after the pass (as a progress round does).
// Each result's first element is checked: the sum of every member's.
struct Output : EngineOutput {
  std::vector<std::pair<uint64_t, uint32_t>> done;
  uint64_t results = 0, controls = 0, wrong = 0;
  float want = 0;
  void sendControl(PeerId, wire::Frame) override { ++controls; }
  void sendResult(PeerId, const uint8_t*, size_t, const void* payload, size_t bytes,
                  std::shared_ptr<SlotBuffers>, uint64_t serial, uint32_t slot) override {
    ++results;
    float first = 0;
    if (bytes >= sizeof first) std::memcpy(&first, payload, sizeof first);
    if (first != want) ++wrong;
    done.emplace_back(serial, slot);
  }
};

// This machine's `a += b` over the same bytes: the fold's bound (one pass
// reading an input and the running result, writing the result). Input GB/s.
// plain: a loop at -O3 (the compiler's vectors); else common's reduceInto,
// the widest vectors this CPU has (what the engine's kernels run).
double addBound(uint32_t members, size_t bytes, double seconds, bool plain) {
  const size_t n = bytes / 4;
  std::vector<std::vector<float>> in(members, std::vector<float>(n, 1.0f));
  std::vector<float> acc(n, 0.0f);
  uint64_t passes = 0;
  const double t0 = cpuNow();
  double now = t0;
  while (now - t0 < seconds) {
    for (uint32_t r = 0; r < members; ++r) {
      if (plain) {
        float* a = acc.data();
        const float* x = in[r].data();
        for (size_t i = 0; i < n; ++i) a[i] += x[i];
      } else {
        (void)reduceInto(Dtype::kFloat32, Op::kSum, acc.data(), in[r].data(), n);
      }
    }
    passes += members;
    now = cpuNow();
  }
  if (acc[n / 2] < 0) std::printf("impossible\n");  // keeps the loop
  return double(passes) * double(bytes) / (now - t0) / 1e9;
}

// One member thread's headers for its members, chunk after chunk: a ring of
// encoded frames it keeps ahead of the data-plane thread.
struct Ring {
  static constexpr size_t kSize = 256;
  wire::Frame frames[kSize];
  std::atomic<uint64_t> head{0}, tail{0};  // written by producer / consumer
};

struct Bench {
  uint32_t members = 2, window = 4;
  size_t bytes = 262144;
  uint64_t chunks = 0;
  std::string delivery = "inplace";
  wire::Token token{};
  std::vector<std::vector<float>> data;  // each member's chunk
  std::vector<std::unique_ptr<Ring>> rings;  // one per member
  std::atomic<bool> stop{false};

  wire::Message contrib(uint32_t rank, uint64_t chunk) const {
    wire::Message m;
    m.type = wire::MsgType::kContrib;
    m.token = token;
    m.group_id = 1;
    m.rank = rank;
    m.chunk = chunk;
    m.slot = uint32_t(chunk % window);
    m.dtype = Dtype::kFloat32;
    m.op = Op::kSum;
    m.count = uint32_t(bytes / 4);
    m.call_elems = uint64_t(m.count) * (1ull << 40);  // one endless call
    return m;
  }

  // Member thread t encodes the headers of members t, t + T, ...
  void produce(uint32_t t, uint32_t threads) {
    std::vector<uint64_t> next(members, 0);
    while (!stop.load(std::memory_order_relaxed)) {
      bool idle = true;
      for (uint32_t r = t; r < members; r += threads) {
        Ring& ring = *rings[r];
        const uint64_t h = ring.head.load(std::memory_order_relaxed);
        if (h - ring.tail.load(std::memory_order_acquire) >= Ring::kSize) continue;
        ring.frames[h % Ring::kSize] = wire::encode(contrib(r, next[r]++));
        ring.head.store(h + 1, std::memory_order_release);
        idle = false;
      }
      if (idle) std::this_thread::yield();
    }
  }
};

int run(int argc, char** argv) {
  Bench b;
  std::string mode = "rate";
  double seconds = 2;
  uint64_t turnaround_chunks = 2000;
  bool reverse = false;  // members arrive in reverse rank order: all but one wait
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--mode") mode = v;
    else if (k == "--members") b.members = uint32_t(std::stoul(v));
    else if (k == "--bytes") b.bytes = std::stoul(v);
    else if (k == "--seconds") seconds = std::stod(v);
    else if (k == "--delivery") b.delivery = v;
    else if (k == "--chunks") turnaround_chunks = std::stoull(v);
    else if (k == "--window") b.window = uint32_t(std::stoul(v));
    else if (k == "--order") reverse = v == "reverse";
    else {
      std::fprintf(stderr, "engine_bench: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (b.bytes % 4 != 0 || b.bytes == 0 || b.members == 0 || b.members > wire::kMaxGroupSize ||
      b.window == 0 || b.window > 64) {
    std::fprintf(stderr,
                 "engine_bench: --bytes must be a positive multiple of 4, --members 1..%u, "
                 "--window 1..64\n",
                 unsigned(wire::kMaxGroupSize));
    return 2;
  }
#ifndef SWITCHAGG_BENCH_PLACED
  if (b.delivery == "placed") {
    std::fprintf(stderr, "engine_bench: this engine has no placement (--delivery placed)\n");
    return 2;
  }
#endif
  if (b.delivery != "inplace" && b.delivery != "eager" && b.delivery != "placed") {
    std::fprintf(stderr, "engine_bench: --delivery must be inplace, eager or placed\n");
    return 2;
  }
  if (mode == "bound") {
    const double kernel = addBound(b.members, b.bytes, seconds, false);
    const double plain = addBound(b.members, b.bytes, seconds, true);
    std::printf("mode=bound members=%u bytes=%zu input_GBps=%.3f plain_GBps=%.3f\n", b.members,
                b.bytes, kernel, plain);
    return 0;
  }
  b.token[0] = 7;
  Output out;
  out.want = float(b.members) * float(b.members + 1) / 2;
  ReducePool pool(1);
  EngineConfig c;
  c.slot_bytes = std::max<size_t>(b.bytes, SlotPool::kMinSlotBytes);
  c.memory_bytes = size_t(b.window) * (b.members + 1) * c.slot_bytes + (1u << 20);
  LeaseLookup lookup = [&](const LeaseToken&) -> std::optional<LeaseInfo> {
    return LeaseInfo{"bench", b.window};
  };
  AggregationEngine engine(c, lookup, out, pool);
  for (uint32_t r = 0; r < b.members; ++r) {  // JOIN, as the members do
    wire::Message j;
    j.type = wire::MsgType::kJoin;
    j.token = b.token;
    j.group_id = 1;
    j.rank = r;
    j.size = b.members;
    j.window = b.window;
    const wire::Frame f = wire::encode(j);
    engine.onMessage(1 + r, f.header.data(), f.header_bytes, nullptr, 0, 0);
  }
  if (engine.liveGroups() != 1 || out.controls < b.members) {
    std::fprintf(stderr, "engine_bench: the group did not form\n");
    return 1;
  }
  b.data.resize(b.members);
  for (uint32_t r = 0; r < b.members; ++r) b.data[r].assign(b.bytes / 4, float(r + 1));
  for (uint32_t r = 0; r < b.members; ++r) b.rings.push_back(std::make_unique<Ring>());
  const uint32_t producers = std::min<uint32_t>(b.members, 2);
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < producers; ++t) threads.emplace_back([&b, t, producers] {
    b.produce(t, producers);
  });
  std::vector<uint8_t> heap;  // eager: the transport's reassembly buffer
  uint64_t chunk = 0, in_bytes = 0;
  double contrib_s = 0, result_s = 0;
  auto oneChunk = [&](bool split) {
    const double t0 = split ? cpuNow() : 0;
    for (uint32_t k = 0; k < b.members; ++k) {
      const uint32_t r = reverse ? b.members - 1 - k : k;
      Ring& ring = *b.rings[r];
      while (ring.head.load(std::memory_order_acquire) == ring.tail.load(std::memory_order_relaxed))
        std::this_thread::yield();
      const uint64_t tl = ring.tail.load(std::memory_order_relaxed);
      const wire::Frame& f = ring.frames[tl % Ring::kSize];
      const void* body = b.data[r].data();
      [[maybe_unused]] uint64_t placed = 0;
      if (b.delivery == "eager") {
        std::unique_ptr<uint8_t[]> copy(new uint8_t[b.bytes]);  // UCX allocates per message
        std::memcpy(copy.get(), body, b.bytes);
        engine.onMessage(1 + r, f.header.data(), f.header_bytes, copy.get(), b.bytes, 0);
      } else {
#ifdef SWITCHAGG_BENCH_PLACED
        if (b.delivery == "placed") {
          const auto at = engine.placeContrib(1 + r, f.header.data(), f.header_bytes, b.bytes);
          if (at.data) {
            std::memcpy(at.data, body, b.bytes);
            body = at.data;
            placed = at.cookie;
          } else {  // not placeable (a call's first chunk): the transport's buffer
            heap.assign(static_cast<const uint8_t*>(body),
                        static_cast<const uint8_t*>(body) + b.bytes);
            body = heap.data();
          }
        }
#endif
#ifdef SWITCHAGG_BENCH_PLACED
        engine.onMessage(1 + r, f.header.data(), f.header_bytes, body, b.bytes, 0, placed);
#else
        engine.onMessage(1 + r, f.header.data(), f.header_bytes, body, b.bytes, 0);
#endif
      }
      ring.tail.store(tl + 1, std::memory_order_release);
    }
    const double t1 = split ? cpuNow() : 0;
    engine.reduceReady();
    for (auto& [serial, slot] : out.done) engine.sendDone(serial, slot);
    out.done.clear();
    if (split) {
      contrib_s += t1 - t0;
      result_s += cpuNow() - t1;
    }
    in_bytes += uint64_t(b.bytes) * b.members;
    ++chunk;
  };
  for (int w = 0; w < 8; ++w) oneChunk(false);  // warm: buffers allocated, pages touched
  const uint64_t results0 = out.results;
  in_bytes = 0;
  chunk = 0;
  int rc = 0;
  if (mode == "rate") {
    const double t0 = cpuNow();
    double now = t0;
    while (now - t0 < seconds) {
      for (int k = 0; k < 8; ++k) oneChunk(false);
      now = cpuNow();
    }
    const double gbs = double(in_bytes) / (now - t0) / 1e9;
    std::printf("mode=rate delivery=%s order=%s members=%u bytes=%zu chunks=%llu cpu_s=%.3f "
                "input_GBps=%.3f\n",
                b.delivery.c_str(), reverse ? "reverse" : "inorder", b.members, b.bytes, static_cast<unsigned long long>(chunk),
                now - t0, gbs);
  } else if (mode == "turnaround") {
    for (uint64_t k = 0; k < turnaround_chunks; ++k) oneChunk(true);
    std::printf("mode=turnaround members=%u bytes=%zu chunks=%llu us_per_contribution=%.4f "
                "us_per_result=%.3f us_per_chunk=%.3f\n",
                b.members, b.bytes, static_cast<unsigned long long>(chunk),
                1e6 * contrib_s / double(chunk * b.members), 1e6 * result_s / double(chunk),
                1e6 * (contrib_s + result_s) / double(chunk));
  } else {
    std::fprintf(stderr, "engine_bench: --mode must be rate or turnaround\n");
    rc = 2;
  }
  b.stop = true;
  for (auto& t : threads) t.join();
  if (out.wrong) {
    std::fprintf(stderr, "engine_bench: %llu results were not the members' sum\n",
                 static_cast<unsigned long long>(out.wrong));
    return 1;
  }
  if (rc == 0 && out.results - results0 != chunk * b.members) {
    std::fprintf(stderr, "engine_bench: %llu results for %llu chunks of %u members\n",
                 static_cast<unsigned long long>(out.results - results0),
                 static_cast<unsigned long long>(chunk), b.members);
    return 1;
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) { return run(argc, argv); }
