// Routed chunks (CONTRIB_ROUTED): reduced or forwarded, the payload only to
// members [dest_lo, dest_hi], a header-only RESULT to the others; members
// must agree on the route, forwarded pieces must tile the chunk in rank
// order; an agent acting as one before routed calls refuses them as such.
#include <cstring>

#include "test_data_engine_fixture.h"

namespace switchagg::agent::testing {
namespace {

using wire::MsgType;
using wire::Reason;

constexpr uint32_t kRoutedFlags = wire::kJoinFlagBusy | wire::kJoinFlagRouted;

// A one-element int32 reduce chunk of group `gid`, rank 0.
wire::Message oneIntChunk(const wire::Token& t, uint64_t gid) {
  wire::Message m = clientMessage(MsgType::kContribRouted, t, gid);
  m.dtype = Dtype::kInt32;
  m.op = Op::kSum;
  m.mode = wire::kModeReduce;
  m.count = 1;
  m.call_elems = 1;
  return m;
}

class EngineRoutedTest : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    t_ = addLease(1, "job1", 4);
    ASSERT_EQ(formGroup(t_, 1, 3, 1, 1, kRoutedFlags), 1u);  // window 1: one chunk at a time
  }
  // Member `rank` (peer rank + 1) sends chunk `chunk` of a call of
  // `call_elems` int32 elements; `data` is the chunk (reduce) or its piece.
  void routed(uint32_t rank, uint64_t chunk, uint8_t mode, uint32_t lo, uint32_t hi,
              const std::vector<int32_t>& data, uint32_t count, uint32_t piece_offset = 0,
              uint64_t call_elems = 0) {
    wire::Message m = clientMessage(MsgType::kContribRouted, t_, 1, rank);
    m.chunk = chunk;
    m.slot = 0;
    m.dtype = Dtype::kInt32;
    m.op = Op::kSum;
    m.mode = mode;
    m.dest_lo = lo;
    m.dest_hi = hi;
    m.piece_offset = piece_offset;
    m.count = count;
    m.call_elems = call_elems ? call_elems : count;
    const std::vector<uint8_t> bytes = bytesOf(data);
    deliver(1 + rank, m, bytes.empty() ? nullptr : bytes.data(), bytes.size());
  }
  // The RESULTs of one chunk, by peer.
  std::map<PeerId, Sent> results() {
    std::map<PeerId, Sent> by_peer;
    for (auto& s : out_.take(MsgType::kResult)) by_peer[s.to] = s;
    return by_peer;
  }
  static std::vector<int32_t> ints(const Sent& s) {
    std::vector<int32_t> v(s.payload.size() / 4);
    if (!v.empty()) std::memcpy(v.data(), s.payload.data(), s.payload.size());
    return v;
  }
  wire::Token t_;
};

TEST_F(EngineRoutedTest, ReducedChunkGoesOnlyToItsDestinationsOthersGetTheHeader) {
  // Reduce to rank 1: every member gives the chunk, only rank 1 gets the sum.
  for (uint32_t r = 0; r < 3; ++r)
    routed(r, 0, wire::kModeReduce, 1, 1, {int32_t(r), int32_t(10 * r)}, 2);
  pump();
  auto res = results();
  ASSERT_EQ(res.size(), 3u);
  EXPECT_EQ(ints(res[2]), (std::vector<int32_t>{3, 30}));
  EXPECT_EQ(res[2].msg.result_flags, 0u);
  for (PeerId p : {PeerId(1), PeerId(3)}) {
    EXPECT_TRUE(res[p].payload.empty());
    EXPECT_EQ(res[p].msg.result_flags, wire::kResultNoPayload);
    EXPECT_EQ(res[p].msg.count, 2u);  // the chunk it stands for
  }
  // Reduce-scatter style: the next call's chunk to ranks 0..1 (rank 2's
  // block starts later), the slot was freed by every member's result.
  for (uint32_t r = 0; r < 3; ++r) routed(r, 1, wire::kModeReduce, 0, 1, {1, 2}, 2);
  pump();
  res = results();
  EXPECT_EQ(ints(res[1]), (std::vector<int32_t>{3, 6}));
  EXPECT_EQ(ints(res[2]), (std::vector<int32_t>{3, 6}));
  EXPECT_TRUE(res[3].payload.empty());
  EXPECT_TRUE(out_.take(MsgType::kAbort).empty());
  EXPECT_EQ(engine_->counters().bytes_out, 8u + 16u);  // payload bytes to destinations only
}

TEST_F(EngineRoutedTest, ForwardedPiecesAreAssembledInRankOrderAndSentToAll) {
  // Allgather-like: a 5-element chunk, rank 0 owns [0,2), rank 1 none, rank 2 [2,5).
  routed(2, 0, wire::kModeForward, 0, 2, {20, 21, 22}, 5, 2);
  routed(1, 0, wire::kModeForward, 0, 2, {}, 5);
  routed(0, 0, wire::kModeForward, 0, 2, {0, 1}, 5, 0);
  pump();
  auto res = results();
  ASSERT_EQ(res.size(), 3u);
  for (auto& [peer, s] : res) {
    EXPECT_EQ(ints(s), (std::vector<int32_t>{0, 1, 20, 21, 22})) << "peer " << peer;
    EXPECT_EQ(s.msg.result_flags, wire::kResultForward);
  }
  EXPECT_EQ(engine_->counters().bytes_in, 20u);  // pieces only: 2 + 0 + 3 elements
  EXPECT_EQ(engine_->counters().bytes_reduced, 0u);
  // Bcast-like: rank 1 forwards the whole next chunk; it gets the header
  // only (it has the data), the others the payload.
  for (uint32_t r = 0; r < 3; ++r)
    routed(r, 1, wire::kModeForward, 0, 2, r == 1 ? std::vector<int32_t>{7, 8} : std::vector<int32_t>{}, 2);
  pump();
  res = results();
  EXPECT_EQ(ints(res[1]), (std::vector<int32_t>{7, 8}));
  EXPECT_EQ(ints(res[3]), (std::vector<int32_t>{7, 8}));
  EXPECT_TRUE(res[2].payload.empty());
  EXPECT_EQ(res[2].msg.result_flags, wire::kResultForward | wire::kResultNoPayload);
}

TEST_F(EngineRoutedTest, TheSoleDestinationMayKeepItsPartOthersMayNot) {
  // Reduce to rank 1, which keeps its own part: the result is ranks 0 + 2.
  routed(0, 0, wire::kModeReduce, 1, 1, {1, 2}, 2);
  routed(1, 0, wire::kModeReduce, 1, 1, {}, 2);
  routed(2, 0, wire::kModeReduce, 1, 1, {10, 20}, 2);
  pump();
  auto res = results();
  EXPECT_EQ(ints(res[2]), (std::vector<int32_t>{11, 22}));
  EXPECT_TRUE(res[1].payload.empty());
  EXPECT_TRUE(res[3].payload.empty());
  // Rank 0 is not the chunk's sole destination: an empty reduce chunk from
  // it is undecodable (ERROR malformed, nothing changes).
  routed(0, 1, wire::kModeReduce, 1, 1, {}, 2);
  auto errs = out_.take(MsgType::kError);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].msg.reason, Reason::kMalformed);
  EXPECT_TRUE(out_.take(MsgType::kAbort).empty());
}

TEST_F(EngineRoutedTest, PiecesThatDoNotTileTheChunkAbortTheGroup) {
  routed(0, 0, wire::kModeForward, 0, 2, {0, 1}, 4, 0);
  routed(1, 0, wire::kModeForward, 0, 2, {5}, 4, 1);  // overlaps rank 0's piece
  routed(2, 0, wire::kModeForward, 0, 2, {9}, 4, 3);
  auto aborts = out_.take(MsgType::kAbort);
  ASSERT_EQ(aborts.size(), 3u);
  EXPECT_EQ(aborts[0].msg.reason, Reason::kRouteMismatch);
  EXPECT_NE(aborts[0].msg.text.find("rank 1's piece starts at element 1"), std::string::npos)
      << aborts[0].msg.text;
  EXPECT_TRUE(out_.take(MsgType::kResult).empty());
}

TEST_F(EngineRoutedTest, MembersDisagreeingOnDestinationsAbortTheGroup) {
  routed(0, 0, wire::kModeReduce, 0, 0, {1}, 1);
  routed(1, 0, wire::kModeReduce, 0, 2, {1}, 1);
  auto aborts = out_.take(MsgType::kAbort);
  ASSERT_FALSE(aborts.empty());
  EXPECT_EQ(aborts[0].msg.reason, Reason::kRouteMismatch);
  EXPECT_NE(aborts[0].msg.text.find("routes chunk 0"), std::string::npos) << aborts[0].msg.text;
}

TEST_F(EngineRoutedTest, DestinationsBeyondTheGroupAbortIt) {
  routed(0, 0, wire::kModeReduce, 1, 3, {1}, 1);
  auto aborts = out_.take(MsgType::kAbort);
  ASSERT_FALSE(aborts.empty());
  EXPECT_EQ(aborts[0].msg.reason, Reason::kRouteMismatch);
}

TEST_F(EngineRoutedTest, RoutedChunksInAGroupJoinedWithoutTheFlagAreRefused) {
  // Group 2 joined by clients that did not say they route (busy flag only).
  ASSERT_EQ(formGroup(t_, 2, 2, 10, 1, wire::kJoinFlagBusy), 1u);
  const wire::Message m = oneIntChunk(t_, 2);
  const int32_t one = 1;
  deliver(10, m, &one, sizeof one);
  auto aborts = out_.take(MsgType::kAbort);
  ASSERT_EQ(aborts.size(), 2u);
  EXPECT_EQ(aborts[0].msg.reason, Reason::kRouteMismatch);
}

class EngineRoutedOlderTest : public EngineTest {};

TEST_F(EngineRoutedOlderTest, AnAgentBeforeRoutedCallsRefusesTheFlagAndTheType) {
  EngineConfig c;
  c.routed = false;
  makeEngine(c);
  const wire::Token t = addLease(2, "old", 2);
  join(1, t, 5, 1, 0, 0, kRoutedFlags);
  auto errs = out_.take(MsgType::kError);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].msg.reason, Reason::kMalformed);  // the client retries without
  EXPECT_TRUE(out_.take(MsgType::kJoinAck).empty());
  join(1, t, 5, 1, 0, 0, wire::kJoinFlagBusy);
  EXPECT_EQ(out_.take(MsgType::kJoinAck).size(), 1u);
  const wire::Message m = oneIntChunk(t, 5);
  const int32_t one = 1;
  deliver(1, m, &one, sizeof one);
  errs = out_.take(MsgType::kError);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].msg.reason, Reason::kBadType);
}

}  // namespace
}  // namespace switchagg::agent::testing
