#include "sharded.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace switchagg::train {

ShardedParams::ShardedParams(Mlp& model, const std::vector<std::vector<int>>& buckets, int rank,
                             int world)
    : model_(model), rank_(rank), world_(world) {
  for (const auto& tensors : buckets) {
    Bucket b;
    b.tensors = tensors;
    for (int t : tensors) b.floats += model_.tensors()[t].value.size();
    b.shard = (b.floats + world_ - 1) / world_;
    b.full.assign(b.shard * world_, 0.f);
    b.summed.assign(b.shard, 0.f);
    pack(b, false, &b.full);
    b.mine.assign(b.full.begin() + b.shard * rank_, b.full.begin() + b.shard * (rank_ + 1));
    b.lowest_tensor = *std::min_element(tensors.begin(), tensors.end());
    buckets_.push_back(std::move(b));
  }
}

size_t ShardedParams::shardFloats() const {
  size_t n = 0;
  for (const auto& b : buckets_) n += b.shard;
  return n;
}

// Packs the bucket's tensors (values or grads) into `out`; the padding past
// the real parameters stays zero.
void ShardedParams::pack(const Bucket& b, bool grads, std::vector<float>* out) const {
  size_t off = 0;
  for (int t : b.tensors) {
    const auto& src = grads ? model_.tensors()[t].grad : model_.tensors()[t].value;
    std::memcpy(out->data() + off, src.data(), src.size() * sizeof(float));
    off += src.size();
  }
  std::fill(out->begin() + off, out->end(), 0.f);
}

void ShardedParams::unpackValues(const Bucket& b) {
  size_t off = 0;
  for (int t : b.tensors) {
    auto& dst = model_.tensors()[t].value;
    std::memcpy(dst.data(), b.full.data() + off, dst.size() * sizeof(float));
    off += dst.size();
  }
}

void ShardedParams::gather(MPI_Comm comm) {
  for (auto& b : buckets_) {
    MPI_Allgather(b.mine.data(), static_cast<int>(b.shard), MPI_FLOAT, b.full.data(),
                  static_cast<int>(b.shard), MPI_FLOAT, comm);
    unpackValues(b);
  }
}

void ShardedParams::reduceScatterStep(MPI_Comm comm, float learning_rate) {
  for (auto& b : buckets_) {
    pack(b, true, &b.full);
    MPI_Reduce_scatter_block(b.full.data(), b.summed.data(), static_cast<int>(b.shard), MPI_FLOAT,
                             MPI_SUM, comm);
    update(b, learning_rate);
  }
}

// The allreduce mode's arithmetic exactly: g = sum * (1/world), then
// value -= lr * g.
void ShardedParams::update(Bucket& b, float learning_rate) {
  const float scale = 1.f / static_cast<float>(world_);
  for (size_t i = 0; i < b.shard; ++i) {
    const float g = b.summed[i] * scale;
    b.mine[i] -= learning_rate * g;
  }
}

void ShardedParams::wait(MPI_Request* r) {
  const auto t0 = std::chrono::steady_clock::now();
  MPI_Wait(r, MPI_STATUS_IGNORE);
  waited_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void ShardedParams::postGather(Bucket& b, MPI_Comm comm) {
  MPI_Iallgather(b.mine.data(), static_cast<int>(b.shard), MPI_FLOAT, b.full.data(),
                 static_cast<int>(b.shard), MPI_FLOAT, comm, &b.gather);
}

void ShardedParams::startGather(MPI_Comm comm) {
  for (auto& b : buckets_) postGather(b, comm);
}

void ShardedParams::waitGatheredLayer(int layer) {
  for (auto& b : buckets_) {
    if (b.gather == MPI_REQUEST_NULL) continue;
    const bool holds = std::any_of(b.tensors.begin(), b.tensors.end(),
                                   [&](int t) { return t / 2 == layer; });
    if (!holds) continue;
    wait(&b.gather);
    unpackValues(b);
  }
}

void ShardedParams::postReadyGradients(int layer, MPI_Comm comm) {
  for (auto& b : buckets_) {
    if (b.lowest_tensor / 2 != layer) continue;
    pack(b, true, &b.full);
    MPI_Ireduce_scatter_block(b.full.data(), b.summed.data(), static_cast<int>(b.shard),
                              MPI_FLOAT, MPI_SUM, comm, &b.reduce);
  }
  // Progress for the posted calls while the layers below compute (a rank
  // calls MPI only between layers: MPI_THREAD_FUNNELED, OpenMP computes).
  for (auto& b : buckets_) {
    int done = 0;
    if (b.reduce != MPI_REQUEST_NULL) MPI_Test(&b.reduce, &done, MPI_STATUS_IGNORE);
  }
}

void ShardedParams::finishStep(MPI_Comm comm, float learning_rate) {
  for (auto& b : buckets_) {
    wait(&b.reduce);  // a completed request is MPI_REQUEST_NULL: returns at once
    update(b, learning_rate);
    postGather(b, comm);
  }
}

void ShardedParams::waitAllGathered() {
  for (auto& b : buckets_) {
    if (b.gather == MPI_REQUEST_NULL) continue;
    wait(&b.gather);
    unpackValues(b);
  }
}

}  // namespace switchagg::train
