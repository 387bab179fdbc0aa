#include "switch_leaders.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "comm_state.h"
#include "switchagg/common/half.h"
#include "switchagg/common/reduce.h"

namespace switchagg::coll {
namespace {

// What shareInfo() passes from rank 0 to everyone.
struct SharedInfo {
  uint64_t slot_bytes;
  uint32_t window;
  uint32_t pad;
  agent::wire::CapTable caps;
};
static_assert(std::is_trivially_copyable_v<SharedInfo>);

}  // namespace

std::unique_ptr<NodeLeaders> NodeLeaders::create(CommGroup& comm, bool enabled) {
  const NodeLayout& layout = comm.layout();
  if (!enabled || layout.max_ranks_per_node <= 1 ||
      layout.node_of.size() != size_t(comm.size()))
    return nullptr;
  return std::unique_ptr<NodeLeaders>(new NodeLeaders(comm, nodeGroups(layout, comm.rank())));
}

NodeLeaders::NodeLeaders(CommGroup& comm, NodeGroups groups)
    : comm_(comm), groups_(std::move(groups)) {
  const std::vector<int>& node_of = comm_.layout().node_of;
  std::vector<std::vector<int>> per_node(groups_.leaders.size());
  for (int r = 0; r < int(node_of.size()); ++r) per_node[size_t(node_of[size_t(r)])].push_back(r);
  by_node_.reserve(node_of.size());
  for (const std::vector<int>& ranks : per_node)
    by_node_.insert(by_node_.end(), ranks.begin(), ranks.end());
  for (size_t i = 0; i < by_node_.size(); ++i) contiguous_ = contiguous_ && by_node_[i] == int(i);
}

// Tags of the block collectives' and MPI_Iallreduce's node steps, above move()'s.
constexpr uint32_t kGatherTag = kNodePhaseTags + 1, kScatterTag = kNodePhaseTags + 2,
                   kFlatInTag = kNodePhaseTags + 3, kFlatOutTag = kNodePhaseTags + 4;
// The outcome byte of a node message that carries the result (CallOutcome::kDone).
constexpr uint8_t kDone = 1;

Result<const void*> NodeLeaders::reduce(const AllreduceArgs& args) {
  const size_t bytes = args.count * dtypeSize(args.dtype);
  // The caller's input stays intact for a host redo: reduce in a copy.
  char* acc = accumulator(bytes);
  if (bytes) std::memcpy(acc, args.send ? args.send : args.recv, bytes);
  return reduceAccumulator(args.dtype, args.op, args.count);
}

char* NodeLeaders::accumulator(size_t bytes) {
  if (acc_.size() < bytes) acc_.resize(bytes);
  return acc_.data();
}

Result<const void*> NodeLeaders::reduceAccumulator(Dtype dtype, Op op, size_t count) {
  host_ = comm_.hostComm();
  if (!host_) return Status(Code::kInternal, "no host transport for the node's reduce");
  Result<bool> root = reduceRange(dtype, op, 0, count, 0, 0);
  if (!root.ok()) return root.status();
  return static_cast<const void*>(*root ? acc_.data() : nullptr);
}

Result<bool> NodeLeaders::reduceRange(Dtype dtype, Op op, size_t begin, size_t count, int root,
                                      uint32_t tag_base) {
  AllreduceArgs node;
  node.send = nullptr;
  node.recv = elementPtr(acc_.data(), dtype, begin);
  node.count = count;
  node.dtype = dtype;
  node.op = op;
  // 16-bit float sums: reduced in fp64 (shared memory; exact for binary16,
  // common/half.h), rounded once by the root; what leaves the node stays
  // 16-bit.
  const bool wide = keepsWidePartials(node);
  if (wide) {
    if (wide_.size() < begin + count) wide_.resize(begin + count);
    widenHalfWide(dtype, wide_.data() + begin, static_cast<const uint16_t*>(node.recv), count);
    node.dtype = Dtype::kFloat64;
    node.recv = wide_.data() + begin;
  }
  const size_t bytes = count * dtypeSize(node.dtype);
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  SubComm local(*host_, rootedAt(root), tag_base);
  SWITCHAGG_RETURN_IF_ERROR(binomialReduce(local, node, scratch_.data()));
  if (localIndex() != root) return false;
  if (wide)
    narrowHalfWide(dtype, reinterpret_cast<uint16_t*>(acc_.data()) + begin, wide_.data() + begin,
                   count);
  return true;
}

std::vector<int> NodeLeaders::rootedAt(int root) const {
  std::vector<int> order(groups_.locals.begin() + root, groups_.locals.end());
  order.insert(order.end(), groups_.locals.begin(), groups_.locals.begin() + root);
  return order;
}

Result<const void*> NodeLeaders::railReduce(const AllreduceArgs& args) {
  const size_t bytes = args.count * dtypeSize(args.dtype);
  // The caller's input stays intact for a host redo: reduce in a copy.
  char* acc = accumulator(bytes);
  if (bytes) std::memcpy(acc, args.send ? args.send : args.recv, bytes);
  host_ = comm_.hostComm();
  if (!host_) return Status(Code::kInternal, "no host transport for the node's reduce");
  const void* mine = nullptr;
  for (int k = 0; k < rails_; ++k) {
    const agent::StripeRange r = agent::stripeOf(args.count, size_t(k), size_t(rails_));
    if (r.count == 0) continue;  // fewer elements than rails: alike on every rank
    // Each stripe's messages on their own tags.
    Result<bool> root =
        reduceRange(args.dtype, args.op, r.begin, r.count, k, uint32_t(k) * kNodePhaseTags);
    if (!root.ok()) return root.status();
    if (*root) mine = elementPtr(acc_.data(), args.dtype, r.begin);
  }
  return mine;
}

Status NodeLeaders::railBroadcast(const AllreduceArgs& args) {
  std::unique_ptr<HostComm> host = std::move(host_);
  if (!host) return Status(Code::kInternal, "node broadcast without a node reduce");
  for (int k = 0; k < rails_; ++k) {
    const agent::StripeRange r = agent::stripeOf(args.count, size_t(k), size_t(rails_));
    if (r.count == 0) continue;
    AllreduceArgs part = args;
    part.send = nullptr;
    part.recv = elementPtr(args.recv, args.dtype, r.begin);
    part.count = r.count;
    SubComm local(*host, rootedAt(k), uint32_t(k) * kNodePhaseTags);
    SWITCHAGG_RETURN_IF_ERROR(binomialBroadcast(local, part));
  }
  return Status::Ok();
}

int NodeLeaders::localIndexOf(int rank) const {
  auto it = std::find(groups_.locals.begin(), groups_.locals.end(), rank);
  return it == groups_.locals.end() ? -1 : int(it - groups_.locals.begin());
}

Result<const void*> NodeLeaders::gather(const void* block, size_t bytes) {
  SWITCHAGG_RETURN_IF_ERROR(begin());
  HostComm::Handle h;
  if (!leader()) {
    SWITCHAGG_RETURN_IF_ERROR(host_->postSend(groups_.locals.front(), kGatherTag, block, bytes, &h));
    SWITCHAGG_RETURN_IF_ERROR(host_->waitAll());
    return static_cast<const void*>(nullptr);
  }
  const size_t n = groups_.locals.size();
  if (gathered_.size() < n * bytes) gathered_.resize(n * bytes);
  if (bytes) std::memcpy(gathered_.data(), block, bytes);
  for (size_t i = 1; i < n; ++i)
    SWITCHAGG_RETURN_IF_ERROR(
        host_->postRecv(groups_.locals[i], kGatherTag, gathered_.data() + i * bytes, bytes, &h));
  SWITCHAGG_RETURN_IF_ERROR(host_->waitAll());
  return static_cast<const void*>(gathered_.data());
}

Status NodeLeaders::startFlat(const AllreduceArgs& args, bool wide) {
  const size_t bytes = args.count * dtypeSize(args.dtype);
  const size_t n = groups_.locals.size();
  FlatShape shape;
  shape.in.assign(n, bytes);
  shape.out.assign(n, bytes);
  shape.out_at.assign(n, 0);
  SWITCHAGG_RETURN_IF_ERROR(startFlatShape(args.send ? args.send : args.recv, std::move(shape)));
  flat_.args = args;
  flat_.fold = true;
  flat_.wide = wide;
  return Status::Ok();
}

Status NodeLeaders::startFlatShape(const void* input, FlatShape shape) {
  SWITCHAGG_RETURN_IF_ERROR(begin());
  flat_ = Flat{};
  flat_.input = input;
  flat_.shape = std::move(shape);
  const FlatShape& f = flat_.shape;
  const size_t n = groups_.locals.size();
  if (f.in.size() != n || f.out.size() != n || f.out_at.size() != n)
    return Status(Code::kInternal, "node step: a shape for another node size");
  if (leader()) {
    flat_.in_at.assign(n, 0);
    size_t total = 0;
    for (size_t i = 1; i < n; ++i) {
      flat_.in_at[i] = total;
      total += f.in[i];
    }
    if (gathered_.size() < total) gathered_.resize(total);
    flat_.handles.resize(n - 1);
    flat_.done.assign(n - 1, false);
    for (size_t i = 1; i < n; ++i) {
      if (f.in[i] == 0) {
        flat_.done[i - 1] = true;
        continue;
      }
      SWITCHAGG_RETURN_IF_ERROR(host_->postRecv(groups_.locals[i], kFlatInTag,
                                                gathered_.data() + flat_.in_at[i], f.in[i],
                                                &flat_.handles[i - 1]));
    }
    return Status::Ok();
  }
  const size_t i = size_t(localIndex());
  staging_.assign(1 + f.out[i], 0);
  flat_.handles.resize(2);
  flat_.done.assign(2, f.in[i] == 0);
  flat_.done[1] = false;
  if (f.in[i])
    SWITCHAGG_RETURN_IF_ERROR(
        host_->postSend(groups_.locals.front(), kFlatInTag, input, f.in[i], &flat_.handles[0]));
  return host_->postRecv(groups_.locals.front(), kFlatOutTag, staging_.data(), 1 + f.out[i],
                         &flat_.handles[1]);
}

Status NodeLeaders::stepFlat(bool* ready) {
  *ready = false;
  if (!host_) return Status(Code::kInternal, "node step without a host transport");
  bool all = true;
  for (size_t i = 0; i < flat_.handles.size(); ++i) {
    if (flat_.done[i]) continue;
    bool done = false;
    SWITCHAGG_RETURN_IF_ERROR(host_->test(flat_.handles[i], &done));
    flat_.done[i] = done;
    all = all && done;
  }
  if (!all) return Status::Ok();
  if (leader() && flat_.fold) {
    // The node's sum, left to right in rank order (the agent's own kernel).
    const AllreduceArgs& a = flat_.args;
    const size_t bytes = a.count * dtypeSize(a.dtype);
    std::vector<const void*> in;
    for (size_t i = 0; i < groups_.locals.size(); ++i) in.push_back(flatInput(i));
    if (flat_.wide)
      foldWide(in);  // kept in fp64 for the uplink (wideSum()); nodeSum() is not sent
    else
      SWITCHAGG_RETURN_IF_ERROR(
          reduceMany(a.dtype, a.op, accumulator(bytes), in.data(), in.size(), a.count));
  } else if (!leader()) {
    host_.reset();  // this rank's part of the call ended
  }
  *ready = true;
  return Status::Ok();
}

const void* NodeLeaders::flatInput(size_t i) const {
  return i == 0 ? flat_.input : static_cast<const void*>(gathered_.data() + flat_.in_at[i]);
}

int NodeLeaders::flatMissing() const {
  for (size_t i = 0; i < flat_.done.size(); ++i)
    if (!flat_.done[i]) return groups_.locals[i + 1];
  return -1;
}

Status NodeLeaders::finishFlat(uint8_t outcome, const void* result) {
  std::unique_ptr<HostComm> host = std::move(host_);
  if (!host) return Status(Code::kInternal, "node step without a host transport");
  return sendOutcomes(*host, kFlatOutTag, outcome, result, flat_.shape);
}

Status NodeLeaders::sendOutcomes(HostComm& host, uint32_t tag, uint8_t outcome,
                                 const void* result, const FlatShape& f) {
  const size_t n = groups_.locals.size();
  // The part's bytes travel even when the call is not done: both sides
  // know the length.
  bool same = true;
  for (size_t i = 2; i < n; ++i) same = same && f.out[i] == f.out[1] && f.out_at[i] == f.out_at[1];
  size_t total = 0;
  for (size_t i = 1; i < n; ++i) total += same && i > 1 ? 0 : 1 + f.out[i];
  staging_.resize(total);
  const uint8_t* from = static_cast<const uint8_t*>(result);
  uint8_t* at = staging_.data();
  HostComm::Handle h;
  for (size_t i = 1; i < n; ++i) {
    if (!same || i == 1) {
      at = i == 1 ? staging_.data() : at + 1 + f.out[i - 1];
      at[0] = outcome;
      if (outcome == kDone && f.out[i]) std::memcpy(at + 1, from + f.out_at[i], f.out[i]);
    }
    SWITCHAGG_RETURN_IF_ERROR(host.postSend(groups_.locals[i], tag, at, 1 + f.out[i], &h));
  }
  return host.waitAll();
}

Status NodeLeaders::scatterOutcome(uint8_t* outcome, const void* leader_result,
                                   const std::vector<size_t>& bytes, void* result) {
  std::unique_ptr<HostComm> host = std::move(host_);
  if (!host) return Status(Code::kInternal, "node scatter without a node step");
  HostComm::Handle h;
  if (leader()) {
    // One message a rank, [outcome][block]: the node's blocks in local order.
    FlatShape f;
    f.out = bytes;
    f.out_at.assign(bytes.size(), 0);
    for (size_t i = 1; i < bytes.size(); ++i) f.out_at[i] = f.out_at[i - 1] + bytes[i - 1];
    return sendOutcomes(*host, kScatterTag, *outcome, leader_result, f);
  }
  const size_t mine = bytes[size_t(localIndex())];
  staging_.resize(1 + mine);
  SWITCHAGG_RETURN_IF_ERROR(
      host->postRecv(groups_.locals.front(), kScatterTag, staging_.data(), 1 + mine, &h));
  SWITCHAGG_RETURN_IF_ERROR(host->waitAll());
  *outcome = staging_[0];
  if (*outcome == kDone && mine) std::memcpy(result, staging_.data() + 1, mine);
  return Status::Ok();
}

Status NodeLeaders::broadcast(const AllreduceArgs& args) {
  std::unique_ptr<HostComm> host = std::move(host_);
  if (!host) return Status(Code::kInternal, "node broadcast without a node reduce");
  AllreduceArgs result = args;
  result.send = nullptr;
  SubComm local(*host, groups_.locals, 0);
  return binomialBroadcast(local, result);
}

Status NodeLeaders::shareOutcome(uint8_t* outcome, const void* leader_result, void* result,
                                 size_t bytes) {
  staging_.resize(bytes + 1);
  if (leader()) {
    staging_[0] = *outcome;
    if (*outcome == kDone && bytes) std::memcpy(staging_.data() + 1, leader_result, bytes);
  }
  SWITCHAGG_RETURN_IF_ERROR(broadcastBytes(staging_.data(), bytes + 1));
  if (!leader()) {
    *outcome = staging_[0];
    if (*outcome == kDone && bytes) std::memcpy(result, staging_.data() + 1, bytes);
  }
  return Status::Ok();
}

Status NodeLeaders::begin() {
  host_ = comm_.hostComm();
  if (!host_) return Status(Code::kInternal, "no host transport for the node's step");
  return Status::Ok();
}

Status NodeLeaders::move(int from, int to, const void* send, void* recv, size_t bytes) {
  if (!host_) return Status(Code::kInternal, "node step without a host transport");
  const int me = comm_.rank();
  if (from == to || (me != from && me != to)) return Status::Ok();
  // Above the binomial phases' tags [0, kNodePhaseTags).
  HostComm::Handle h;
  if (me == from)
    SWITCHAGG_RETURN_IF_ERROR(host_->postSend(to, kNodePhaseTags, send, bytes, &h));
  else
    SWITCHAGG_RETURN_IF_ERROR(host_->postRecv(from, kNodePhaseTags, recv, bytes, &h));
  return host_->waitAll();
}

Status NodeLeaders::broadcastBytes(void* buffer, size_t bytes) {
  AllreduceArgs args;
  args.recv = buffer;
  args.count = bytes;
  args.dtype = Dtype::kUint8;
  return broadcast(args);
}

Status NodeLeaders::shareInfo(const agent::GroupInfo* group, agent::GroupInfo* info) {
  SharedInfo mine{};
  if (group) {
    mine.slot_bytes = group->slot_bytes;
    mine.window = group->window;
    mine.caps = group->caps;
  }
  std::vector<SharedInfo> all(size_t(comm_.size()));
  SWITCHAGG_RETURN_IF_ERROR(comm_.allgather(&mine, all.data(), sizeof mine));
  if (group) *info = *group;
  info->size = nodes();
  info->rank = node();
  info->slot_bytes = size_t(all[0].slot_bytes);
  info->window = all[0].window;
  info->caps = all[0].caps;
  if (rails_ > 1) {
    // Each rail's agent granted its own: the smallest window and slot and
    // the (dtype, op) pairs every rail leader's agent reduces.
    for (int r = 0; r < comm_.size(); ++r) {
      const SharedInfo& o = all[size_t(r)];
      if (o.window == 0) continue;  // not a rail leader
      info->window = std::min(info->window, o.window);
      info->slot_bytes = std::min(info->slot_bytes, size_t(o.slot_bytes));
      for (size_t i = 0; i < info->caps.mask.size(); ++i) info->caps.mask[i] &= o.caps.mask[i];
    }
  }
  return Status::Ok();
}

}  // namespace switchagg::coll
