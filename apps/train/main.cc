// switchagg-train: a data-parallel training proxy. Every rank holds the same
// MLP, trains on its own shard of a deterministic synthetic data set, and
// averages gradients with MPI_Allreduce each step, bucketed as frameworks do
// (PyTorch DDP-style: tensors grouped from the last layer backwards into
// buckets of at most --bucket-bytes). Prints per-step compute vs allreduce
// time, the loss curve and "final loss: <value>"; --check verifies that the
// loss fell and that all ranks hold bitwise-identical weights. --mode fsdp
// shards the weights instead (sharded.h): MPI_Allgather of parameters before
// each forward pass, MPI_Reduce_scatter_block of gradients after it, the
// traffic pattern of FSDP / ZeRO-3, with the same arithmetic (and so the same
// losses) as the allreduce mode.
#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "component_query.h"
#include "model.h"
#include "sharded.h"
#include "train_options.h"

namespace {

using switchagg::train::Mlp;
using switchagg::train::Tensor;
using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct Bucket {
  std::vector<int> tensors;  // indices into Mlp::tensors()
  std::vector<float> buffer;
  std::string path;          // which allreduce path served it last
};

std::vector<Bucket> makeBuckets(const std::vector<Tensor>& tensors, size_t cap_bytes) {
  std::vector<Bucket> buckets;
  size_t bytes = 0;
  for (int i = static_cast<int>(tensors.size()) - 1; i >= 0; --i) {
    const size_t tb = tensors[i].grad.size() * sizeof(float);
    if (buckets.empty() || (bytes + tb > cap_bytes && bytes > 0)) {
      buckets.emplace_back();
      bytes = 0;
    }
    buckets.back().tensors.push_back(i);
    bytes += tb;
  }
  for (auto& b : buckets) {
    size_t n = 0;
    for (int t : b.tensors) n += tensors[t].grad.size();
    b.buffer.resize(n);
  }
  return buckets;
}

// Sum gradients over ranks and divide by the world size, bucket by bucket.
void averageGradients(Mlp& model, std::vector<Bucket>& buckets, int world,
                      const switchagg::bench::ComponentQuery& query) {
  auto& tensors = model.tensors();
  const float scale = 1.f / static_cast<float>(world);
  for (auto& b : buckets) {
    size_t off = 0;
    for (int t : b.tensors) {
      std::memcpy(&b.buffer[off], tensors[t].grad.data(), tensors[t].grad.size() * sizeof(float));
      off += tensors[t].grad.size();
    }
    MPI_Allreduce(MPI_IN_PLACE, b.buffer.data(), static_cast<int>(b.buffer.size()), MPI_FLOAT,
                  MPI_SUM, MPI_COMM_WORLD);
    b.path = query.lastAlgorithm(MPI_COMM_WORLD);
    off = 0;
    for (int t : b.tensors) {
      for (float& g : tensors[t].grad) g = b.buffer[off++] * scale;
    }
  }
}

bool weightsIdentical(const Mlp& model, int rank, int world) {
  uint64_t mine = model.weightHash();
  std::vector<uint64_t> all(rank == 0 ? world : 0);
  // Gather, not allreduce: the check must not depend on the code under test.
  MPI_Gather(&mine, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  int same = 1;
  if (rank == 0)
    for (uint64_t h : all) same &= (h == all[0]);
  MPI_Bcast(&same, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return same != 0;
}

// OpenMP threads per rank: OMP_NUM_THREADS when set, else this node's
// cores shared among its ranks. OpenMP's default (every core for every
// rank) oversubscribes a node with several ranks, and spinning threads then
// fight the other ranks for the cores (12x slower at 2 ranks on 2 cores).
int threadsPerRank() {
  if (const char* env = std::getenv("OMP_NUM_THREADS"); env && *env) return omp_get_max_threads();
  MPI_Comm node;
  int local = 1;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &local);
  MPI_Comm_free(&node);
  const int threads = std::max(1, omp_get_num_procs() / std::max(1, local));
  omp_set_num_threads(threads);
  return threads;
}

}  // namespace

int main(int argc, char** argv) {
  // OpenMP threads compute; only the main thread calls MPI.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);

  switchagg::train::TrainOptions opt;
  std::string error;
  if (!switchagg::train::parseTrainOptions(argc, argv, &opt, &error)) {
    if (rank == 0) std::fprintf(stderr, "switchagg-train: %s\n", error.c_str());
    MPI_Finalize();
    return error.empty() ? 0 : 2;
  }

  const int threads = threadsPerRank();
  Mlp model(opt.shape, opt.seed);
  switchagg::train::SyntheticData data(opt.shape.inputs, opt.shape.classes, opt.seed);
  std::vector<Bucket> buckets = makeBuckets(model.tensors(), opt.bucket_bytes);
  switchagg::bench::ComponentQuery query;
  std::unique_ptr<switchagg::train::ShardedParams> sharded;
  if (opt.fsdp) {
    std::vector<std::vector<int>> groups;
    for (const auto& b : buckets) groups.push_back(b.tensors);
    sharded = std::make_unique<switchagg::train::ShardedParams>(model, groups, rank, world);
  }

  if (rank == 0) {
    std::printf("switchagg-train: %d ranks, %zu parameters (%.1f KiB of float32 gradients) in %zu "
                "buckets, batch %d/rank, %d steps, %d OpenMP thread(s) per rank\n",
                world, model.parameterCount(), model.parameterCount() * 4 / 1024.0, buckets.size(),
                opt.batch, opt.steps, threads);
    if (sharded)
      std::printf("mode fsdp: %zu parameters per rank's shard; %s\n", sharded->shardFloats(),
                  opt.overlap ? "overlapped: MPI_Iallgather prefetched a step ahead, "
                                "MPI_Ireduce_scatter_block per bucket during the backward pass"
                              : "allgather before forward, reduce-scatter after backward");
  }

  std::vector<float> x;
  std::vector<int> labels;
  std::vector<double> losses;
  double compute_ms_total = 0, allreduce_ms_total = 0, gather_ms_total = 0;
  FILE* loss_file = (rank == 0 && !opt.loss_file.empty()) ? std::fopen(opt.loss_file.c_str(), "w") : nullptr;
  if (loss_file) std::fprintf(loss_file, "step,loss\n");

  // --overlap: nonblocking collectives posted and awaited per layer.
  switchagg::train::LayerHooks hooks;
  if (sharded && opt.overlap) {
    hooks.before_forward = [&](int layer) { sharded->waitGatheredLayer(layer); };
    hooks.after_backward = [&](int layer) { sharded->postReadyGradients(layer, MPI_COMM_WORLD); };
    sharded->startGather(MPI_COMM_WORLD);
  }
  double step_ms_total = 0;

  // The step's global loss for reporting: a tiny allreduce of its own, not
  // timed (taken after the step's time in both modes).
  auto recordLoss = [&](int step, float local_loss) {
    double loss = local_loss;
    MPI_Allreduce(MPI_IN_PLACE, &loss, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    loss /= world;
    losses.push_back(loss);
    if (loss_file) std::fprintf(loss_file, "%d,%.9g\n", step, loss);
    return loss;
  };

  for (int step = 0; step < opt.steps; ++step) {
    const auto t_step = Clock::now();
    double gather_ms = 0;
    if (sharded && opt.overlap) {
      // Everything in one timed span: the waits are inside the compute.
      data.batch(rank, step, opt.batch, &x, &labels);
      const double waited_before = sharded->waitedMs();
      const float local_loss = model.forwardBackward(x, labels, opt.batch, &hooks);
      sharded->finishStep(MPI_COMM_WORLD, opt.learning_rate);
      const double step_ms = msSince(t_step);
      const double waited = sharded->waitedMs() - waited_before;
      const double loss = recordLoss(step, local_loss);
      step_ms_total += step_ms;
      compute_ms_total += step_ms - waited;
      allreduce_ms_total += waited;
      if (rank == 0 && (step % opt.print_every == 0 || step + 1 == opt.steps))
        std::printf("step %4d  loss %.6f  step %7.2f ms  of which waiting for collectives %7.2f ms\n",
                    step, loss, step_ms, waited);
      continue;
    }
    if (sharded) {
      auto tg = Clock::now();
      sharded->gather(MPI_COMM_WORLD);
      gather_ms = msSince(tg);
    }
    auto t0 = Clock::now();
    data.batch(rank, step, opt.batch, &x, &labels);
    float local_loss = model.forwardBackward(x, labels, opt.batch);
    const double compute_ms = msSince(t0);

    auto t1 = Clock::now();
    if (sharded) {
      sharded->reduceScatterStep(MPI_COMM_WORLD, opt.learning_rate);
    } else {
      averageGradients(model, buckets, world, query);
      model.sgdStep(opt.learning_rate);
    }
    const double allreduce_ms = msSince(t1);
    step_ms_total += msSince(t_step);

    const double loss = recordLoss(step, local_loss);
    compute_ms_total += compute_ms;
    allreduce_ms_total += allreduce_ms;
    gather_ms_total += gather_ms;
    if (rank == 0 && (step % opt.print_every == 0 || step + 1 == opt.steps)) {
      if (sharded)
        std::printf("step %4d  loss %.6f  compute %7.2f ms  reduce-scatter %7.2f ms  allgather "
                    "%7.2f ms\n",
                    step, loss, compute_ms, allreduce_ms, gather_ms);
      else
        std::printf("step %4d  loss %.6f  compute %7.2f ms  allreduce %7.2f ms\n", step, loss,
                    compute_ms, allreduce_ms);
    }
  }
  if (loss_file) std::fclose(loss_file);
  // The last step updated only the shards: gather the final weights (with
  // --overlap, the prefetch the last step posted).
  if (sharded && opt.overlap)
    sharded->waitAllGathered();
  else if (sharded)
    sharded->gather(MPI_COMM_WORLD);

  int rc = 0;
  if (rank == 0) {
    if (sharded && opt.overlap)
      std::printf("time per step: %.2f ms, compute %.2f ms, waiting for collectives %.2f ms "
                  "(mean over %d steps, rank 0; overlapped)\n",
                  step_ms_total / opt.steps, compute_ms_total / opt.steps,
                  allreduce_ms_total / opt.steps, opt.steps);
    else if (sharded)
      std::printf("time per step: %.2f ms, compute %.2f ms, reduce-scatter %.2f ms, allgather "
                  "%.2f ms (mean over %d steps, rank 0)\n",
                  step_ms_total / opt.steps, compute_ms_total / opt.steps,
                  allreduce_ms_total / opt.steps, gather_ms_total / opt.steps, opt.steps);
    else
      std::printf("time per step: compute %.2f ms, allreduce %.2f ms (mean over %d steps, rank 0)\n",
                  compute_ms_total / opt.steps, allreduce_ms_total / opt.steps, opt.steps);
    for (size_t i = 0; !sharded && i < buckets.size(); ++i) {
      std::printf("bucket %zu: %zu floats (%.1f KiB) via %s\n", i, buckets[i].buffer.size(),
                  buckets[i].buffer.size() * 4 / 1024.0, buckets[i].path.c_str());
    }
    std::printf("final loss: %.6f\n", losses.back());
  }
  if (opt.check) {
    const bool same = weightsIdentical(model, rank, world);
    if (rank == 0) {
      const int k = std::min<int>(3, static_cast<int>(losses.size()));
      double first = 0, last = 0;
      for (int i = 0; i < k; ++i) first += losses[i], last += losses[losses.size() - 1 - i];
      const bool fell = last < 0.8 * first;
      std::printf("check: loss fell %s (%.4f -> %.4f), weights identical on all ranks: %s\n",
                  fell ? "yes" : "NO", first / k, last / k, same ? "yes" : "NO");
      rc = (fell && same) ? 0 : 1;
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return rc;
}
