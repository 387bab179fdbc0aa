// agent_kernel_bench: the agent's reduction kernels alone, side by side with
// memcpy and a plain `a[i] += b[i]` loop at -O3 (the memory-bound limit), on
// one core, per dtype, in cache (256 KiB) and out of cache (32 MiB); plus the
// agent's slot reduction (4 contributions, rank order) on 1 and 2 threads.
// Rate = bytes of *input* reduced (or copied) per second.
// benchmarks/agent_bench.sh runs it and writes benchmarks/results/agent.md.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "reduce_pool.h"
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

template <typename T>
void kernelSum(benchmark::State& st) {
  Buffers<T> buf(static_cast<size_t>(st.range(0)));
  for (auto _ : st) {
    (void)switchagg::reduceInto(dtypeOf<T>(), Op::kSum, buf.a.data(), buf.b.data(), buf.a.size());
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * st.range(0));
}

template <typename T>
void kernelMax(benchmark::State& st) {
  Buffers<T> buf(static_cast<size_t>(st.range(0)));
  for (auto _ : st) {
    (void)switchagg::reduceInto(dtypeOf<T>(), Op::kMax, buf.a.data(), buf.b.data(), buf.a.size());
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * st.range(0));
}

// The reference: what -O3 makes of the simplest loop.
template <typename T>
__attribute__((noinline)) void plainAdd(T* __restrict a, const T* __restrict b, size_t n) {
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

// One agent slot: result = c0 + c1 + c2 + c3 (float32), the way the engine
// does it (64 KiB pieces on the pool). Bytes = all four contributions.
void slotReduce(benchmark::State& st) {
  const size_t bytes = static_cast<size_t>(st.range(0));
  const size_t n = bytes / sizeof(float);
  std::vector<std::vector<float>> c(4, std::vector<float>(n, 1.5f));
  std::vector<float> out(n);
  switchagg::agent::ReducePool pool(static_cast<int>(st.range(1)));
  const size_t piece = 16384;
  const size_t pieces = (n + piece - 1) / piece;
  for (auto _ : st) {
    pool.run(pieces, [&](size_t p) {
      const size_t at = p * piece, len = std::min(piece, n - at);
      (void)switchagg::reduce3(Dtype::kFloat32, Op::kSum, out.data() + at, c[0].data() + at,
                               c[1].data() + at, len);
      for (int r = 2; r < 4; ++r)
        (void)switchagg::reduceInto(Dtype::kFloat32, Op::kSum, out.data() + at, c[r].data() + at,
                                    len);
    });
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * static_cast<int64_t>(4 * bytes));
}

constexpr int64_t kInCache = 256 << 10;
constexpr int64_t kOutOfCache = 32 << 20;

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
BENCHMARK(slotReduce)->Args({kOutOfCache / 4, 1})->Args({kOutOfCache / 4, 2})->UseRealTime();

BENCHMARK_MAIN();
