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
  foldWide(in, flat_.args.dtype, flat_.args.op, flat_.args.count);
}

void NodeLeaders::foldWide(const std::vector<const void*>& in, Dtype dtype, Op op, size_t count) {
  if (wide_.size() < count) wide_.resize(count);
  const auto* halves = reinterpret_cast<const uint16_t* const*>(in.data());
  widenHalfWide(dtype, wide_.data(), halves[0], count);
  accumulateWidened(dtype, op, wide_.data(), halves + 1, in.size() - 1, 0, count);
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
// (within 2^-24 of the node sum). From element `begin` (a rail leader's
// stripe).
const void* AgentSwitchPath::wideInput(size_t count, size_t begin) {
  const double* sum = leaders_->wideSum() + begin;
  if (uplinkChoice() != HalfUplink::kFloat32) return sum;
  if (wide_f32_.size() < count) wide_f32_.resize(count);
  for (size_t i = 0; i < count; ++i) wide_f32_[i] = static_cast<float>(sum[i]);
  return wide_f32_.data();
}

// The result comes back in wide_out_.
AllreduceArgs AgentSwitchPath::wideArgs(const AllreduceArgs& args, size_t begin) {
  if (wide_out_.size() < args.count) wide_out_.resize(args.count);
  AllreduceArgs w = args;
  w.recv = wide_out_.data();
  w.send = wideInput(args.count, begin);
  w.dtype = uplinkChoice() == HalfUplink::kFloat32 ? Dtype::kFloat32 : Dtype::kFloat64;
  return w;
}

void AgentSwitchPath::narrowWideTo(Dtype half, void* out, size_t count) const {
  if (uplinkChoice() == HalfUplink::kFloat32)
    narrowHalf(half, static_cast<uint16_t*>(out), reinterpret_cast<const float*>(wide_out_.data()),
               count);
  else
    narrowHalfWide(half, static_cast<uint16_t*>(out), wide_out_.data(), count);
}

void AgentSwitchPath::narrowWide(const AllreduceArgs& args, void* out) const {
  narrowWideTo(args.dtype, out, args.count);
}

// MPI_Reduce / MPI_Reduce_scatter(_block) through node leaders: the same
// choice (wideUplink of the call's dtype and op: alike on every leader), the
// leaders' routed call in the wide type over the node's fp64 sum
// (NodeLeaders::reduceAccumulator keeps it in wideSum(), in the call's
// element order), `count` result elements here into wide_out_.
bool AgentSwitchPath::widensRouted(const RoutedArgs& args, size_t total) const {
  AllreduceArgs probe;
  probe.dtype = args.dtype;
  probe.op = args.reduce_op;
  probe.count = total;
  return isReduction(args.op) && leaders_->leader() && wideUplink(probe);
}

AgentSwitchPath::WideRouted AgentSwitchPath::widenRouted(const RoutedArgs& args,
                                                        agent::RoutedCall* call, size_t count) {
  WideRouted w;
  if (!widensRouted(args, call->total)) return w;
  w.on = true;
  w.half = args.dtype;
  call->dtype = uplinkChoice() == HalfUplink::kFloat32 ? Dtype::kFloat32 : Dtype::kFloat64;
  w.scale = dtypeSize(call->dtype) / dtypeSize(args.dtype);
  if (call->in) call->in = wideInput(call->total);
  if (call->out != static_cast<const void*>(no_output_)) {
    w.narrow_to = call->out;
    w.count = count;
    if (wide_out_.size() < count) wide_out_.resize(count);
    call->out = wide_out_.data();
  }
  return w;
}

RoutedArgs AgentSwitchPath::wideRoutedArgs(const RoutedArgs& args, const agent::RoutedCall& call) {
  RoutedArgs w = args;
  if (isReduction(args.op)) w.dtype = call.dtype;  // the 16-bit type unless wide
  return w;
}

void AgentSwitchPath::narrowRouted(const WideRouted& w) const {
  if (w.on && w.narrow_to && w.count) narrowWideTo(w.half, w.narrow_to, w.count);
}

Status AgentSwitchPath::streamWide(const AllreduceArgs& args, void* out) {
  const AllreduceArgs w = wideArgs(args);
  Status st = stream(w, w.send, w.recv, w.count * dtypeSize(w.dtype));
  if (st.ok()) narrowWide(args, out);
  return st;
}

}  // namespace switchagg::coll::switch_detail
