// switchagg-bench command line: one typed table of options (name, value
// placeholder, default, help) from which parsing and --help both come.
#pragma once

#include <cstddef>
#include <string>

#include "bench_coll.h"
#include "switchagg/common/dtype.h"
#include "switchagg/common/status.h"

namespace switchagg::bench {

struct BenchOptions {
  size_t min_bytes = 8;
  size_t max_bytes = size_t(64) << 20;
  int iters = 200;          // iterations at sizes <= kFullItersBytes
  int min_iters = 5;        // floor for large sizes
  int warmup = 20;
  int min_warmup = 1;       // floor for large sizes (e.g. to let online tuning settle)
  int settle = 0;           // at most this many more untimed calls while tuning measures
  Dtype dtype = Dtype::kFloat32;
  Op op = Op::kSum;
  Coll coll = Coll::kAllreduce;
  bool check = false;       // validate every iteration against a reference
  std::string label;        // names this run's path in CSV/JSON/plots
  std::string csv_path;     // "" none, "-" stdout
  std::string json_path;    // "" none, "-" stdout
  bool measure_gamma = false;  // time the local reduction kernel, print gamma_ns
  bool thread_multiple = false;  // MPI_Init_thread(MPI_THREAD_MULTIPLE)
  bool help = false;
};

// Sizes above this run proportionally fewer iterations (but >= min_iters).
constexpr size_t kFullItersBytes = 64 * 1024;

// Parses argv; errors name the option and the value.
Result<BenchOptions> parseBenchOptions(int argc, char** argv);
std::string benchUsage();

// Iterations and warm-up calls for one message size.
int itersFor(const BenchOptions& o, size_t bytes);
int warmupFor(const BenchOptions& o, size_t bytes);

// Whether `op` is defined by MPI for `dtype` and the bench can check it.
bool benchSupports(Dtype dtype, Op op);

}  // namespace switchagg::bench
