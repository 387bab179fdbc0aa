// Wide partials on the node leaders' uplink (issue 46): a 16-bit float SUM
// with node leaders on two or more nodes is streamed to the agent as the
// leaders' node sums in fp64 (coll_switchagg_half_uplink=exact, the
// default: summed by the agent in fp64, exact for up to 2^13 binary16 terms,
// rounded once to 16 bits by every leader: the correctly rounded sum) or in
// fp32 (=float32: half the bytes, each node sum rounded once to fp32).
// docs/offload.md "Wide partials on the leaders' uplink" (the safety cases).
#include <vector>

#include "process_runtime.h"
#include "switch_leaders.h"
#include "switch_path_internal.h"
#include "switchagg/common/half.h"

namespace switchagg::coll {

void NodeLeaders::foldWide(const std::vector<const void*>& in) {
  const AllreduceArgs& a = flat_.args;
  if (wide_.size() < a.count) wide_.resize(a.count);
  const auto* halves = reinterpret_cast<const uint16_t* const*>(in.data());
  widenHalfWide(a.dtype, wide_.data(), halves[0], a.count);
  accumulateWidened(a.dtype, a.op, wide_.data(), halves + 1, in.size() - 1, 0, a.count);
}

}  // namespace switchagg::coll

namespace switchagg::coll::switch_detail {
namespace {
// coll_switchagg_half_uplink (the process's, read at open).
HalfUplink uplinkChoice() {
  return ProcessRuntime::instance().params().half_uplink;
}
}  // namespace

// A pure function of what every leader agrees on: the call's dtype and op
// (the same on every rank, as MPI requires), the node layout (the join's
// address exchange), the agent's caps (rank 0's, shared at the join) and
// coll_switchagg_half_uplink (the same on every rank, or the agent refuses
// the call: case 4).
bool AgentSwitchPath::wideUplink(const AllreduceArgs& args) const {
  const HalfUplink choice = uplinkChoice();
  if (choice == HalfUplink::kHalf) return false;
  const Dtype wire = choice == HalfUplink::kFloat32 ? Dtype::kFloat32 : Dtype::kFloat64;
  return leaders_ && leaders_->nodes() >= 2 && keepsWidePartials(args) &&
         info_.caps.supports(wire, Op::kSum);
}

// exact: the leader's fp64 node sum as it is; float32: rounded once to fp32
// (within 2^-24 of the node sum). The result comes back in wide_out_.
AllreduceArgs AgentSwitchPath::wideArgs(const AllreduceArgs& args) {
  if (wide_out_.size() < args.count) wide_out_.resize(args.count);
  AllreduceArgs w = args;
  w.recv = wide_out_.data();
  if (uplinkChoice() == HalfUplink::kFloat32) {
    if (wide_f32_.size() < args.count) wide_f32_.resize(args.count);
    const double* sum = leaders_->wideSum();
    for (size_t i = 0; i < args.count; ++i) wide_f32_[i] = static_cast<float>(sum[i]);
    w.send = wide_f32_.data();
    w.dtype = Dtype::kFloat32;
  } else {
    w.send = leaders_->wideSum();
    w.dtype = Dtype::kFloat64;
  }
  return w;
}

void AgentSwitchPath::narrowWide(const AllreduceArgs& args, void* out) const {
  if (uplinkChoice() == HalfUplink::kFloat32)
    narrowHalf(args.dtype, static_cast<uint16_t*>(out),
               reinterpret_cast<const float*>(wide_out_.data()), args.count);
  else
    narrowHalfWide(args.dtype, static_cast<uint16_t*>(out), wide_out_.data(), args.count);
}

Status AgentSwitchPath::streamWide(const AllreduceArgs& args, void* out) {
  const AllreduceArgs w = wideArgs(args);
  Status st = stream(w, w.send, w.recv, w.count * dtypeSize(w.dtype));
  if (st.ok()) narrowWide(args, out);
  return st;
}

}  // namespace switchagg::coll::switch_detail
