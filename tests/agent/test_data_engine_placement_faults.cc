// Contributions received straight into their slot (engine_placement.cc)
// under faults: docs/agent-protocol.md "Received into the slot", one test
// per numbered case. The engine is driven as the data plane drives it: a
// rendezvous message's header first (placeContrib), its body written where
// the engine said, then the message (onMessage with the cookie) or the end
// of a failed receive (releasePlacement).
#include <cstring>

#include "test_data_engine_fixture.h"

namespace switchagg::agent::testing {
namespace {

using wire::MsgType;
using wire::Reason;

class PlacementFaultTest : public EngineTest {
 protected:
  static constexpr size_t kCount = 2048;  // 8 KiB of int32: above kPlacedMinBytes

  void SetUp() override {
    EngineTest::SetUp();
    t_ = addLease(1, "jobA", 1);
    ASSERT_EQ(formGroup(t_, 7, 2, 1, 1), 1u);  // peers 1, 2; a window of one slot
  }

  std::vector<int32_t> values(int32_t v) const { return std::vector<int32_t>(kCount, v); }

  // Rank `rank`'s chunk `chunk` of a call of two.
  wire::Frame chunkFrame(uint32_t rank, uint64_t chunk) {
    return wire::encode(contribMessage(t_, 7, rank, chunk, 1, Dtype::kInt32, Op::kSum,
                                       kCount * sizeof(int32_t), 2 * kCount));
  }

  // Member 0's chunk 0 in (it admits the call), member 1's being received
  // into its slot.
  AggregationEngine::Placement receiving() {
    eager(0, 0, 3);
    const auto at = place(1, 0);
    EXPECT_NE(at.data, nullptr);
    EXPECT_NE(at.cookie, 0u);
    return at;
  }

  // Rank `rank`'s chunk as its header arrives by rendezvous: where it lands.
  AggregationEngine::Placement place(uint32_t rank, uint64_t chunk) {
    const wire::Frame f = chunkFrame(rank, chunk);
    return engine_->placeContrib(1 + rank, f.header.data(), f.header_bytes,
                                 kCount * sizeof(int32_t));
  }

  // The receive completed: the body is there (`v`), the message delivered.
  void land(uint32_t rank, uint64_t chunk, const AggregationEngine::Placement& at, int32_t v) {
    const std::vector<int32_t> body = values(v);
    std::memcpy(at.data, body.data(), kCount * sizeof(int32_t));
    const wire::Frame f = chunkFrame(rank, chunk);
    engine_->onMessage(1 + rank, f.header.data(), f.header_bytes, at.data,
                       kCount * sizeof(int32_t), now_, at.cookie);
  }

  // The receive completes after its group went: refused, nothing reduced,
  // nothing held any more.
  void landRefused(const AggregationEngine::Placement& at) {
    land(1, 0, at, 4);
    engine_->reduceReady();
    EXPECT_TRUE(out_.take(MsgType::kResult).empty());
    EXPECT_EQ(engine_->placementsInFlight(), 0u);
    EXPECT_EQ(engine_->slotMemory(), 0u);
  }

  void eager(uint32_t rank, uint64_t chunk, int32_t v) {
    contrib(1 + rank, t_, 7, rank, chunk, 1, Dtype::kInt32, Op::kSum, bytesOf(values(v)),
            2 * kCount);
  }

  wire::Token t_;
};

// The path itself: the second member's chunk lands in its slot buffer and
// the result is the sum (the first member's admitted the call: copied).
TEST_F(PlacementFaultTest, AChunkReceivedIntoItsSlotIsReducedWithoutACopy) {
  const auto at = receiving();
  ASSERT_NE(at.data, nullptr);
  ASSERT_NE(at.cookie, 0u);
  land(1, 0, at, 4);
  pump();
  auto res = out_.take(MsgType::kResult);
  ASSERT_EQ(res.size(), 2u);
  EXPECT_EQ(valuesOf<int32_t>(res[0]), values(7));
  EXPECT_EQ(engine_->counters().bytes_placed, kCount * sizeof(int32_t));
  EXPECT_EQ(engine_->placementsInFlight(), 0u);
}

// Case 1: a duplicate cannot land in a slot being folded. Only the chunk
// the slot collects now is placed, once per member: not a second time
// while the first receive is in flight, not after the member's chunk is
// in, not a later chunk; a twin that comes by another way while the
// receive is in flight aborts the group before anything is reduced.
TEST_F(PlacementFaultTest, Case1ADuplicateWhileTheReceiveIsInFlightIsRefusedBeforeAnyFold) {
  eager(0, 0, 3);
  EXPECT_EQ(place(0, 0).data, nullptr) << "member 0's chunk 0 is in already";
  EXPECT_EQ(place(1, 1).data, nullptr) << "chunk 1 is not the slot's turn";
  const auto at = place(1, 0);
  ASSERT_NE(at.data, nullptr);
  EXPECT_EQ(place(1, 0).data, nullptr) << "a receive into that buffer is in flight";
  eager(1, 0, 99);  // its twin, eagerly, while the receive is in flight
  engine_->reduceReady();
  EXPECT_TRUE(out_.take(MsgType::kResult).empty()) << "the twin was reduced";
  auto aborts = out_.take(MsgType::kAbort);
  ASSERT_EQ(aborts.size(), 2u);
  EXPECT_EQ(aborts[0].msg.reason, Reason::kDuplicateContribution);
  landRefused(at);  // the group is gone
}

// Case 2: a revoked (aborted) group while a receive into its slot is in
// flight: the buffer stays allocated and counted in the slot memory until
// the receive ends; then it goes.
TEST_F(PlacementFaultTest, Case2ARevokedGroupKeepsTheBufferAliveAndCountedUntilTheReceiveEnds) {
  const auto at = receiving();
  ASSERT_NE(at.data, nullptr);
  const size_t held = engine_->slotMemory();
  ASSERT_GT(held, 0u);
  engine_->revokeLease(t_, "revoked by the test");
  ASSERT_EQ(out_.take(MsgType::kAbort).size(), 2u);
  EXPECT_EQ(engine_->liveGroups(), 0u);
  EXPECT_EQ(engine_->slotMemory(), held) << "the buffer UCX writes into was let go";
  landRefused(at);  // UCX wrote it and completed: handled as a chunk of no group
}

// Case 3: the member dies mid-receive: its group is aborted, the receive
// ends without a message (releasePlacement), the buffer goes then; the
// group formed again afterwards places and reduces as new.
TEST_F(PlacementFaultTest, Case3AMemberDyingMidReceiveReleasesTheBufferOnceTheReceiveEnds) {
  const auto at = receiving();
  ASSERT_NE(at.data, nullptr);
  engine_->onPeerFailed(2, "killed by the test");
  auto aborts = out_.take(MsgType::kAbort);
  ASSERT_EQ(aborts.size(), 1u);  // member 0; the dead one is not told
  EXPECT_GT(engine_->slotMemory(), 0u);
  engine_->releasePlacement(at.cookie);
  engine_->releasePlacement(at.cookie);  // a second release is ignored
  EXPECT_EQ(engine_->slotMemory(), 0u);
  EXPECT_EQ(engine_->placementsInFlight(), 0u);
  // Peer 2 is gone: the group comes back with peers 1 and 3.
  join(1, t_, 7, 2, 0, 1);
  join(3, t_, 7, 2, 1, 1);
  ASSERT_EQ(out_.take(MsgType::kJoinAck).size(), 2u);
  eager(0, 0, 5);
  const wire::Frame f = chunkFrame(1, 0);
  const auto again = engine_->placeContrib(3, f.header.data(), f.header_bytes,
                                           kCount * sizeof(int32_t));
  ASSERT_NE(again.data, nullptr);
  const std::vector<int32_t> body = values(6);
  std::memcpy(again.data, body.data(), kCount * sizeof(int32_t));
  engine_->onMessage(3, f.header.data(), f.header_bytes, again.data, kCount * sizeof(int32_t),
                     now_, again.cookie);
  pump();
  auto res = out_.take(MsgType::kResult);
  ASSERT_EQ(res.size(), 2u);
  EXPECT_EQ(valuesOf<int32_t>(res[0]), values(11));
}

// Case 4: a chunk for a group the agent no longer has (here its lease
// expired during the receive): the delivered message is refused as any
// chunk of no group, the buffer goes with it; a header that comes after the
// group went is not placed at all.
TEST_F(PlacementFaultTest, Case4AChunkForAGroupTheAgentNoLongerHasIsNeitherPlacedNorReduced) {
  const auto at = receiving();
  ASSERT_NE(at.data, nullptr);
  leases_.erase(t_);
  now_ += 10000;
  engine_->tick(now_);  // the lease re-check finds it gone: the group is aborted
  ASSERT_EQ(out_.take(MsgType::kAbort).size(), 2u);
  EXPECT_EQ(engine_->liveGroups(), 0u);
  EXPECT_EQ(place(1, 0).data, nullptr) << "placed for a group that is gone";
  EXPECT_GT(engine_->slotMemory(), 0u);
  landRefused(at);
  auto errors = out_.take(MsgType::kError);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].to, 2u);
  EXPECT_EQ(errors[0].msg.reason, Reason::kBadToken);
  EXPECT_EQ(engine_->counters().bytes_placed, 0u);
}

}  // namespace
}  // namespace switchagg::agent::testing
