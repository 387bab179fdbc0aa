#pragma once

#include <cstdint>
#include <string>

#include "model.h"

namespace switchagg::train {

struct TrainOptions {
  ModelShape shape;
  int steps = 40;
  int batch = 32;
  float learning_rate = 0.1f;
  uint64_t seed = 42;
  size_t bucket_bytes = 512 * 1024;
  int print_every = 5;
  bool check = false;
  std::string loss_file;  // CSV step,loss (rank 0)
  // allreduce: every rank holds all weights, gradients averaged with
  // MPI_Allreduce (DDP). fsdp: weights sharded, MPI_Allgather before the
  // forward pass and MPI_Reduce_scatter_block after the backward pass.
  bool fsdp = false;
  // fsdp only: the same collectives nonblocking and overlapped with the
  // compute, as FSDP runs them: each layer's forward waits only for its own
  // bucket's MPI_Iallgather (posted at the end of the step before: a
  // prefetch), and a bucket's MPI_Ireduce_scatter_block is posted as soon as
  // the backward pass has finished its gradients, while the layers below
  // are still computed.
  bool overlap = false;
};

// Parses argv; false with `error` set on bad input, false with an empty
// `error` after --help (usage printed).
bool parseTrainOptions(int argc, char** argv, TrainOptions* out, std::string* error);

}  // namespace switchagg::train
