// NodeLeaders' pipelined call (switch_leaders.h): the node's reduce, the
// leader's stream to the agent and the node's broadcast, segment by segment
// and overlapped. The node's other steps are in switch_leaders.cc.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "comm_state.h"
#include "switch_leaders.h"
#include "switchagg/common/half.h"
#include "switchagg/common/reduce.h"
#include "switchagg/ucx/thread_gate.h"

namespace switchagg::coll {

namespace {

// Elements [begin, begin + count) of segment s.
struct Segment {
  size_t begin, count;
};
Segment segmentOf(size_t count, size_t segment, size_t s) {
  const size_t begin = s * segment;
  return {begin, std::min(segment, count - begin)};
}

}  // namespace

// One pipelined() call: its segments and the messages of each. `node` is
// the node's reduce: args on acc_, or for a 16-bit float SUM fp64 on wide_
// (nesize 8), each segment rounded once into acc_ when it is complete.
struct NodeLeaders::Pipeline {
  const AllreduceArgs& args;
  const AllreduceArgs& node;
  HostComm& host;
  NodeLeaders& self;
  size_t esize, nesize, bytes, segment, segments;

  SubComm sub(size_t s) const {
    return SubComm(host, self.groups_.locals, uint32_t(s) * kNodePhaseTags);
  }
  AllreduceArgs part(size_t s) const {
    AllreduceArgs a = node;
    const Segment seg = segmentOf(args.count, segment, s);
    a.count = seg.count;
    a.recv = elementPtr(node.recv, node.dtype, seg.begin);
    return a;
  }
  // Segment s of the node's sum in acc_, what the agent reads.
  void narrow(size_t s) const {
    if (node.dtype == args.dtype) return;
    const Segment seg = segmentOf(args.count, segment, s);
    narrowHalfWide(args.dtype, reinterpret_cast<uint16_t*>(self.acc_.data()) + seg.begin,
               self.wide_.data() + seg.begin, seg.count);
  }
};

// The leader's side of one pipelined() call: the node's reduce and
// broadcast, segment by segment.
struct NodeLeaders::Lead {
  const Pipeline& p;
  void* out;
  const std::vector<BinomialChild> children;
  const size_t nc;
  std::vector<HostComm::Handle> pending;
  size_t reduced = 0, sent = 0, combined = 0;  // segments; children of `reduced`

  Lead(const Pipeline& pipeline, void* result)
      : p(pipeline),
        out(result),
        children(binomialRootChildren(int(p.self.groups_.locals.size()))),
        nc(children.size()) {
    std::vector<char>& scratch = p.self.scratch_;
    if (scratch.size() < nc * p.segment * p.nesize) scratch.resize(nc * p.segment * p.nesize);
    pending.resize(nc);
  }
  // What a round changed: unchanged in a round in which nothing visible happened.
  size_t progress() const { return reduced * (nc + 1) + combined + sent; }

  Status postReduce(size_t s) {
    SubComm local = p.sub(s);
    const size_t n = segmentOf(p.args.count, p.segment, s).count * p.nesize;
    for (size_t c = 0; c < nc; ++c)
      SWITCHAGG_RETURN_IF_ERROR(local.postRecv(children[c].rank, children[c].reduce_tag,
                                               p.self.scratch_.data() + c * p.segment * p.nesize,
                                               n, &pending[c]));
    return Status::Ok();
  }
  Status postBroadcast(size_t s) {
    SubComm local = p.sub(s);
    const Segment seg = segmentOf(p.args.count, p.segment, s);
    HostComm::Handle h;
    for (const BinomialChild& c : children)
      SWITCHAGG_RETURN_IF_ERROR(local.postSend(c.rank, c.broadcast_tag,
                                               elementPtr(out, p.args.dtype, seg.begin),
                                               seg.count * p.esize, &h));
    return Status::Ok();
  }

  // The node's reduce: children combined in binomialReduce's order; a
  // segment complete is input ready for the stream (when `streaming`).
  Status reduceArrived(agent::StripedGroup* group, bool streaming) {
    while (reduced < p.segments && combined < nc) {
      bool done = false;
      SWITCHAGG_RETURN_IF_ERROR(p.host.test(pending[combined], &done));
      if (!done) break;
      const AllreduceArgs a = p.part(reduced);
      SWITCHAGG_RETURN_IF_ERROR(combineOrdered(
          a, a.recv, p.self.scratch_.data() + combined * p.segment * p.nesize, a.count, false));
      ++combined;
    }
    if (reduced < p.segments && combined == nc) {
      p.narrow(reduced);
      ++reduced;
      combined = 0;
      if (reduced < p.segments) SWITCHAGG_RETURN_IF_ERROR(postReduce(reduced));
      if (streaming) group->setInputReady(std::min(reduced * p.segment, p.args.count));
    }
    return Status::Ok();
  }

  // The node's broadcast of every reduced segment whose result is all in
  // (the first `results` elements of `out`).
  Status broadcastResults(size_t results) {
    for (; sent < reduced; ++sent) {
      const Segment seg = segmentOf(p.args.count, p.segment, sent);
      if (seg.begin + seg.count > results) break;
      SWITCHAGG_RETURN_IF_ERROR(postBroadcast(sent));
    }
    return Status::Ok();
  }
};

Status NodeLeaders::pipelined(const AllreduceArgs& args, size_t segment,
                              agent::StripedGroup* group, void* out, int64_t timeout_ms) {
  std::unique_ptr<HostComm> host = comm_.hostComm();
  if (!host) return Status(Code::kInternal, "no host transport for the node's reduce");
  const size_t esize = dtypeSize(args.dtype);
  const size_t bytes = args.count * esize;
  // Each segment's messages get their own window of tags.
  segment = std::max(segment, (args.count + kMaxSegments - 1) / kMaxSegments);
  const size_t segments = (args.count + segment - 1) / segment;
  if (acc_.size() < bytes) acc_.resize(bytes);
  // The caller's input stays intact for a host redo: reduce in a copy.
  if (bytes) std::memcpy(acc_.data(), args.send ? args.send : args.recv, bytes);
  // 16-bit float sums: the node's reduce (shared memory) in fp64, rounded
  // once per segment by the leader; the agent's input and the broadcast
  // stay 16-bit (docs/offload.md "16-bit floats").
  AllreduceArgs node = args;
  node.send = nullptr;
  node.recv = acc_.data();
  if (keepsWidePartials(args)) {
    if (wide_.size() < args.count) wide_.resize(args.count);
    widenHalfWide(args.dtype, wide_.data(), reinterpret_cast<const uint16_t*>(acc_.data()),
                  args.count);
    node.dtype = Dtype::kFloat64;
    node.recv = wide_.data();
  }
  const Pipeline p{args, node, *host, *this, esize, dtypeSize(node.dtype), bytes, segment, segments};
  if (!leader()) return pipelinedFollow(p);
  return pipelinedLead(p, group, out, timeout_ms);
}

Status NodeLeaders::pipelinedFollow(const Pipeline& p) {
  const AllreduceArgs& args = p.args;
  // Blocking per segment: the leader interleaves, we follow.
  if (scratch_.size() < p.segment * p.nesize) scratch_.resize(p.segment * p.nesize);
  if (result_.size() < p.bytes) result_.resize(p.bytes);
  for (size_t s = 0; s < p.segments; ++s) {
    SubComm local = p.sub(s);
    SWITCHAGG_RETURN_IF_ERROR(binomialReduce(local, p.part(s), scratch_.data()));
  }
  for (size_t s = 0; s < p.segments; ++s) {
    AllreduceArgs a = p.part(s);
    a.dtype = args.dtype;  // the broadcast moves the 16-bit result
    a.recv = elementPtr(result_.data(), args.dtype, segmentOf(args.count, p.segment, s).begin);
    SubComm local = p.sub(s);
    SWITCHAGG_RETURN_IF_ERROR(binomialBroadcast(local, a));
  }
  return Status::Ok();
}

Status NodeLeaders::pipelinedLead(const Pipeline& p, agent::StripedGroup* group, void* out,
                                  int64_t timeout_ms) {
  const AllreduceArgs& args = p.args;
  Lead lead(p, out);

  // One agent call for the whole vector; it reads only what the node has
  // reduced so far (setInputReady) and the node gets each segment's result
  // as soon as the agent returned all of it (resultsReady).
  Status stream = group->startCall(args.dtype, args.op, acc_.data(), out, args.count);
  bool streaming = stream.code() == Code::kInProgress;
  if (streaming) {
    stream = Status::Ok();
    group->setInputReady(0);
  }
  const double deadline_us = nowUs() + double(timeout_ms) * 1000;
  if (p.segments) SWITCHAGG_RETURN_IF_ERROR(lead.postReduce(0));
  uint32_t idle = 0;  // rounds in a row in which nothing visible happened
  for (uint32_t spin = 1; lead.sent < p.segments || streaming; ++spin) {
    const size_t before = lead.progress();
    const bool was_streaming = streaming;
    SWITCHAGG_RETURN_IF_ERROR(lead.reduceArrived(group, streaming));
    if (streaming) {
      Status st = group->stepCall();
      if (st.code() != Code::kInProgress) {
        streaming = false;
        stream = st;
      }
    }
    // The node's broadcast, segment by segment as results arrive (after a
    // failed or refused stream: whatever `out` holds, the agreement drops it).
    const size_t results = streaming ? group->resultsReady() : args.count;
    SWITCHAGG_RETURN_IF_ERROR(lead.broadcastResults(results));
    // Idle for a while (a chunk on the wire, a node rank late): let the
    // core go for a moment - on a node with more ranks than cores the
    // others' reduce and the agent need it; 50 us is far below a chunk's
    // time on the wire at the sizes that run this.
    idle = before == lead.progress() && was_streaming == streaming ? idle + 1 : 0;
    if (idle >= 64) {
      idle = 0;
      ucx::ThreadGate::Release release;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    // Spins as StripedGroup::allreduce does: the clock every 16th round,
    // and other threads' turn at the gate (MPI_THREAD_MULTIPLE).
    if ((spin & 15) != 0) continue;
    if (nowUs() >= deadline_us) {
      // Streaming: past the bound only while the agent says the call waits
      // for a late member (WAITING; StripedGroup::deadline, in ms).
      const auto bound_ms = static_cast<int64_t>(deadline_us / 1000);
      if (streaming && static_cast<int64_t>(nowUs() / 1000) < group->deadline(bound_ms, timeout_ms)) {
        ucx::ThreadGate::yield();
        continue;
      }
      if (streaming) return group->abortCall(timeout_ms);
      return Status(Code::kTimeout, "node leader: the node's reduce incomplete after " +
                                        std::to_string(timeout_ms) + " ms");
    }
    ucx::ThreadGate::yield();
  }
  SWITCHAGG_RETURN_IF_ERROR(p.host.waitAll());  // the broadcast's sends
  return stream;
}

}  // namespace switchagg::coll
