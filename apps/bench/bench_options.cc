#include "bench_options.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "switchagg/common/config.h"

namespace switchagg::bench {
namespace {

using Setter = std::function<Status(BenchOptions*, const std::string&)>;

struct OptionSpec {
  const char* name;
  const char* value;  // placeholder in --help; nullptr for flags
  const char* help;
  Setter set;
};

Status ok() { return Status::Ok(); }

template <typename T>
Status assign(Result<T> r, T* out) {
  if (!r.ok()) return r.status();
  *out = *r;
  return ok();
}

Status setSize(const char* key, const std::string& v, size_t* out) {
  Result<uint64_t> r = parseSize(key, v);
  if (!r.ok()) return r.status();
  if (*r == 0) return Status(Code::kInvalidArgument, std::string(key) + ": must be > 0");
  *out = size_t(*r);
  return ok();
}

Status setCount(const char* key, const std::string& v, int lo, int* out) {
  Result<int64_t> r = parseInt(key, v, lo, 100000000);
  if (!r.ok()) return r.status();
  *out = int(*r);
  return ok();
}

const std::vector<OptionSpec>& optionTable() {
  static const std::vector<OptionSpec> kTable = {
      {"--min", "SIZE", "smallest message (default 8)",
       [](BenchOptions* o, const std::string& v) { return setSize("--min", v, &o->min_bytes); }},
      {"--max", "SIZE", "largest message, powers of two from --min (default 64M)",
       [](BenchOptions* o, const std::string& v) { return setSize("--max", v, &o->max_bytes); }},
      {"--iters", "N", "timed iterations per size up to 64K; fewer above (default 200)",
       [](BenchOptions* o, const std::string& v) { return setCount("--iters", v, 1, &o->iters); }},
      {"--min-iters", "N", "fewest timed iterations at large sizes (default 5)",
       [](BenchOptions* o, const std::string& v) {
         return setCount("--min-iters", v, 1, &o->min_iters);
       }},
      {"--warmup", "N", "untimed calls before each size, scaled like --iters (default 20)",
       [](BenchOptions* o, const std::string& v) { return setCount("--warmup", v, 0, &o->warmup); }},
      {"--min-warmup", "N",
       "fewest untimed calls at large sizes, at most --warmup (default 1; --warmup 30 "
       "--min-warmup 30 lets online tuning settle)",
       [](BenchOptions* o, const std::string& v) {
         return setCount("--min-warmup", v, 1, &o->min_warmup);
       }},
      {"--settle", "N",
       "after the warm-up, up to N more untimed calls while online tuning still measures "
       "the size (the component's tune:explore_calls grows); a size still measuring then "
       "is reported on stderr (default 0)",
       [](BenchOptions* o, const std::string& v) { return setCount("--settle", v, 0, &o->settle); }},
      {"--dtype", "T",
       "int8..uint64, float32, float64, float16, bfloat16 (default float32; the 16-bit "
       "floats where the MPI defines MPIX_C_FLOAT16 / MPIX_BFLOAT16, op sum/min/max)",
       [](BenchOptions* o, const std::string& v) {
         if (parseDtype(v.c_str(), &o->dtype) && !isPairType(o->dtype)) return ok();
         return Status(Code::kInvalidArgument, "--dtype: unknown or unsupported '" + v + "'");
       }},
      {"--op", "OP", "sum prod min max land lor lxor band bor bxor (default sum)",
       [](BenchOptions* o, const std::string& v) {
         if (parseOp(v.c_str(), &o->op)) return ok();
         return Status(Code::kInvalidArgument, "--op: unknown '" + v + "'");
       }},
      {"--coll", "NAME",
       "allreduce (default), reduce_scatter_block, allgather, reduce, bcast, barrier or "
       "iallreduce (MPI_Iallreduce + MPI_Wait, warmed up with blocking calls); SIZE is the "
       "whole vector (each rank's block is SIZE/p for the block collectives)",
       [](BenchOptions* o, const std::string& v) {
         if (parseColl(v, &o->coll)) return ok();
         return Status(Code::kInvalidArgument,
                       "--coll: unknown '" + v +
                           "' (allreduce, reduce_scatter_block, allgather, reduce, bcast, barrier, iallreduce)");
       }},
      {"--check", nullptr, "validate every result against an independent reference; exit 1 on mismatch",
       [](BenchOptions* o, const std::string&) { o->check = true; return ok(); }},
      {"--thread-multiple", nullptr,
       "initialise MPI at MPI_THREAD_MULTIPLE (as mpi4py does); one thread still calls",
       [](BenchOptions* o, const std::string&) { o->thread_multiple = true; return ok(); }},
      {"--label", "NAME", "name of this run's path in CSV/JSON rows and plots",
       [](BenchOptions* o, const std::string& v) { o->label = v; return ok(); }},
      {"--csv", "FILE", "write CSV rows to FILE ('-' = stdout instead of the table)",
       [](BenchOptions* o, const std::string& v) { o->csv_path = v; return ok(); }},
      {"--json", "FILE", "write JSON to FILE ('-' = stdout instead of the table)",
       [](BenchOptions* o, const std::string& v) { o->json_path = v; return ok(); }},
      {"--measure-gamma", nullptr,
       "time the reduction kernel for --dtype/--op on --max bytes (no communication) and print "
       "the cost model's gamma_ns",
       [](BenchOptions* o, const std::string&) { o->measure_gamma = true; return ok(); }},
      {"--help", nullptr, "this text",
       [](BenchOptions* o, const std::string&) { o->help = true; return ok(); }},
  };
  return kTable;
}

}  // namespace

Result<BenchOptions> parseBenchOptions(int argc, char** argv) {
  BenchOptions o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    const size_t eq = arg.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = arg.substr(eq + 1);
      arg.resize(eq);
    }
    const auto& table = optionTable();
    auto spec = std::find_if(table.begin(), table.end(),
                             [&](const OptionSpec& s) { return arg == s.name; });
    if (spec == table.end()) {
      return Status(Code::kInvalidArgument, "unknown option '" + arg + "' (see --help)");
    }
    if (spec->value != nullptr && !inline_value) {
      if (i + 1 >= argc) return Status(Code::kInvalidArgument, arg + ": needs a value");
      value = argv[++i];
    }
    SWITCHAGG_RETURN_IF_ERROR(spec->set(&o, value));
  }
  if (o.min_bytes > o.max_bytes) {
    return Status(Code::kInvalidArgument, "--min is larger than --max");
  }
  if (!benchSupports(o.dtype, o.op)) {
    return Status(Code::kInvalidArgument, std::string("--op ") + opName(o.op) +
                                              " is not defined for --dtype " + dtypeName(o.dtype));
  }
  return o;
}

std::string benchUsage() {
  std::string text =
      "usage: mpirun -np N switchagg-bench [options]\n"
      "OSU-style MPI_Allreduce (or --coll) latency/bandwidth sweep over powers of two.\n"
      "Latency is averaged per rank; avg/min/max are across ranks. busbw = bytes/time * 2(p-1)/p.\n"
      "The algorithm column is what the switchagg component ran (n/a if it is not loaded).\n\n";
  for (const OptionSpec& s : optionTable()) {
    std::string lhs = std::string("  ") + s.name + (s.value ? std::string(" ") + s.value : "");
    lhs.resize(std::max<size_t>(lhs.size() + 1, 18), ' ');
    text += lhs + s.help + "\n";
  }
  return text;
}

int itersFor(const BenchOptions& o, size_t bytes) {
  if (bytes <= kFullItersBytes) return o.iters;
  const double scaled = double(o.iters) * double(kFullItersBytes) / double(bytes);
  return std::max(std::min(o.min_iters, o.iters), int(scaled));
}

int warmupFor(const BenchOptions& o, size_t bytes) {
  if (bytes <= kFullItersBytes || o.warmup == 0) return o.warmup;
  const double scaled = double(o.warmup) * double(kFullItersBytes) / double(bytes);
  return std::max(std::min(o.min_warmup, o.warmup), int(scaled));
}

bool benchSupports(Dtype dtype, Op op) {
  // 16-bit floats: SUM, MIN, MAX (what switchagg serves); whether the MPI
  // has the type is checked at run time (main.cc, mpiType).
  if (isPairType(dtype) || dtype == Dtype::kBool) return false;
  if (isHalfFloat(dtype)) return op == Op::kSum || op == Op::kMin || op == Op::kMax;
  switch (op) {
    case Op::kSum: case Op::kProd: case Op::kMin: case Op::kMax: return true;
    case Op::kLand: case Op::kLor: case Op::kLxor:
    case Op::kBand: case Op::kBor: case Op::kBxor: return !isFloating(dtype);
    default: return false;  // MINLOC/MAXLOC need pair types
  }
}

}  // namespace switchagg::bench
