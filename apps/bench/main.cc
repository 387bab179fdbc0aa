// switchagg-bench: OSU-style MPI_Allreduce benchmark with validation; --coll
// times the other collectives the component serves (bench_coll.h).
// Plain MPI; the bench's own bookkeeping (statistics, check verdicts) uses
// MPI_Gather/MPI_Bcast so that it never measures or trusts the allreduce
// under test with itself.
#include <mpi.h>
#if defined(OPEN_MPI) && defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI 5's MPIX_C_FLOAT16 (the shortfloat extension)
#endif
#endif

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "bench_coll.h"
#include "bench_data.h"
#include "bench_options.h"
#include "bench_report.h"
#include "component_query.h"
#include "gamma.h"

namespace switchagg::bench {
namespace {

MPI_Datatype mpiType(Dtype d) {
  switch (d) {
    case Dtype::kInt8: return MPI_INT8_T;
    case Dtype::kUint8: return MPI_UINT8_T;
    case Dtype::kInt16: return MPI_INT16_T;
    case Dtype::kUint16: return MPI_UINT16_T;
    case Dtype::kInt32: return MPI_INT32_T;
    case Dtype::kUint32: return MPI_UINT32_T;
    case Dtype::kInt64: return MPI_INT64_T;
    case Dtype::kUint64: return MPI_UINT64_T;
    case Dtype::kFloat64: return MPI_DOUBLE;
    // 16-bit floats: MPI_DATATYPE_NULL where this MPI does not define them.
#ifdef MPIX_C_FLOAT16
    case Dtype::kFloat16: return MPIX_C_FLOAT16;
#else
    case Dtype::kFloat16: return MPI_DATATYPE_NULL;
#endif
#ifdef MPIX_BFLOAT16
    case Dtype::kBfloat16: return MPIX_BFLOAT16;
#else
    case Dtype::kBfloat16: return MPI_DATATYPE_NULL;
#endif
    default: return MPI_FLOAT;
  }
}

MPI_Op mpiOp(Op o) {
  switch (o) {
    case Op::kProd: return MPI_PROD;
    case Op::kMin: return MPI_MIN;
    case Op::kMax: return MPI_MAX;
    case Op::kLand: return MPI_LAND;
    case Op::kLor: return MPI_LOR;
    case Op::kLxor: return MPI_LXOR;
    case Op::kBand: return MPI_BAND;
    case Op::kBor: return MPI_BOR;
    case Op::kBxor: return MPI_BXOR;
    default: return MPI_SUM;
  }
}

struct Buffers {
  std::unique_ptr<char[]> send, recv, expected;
};

class Bench {
 public:
  Bench(const BenchOptions& o, int rank, int nranks) : o_(o), rank_(rank), nranks_(nranks) {
    const size_t cap = o.max_bytes + dtypeSize(o.dtype);
    buf_.send.reset(new char[cap]);
    buf_.recv.reset(new char[cap]);
    if (o.check) buf_.expected.reset(new char[cap]);
  }
  // Runs one size on every rank; rank 0 gets the combined row.
  SizeResult runSize(size_t count);

 private:
  std::vector<double> timedLoop(size_t count, int iters, bool* ok);
  void settle(Coll warm, size_t count, size_t bytes);
  bool checkResult(size_t count);
  CollBuffers buffers();
  const BenchOptions& o_;
  int rank_, nranks_;
  Buffers buf_;
  ComponentQuery query_;
};

bool Bench::checkResult(size_t count) {
  size_t offset = 0, elements = 0;
  collResultRange(o_.coll, count, rank_, nranks_, &offset, &elements);
  if (elements == 0) return true;
  // MPI_Bcast delivers into its one buffer.
  const char* got = o_.coll == Coll::kBcast ? buf_.send.get() : buf_.recv.get();
  const char* want = buf_.expected.get() + offset * dtypeSize(o_.dtype);
  const long bad = firstMismatch(got, want, elements, o_.dtype);
  if (bad < 0) return true;
  fprintf(stderr, "switchagg-bench: rank %d: %s of %zu bytes: element %ld is %s, expected %s\n",
          rank_, collMpiName(o_.coll), count * dtypeSize(o_.dtype), bad,
          elementText(got, size_t(bad), o_.dtype).c_str(),
          elementText(want, size_t(bad), o_.dtype).c_str());
  return false;
}

CollBuffers Bench::buffers() {
  return {buf_.send.get(), buf_.recv.get(), buf_.expected.get()};
}

// Seconds of each call on this rank. Calls run back to back (as in OSU);
// with --check every call gets a poisoned receive buffer and is validated
// outside the timed region, then the ranks line up again.
std::vector<double> Bench::timedLoop(size_t count, int iters, bool* ok) {
  const MPI_Datatype type = mpiType(o_.dtype);
  const MPI_Op op = mpiOp(o_.op);
  std::vector<double> samples(static_cast<size_t>(iters));
  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < iters; ++i) {
    if (o_.check) {
      poison(buf_.recv.get(), count * dtypeSize(o_.dtype));
      if (o_.coll == Coll::kBcast && rank_ != 0) poison(buf_.send.get(), count * dtypeSize(o_.dtype));
      MPI_Barrier(MPI_COMM_WORLD);
    }
    const double t0 = MPI_Wtime();
    collCall(o_.coll, buffers(), count, type, op, nranks_);
    samples[size_t(i)] = MPI_Wtime() - t0;
    if (o_.check && *ok && !checkResult(count)) *ok = false;  // report the first bad call only
  }
  return samples;
}

// --settle: untimed calls while online tuning still measures this size. The
// tuner's counters are alike on every rank (its decisions are agreed), so
// every rank leaves the loop at the same call.
void Bench::settle(Coll warm, size_t count, size_t bytes) {
  const char* kExplore = "tune:explore_calls";
  int64_t before = query_.counter(MPI_COMM_WORLD, kExplore);
  if (o_.settle == 0 || before < 0) return;
  for (int i = 0; i < o_.settle; ++i) {
    collCall(warm, buffers(), count, mpiType(o_.dtype), mpiOp(o_.op), nranks_);
    const int64_t after = query_.counter(MPI_COMM_WORLD, kExplore);
    if (after == before) return;  // that call ran a settled choice
    before = after;
  }
  if (rank_ == 0)
    fprintf(stderr, "switchagg-bench: %zu bytes: online tuning still measuring after %d calls "
                    "past the warm-up (--settle)\n", bytes, o_.settle);
}

// {mean, median} in microseconds.
std::pair<double, double> meanAndMedianUs(std::vector<double> s) {
  double sum = 0;
  for (double v : s) sum += v;
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  const double median = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  return {sum / double(n) * 1e6, median * 1e6};
}

SizeResult Bench::runSize(size_t count) {
  const size_t bytes = count * dtypeSize(o_.dtype);
  collFill(o_.coll, buffers(), count, o_.dtype, o_.op, rank_, nranks_);
  // iallreduce warms up with blocking calls (bench_coll.h).
  const Coll warm = o_.coll == Coll::kIallreduce ? Coll::kAllreduce : o_.coll;
  for (int i = 0; i < warmupFor(o_, bytes); ++i)
    collCall(warm, buffers(), count, mpiType(o_.dtype), mpiOp(o_.op), nranks_);
  settle(warm, count, bytes);
  SizeResult r;
  r.bytes = bytes;
  r.count = count;
  r.iters = itersFor(o_, bytes);
  bool ok = true;
  // The other collectives: the component counts "<coll>:switch" per call
  // the switch served (docs/offload.md).
  const std::string switched = std::string(collName(o_.coll)) + ":switch";
  const int64_t switched_before = query_.counter(MPI_COMM_WORLD, switched.c_str());
  const int64_t sent_before = query_.bytesSent(MPI_COMM_WORLD);
  const int64_t explored_before = query_.counter(MPI_COMM_WORLD, "tune:explore_calls");
  const std::pair<double, double> mine = meanAndMedianUs(timedLoop(count, r.iters, &ok));
  const int64_t explored = query_.counter(MPI_COMM_WORLD, "tune:explore_calls") - explored_before;
  if (o_.settle > 0 && explored_before >= 0 && explored > 0 && rank_ == 0)
    fprintf(stderr,
            "switchagg-bench: %zu bytes: %lld of the %d timed calls measured a candidate "
            "(online tuning not settled)\n",
            bytes, static_cast<long long>(explored), r.iters);
  const int64_t sent_after = query_.bytesSent(MPI_COMM_WORLD);
  const double my_sent = sent_before < 0 ? -1.0 : double(sent_after - sent_before) / r.iters;
  std::vector<double> sent(static_cast<size_t>(nranks_));
  MPI_Gather(&my_sent, 1, MPI_DOUBLE, sent.data(), 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  // The component names the path of allreduces; of the others it says
  // whether the switch served every timed call of this size (else the
  // previous module or a local copy did, at least for some). A barrier's
  // count also has --check's barriers between the calls: at least iters.
  if (o_.coll == Coll::kAllreduce) {
    r.algorithm = query_.lastAlgorithm(MPI_COMM_WORLD);
  } else {
    const int64_t after = query_.counter(MPI_COMM_WORLD, switched.c_str());
    r.algorithm = !query_.loaded() || switched_before < 0 ? "n/a"
                  : after - switched_before >= r.iters ? "switch"
                  : after > switched_before            ? "switch-partly"
                                                       : "previous";
  }
  std::vector<double> all(static_cast<size_t>(nranks_)), medians(all.size());
  MPI_Gather(&mine.first, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Gather(&mine.second, 1, MPI_DOUBLE, medians.data(), 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  int my_ok = ok ? 1 : 0;
  std::vector<int> oks(static_cast<size_t>(nranks_));
  MPI_Gather(&my_ok, 1, MPI_INT, oks.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank_ == 0) {
    r.min_us = *std::min_element(all.begin(), all.end());
    r.max_us = *std::max_element(all.begin(), all.end());
    double sum = 0;
    for (double t : all) sum += t;
    r.avg_us = sum / nranks_;
    double median_sum = 0;
    for (double t : medians) median_sum += t;
    r.p50_us = median_sum / nranks_;
    double sent_sum = 0;
    for (double s : sent) sent_sum += s;
    r.bytes_sent = sent[0] < 0 ? -1.0 : sent_sum / nranks_;
    fillBandwidth(&r, busFactor(o_.coll, nranks_));
    const bool all_ok = std::all_of(oks.begin(), oks.end(), [](int v) { return v == 1; });
    r.check = !o_.check ? "-" : all_ok ? "ok" : "FAILED";
  }
  return r;
}

// Writes rows as they come (CSV, table) and JSON at the end; rank 0 only.
class Output {
 public:
  Output(const BenchOptions& o, RunInfo run) : o_(o), run_(std::move(run)) {
    table_ = o.csv_path != "-" && o.json_path != "-";
    if (!o.csv_path.empty()) csv_ = o.csv_path == "-" ? stdout : fopen(o.csv_path.c_str(), "w");
    if (!o.csv_path.empty() && csv_ == nullptr) {
      fprintf(stderr, "switchagg-bench: cannot write %s\n", o.csv_path.c_str());
    }
    if (csv_ != nullptr) fputs(csvHeader().c_str(), csv_);
    if (table_) printTableHeader(stdout, run_);
  }
  ~Output() {
    if (!o_.json_path.empty()) {
      FILE* f = o_.json_path == "-" ? stdout : fopen(o_.json_path.c_str(), "w");
      if (f != nullptr) {
        fputs(toJson(run_, rows_).c_str(), f);
        if (f != stdout) fclose(f);
      }
    }
    if (csv_ != nullptr && csv_ != stdout) fclose(csv_);
  }
  bool ok() const { return o_.csv_path.empty() || csv_ != nullptr; }
  void add(const SizeResult& r) {
    rows_.push_back(r);
    if (table_) printTableRow(stdout, r);
    if (csv_ != nullptr) {
      fputs(csvRow(run_, r).c_str(), csv_);
      fflush(csv_);
    }
  }

 private:
  const BenchOptions& o_;
  RunInfo run_;
  bool table_ = true;
  FILE* csv_ = nullptr;
  std::vector<SizeResult> rows_;
};

int runBench(const BenchOptions& o, int rank, int nranks) {
  RunInfo run{o.label, nranks, dtypeName(o.dtype), opName(o.op), o.check, collMpiName(o.coll)};
  std::unique_ptr<Output> out;
  int output_ok = 1;
  if (rank == 0) {
    out.reset(new Output(o, run));
    output_ok = out->ok() ? 1 : 0;
  }
  MPI_Bcast(&output_ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!output_ok) return 2;
  Bench bench(o, rank, nranks);
  const size_t width = dtypeSize(o.dtype);
  bool failed = false;
  size_t last_count = SIZE_MAX;
  for (size_t bytes = std::max(o.min_bytes, width); bytes <= o.max_bytes; bytes *= 2) {
    // Block collectives need a whole block per rank; barrier has one row.
    const size_t count = collCount(o.coll, bytes / width, nranks);
    if ((count == 0 && o.coll != Coll::kBarrier) || count == last_count) continue;
    last_count = count;
    const SizeResult r = bench.runSize(count);
    if (rank == 0) {
      out->add(r);
      failed = failed || r.check == "FAILED";
    }
  }
  int fail_flag = failed ? 1 : 0;
  MPI_Bcast(&fail_flag, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (fail_flag && rank == 0) fprintf(stderr, "switchagg-bench: validation FAILED\n");
  return fail_flag ? 1 : 0;
}

}  // namespace
}  // namespace switchagg::bench

int main(int argc, char** argv) {
  using namespace switchagg::bench;
  // The thread level is chosen before MPI exists; options are parsed after.
  bool multiple = false;
  for (int i = 1; i < argc; ++i) multiple = multiple || std::strcmp(argv[i], "--thread-multiple") == 0;
  int provided = 0;
  MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  switchagg::Result<BenchOptions> opts = parseBenchOptions(argc, argv);
  int rc = 0;
  if (!opts.ok()) {
    if (rank == 0) fprintf(stderr, "switchagg-bench: %s\n", opts.status().message().c_str());
    rc = 2;
  } else if (opts->help) {
    if (rank == 0) fputs(benchUsage().c_str(), stdout);
  } else if (isHalfFloat(opts->dtype) && !opts->measure_gamma &&
             (mpiType(opts->dtype) == MPI_DATATYPE_NULL || nranks > maxRanksFor(opts->dtype))) {
    if (rank == 0)
      fprintf(stderr, "switchagg-bench: --dtype %s: %s\n", dtypeName(opts->dtype),
              mpiType(opts->dtype) == MPI_DATATYPE_NULL
                  ? (opts->dtype == switchagg::Dtype::kFloat16 ? "this MPI defines no MPIX_C_FLOAT16"
                                                    : "this MPI defines no MPIX_BFLOAT16")
                  : "more ranks than its checked sums stay exact for");
    rc = 2;
  } else if (opts->measure_gamma) {
    if (rank == 0) {
      printf("gamma_ns=%.4f  # %s %s, %zu bytes, reduction kernel on one core\n",
             measureGammaNs(opts->dtype, opts->op, opts->max_bytes), dtypeName(opts->dtype),
             opName(opts->op), opts->max_bytes);
    }
  } else {
    rc = runBench(*opts, rank, nranks);
  }
  MPI_Finalize();
  return rc;
}
