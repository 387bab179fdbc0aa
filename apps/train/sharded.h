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

 private:
  struct Bucket {
    std::vector<int> tensors;
    size_t floats = 0;         // real parameters
    size_t shard = 0;          // per rank, ceil(floats / world)
    std::vector<float> mine;   // this rank's shard of the values
    std::vector<float> full;   // world * shard: packed grads / gathered values
    std::vector<float> summed; // this rank's shard of the summed gradients
  };
  void pack(const Bucket& b, bool grads, std::vector<float>* out) const;
  void unpackValues(const Bucket& b);

  Mlp& model_;
  int rank_, world_;
  std::vector<Bucket> buckets_;
};

}  // namespace switchagg::train
