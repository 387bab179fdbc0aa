#include "switch_leaders.h"

#include <cstring>
#include <type_traits>

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

Result<const void*> NodeLeaders::reduce(const AllreduceArgs& args) {
  host_ = comm_.hostComm();
  if (!host_) return Status(Code::kInternal, "no host transport for the node's reduce");
  const size_t bytes = args.count * dtypeSize(args.dtype);
  if (acc_.size() < bytes) acc_.resize(bytes);
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  // The caller's input stays intact for a host redo: reduce in a copy.
  if (bytes) std::memcpy(acc_.data(), args.send ? args.send : args.recv, bytes);
  AllreduceArgs node = args;
  node.send = nullptr;
  node.recv = acc_.data();
  SubComm local(*host_, groups_.locals, 0);
  Status st = binomialReduce(local, node, scratch_.data());
  if (!st.ok()) return st;
  return leader() ? static_cast<const void*>(acc_.data()) : nullptr;
}

Status NodeLeaders::broadcast(const AllreduceArgs& args) {
  std::unique_ptr<HostComm> host = std::move(host_);
  if (!host) return Status(Code::kInternal, "node broadcast without a node reduce");
  AllreduceArgs result = args;
  result.send = nullptr;
  SubComm local(*host, groups_.locals, 0);
  return binomialBroadcast(local, result);
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
  return Status::Ok();
}

}  // namespace switchagg::coll
