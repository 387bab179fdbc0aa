// agent_kernel_bench: the agent's reduction kernels alone, side by side with
// memcpy and a plain `a[i] += b[i]` loop at -O3 (the memory-bound limit), on
// one core, per dtype, in cache (256 KiB) and out of cache (32 MiB); plus the
// agent's slot reduction (4 contributions, rank order) on 1 and 2 threads.
// Rate = bytes of *input* reduced (or copied) per second.
//
// The slot* cases are the agent's real one: 256 KiB (its default slot size),
// buffers either separately allocated or laid out by SlotBuffers exactly as
// the engine uses them; the slot reduction on the agent's ReducePool and, if
// built with OpenMP, on `omp parallel for` (benchmarks/kernel_slot_bench.sh).
// benchmarks/agent_bench.sh runs it and writes benchmarks/results/agent.md.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "reduce_pool.h"
#include "slot_pool.h"
#include "switchagg/common/reduce.h"

using switchagg::Dtype;
using switchagg::Op;

namespace {

template <typename T>
struct Buffers {
  explicit Buffers(size_t bytes) : a(bytes / sizeof(T), T(1)), b(bytes / sizeof(T), T(2)) {}
  std::vector<T> a, b;
};

template <typename T>
constexpr Dtype dtypeOf() {
  if constexpr (std::is_same_v<T, int32_t>) return Dtype::kInt32;
  if constexpr (std::is_same_v<T, int64_t>) return Dtype::kInt64;
  if constexpr (std::is_same_v<T, float>) return Dtype::kFloat32;
  return Dtype::kFloat64;
}

// The agent's kernel for `op` over the buffers (kernelSum / kernelMax: the
// names the reports look up).
template <typename T, Op op>
void kernel(benchmark::State& st) {
  Buffers<T> buf(static_cast<size_t>(st.range(0)));
  for (auto _ : st) {
    (void)switchagg::reduceInto(dtypeOf<T>(), op, buf.a.data(), buf.b.data(), buf.a.size());
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * st.range(0));
}

template <typename T>
void kernelSum(benchmark::State& st) {
  kernel<T, Op::kSum>(st);
}

template <typename T>
void kernelMax(benchmark::State& st) {
  kernel<T, Op::kMax>(st);
}

// The reference: what -O3 makes of the simplest loop. Function aligned to a
// cache line so that loop (one vector per ~27-byte iteration) sits inside one
// 64-byte line wherever the linker puts it; straddling a line boundary costs
// it 20-30% in cache (see common/src/reduce.cc).
template <typename T>
__attribute__((noinline, aligned(64))) void plainAdd(T* __restrict a, const T* __restrict b, size_t n) {
  for (size_t i = 0; i < n; ++i) a[i] += b[i];
}

template <typename T>
void plainLoop(benchmark::State& st) {
  Buffers<T> buf(static_cast<size_t>(st.range(0)));
  for (auto _ : st) {
    plainAdd(buf.a.data(), buf.b.data(), buf.a.size());
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * st.range(0));
}

void memcpyBench(benchmark::State& st) {
  Buffers<uint8_t> buf(static_cast<size_t>(st.range(0)));
  for (auto _ : st) {
    std::memcpy(buf.a.data(), buf.b.data(), buf.a.size());
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * st.range(0));
}

#if defined(__x86_64__)
// Why a one-vector loop's speed depends on where it lands: the same loop as
// plainAdd<double> at -O3 (load, load, add, store, add, cmp, jb: 27 bytes),
// written out so its place is fixed: starting `kSkip` bytes into a 64-byte
// line (0: inside the line, 48: straddling into the next).
template <int kSkip>
__attribute__((noinline)) void placedAdd(double* a, const double* b, size_t n) {
  size_t i = 0;
  const size_t end = n * sizeof(double) & ~size_t{15};
  if (end == 0) return;
  asm volatile(
      "jmp 2f\n"
      ".p2align 6\n"
      ".skip %c[skip], 0x90\n"
      "2:\n"
      "movupd (%[a],%[i]), %%xmm0\n"
      "movupd (%[b],%[i]), %%xmm1\n"
      "addpd %%xmm1, %%xmm0\n"
      "movups %%xmm0, (%[a],%[i])\n"
      "add $16, %[i]\n"
      "cmp %[end], %[i]\n"
      "jb 2b\n"
      : [i] "+r"(i)
      : [a] "r"(a), [b] "r"(b), [end] "r"(end), [skip] "i"(kSkip)
      : "xmm0", "xmm1", "memory", "cc");
}

template <int kSkip>
void placedLoop(benchmark::State& st) {
  Buffers<double> buf(static_cast<size_t>(st.range(0)));
  for (auto _ : st) {
    placedAdd<kSkip>(buf.a.data(), buf.b.data(), buf.a.size());
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * st.range(0));
}
#endif

// The agent's buffers: one SlotBuffers of `members` contributions + the
// result, slot_bytes apart in one allocation, as the engine lays them out.
struct AgentSlot {
  AgentSlot(uint32_t members, size_t bytes)
      : buf(switchagg::agent::SlotBuffers::allocate(1, members, bytes)), members(members) {
    if (!buf) throw std::bad_alloc();
    for (uint32_t r = 0; r <= members; ++r) std::memset(buf->contribution(0, r), 0, bytes);
  }
  std::shared_ptr<switchagg::agent::SlotBuffers> buf;
  uint32_t members;
};

// One pair of buffers at the slot size: range(1) = 0 separately allocated
// (std::vector), 1 the agent's (result and contribution 0 of a 1-member slot).
template <typename T>
struct SlotPair {
  SlotPair(size_t bytes, int64_t layout) : n(bytes / sizeof(T)) {
    if (layout == 0) {
      sep = std::make_unique<Buffers<T>>(bytes);
      inout = sep->a.data();
      in = sep->b.data();
    } else {
      agent = std::make_unique<AgentSlot>(1, bytes);
      inout = reinterpret_cast<T*>(agent->buf->result(0));
      in = reinterpret_cast<T*>(agent->buf->contribution(0, 0));
      std::fill(inout, inout + n, T(1));
      std::fill(in, in + n, T(2));
    }
  }
  size_t n;
  std::unique_ptr<Buffers<T>> sep;
  std::unique_ptr<AgentSlot> agent;
  T* inout = nullptr;
  T* in = nullptr;
};

template <typename T>
void slotKernel(benchmark::State& st) {
  SlotPair<T> p(static_cast<size_t>(st.range(0)), st.range(1));
  for (auto _ : st) {
    (void)switchagg::reduceInto(dtypeOf<T>(), Op::kSum, p.inout, p.in, p.n);
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * st.range(0));
}

template <typename T>
void slotPlain(benchmark::State& st) {
  SlotPair<T> p(static_cast<size_t>(st.range(0)), st.range(1));
  for (auto _ : st) {
    plainAdd(p.inout, p.in, p.n);
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * st.range(0));
}

// One agent slot: result = c0 + c1 + c2 + c3 (float32) in rank order, the
// way the engine's reducePiece does it: 64 KiB pieces, 16 KiB blocks within a
// piece, each block in one reduceMany pass over the members (`fused`), or as
// the engine did before the fused kernel, reduce3 of c0 and c1 then
// reduceInto of c2, c3.
constexpr size_t kPieceElems = (64 << 10) / sizeof(float);
constexpr size_t kBlockElems = (16 << 10) / sizeof(float);

void reduceSlotPiece(const AgentSlot& s, size_t piece, size_t n, bool fused) {
  const auto& b = *s.buf;
  float* out = reinterpret_cast<float*>(b.result(0));
  auto in = [&](uint32_t r) { return reinterpret_cast<const float*>(b.contribution(0, r)); };
  std::vector<const void*> ins(s.members);
  const size_t end = std::min(n, (piece + 1) * kPieceElems);
  for (size_t at = piece * kPieceElems; at < end; at += kBlockElems) {
    const size_t len = std::min(kBlockElems, end - at);
    if (fused) {
      for (uint32_t r = 0; r < s.members; ++r) ins[r] = in(r) + at;
      (void)switchagg::reduceMany(Dtype::kFloat32, Op::kSum, out + at, ins.data(), ins.size(), len);
      continue;
    }
    (void)switchagg::reduce3(Dtype::kFloat32, Op::kSum, out + at, in(0) + at, in(1) + at, len);
    for (uint32_t r = 2; r < s.members; ++r)
      (void)switchagg::reduceInto(Dtype::kFloat32, Op::kSum, out + at, in(r) + at, len);
  }
}

// Bytes = all four contributions; range(0) = slot bytes, range(1) = threads.
template <bool kFused>
void slotReduceOnPool(benchmark::State& st) {
  const size_t bytes = static_cast<size_t>(st.range(0)), n = bytes / sizeof(float);
  AgentSlot s(4, bytes);
  switchagg::agent::ReducePool pool(static_cast<int>(st.range(1)));
  const size_t pieces = (n + kPieceElems - 1) / kPieceElems;
  for (auto _ : st) {
    pool.run(pieces, [&](size_t p) { reduceSlotPiece(s, p, n, kFused); });
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * static_cast<int64_t>(4 * bytes));
}
// The engine's way (fused) keeps the name agent_bench.sh reports.
void slotReduce(benchmark::State& st) { slotReduceOnPool<true>(st); }
void slotReducePairwise(benchmark::State& st) { slotReduceOnPool<false>(st); }

#ifdef SWITCHAGG_BENCH_OPENMP
// The same pieces on OpenMP instead of the pool (one piece per task, as the
// pool hands them out). OMP_WAIT_POLICY decides whether its threads spin.
void slotReduceOmp(benchmark::State& st) {
  const size_t bytes = static_cast<size_t>(st.range(0)), n = bytes / sizeof(float);
  AgentSlot s(4, bytes);
  const int threads = static_cast<int>(st.range(1));
  const long pieces = static_cast<long>((n + kPieceElems - 1) / kPieceElems);
  for (auto _ : st) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (long p = 0; p < pieces; ++p) reduceSlotPiece(s, static_cast<size_t>(p), n, true);
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * static_cast<int64_t>(4 * bytes));
}

// `omp parallel for simd` over the slot's elements, all four members in one
// pass (((c0 + c1) + c2) + c3 per element: the same rank order, so the same
// bits). float32 SUM only: the engine would need one such loop per (dtype, op).
void slotReduceOmpSimd(benchmark::State& st) {
  const size_t bytes = static_cast<size_t>(st.range(0));
  const long n = static_cast<long>(bytes / sizeof(float));
  AgentSlot s(4, bytes);
  const auto& b = *s.buf;
  float* __restrict out = reinterpret_cast<float*>(b.result(0));
  const float* __restrict c0 = reinterpret_cast<const float*>(b.contribution(0, 0));
  const float* __restrict c1 = reinterpret_cast<const float*>(b.contribution(0, 1));
  const float* __restrict c2 = reinterpret_cast<const float*>(b.contribution(0, 2));
  const float* __restrict c3 = reinterpret_cast<const float*>(b.contribution(0, 3));
  const int threads = static_cast<int>(st.range(1));
  for (auto _ : st) {
#pragma omp parallel for simd schedule(static) num_threads(threads)
    for (long i = 0; i < n; ++i) out[i] = ((c0[i] + c1[i]) + c2[i]) + c3[i];
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * static_cast<int64_t>(4 * bytes));
}
#endif

constexpr int64_t kInCache = 256 << 10;
constexpr int64_t kOutOfCache = 32 << 20;

// 16-bit floats at the slot size: the agent's fold of k members' chunks
// (reduceMany, SUM of binary16: widened, summed, rounded once; at most 16
// inputs a call, as reduceHalfPiece batches them), 256 KiB of input per
// member, random values of mixed magnitude. halfBound is the same bytes
// touched by the simplest loop at -O3: k arrays of uint16 added as integers
// into a block on the stack, stored once - the bound for those bytes, what
// the kernel would reach if widening, adding and rounding were free.
// Rate = input bytes (k x 256 KiB) per second.
struct HalfInputs {
  explicit HalfInputs(size_t k) : in(k, std::vector<uint16_t>(kInCache / 2)), out(kInCache / 2) {
    uint32_t x = 46;
    for (auto& v : in)
      for (auto& e : v) {
        x = x * 1664525u + 1013904223u;
        // sign, exponent 5..24 of 31 (2^-10 .. 2^9), any fraction
        e = uint16_t((x >> 16 & 0x8000u) | ((5 + (x >> 8) % 20) << 10) | (x & 0x3FFu));
      }
    for (const auto& v : in) ptr.push_back(v.data());
  }
  std::vector<std::vector<uint16_t>> in;
  std::vector<uint16_t> out;
  std::vector<const void*> ptr;
};

void halfSum(benchmark::State& st) {
  HalfInputs h(static_cast<size_t>(st.range(0)));
  for (auto _ : st) {
    (void)switchagg::reduceMany(Dtype::kFloat16, Op::kSum, h.out.data(), h.ptr.data(),
                                h.ptr.size(), h.out.size());
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * st.range(0) * kInCache);
}

__attribute__((noinline)) void plainHalfBytes(uint16_t* __restrict out,
                                              const std::vector<const void*>& inputs, size_t n) {
  constexpr size_t kBlock = 512, kMaxIn = 16;
  const uint16_t* in[kMaxIn];
  const size_t k = std::min(kMaxIn, inputs.size());
  for (size_t r = 0; r < k; ++r) in[r] = static_cast<const uint16_t*>(inputs[r]);
  alignas(64) uint16_t acc[kBlock];
  for (size_t at = 0; at < n; at += kBlock) {
    const size_t m = std::min(kBlock, n - at);
    std::memcpy(acc, in[0] + at, m * sizeof(uint16_t));
    for (size_t r = 1; r < k; ++r) {
      const uint16_t* __restrict b = in[r] + at;
      for (size_t i = 0; i < m; ++i) acc[i] = uint16_t(acc[i] + b[i]);
    }
    std::memcpy(out + at, acc, m * sizeof(uint16_t));
  }
}

void halfBound(benchmark::State& st) {
  HalfInputs h(static_cast<size_t>(st.range(0)));
  for (auto _ : st) {
    plainHalfBytes(h.out.data(), h.ptr, h.out.size());
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * st.range(0) * kInCache);
}

// One slot in cache (the agent's default 256 KiB) and out of it (8 MiB), on
// 1 and 2 threads; wall-clock time.
void slotSizesAndThreads(benchmark::internal::Benchmark* b) {
  for (int64_t bytes : {kInCache, kOutOfCache / 4})
    for (int64_t threads : {1, 2}) b->Args({bytes, threads});
  b->UseRealTime();
}

}  // namespace

BENCHMARK(memcpyBench)->Arg(kInCache)->Arg(kOutOfCache);
BENCHMARK_TEMPLATE(kernelSum, int32_t)->Arg(kInCache)->Arg(kOutOfCache);
BENCHMARK_TEMPLATE(plainLoop, int32_t)->Arg(kInCache)->Arg(kOutOfCache);
BENCHMARK_TEMPLATE(kernelSum, int64_t)->Arg(kInCache)->Arg(kOutOfCache);
BENCHMARK_TEMPLATE(plainLoop, int64_t)->Arg(kInCache)->Arg(kOutOfCache);
BENCHMARK_TEMPLATE(kernelSum, float)->Arg(kInCache)->Arg(kOutOfCache);
BENCHMARK_TEMPLATE(plainLoop, float)->Arg(kInCache)->Arg(kOutOfCache);
BENCHMARK_TEMPLATE(kernelSum, double)->Arg(kInCache)->Arg(kOutOfCache);
BENCHMARK_TEMPLATE(plainLoop, double)->Arg(kInCache)->Arg(kOutOfCache);
BENCHMARK_TEMPLATE(kernelMax, float)->Arg(kInCache)->Arg(kOutOfCache);
BENCHMARK_TEMPLATE(kernelMax, int32_t)->Arg(kInCache)->Arg(kOutOfCache);
BENCHMARK_TEMPLATE(slotKernel, int32_t)->Args({kInCache, 0})->Args({kInCache, 1});
BENCHMARK_TEMPLATE(slotPlain, int32_t)->Args({kInCache, 0})->Args({kInCache, 1});
BENCHMARK_TEMPLATE(slotKernel, int64_t)->Args({kInCache, 0})->Args({kInCache, 1});
BENCHMARK_TEMPLATE(slotPlain, int64_t)->Args({kInCache, 0})->Args({kInCache, 1});
BENCHMARK_TEMPLATE(slotKernel, float)->Args({kInCache, 0})->Args({kInCache, 1});
BENCHMARK_TEMPLATE(slotPlain, float)->Args({kInCache, 0})->Args({kInCache, 1});
BENCHMARK_TEMPLATE(slotKernel, double)->Args({kInCache, 0})->Args({kInCache, 1});
BENCHMARK_TEMPLATE(slotPlain, double)->Args({kInCache, 0})->Args({kInCache, 1});
#if defined(__x86_64__)
BENCHMARK_TEMPLATE(placedLoop, 0)->Arg(kInCache);
BENCHMARK_TEMPLATE(placedLoop, 16)->Arg(kInCache);
BENCHMARK_TEMPLATE(placedLoop, 40)->Arg(kInCache);
BENCHMARK_TEMPLATE(placedLoop, 56)->Arg(kInCache);
#endif
BENCHMARK(halfSum)->Arg(2)->Arg(4)->Arg(16);
BENCHMARK(halfBound)->Arg(2)->Arg(4)->Arg(16);
BENCHMARK(slotReduce)->Apply(slotSizesAndThreads);
BENCHMARK(slotReducePairwise)->Apply(slotSizesAndThreads);
#ifdef SWITCHAGG_BENCH_OPENMP
BENCHMARK(slotReduceOmp)->Apply(slotSizesAndThreads);
BENCHMARK(slotReduceOmpSimd)->Apply(slotSizesAndThreads);
#endif

BENCHMARK_MAIN();
