// MPI_Allreduce through rail leaders (docs/offload.md "Rail leaders"): a
// leader per rail and node, each streaming its stripe to its rail's agent.
#include "switch_path_internal.h"

#include <cstring>

namespace switchagg::coll::switch_detail {

// Rail leaders (docs/offload.md "Rail leaders"): stripe k of the node's
// inputs reduced into local rank k, which streams it to rail k's agent;
// the outcome agreement over every rank; then each stripe from its rail
// leader to the node. A rail leader's stripe is agent::stripeOf(count, k,
// R) on every rank alike, so the stripes tile the vector exactly once.
Status AgentSwitchPath::allreduceRails(const AllreduceArgs& args) {
  const size_t esize = dtypeSize(args.dtype);
  const size_t bytes = args.count * esize;
  const bool in_place = args.send == nullptr;
  last_bytes_sent_ = 0;
  Result<const void*> input = leaders_->railReduce(args);
  Status mine = input.status();
  const int rail = leaders_->rail();
  const agent::StripeRange r =
      rail >= 0 ? agent::stripeOf(args.count, size_t(rail), size_t(leaders_->rails()))
                : agent::StripeRange{};
  uint8_t* out = static_cast<uint8_t*>(args.recv);
  if (in_place && group_) {
    if (scratch_.size() < bytes) scratch_.resize(bytes);
    out = scratch_.data();
  }
  if (mine.ok() && group_ && r.count) {
    AllreduceArgs stripe = args;
    stripe.count = r.count;
    if (wideUplink(args)) {
      // A 16-bit sum on the wide uplink (as node leaders'): the rail
      // leader's fp64 node sum of its stripe goes up (NodeLeaders kept it
      // in wideSum() at the stripe's place), the agent's wide result is
      // rounded once into the stripe.
      const AllreduceArgs w = wideArgs(stripe, r.begin);
      mine = stream(w, w.send, w.recv, r.count * dtypeSize(w.dtype));
      if (mine.ok()) narrowWideTo(args.dtype, out + r.begin * esize, r.count);
    } else {
      mine = stream(stripe, *input, out + r.begin * esize, r.count * esize);
    }
    // A rail's failure names the rail's agent (the fabric map's name).
    if (!mine.ok())
      mine = Status(mine.code(), "rail leader of stripe " + std::to_string(rail) + " (" +
                                     (size_t(rail) < lease_.names.size()
                                          ? lease_.names[size_t(rail)] + " at "
                                          : std::string()) +
                                     lease_.agents[size_t(rail)] + "): " + mine.message());
  }
  std::vector<uint8_t> oks;
  SWITCHAGG_RETURN_IF_ERROR(agree(mine, &oks));
  if (allDone(oks)) {
    if (out != args.recv && r.count)
      std::memcpy(static_cast<uint8_t*>(args.recv) + r.begin * esize, out + r.begin * esize,
                  r.count * esize);
    ++calls_;
    return leaders_->railBroadcast(args);
  }
  leaders_->abandon();
  return redoAgreed(mine, oks);
}

}  // namespace switchagg::coll::switch_detail
