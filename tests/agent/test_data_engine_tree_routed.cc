// Routed calls through trees (docs/agent-protocol.md "Routed calls through
// a tree"): two leaf engines and a spine wired in memory. Members send
// CONTRIB_ROUTED with their leaf's destinations and the up-range (the
// leaves that want the chunk); a leaf reduces (or assembles its members'
// contiguous pieces) and sends one CONTRIB_ROUTED up to the up-range; the
// spine serves the leaves as a flat routed group; a leaf passes the payload
// on to its own destinations, header-only RESULTs to the rest. Anything
// inconsistent aborts with route_mismatch before a wrong result can leave.
#include "test_data_engine_tree_fixture.h"

namespace switchagg::agent::testing {
namespace {

// One member's route of a chunk: its mode, the leaf's destinations
// [lo, hi] (none: no member of this leaf wants it) and the up-range.
struct Route {
  uint8_t mode = wire::kModeReduce;
  bool none = false;
  uint32_t lo = 0, hi = 0;
  uint32_t up_lo = 0, up_hi = 0;
};

class EngineTreeRoutedTest : public EngineTreeTest {
 protected:
  void SetUp() override {
    join_flags_ |= wire::kJoinFlagRouted | wire::kJoinFlagTreeRouted;
    EngineTreeTest::SetUp();
  }

  // Member `rank` of leaf `leaf` sends its part of `chunk` (`count`
  // elements of a call of `call_elems`): reduce, `v` is the whole chunk;
  // forward, `v` is its piece starting at element `off` (maybe empty).
  void route(int leaf, uint32_t rank, uint64_t chunk, uint32_t w, const Route& r, uint32_t count,
             uint64_t call_elems, const std::vector<float>& v, uint32_t off = 0) {
    Message m = clientMessage(MsgType::kContribRouted, leaf_token_, 7, rank);
    m.chunk = chunk;
    m.slot = uint32_t(chunk % w);
    m.dtype = Dtype::kFloat32;
    m.op = Op::kSum;
    m.count = count;
    m.call_elems = call_elems;
    m.mode = r.mode;
    m.route_flags = wire::kRouteUp | (r.none ? wire::kRouteNoDest : 0);
    m.dest_lo = r.none ? 0 : r.lo;
    m.dest_hi = r.none ? 0 : r.hi;
    m.up_lo = r.up_lo;
    m.up_hi = r.up_hi;
    m.piece_offset = v.empty() ? 0 : off;
    const wire::Frame f = wire::encode(m);
    const std::vector<uint8_t> body = bytesOf(v);
    leaf_[leaf]->onMessage(1 + rank, f.header.data(), f.header_bytes,
                           body.empty() ? nullptr : body.data(), body.size(), now_);
  }
  // The leaf's RESULTs by member rank (one chunk's).
  std::vector<Sent> results(int leaf, uint32_t members) {
    std::vector<Sent> by_rank(members);
    auto res = leaf_out_[leaf].take(MsgType::kResult);
    EXPECT_EQ(res.size(), members) << "leaf " << leaf;
    for (Sent& s : res)
      if (s.to >= 1 && s.to <= members) by_rank[s.to - 1] = std::move(s);
    return by_rank;
  }
  static bool headerOnly(const Sent& s) {
    return (s.msg.result_flags & wire::kResultNoPayload) != 0 && s.payload.empty();
  }
  // Every member of `leaf` got ABORT `reason` whose text has `text`.
  void expectAborted(int leaf, uint32_t members, Reason reason, const std::string& text) {
    auto aborts = leaf_out_[leaf].take(MsgType::kAbort);
    ASSERT_EQ(aborts.size(), members) << "leaf " << leaf;
    for (const Sent& a : aborts) {
      EXPECT_EQ(a.msg.reason, reason) << wire::reasonName(a.msg.reason) << ": " << a.msg.text;
      EXPECT_NE(a.msg.text.find(text), std::string::npos) << a.msg.text;
    }
    EXPECT_EQ(leaf_[leaf]->liveGroups(), 0u);
  }
  // Leaf 0's two members aborted for a route mismatch (`text`), and nothing
  // of theirs went up to the spine.
  void expectMismatchBeforeAnythingWentUp(const std::string& text) {
    expectAborted(0, 2, Reason::kRouteMismatch, text);
    EXPECT_EQ(leaf_[0]->counters().bytes_up, 0u);
  }
};

TEST_F(EngineTreeRoutedTest, ReduceToAMemberAtTheOtherLeafInTreeOrderOthersGetHeaders) {
  const uint32_t w = formTree(2, 3);
  ASSERT_GT(w, 0u);
  const Route at0{wire::kModeReduce, true, 0, 0, 1, 1};   // nobody here wants it
  const Route at1{wire::kModeReduce, false, 2, 2, 1, 1};  // leaf 1's rank 2 is the root
  for (uint32_t r = 0; r < 3; ++r) route(1, r, 0, w, at1, 2, 2, in1_[r]);
  for (uint32_t r = 0; r < 2; ++r) route(0, r, 0, w, at0, 2, 2, in0_[r]);
  pump();
  for (const Sent& s : results(0, 2)) EXPECT_TRUE(headerOnly(s));
  auto at_root_leaf = results(1, 3);
  EXPECT_TRUE(headerOnly(at_root_leaf[0]));
  EXPECT_TRUE(headerOnly(at_root_leaf[1]));
  EXPECT_EQ(floats(at_root_leaf[2]), treeSum());  // bitwise: the tree allreduce's order
  // One partial up per leaf; the spine's payload goes to leaf 1 only.
  EXPECT_EQ(leaf_[0]->counters().bytes_up, 8u);
  EXPECT_EQ(leaf_[1]->counters().bytes_up, 8u);
  EXPECT_EQ(spine_->counters().bytes_in, 16u);
  EXPECT_EQ(spine_->counters().bytes_out, 8u);
  EXPECT_EQ(leaf_[0]->counters().bytes_out, 0u);
  EXPECT_EQ(leaf_[1]->counters().bytes_out, 8u);
}

TEST_F(EngineTreeRoutedTest, ReduceScatterBlocksAcrossLeavesGoOnlyWhereWanted) {
  const uint32_t w = formTree(2, 2);
  ASSERT_GT(w, 0u);
  // 6 elements in 2 chunks of 3; blocks: leaf 0 {[0,1), [1,3)}, leaf 1 {[3,4), [4,6)}.
  auto input = [](int leaf, uint32_t rank, uint64_t chunk) {
    std::vector<float> v(3);
    for (int e = 0; e < 3; ++e)
      v[size_t(e)] = float((leaf * 2 + rank + 1) * (int(chunk) * 3 + e + 1));
    return v;
  };
  const Route chunk0[2] = {{wire::kModeReduce, false, 0, 1, 0, 0},
                           {wire::kModeReduce, true, 0, 0, 0, 0}};
  const Route chunk1[2] = {{wire::kModeReduce, true, 0, 0, 1, 1},
                           {wire::kModeReduce, false, 0, 1, 1, 1}};
  for (uint64_t c = 0; c < 2; ++c) {
    for (int leaf = 0; leaf < 2; ++leaf)
      for (uint32_t r = 0; r < 2; ++r)
        route(leaf, r, c, w, c == 0 ? chunk0[leaf] : chunk1[leaf], 3, 6, input(leaf, r, c));
    pump();
    for (int leaf = 0; leaf < 2; ++leaf) {
      const bool wanted = int(c) == leaf;
      for (const Sent& s : results(leaf, 2)) {
        if (!wanted) {
          EXPECT_TRUE(headerOnly(s)) << "leaf " << leaf << " chunk " << c;
          continue;
        }
        std::vector<float> got = floats(s);
        ASSERT_EQ(got.size(), 3u);
        for (int e = 0; e < 3; ++e)  // members' factors 1 + 2 + 3 + 4
          EXPECT_EQ(got[size_t(e)], float(10 * (int(c) * 3 + e + 1)));
      }
    }
  }
  EXPECT_EQ(leaf_[0]->counters().bytes_up, 24u);  // one partial per chunk
  EXPECT_EQ(spine_->counters().bytes_out, 24u);   // each chunk to one leaf
  EXPECT_TRUE(leaf_out_[0].take(MsgType::kAbort).empty());
}

TEST_F(EngineTreeRoutedTest, AllgatherAssemblesEachLeafsPiecesThenTheLeavesInLeafOrder) {
  const uint32_t w = formTree(3, 2);
  ASSERT_GT(w, 0u);
  // Placement order: leaf 0's members {[0,2), none, [2,3)}, leaf 1's {[3,4), [4,6)}.
  const std::vector<float> full = {10, 11, 12, 13, 14, 15};
  auto piece = [&](uint32_t b, uint32_t e) {
    return std::vector<float>(full.begin() + b, full.begin() + e);
  };
  const Route at0{wire::kModeForward, false, 0, 2, 0, 1},
      at1{wire::kModeForward, false, 0, 1, 0, 1};
  route(0, 0, 0, w, at0, 6, 6, piece(0, 2), 0);
  route(0, 1, 0, w, at0, 6, 6, {}, 0);
  route(0, 2, 0, w, at0, 6, 6, piece(2, 3), 2);
  route(1, 1, 0, w, at1, 6, 6, piece(4, 6), 4);
  route(1, 0, 0, w, at1, 6, 6, piece(3, 4), 3);
  pump();
  for (int leaf = 0; leaf < 2; ++leaf)
    for (const Sent& s : results(leaf, leaf == 0 ? 3 : 2)) {
      EXPECT_EQ(s.msg.result_flags, wire::kResultForward);
      EXPECT_EQ(floats(s), full) << "leaf " << leaf << " peer " << s.to;
    }
  // Each leaf's uplink carries its members' pieces up and the whole chunk down.
  EXPECT_EQ(leaf_[0]->counters().bytes_up, 12u);
  EXPECT_EQ(leaf_[1]->counters().bytes_up, 12u);
  EXPECT_EQ(spine_->counters().bytes_out, 48u);
}

TEST_F(EngineTreeRoutedTest, BcastFromAMemberOfEachLeaf) {
  const uint32_t w = formTree(2, 2);
  ASSERT_GT(w, 0u);
  const std::vector<float> data[2] = {{1, 2, 3, 4}, {5, 6, 7, 8}};
  const Route all0{wire::kModeForward, false, 0, 1, 0, 1};
  for (int root_leaf = 0; root_leaf < 2; ++root_leaf) {  // call i = chunk i
    const uint64_t c = uint64_t(root_leaf);
    const uint32_t root = root_leaf == 0 ? 1 : 0;
    const uint64_t up_before = leaf_[root_leaf]->counters().bytes_up;
    const uint64_t other_up_before = leaf_[1 - root_leaf]->counters().bytes_up;
    for (int leaf = 0; leaf < 2; ++leaf)
      for (uint32_t r = 0; r < 2; ++r)
        route(leaf, r, c, w, all0, 4, 4,
              leaf == root_leaf && r == root ? data[root_leaf] : std::vector<float>{});
    pump();
    for (int leaf = 0; leaf < 2; ++leaf) {
      auto res = results(leaf, 2);
      for (uint32_t r = 0; r < 2; ++r) {
        if (leaf == root_leaf && r == root) {
          EXPECT_TRUE(headerOnly(res[r]));  // it has the data
          continue;
        }
        EXPECT_EQ(floats(res[r]), data[root_leaf])
            << "root leaf " << root_leaf << ", leaf " << leaf;
      }
    }
    EXPECT_EQ(leaf_[root_leaf]->counters().bytes_up - up_before, 16u);
    EXPECT_EQ(leaf_[1 - root_leaf]->counters().bytes_up, other_up_before);  // headers only
  }
  // The spine sent each chunk to the other leaf only (the root's has it).
  EXPECT_EQ(spine_->counters().bytes_out, 32u);
}

TEST_F(EngineTreeRoutedTest, MembersOfALeafDisagreeingOnTheUpRangeAbortIt) {
  const uint32_t w = formTree(2, 1);
  ASSERT_GT(w, 0u);
  route(0, 0, 0, w, {wire::kModeReduce, false, 0, 0, 0, 1}, 1, 1, {1.f});
  route(0, 1, 0, w, {wire::kModeReduce, false, 0, 0, 0, 0}, 1, 1, {1.f});
  expectMismatchBeforeAnythingWentUp("up to leaves 0..0");
}

TEST_F(EngineTreeRoutedTest, PiecesWithAGapAtALeafAbortBeforeAnythingGoesUp) {
  const uint32_t w = formTree(2, 1);
  ASSERT_GT(w, 0u);
  const Route r{wire::kModeForward, false, 0, 1, 0, 1};
  route(0, 0, 0, w, r, 4, 4, {1.f}, 0);
  route(0, 1, 0, w, r, 4, 4, {3.f}, 2);  // element 1 is nobody's
  expectMismatchBeforeAnythingWentUp("rank 1's piece starts at element 2");
}

TEST_F(EngineTreeRoutedTest, LeavesPiecesThatDoNotTileTheChunkAbortAtTheSpine) {
  const uint32_t w = formTree(1, 1);
  ASSERT_GT(w, 0u);
  const Route r{wire::kModeForward, false, 0, 0, 0, 1};
  route(0, 0, 0, w, r, 4, 4, {1.f, 2.f}, 0);
  route(1, 0, 0, w, r, 4, 4, {4.f}, 3);  // element 2 is no leaf's
  pump();
  for (int leaf = 0; leaf < 2; ++leaf)
    expectAborted(leaf, 1, Reason::kParentFailed, "route_mismatch");
  EXPECT_EQ(spine_->liveGroups(), 0u);
}

TEST_F(EngineTreeRoutedTest, LeavesDisagreeingOnTheUpRangeAbortAtTheSpine) {
  const uint32_t w = formTree(1, 1);
  ASSERT_GT(w, 0u);
  route(0, 0, 0, w, {wire::kModeReduce, false, 0, 0, 0, 1}, 1, 1, {1.f});
  route(1, 0, 0, w, {wire::kModeReduce, false, 0, 0, 1, 1}, 1, 1, {1.f});
  pump();
  for (int leaf = 0; leaf < 2; ++leaf)
    expectAborted(leaf, 1, Reason::kParentFailed, "route_mismatch");
}

TEST_F(EngineTreeRoutedTest, MembersWantingAChunkTheirLeafDoesNotGetAbort) {
  const uint32_t w = formTree(1, 1);
  ASSERT_GT(w, 0u);
  route(0, 0, 0, w, {wire::kModeReduce, false, 0, 0, 1, 1}, 1, 1, {1.f});
  expectAborted(0, 1, Reason::kRouteMismatch, "want it, but the up-range is leaves 1..1");
  EXPECT_EQ(leaf_[0]->counters().bytes_up, 0u);
}

TEST_F(EngineTreeRoutedTest, ARoutedChunkWithoutAnUpRangeAborts) {
  ASSERT_GT(formTree(1, 1), 0u);
  Message m = clientMessage(MsgType::kContribRouted, leaf_token_, 7, 0);
  m.dtype = Dtype::kFloat32;
  m.count = m.call_elems = 1;
  m.mode = wire::kModeReduce;
  toLeaf(0, 1, m, bytesOf(std::vector<float>{1.f}));  // a flat group's route
  expectAborted(0, 1, Reason::kRouteMismatch, "without an up-range");
}

TEST_F(EngineTreeRoutedTest, AnUpRangeBeyondTheLeavesAborts) {
  const uint32_t w = formTree(1, 1);
  ASSERT_GT(w, 0u);
  route(0, 0, 0, w, {wire::kModeReduce, false, 0, 0, 0, 2}, 1, 1, {1.f});
  expectAborted(0, 1, Reason::kRouteMismatch, "beyond the group's 2 leaves");
}

TEST_F(EngineTreeRoutedTest, TheSpineLosingItsLeaseMidRoutedCallAbortsEveryLeafsMembers) {
  const uint32_t w = formTree(2, 1);
  ASSERT_GT(w, 0u);
  const Route r{wire::kModeReduce, false, 0, 0, 0, 0};  // leaf 0's rank 0 is the root
  for (uint32_t m = 0; m < 2; ++m) route(0, m, 0, w, r, 1, 1, {1.f});
  pump();  // leaf 0's partial waits at the spine for leaf 1
  spine_->revokeLease(spine_token_, "deleted by the admin");
  pump();
  for (int leaf = 0; leaf < 2; ++leaf)
    expectAborted(leaf, leaf == 0 ? 2 : 1, Reason::kParentFailed, "lease revoked");
}

TEST_F(EngineTreeRoutedTest, ASilentParentAbortsALeafsRoutedCall) {
  const uint32_t w = formTree(2, 1);
  ASSERT_GT(w, 0u);
  const Route r{wire::kModeForward, false, 0, 1, 0, 1};
  route(0, 0, 0, w, r, 2, 2, {1.f}, 0);
  route(0, 1, 0, w, r, 2, 2, {2.f}, 1);
  leaf_[0]->reduceReady();
  ASSERT_EQ(leaf_out_[0].up.size(), 1u);  // the leaf's piece went up
  EXPECT_EQ(leaf_[0]->counters().bytes_up, 8u);
  leaf_out_[0].up.clear();  // and is lost: the spine never answers
  const int64_t limit = 2 * EngineConfig{}.member_timeout_ms;
  leaf_[0]->tick(now_ + limit - 10);
  EXPECT_TRUE(leaf_out_[0].take(MsgType::kAbort).empty());
  leaf_[0]->tick(now_ + limit + 10);
  expectAborted(0, 2, Reason::kParentFailed, "did not return chunk 0");
}

TEST_F(EngineTreeRoutedTest, AHeaderOnlyResultForALeafThatWantsTheChunkAbortsIt) {
  const uint32_t w = formTree(1, 1);
  ASSERT_GT(w, 0u);
  route(0, 0, 0, w, {wire::kModeReduce, false, 0, 0, 0, 0}, 1, 1, {1.f});
  leaf_[0]->reduceReady();
  ASSERT_EQ(leaf_out_[0].up.size(), 1u);
  // What a wrong parent might say: the chunk, but without its payload.
  Message res = clientMessage(MsgType::kResult, spine_token_, 7, 0);
  res.slot = 0;
  res.chunk = 0;
  res.dtype = Dtype::kFloat32;
  res.count = res.call_elems = 1;
  res.result_flags = wire::kResultNoPayload;
  const wire::Frame f = wire::encode(res);
  leaf_[0]->onParentMessage(f.header.data(), f.header_bytes, nullptr, 0, now_);
  expectAborted(0, 1, Reason::kParentFailed, "wrong RESULT");
}

TEST(EngineTreeRoutedJoin, ALeafBeforeRoutedTreesRefusesTheJoinAsMalformed) {
  EngineConfig c;
  c.has_parent = true;
  c.routed_trees = false;
  RecordingOutput out;
  ReducePool pool(1);
  AggregationEngine e(
      c,
      [](const LeaseToken&) {
        return std::optional<LeaseInfo>(LeaseInfo{"job1", 4});
      },
      out, pool);
  Message j = clientMessage(MsgType::kJoin, tokenOf(1), 7, 0);
  j.size = 1;
  j.flags =
      wire::kJoinFlagBusy | wire::kJoinFlagTree | wire::kJoinFlagRouted | wire::kJoinFlagTreeRouted;
  j.parent_token = tokenOf(2);
  j.tree_size = 2;
  wire::Frame f = wire::encode(j);
  e.onMessage(1, f.header.data(), f.header_bytes, f.body.data(), f.body.size(), 1000);
  auto errs = out.take(MsgType::kError);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].msg.reason, Reason::kMalformed);
  EXPECT_EQ(e.liveGroups(), 0u);
}

TEST_F(EngineTreeRoutedTest, ATreeJoinWithRoutedAloneServesNoRoutedCalls) {
  join_flags_ = wire::kJoinFlagBusy | wire::kJoinFlagTree | wire::kJoinFlagRouted;
  const uint32_t w = formTree(1, 1);
  ASSERT_GT(w, 0u);
  route(0, 0, 0, w, {wire::kModeReduce, false, 0, 0, 0, 1}, 1, 1, {1.f});
  expectAborted(0, 1, Reason::kRouteMismatch, "did not all join for routed calls");
}

TEST(WireTreeRouted, UpRangeRoundTripsAndBadCombinationsAreMalformed) {
  Message m;
  m.type = MsgType::kContribRouted;
  m.rank = 1;
  m.count = m.call_elems = 2;
  m.dtype = Dtype::kFloat32;
  m.mode = wire::kModeReduce;
  m.route_flags = wire::kRouteUp | wire::kRouteNoDest;
  m.up_lo = 3;
  m.up_hi = 4095;
  const std::vector<uint8_t> body(8, 0);
  auto decode = [&](const Message& x, size_t bytes, Message* d) {
    const wire::Frame f = wire::encode(x);
    return wire::decode(f.header.data(), f.header_bytes, body.data(), bytes, d);
  };
  Message d;
  ASSERT_EQ(decode(m, 8, &d), Reason::kNone);
  EXPECT_EQ(d.route_flags, m.route_flags);
  EXPECT_EQ(d.up_lo, 3u);
  EXPECT_EQ(d.up_hi, 4095u);
  // A tree member never keeps its part: no header-only reduce chunk.
  m.route_flags = wire::kRouteUp;
  EXPECT_EQ(decode(m, 0, &d), Reason::kMalformed);
  // No destination without an up-range; destinations with "none"; up_lo > up_hi.
  m.route_flags = wire::kRouteNoDest;
  EXPECT_EQ(decode(m, 8, &d), Reason::kMalformed);
  m.route_flags = wire::kRouteUp | wire::kRouteNoDest;
  m.dest_hi = 1;
  EXPECT_EQ(decode(m, 8, &d), Reason::kMalformed);
  m.dest_hi = 0;
  m.up_lo = 5;
  m.up_hi = 4;
  EXPECT_EQ(decode(m, 8, &d), Reason::kMalformed);
  m.route_flags = 4;  // unknown flag
  m.up_lo = m.up_hi = 0;
  EXPECT_EQ(decode(m, 8, &d), Reason::kMalformed);
}

}  // namespace
}  // namespace switchagg::agent::testing
