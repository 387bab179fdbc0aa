#include "sharded.h"

#include <algorithm>
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
  const float scale = 1.f / static_cast<float>(world_);
  for (auto& b : buckets_) {
    pack(b, true, &b.full);
    MPI_Reduce_scatter_block(b.full.data(), b.summed.data(), static_cast<int>(b.shard), MPI_FLOAT,
                             MPI_SUM, comm);
    // The allreduce mode's arithmetic exactly: g = sum * (1/world), then
    // value -= lr * g.
    for (size_t i = 0; i < b.shard; ++i) {
      const float g = b.summed[i] * scale;
      b.mine[i] -= learning_rate * g;
    }
  }
}

}  // namespace switchagg::train
