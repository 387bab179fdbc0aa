// Helpers shared by the host allreduce algorithms.
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "host_algorithms.h"
#include "switchagg/common/half.h"
#include "switchagg/common/reduce.h"

namespace switchagg::coll {

void copyInput(const AllreduceArgs& args) {
  if (args.send && args.send != args.recv && args.count > 0)
    std::memcpy(args.recv, args.send, args.count * dtypeSize(args.dtype));
}

Status combineOrdered(const AllreduceArgs& args, void* mine, const void* theirs, size_t n,
                      bool theirs_is_lower) {
  if (n == 0) return Status::Ok();
  if (theirs_is_lower) return reduce3(args.dtype, args.op, mine, theirs, mine, n);
  return reduceInto(args.dtype, args.op, mine, theirs, n);
}

bool keepsWidePartials(const AllreduceArgs& args) {
  return args.op == Op::kSum && (args.dtype == Dtype::kFloat16 || args.dtype == Dtype::kBfloat16);
}

Widened widen(const AllreduceArgs& args) {
  Widened w;
  w.buf.resize(args.count);
  widenHalf(args.dtype, w.buf.data(), static_cast<const uint16_t*>(args.recv), args.count);
  w.args = args;
  w.args.send = nullptr;
  w.args.recv = w.buf.data();
  w.args.dtype = Dtype::kFloat32;
  return w;
}

void narrowInto(const AllreduceArgs& args, const Widened& w, BlockRange r) {
  narrowHalf(args.dtype, static_cast<uint16_t*>(args.recv) + r.begin, w.buf.data() + r.begin,
             r.size);
}

BlockRange blockRange(size_t count, int blocks, int b) {
  const size_t nb = static_cast<size_t>(blocks);
  const size_t ub = static_cast<size_t>(b);
  const size_t base = count / nb;
  const size_t extra = count % nb;
  return BlockRange{ub * base + std::min(ub, extra), base + (ub < extra ? 1 : 0)};
}

int floorPowerOfTwo(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

NodeLayout nodeLayoutFromHostIds(const std::vector<uint64_t>& host_ids) {
  NodeLayout layout;
  std::unordered_map<uint64_t, int> index;
  std::vector<int> per_node;
  layout.node_of.reserve(host_ids.size());
  for (uint64_t id : host_ids) {
    auto [it, inserted] = index.emplace(id, static_cast<int>(per_node.size()));
    if (inserted) per_node.push_back(0);
    ++per_node[static_cast<size_t>(it->second)];
    layout.node_of.push_back(it->second);
  }
  layout.nodes = std::max(1, static_cast<int>(per_node.size()));
  layout.max_ranks_per_node = per_node.empty() ? 1 : *std::max_element(per_node.begin(), per_node.end());
  return layout;
}

Fold makeFold(int rank, int size) {
  Fold f;
  f.pof2 = floorPowerOfTwo(size);
  f.rem = size - f.pof2;
  if (rank < 2 * f.rem) {
    f.vrank = (rank % 2 == 0) ? -1 : rank / 2;
  } else {
    f.vrank = rank - f.rem;
  }
  return f;
}

Status foldIn(HostComm& comm, const AllreduceArgs& args, const Fold& fold, void* scratch,
              uint32_t tag) {
  const int rank = comm.rank();
  if (rank >= 2 * fold.rem) return Status::Ok();
  const size_t bytes = args.count * dtypeSize(args.dtype);
  HostComm::Handle h;
  if (fold.vrank < 0) {  // even: hand over and sit out
    SWITCHAGG_RETURN_IF_ERROR(comm.postSend(rank + 1, tag, args.recv, bytes, &h));
    return comm.waitAll();
  }
  SWITCHAGG_RETURN_IF_ERROR(comm.postRecv(rank - 1, tag, scratch, bytes, &h));
  SWITCHAGG_RETURN_IF_ERROR(comm.waitAll());
  return combineOrdered(args, args.recv, scratch, args.count, /*theirs_is_lower=*/true);
}

Status foldOut(HostComm& comm, const AllreduceArgs& args, const Fold& fold, uint32_t tag) {
  const int rank = comm.rank();
  if (rank >= 2 * fold.rem) return Status::Ok();
  const size_t bytes = args.count * dtypeSize(args.dtype);
  HostComm::Handle h;
  if (fold.vrank < 0)
    SWITCHAGG_RETURN_IF_ERROR(comm.postRecv(rank + 1, tag, args.recv, bytes, &h));
  else
    SWITCHAGG_RETURN_IF_ERROR(comm.postSend(rank - 1, tag, args.recv, bytes, &h));
  return comm.waitAll();
}

}  // namespace switchagg::coll
