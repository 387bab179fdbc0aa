// Wide partials on the node leaders' uplink (issue 46): a 16-bit float SUM
// with node leaders on two or more nodes is streamed to the agent as the
// leaders' exact fp64 node sums, summed by the agent in fp64 (exact for up
// to 2^13 binary16 terms in all) and rounded once to 16 bits by every
// leader, so the node's result is the correctly rounded sum.
// docs/offload.md "Wide partials on the leaders' uplink" (the safety cases).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "switch_leaders.h"
#include "switch_path_internal.h"
#include "switchagg/common/half.h"

namespace switchagg::coll {

void NodeLeaders::foldWide(const std::vector<const void*>& in) {
  const AllreduceArgs& a = flat_.args;
  if (wide_.size() < a.count) wide_.resize(a.count);
  std::vector<const uint16_t*> halves;
  for (const void* p : in) halves.push_back(static_cast<const uint16_t*>(p));
  widenHalfWide(a.dtype, wide_.data(), halves[0], a.count);
  accumulateWidened(a.dtype, a.op, wide_.data(), halves.data() + 1, halves.size() - 1, 0, a.count);
}

}  // namespace switchagg::coll

namespace switchagg::coll::switch_detail {
namespace {

// Test-only fault point: SWITCHAGG_TEST_NARROW_UPLINK=RANK makes
// communicator rank RANK (a leader) stream 16-bit partials as before this
// change - a member of another build in the same group. The agent refuses
// the group's call naming both dtypes; the call is redone on the host.
bool narrowUplinkFault(int rank) {
  static const int want = [] {
    const char* v = std::getenv("SWITCHAGG_TEST_NARROW_UPLINK");
    if (!v || !*v) return -1;
    std::fprintf(stderr,
                 "switchagg[coll] warning: test fault point SWITCHAGG_TEST_NARROW_UPLINK=%s\n", v);
    return std::atoi(v);
  }();
  return want == rank;
}

}  // namespace

// A pure function of what every leader agrees on: the call's dtype and op
// (the same on every rank, as MPI requires), the node layout (the join's
// address exchange) and the agent's caps (rank 0's, shared at the join).
bool AgentSwitchPath::wideUplink(const AllreduceArgs& args) const {
  return leaders_ && leaders_->nodes() >= 2 && keepsWidePartials(args) &&
         info_.caps.supports(Dtype::kFloat64, Op::kSum) && !narrowUplinkFault(comm_.rank());
}

AllreduceArgs AgentSwitchPath::wideArgs(const AllreduceArgs& args) {
  if (wide_out_.size() < args.count) wide_out_.resize(args.count);
  AllreduceArgs w = args;
  w.send = leaders_->wideSum();
  w.recv = wide_out_.data();
  w.dtype = Dtype::kFloat64;
  return w;
}

void AgentSwitchPath::narrowWide(const AllreduceArgs& args, void* out) const {
  narrowHalfWide(args.dtype, static_cast<uint16_t*>(out), wide_out_.data(), args.count);
}

Status AgentSwitchPath::streamWide(const AllreduceArgs& args, void* out) {
  const AllreduceArgs w = wideArgs(args);
  Status st = stream(w, w.send, w.recv, w.count * sizeof(double));
  if (st.ok()) narrowWide(args, out);
  return st;
}

}  // namespace switchagg::coll::switch_detail
