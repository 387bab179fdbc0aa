// Sharded data parallelism (FSDP / ZeRO-3 style) for switchagg-train: every
// rank keeps only its 1/world shard of each bucket's parameters. Before the
// forward pass the shards are gathered (MPI_Allgather) into full tensors;
// after the backward pass the gradients are summed and scattered
// (MPI_Reduce_scatter_block), so each rank gets the summed gradient of just
// its shard and updates just that shard. The update is the same arithmetic
// as the allreduce mode (value -= lr * (sum * 1/world)), so with the same
// summation the two modes produce the same weights and losses.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

#include "model.h"

namespace switchagg::train {

class ShardedParams {
 public:
  // `buckets`: tensor indices of each bucket (the same grouping as the
  // allreduce mode). Takes this rank's shards from the model's current
  // (identical on every rank) weights.
  ShardedParams(Mlp& model, const std::vector<std::vector<int>>& buckets, int rank, int world);

  // Allgathers every bucket's shards into the model's full weights.
  void gather(MPI_Comm comm);
  // Reduce-scatters the model's gradients (sum), averages and applies SGD to
  // this rank's shards. The model's full weights are stale until gather().
  void reduceScatterStep(MPI_Comm comm, float learning_rate);

  size_t shardFloats() const;  // parameters this rank owns (padding included)

  // --overlap: the same collectives and arithmetic, nonblocking. Every rank
  // posts them in the same order (buckets in backward order), as MPI
  // requires of collectives on one communicator.
  // Posts every bucket's MPI_Iallgather (the first step's prefetch).
  void startGather(MPI_Comm comm);
  // Before layer `layer`'s forward pass: waits for the gathers of the
  // buckets holding its tensors and unpacks them into the model.
  void waitGatheredLayer(int layer);
  // After layer `layer`'s backward pass: posts MPI_Ireduce_scatter_block
  // for every bucket whose gradients are now all final (its lowest tensor
  // belongs to this layer), and tests the outstanding requests (progress).
  void postReadyGradients(int layer, MPI_Comm comm);
  // After the backward pass: bucket by bucket, waits for its reduce-scatter,
  // updates this rank's shard and posts the next step's MPI_Iallgather.
  void finishStep(MPI_Comm comm, float learning_rate);
  // Waits for every outstanding gather and unpacks it (the final weights).
  void waitAllGathered();
  double waitedMs() const { return waited_ms_; }  // time blocked in MPI_Wait, summed

 private:
  struct Bucket {
    std::vector<int> tensors;
    size_t floats = 0;         // real parameters
    size_t shard = 0;          // per rank, ceil(floats / world)
    std::vector<float> mine;   // this rank's shard of the values
    std::vector<float> full;   // world * shard: packed grads / gathered values
    std::vector<float> summed; // this rank's shard of the summed gradients
    int lowest_tensor = 0;     // the backward pass finishes it last
    MPI_Request gather = MPI_REQUEST_NULL, reduce = MPI_REQUEST_NULL;
  };
  void pack(const Bucket& b, bool grads, std::vector<float>* out) const;
  void unpackValues(const Bucket& b);
  void update(Bucket& b, float learning_rate);
  void postGather(Bucket& b, MPI_Comm comm);
  void wait(MPI_Request* r);
  double waited_ms_ = 0;

  Mlp& model_;
  int rank_, world_;
  std::vector<Bucket> buckets_;
};

}  // namespace switchagg::train
