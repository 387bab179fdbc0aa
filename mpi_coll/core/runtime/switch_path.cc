// The switch candidate: MPI_Allreduce offloaded to the switch
// agent's aggregation engine through the data-plane client.
//
// Joining (once per communicator, collective, in createSwitchPath which
// CommState calls on the communicator's first eligible allreduce): every
// rank connects (one process-wide connection per agent of the lease), then
// the ranks allgather {connected, rank 0's nonce} over the previous coll module; only if ALL
// connected do they join group id = rank 0's random nonce with the cid in
// its low 16 bits (unique per communicator per job, never reused after a
// free), then allgather the join outcome. Any failure anywhere -> no switch
// candidate for this communicator on every rank alike.
//
// With K agents the group is one per agent and each call is cut into K
// stripes streamed at once (agent::StripedGroup; docs/offload.md "Stripes").
//
// One call: the client streams the buffer (window = the group's slots) into
// a result buffer that is never the caller's input (scratch for in place).
// A call of at most SWITCHAGG_SWITCH_KEEP bytes ends there when it
// succeeded: one agent round trip, no host message (switch_completion.cc;
// only a member that failed asks the others, and only when nobody has the
// result do all ranks learn it). A larger call ends with every rank
// allgathering its local outcome: all ok -> the result is committed.
// Anyone failed (either way) -> the input is untouched everywhere, the path
// is dead for the communicator (alike on all ranks) and we return
// kUnsupported: dispatch runs the next candidate (a host algorithm) from the
// intact input. After `rejoin_calls` more calls (counted alike on every
// rank) or `rejoin_ms` (rank 0's clock, told the others at a few agreed
// check calls: switch_rejoin.h), whichever comes first, the communicator
// runs the join again; a failed rejoin doubles both. Nobody failed but someone
// was told busy (the agent refused the call: the job's other communicators
// held the lease's slots) -> the same host redo, but the path stays alive.
// Detailed semantics: docs/offload.md.
//
// Node leaders (switch_leaders.h): with several ranks per node only each
// node's lowest rank is a member of the agent's group; the node reduces to
// it first and it broadcasts the outcome and result (one round trip) or the
// result after the agreement (larger calls); a non-leader says ok for the
// agent steps it skips.
//
// The path's files, one concern each: switch_path_internal.h.
#include "switch_path_internal.h"

#include <strings.h>

#include <algorithm>
#include <cinttypes>
#include <cstring>

#include "process_runtime.h"
#include "switchagg/common/log.h"

namespace switchagg::coll {
namespace switch_detail {

AgentSwitchPath::~AgentSwitchPath() {
  logSummary();
  // Leaving is collective at the agent; every member frees the
  // communicator, and the client bounds it (kDrainMs) if one does not.
  if (group_ && group_->usable()) {
    Status st = group_->leave(agent::AggClient::kDrainMs);
    if (!st.ok()) SA_DEBUG("coll", "comm %s: leaving switch group: %s", comm_.name().c_str(),
                           st.toString().c_str());
  }
  group_.reset();
}

void AgentSwitchPath::describe(const AllreduceArgs& args, SelectionInput* in) const {
  if (serves(args)) fill(in);
}

void AgentSwitchPath::fill(SelectionInput* in) const {
  in->switch_available = true;
  in->switch_window = int(info_.window);
  in->switch_slot_bytes = info_.slot_bytes;
  in->switch_members = leaders_ ? leaders_->nodes() : comm_.size();
  in->switch_stripes = int(lease_.agents.size());
  in->switch_segment_bytes = leaders_ ? size_t(lease_.segment_bytes) : 0;
  in->switch_reduce_mbps = capacity_.reduce_mbps;
  in->switch_link_mbps = capacity_.link_mbps;
  in->switch_turnaround_us = capacity_.turnaround_us;
}

// Every rank calls it for the same calls in the same order, so the count -
// and the decision to run the collective join - agree everywhere; time
// counts only as rank 0 tells it at the schedule's checks (switch_rejoin.h).
void AgentSwitchPath::rejoinIfDue() {
  if (joined_) return;
  switch (rejoin_.next()) {
    case RejoinSchedule::Step::kNothing: return;
    case RejoinSchedule::Step::kRejoin: break;
    case RejoinSchedule::Step::kCheck: {
      RejoinSchedule::Verdict mine;
      if (comm_.rank() == 0) mine = rejoin_.verdict(steadyMs());
      std::vector<RejoinSchedule::Verdict> all(size_t(comm_.size()));
      Status st = comm_.allgather(&mine, all.data(), sizeof mine);
      if (!st.ok()) {
        // The host transport failed: the component reports it at the call.
        SA_DEBUG("coll", "comm %s rank %d: switch rejoin check: %s", comm_.name().c_str(),
                 comm_.rank(), st.toString().c_str());
        return;
      }
      if (!rejoin_.apply(all[0])) return;
      if (comm_.rank() == 0)
        SA_DEBUG("coll", "comm %s: switch rejoin: %" PRId64 " ms since the failure are up",
                 comm_.name().c_str(), rejoin_.msLimit());
      break;
    }
  }
  Joined joined = joinGroup(comm_, lease_, false, leaders_.get());
  if (!joined.ok) {
    rejoin_.rejoinFailed(steadyMs());
    if (comm_.rank() == 0)
      SA_DEBUG("coll",
               "comm %s: switch rejoin failed; next try after %" PRIu64 " calls or %" PRId64
               " ms",
               comm_.name().c_str(), rejoin_.callLimit(), rejoin_.msLimit());
    return;
  }
  group_ = std::move(joined.group);
  info_ = joined.info;
  joined_ = true;
  routed_ = joined.routed;
  tree_ = std::move(joined.tree);
  ++rejoined_;
  if (comm_.rank() == 0)
    SA_INFO("coll", "comm %s: switch path back after a failure (rejoined the agent)",
            comm_.name().c_str());
}

void AgentSwitchPath::giveUp(const Status& mine, int first_bad, const char* what,
                             const char* after) {
  ++failed_;
  // The first rank that failed says why (which stripe, which agent) at
  // info: rank 0's line below can only point at it.
  if (!mine.ok() && comm_.rank() == first_bad && first_bad != 0)
    SA_INFO("coll", "comm %s rank %d: switch %s failed here: %s", comm_.name().c_str(),
            comm_.rank(), what, mine.toString().c_str());
  else if (!mine.ok())
    SA_DEBUG("coll", "comm %s rank %d: switch %s failed: %s", comm_.name().c_str(),
             comm_.rank(), what, mine.toString().c_str());
  const std::string who = first_bad >= 0 ? "rank " + std::to_string(first_bad) : "a member";
  if (comm_.rank() == 0)
    SA_INFO("coll",
            "comm %s: switch %s failed (%s: %s); %s, "
            "switch path disabled for this communicator (fallback:switch-failed)%s",
            comm_.name().c_str(), what, who.c_str(),
            mine.ok() ? "see its log at verbose 2" : mine.toString().c_str(), after,
            lease_.rejoin_calls ? "; rejoin attempts follow" : "");
  // The group is dead or about to be; drop it (a usable one is left).
  group_.reset();
  joined_ = false;
  rejoin_.failed(steadyMs());  // after the group's drain: the path is off from here
}

bool AgentSwitchPath::counter(const std::string& name, uint64_t* value) const {
  if (name == "switch:bytes_sent") *value = bytes_sent_;
  else if (name == "switch:last_bytes_sent") *value = last_bytes_sent_;
  else if (name == "switch:chunks") *value = chunks_;
  else if (name == "switch:calls") *value = calls_;
  else if (name == "switch:failed" || name == "fallback:switch-failed") *value = failed_;
  else if (name == "switch:busy" || name == "fallback:switch-busy") *value = busy_;
  else if (name == "switch:joined") *value = 1;
  else if (name == "switch:dead") *value = joined_ ? 0 : 1;
  else if (name == "switch:leader") *value = !leaders_ || leaders_->member() ? 1 : 0;
  else if (name == "switch:members") *value = uint64_t(leaders_ ? leaders_->nodes() : comm_.size());
  else if (name == "switch:rejoined") *value = rejoined_;
  else if (name == "switch:barriers") *value = barriers_;
  else if (name == "switch:barrier_failed") *value = barrier_failed_;
  else if (name == "switch:barrier_busy") *value = barrier_busy_;
  else if (name == "switch:pipelined") *value = pipelined_;
  else if (name == "switch:streamed") *value = streamed_;
  else if (name == "switch:routed") *value = joined_ && routed_ ? 1 : 0;
  else if (name == "switch:routed_calls") *value = routed_calls_;
  else if (name == "switch:agreements") *value = agreements_;
  else if (name == "switch:one_round_trip") *value = one_trip_;
  else if (name == "switch:recovered") *value = recovered_;
  // Host messages the switch path itself sent outside the node steps: its
  // agreements (one collective each) and recovery questions and answers.
  else if (name == "switch:host_messages")
    *value = agreements_ + (ledger_ ? ledger_->messagesSent() : 0);
  else return false;
  return true;
}

void AgentSwitchPath::logSummary() const {
  if (comm_.rank() != 0 || !logEnabled(LogLevel::kInfo)) return;
  const std::string routed =
      routed_calls_ ? ", " + std::to_string(routed_calls_) + " routed call(s)" : "";
  SA_INFO("coll",
          "comm %s switch path: %" PRIu64 " calls, %" PRIu64 " bytes sent per %s in %" PRIu64
          " chunks, %" PRIu64 " fallback(s), %" PRIu64 " busy, %" PRIu64 " rejoin(s)%s%s",
          comm_.name().c_str(), calls_, bytes_sent_, leaders_ ? "node leader" : "rank",
          chunks_, failed_, busy_, rejoined_, routed.c_str(),
          joined_ ? "" : ", disabled after a failure");
}

}  // namespace switch_detail

size_t routedVectorBytes(const RoutedArgs& args, int size) {
  switch (args.op) {
    case SWITCHAGG_COLL_REDUCE: return args.count * dtypeSize(args.dtype);
    case SWITCHAGG_COLL_REDUCE_SCATTER:
    case SWITCHAGG_COLL_REDUCE_SCATTER_BLOCK: {
      size_t total = 0;
      for (int r = 0; r < size; ++r) total += args.counts[r];
      return total * dtypeSize(args.dtype);
    }
    case SWITCHAGG_COLL_ALLGATHER: return size_t(size) * args.count;
    case SWITCHAGG_COLL_BCAST: return args.count;
    case SWITCHAGG_COLL_ALLREDUCE:  // not routed
    case SWITCHAGG_COLL_BARRIER:
      break;
  }
  return 0;
}

namespace {

// SWITCHAGG_SWITCH_RAIL_LEADERS: R = the lease's agents leaders per node
// when every node has R ranks (alike on every rank: the lease is job-wide,
// the layout agreed); otherwise one leader per node, said once by rank 0.
void placeRailLeaders(CommGroup& comm, const SwitchLease& lease, NodeLeaders* leaders) {
  if (!leaders || !lease.rail_leaders) return;
  const int rails = int(lease.agents.size());
  std::vector<int> per_node(size_t(comm.layout().nodes), 0);
  for (int node : comm.layout().node_of) ++per_node[size_t(node)];
  const int fewest = *std::min_element(per_node.begin(), per_node.end());
  std::string why;
  if (lease.tree) why = "a tree lease";
  else if (rails < 2) why = "the lease has one agent";
  else if (fewest < rails)
    why = "a node has " + std::to_string(fewest) + " rank(s), fewer than the " +
          std::to_string(rails) + " rails";
  if (why.empty()) return leaders->setRails(rails);
  if (comm.rank() == 0)
    SA_INFO("coll", "comm %s: SWITCHAGG_SWITCH_RAIL_LEADERS: one leader per node (%s)",
            comm.name().c_str(), why.c_str());
}

}  // namespace

std::unique_ptr<SwitchPath> createSwitchPath(CommGroup& comm) {
  using switch_detail::AgentSwitchPath;
  using switch_detail::Joined;
  const SwitchLease* lease = switchLease();
  if (!lease) return nullptr;  // no lease: quietly no switch candidate
  const SelectionPolicy& policy = ProcessRuntime::instance().params().policy;
  if (policy.offload == Offload::kOff) return nullptr;
  // A forced host algorithm never asks the switch; do not occupy slots.
  if (policy.forcesHost()) return nullptr;
  std::unique_ptr<NodeLeaders> leaders = NodeLeaders::create(comm, lease->node_leaders);
  placeRailLeaders(comm, *lease, leaders.get());
  Joined joined = switch_detail::joinGroup(comm, *lease, true, leaders.get());
  if (!joined.ok) return nullptr;
  return std::make_unique<AgentSwitchPath>(comm, *lease, std::move(joined), std::move(leaders));
}

}  // namespace switchagg::coll
