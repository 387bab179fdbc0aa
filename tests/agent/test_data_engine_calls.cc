// Per-call slot use: a group holds its lease's slots only while one of its
// calls runs; a call that finds them taken is refused with ERROR(busy)
// (never waited for), its chunks dropped, and the group lives on with its
// chunk numbering in step with the client's.
#include <cstring>

#include "test_data_engine_fixture.h"

namespace switchagg::agent::testing {
namespace {

using wire::MsgType;
using wire::Reason;

// Two groups of one lease whose slots are exactly one window (W = 2); each
// group has 2 members (group 1: peers 1, 2; group 2: peers 3, 4). A call
// here is 2 chunks of 2 int32 (call_elems 4).
class EngineCallsTest : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    t_ = addLease(1, "job1", 2);
    ASSERT_EQ(formGroup(t_, 1, 2, 1), 2u);
    ASSERT_EQ(formGroup(t_, 2, 2, 3), 2u);
  }
  static PeerId peer(uint64_t gid, uint32_t rank) { return gid == 1 ? 1 + rank : 3 + rank; }
  void send(uint64_t gid, uint32_t rank, uint64_t chunk, int32_t v) {
    contrib(peer(gid, rank), t_, gid, rank, chunk, 2, Dtype::kInt32, Op::kSum,
            bytesOf(std::vector<int32_t>{v, v + 1}), 4);
  }
  // Both ranks send both chunks of the call starting at `base`; expects the
  // 4 results (2 chunks x 2 members) right, numbered base, base + 1.
  void fullCall(uint64_t gid, uint64_t base, int32_t v) {
    for (uint64_t c = base; c < base + 2; ++c)
      for (uint32_t r = 0; r < 2; ++r) send(gid, r, c, v + int32_t(10 * r));
    pump();
    expectResults(gid, base, v);
  }
  void expectResults(uint64_t gid, uint64_t base, int32_t v) {
    auto res = out_.take(MsgType::kResult);
    ASSERT_EQ(res.size(), 4u);
    for (auto& r : res) {
      EXPECT_EQ(r.msg.group_id, gid);
      EXPECT_TRUE(r.msg.chunk == base || r.msg.chunk == base + 1) << r.msg.chunk;
      int32_t got[2];
      std::memcpy(got, r.payload.data(), sizeof got);
      EXPECT_EQ(got[0], 2 * v + 10);
      EXPECT_EQ(got[1], 2 * v + 12);
    }
  }
  std::vector<Sent> busyTo(PeerId p) {
    std::vector<Sent> out;
    for (auto& e : out_.take(MsgType::kError)) {
      EXPECT_EQ(e.msg.reason, Reason::kBusy) << e.msg.text;
      EXPECT_EQ(e.to, p);
      out.push_back(e);
    }
    return out;
  }
  wire::Token t_;
};

TEST_F(EngineCallsTest, SequentialCallsOfTwoGroupsShareOneWindowOfSlots) {
  for (int round = 0; round < 3; ++round) {
    fullCall(1, 2 * uint64_t(round), 100 + round);
    EXPECT_EQ(engine_->counters().slots_reserved, 0u);  // given back with the last result
    fullCall(2, 2 * uint64_t(round), 200 + round);
    EXPECT_EQ(engine_->counters().slots_reserved, 0u);
  }
  EXPECT_TRUE(out_.take(MsgType::kError).empty());
  EXPECT_TRUE(out_.take(MsgType::kAbort).empty());
  EXPECT_EQ(engine_->counters().chunks_reduced, 12u);
}

TEST_F(EngineCallsTest, ConcurrentCallIsRefusedBusyAndTheGroupServesItsNextCall) {
  send(1, 0, 0, 1);  // group 1's call holds the lease's 2 slots
  EXPECT_EQ(engine_->counters().slots_reserved, 2u);
  send(2, 0, 0, 5);  // group 2's call begins: nothing free
  auto busy = busyTo(3);
  ASSERT_EQ(busy.size(), 1u);
  EXPECT_EQ(busy[0].msg.group_id, 2u);
  EXPECT_EQ(busy[0].msg.chunk, 0u);
  send(2, 0, 1, 5);  // the same member's in-flight chunk: dropped, told once
  EXPECT_TRUE(out_.take(MsgType::kError).empty());
  send(2, 1, 0, 5);  // the other member is told too, once
  ASSERT_EQ(busyTo(4).size(), 1u);
  send(2, 1, 1, 5);
  EXPECT_TRUE(out_.take(MsgType::kError).empty());
  EXPECT_EQ(engine_->counters().rejected["busy"], 2u);

  // Group 1's call is untouched by it.
  send(1, 1, 0, 1);
  send(1, 0, 1, 1);
  send(1, 1, 1, 1);
  pump();
  auto res = out_.take(MsgType::kResult);
  ASSERT_EQ(res.size(), 4u);
  EXPECT_EQ(engine_->counters().slots_reserved, 0u);

  // Group 2 lives on; its next call starts after the refused chunk range.
  fullCall(2, 2, 7);
  EXPECT_TRUE(out_.take(MsgType::kAbort).empty());
  EXPECT_EQ(engine_->counters().groups_aborted, 0u);
  EXPECT_EQ(engine_->counters().slots_busy, 0u);
}

// A refused call's chunks arriving late - after some member moved on to the
// next call, even after that call took the slots - are dropped, never taken
// for the next call's chunks (which share their slots).
TEST_F(EngineCallsTest, LateChunksOfARefusedCallAreDroppedNotMistakenForTheNext) {
  send(1, 0, 0, 1);  // group 1 active
  send(2, 0, 0, 5);  // group 2's call [0, 2) refused for rank 0
  ASSERT_EQ(busyTo(3).size(), 1u);
  send(1, 1, 0, 1);
  send(1, 0, 1, 1);
  send(1, 1, 1, 1);
  pump();
  out_.take(MsgType::kResult);
  // Rank 0 of group 2 goes on to the next call (chunks 2, 3): it activates.
  send(2, 0, 2, 7);
  send(2, 0, 3, 7);
  EXPECT_EQ(engine_->counters().slots_reserved, 2u);
  // Rank 1 only now sends the refused call's chunks (slots 0 and 1, like 2, 3).
  send(2, 1, 0, 5);
  ASSERT_EQ(busyTo(4).size(), 1u);
  send(2, 1, 1, 5);
  EXPECT_TRUE(out_.take(MsgType::kError).empty());
  EXPECT_TRUE(out_.take(MsgType::kResult).empty());
  send(2, 1, 2, 17);
  send(2, 1, 3, 17);
  pump();
  expectResults(2, 2, 7);
  EXPECT_TRUE(out_.take(MsgType::kAbort).empty());
  fullCall(2, 4, 9);  // numbering still in step
  fullCall(1, 2, 3);
}

TEST_F(EngineCallsTest, SlotMemoryIsKeptWhileIdleAndReturnsToZeroAfterLeave) {
  EXPECT_EQ(engine_->slotMemory(), 0u);  // nothing allocated at formation
  fullCall(1, 0, 1);
  const size_t one = engine_->slotMemory();
  EXPECT_EQ(one, size_t(2) * 3 * config_.slot_bytes);  // window x (members + 1) x chunk
  fullCall(2, 0, 1);
  EXPECT_EQ(engine_->slotMemory(), 2 * one);  // both kept: the budget allows
  fullCall(1, 2, 2);
  EXPECT_EQ(engine_->slotMemory(), 2 * one);  // reused, not reallocated
  for (uint64_t gid : {uint64_t(1), uint64_t(2)})
    for (uint32_t r = 0; r < 2; ++r)
      deliver(peer(gid, r), clientMessage(MsgType::kLeave, t_, gid, r));
  EXPECT_EQ(engine_->liveGroups(), 0u);
  EXPECT_EQ(engine_->slotMemory(), 0u);
  EXPECT_EQ(engine_->counters().slots_reserved, 0u);
  EXPECT_EQ(engine_->counters().groups_aborted, 0u);
}

// A memory budget of one group's buffers: an idle group's are reclaimed for
// another's call; while a call holds them the other call is refused busy.
TEST_F(EngineCallsTest, IdleBuffersAreReclaimedAndMemoryRefusesBusy) {
  EngineConfig c;
  c.memory_bytes = 2 * 3 * 64 * 1024;  // window 2 x (2 members + 1) x 64 KiB
  c.slot_bytes = 64 * 1024;
  makeEngine(c);
  t_ = addLease(1, "job1", 8);  // lease slots are not the limit here
  ASSERT_EQ(formGroup(t_, 1, 2, 1, 2), 2u);
  ASSERT_EQ(formGroup(t_, 2, 2, 3, 2), 2u);
  fullCall(1, 0, 1);
  EXPECT_EQ(engine_->slotMemory(), c.memory_bytes);
  fullCall(2, 0, 2);  // group 1's idle buffers make room
  EXPECT_EQ(engine_->slotMemory(), c.memory_bytes);
  send(2, 0, 2, 3);   // group 2 active, holding the memory
  send(1, 0, 2, 4);   // group 1's call: no memory free right now
  ASSERT_EQ(busyTo(1).size(), 1u);
  EXPECT_EQ(engine_->counters().slots_reserved, 2u);  // the refused call took none
  send(2, 1, 2, 13);
  send(2, 0, 3, 3);
  send(2, 1, 3, 13);
  pump();
  expectResults(2, 2, 3);
  fullCall(1, 4, 5);
  EXPECT_EQ(engine_->slotMemory(), c.memory_bytes);
  EXPECT_TRUE(out_.take(MsgType::kAbort).empty());
}

// Slot memory counts what is really held (issue 43 §3): a group that ends
// while sends still read its results (a member that does not take them: a
// stopped process) keeps those buffers in the budget until the sends let
// go, so a new call is refused busy rather than allocated past it; the
// memory is free again once the sends end (the data plane cancels a
// stalled member's sends after data.member_timeout).
TEST_F(EngineCallsTest, BuffersHeldBySendsOfAGoneGroupStayInTheBudget) {
  EngineConfig c;
  c.memory_bytes = 2 * 3 * 64 * 1024;  // one group's buffers: window 2 x (2 + 1) x 64 KiB
  c.slot_bytes = 64 * 1024;
  makeEngine(c);
  t_ = addLease(1, "job1", 8);
  ASSERT_EQ(formGroup(t_, 1, 2, 1, 2), 2u);
  for (uint64_t chunk = 0; chunk < 2; ++chunk)
    for (uint32_t r = 0; r < 2; ++r) send(1, r, chunk, 1);
  engine_->reduceReady();  // results sent, the sends not done
  ASSERT_EQ(out_.take(MsgType::kResult).size(), 4u);
  ASSERT_FALSE(out_.pending.empty());
  for (uint32_t r = 0; r < 2; ++r) deliver(peer(1, r), clientMessage(MsgType::kLeave, t_, 1, r));
  ASSERT_EQ(engine_->liveGroups(), 0u);
  EXPECT_EQ(engine_->slotMemory(), c.memory_bytes) << "the sends still hold the buffers";
  EXPECT_EQ(engine_->counters().slot_memory_bytes, c.memory_bytes);
  ASSERT_EQ(formGroup(t_, 2, 2, 3, 2), 2u);
  send(2, 0, 0, 3);  // no memory free: refused, never allocated past the budget
  ASSERT_EQ(busyTo(3).size(), 1u);
  EXPECT_EQ(engine_->slotMemory(), c.memory_bytes);
  out_.pending.clear();  // the sends end (done or cancelled): the buffers go
  EXPECT_EQ(engine_->slotMemory(), 0u);
  for (uint32_t r = 0; r < 2; ++r) send(2, r, 1, 3 + int32_t(10 * r));
  send(2, 0, 2, 3);  // group 2's next call: room again
  send(2, 1, 2, 13);
  send(2, 0, 3, 3);
  send(2, 1, 3, 13);
  pump();
  expectResults(2, 2, 3);
  EXPECT_EQ(engine_->slotMemory(), c.memory_bytes);
}

// An older client (JOIN without kJoinFlagBusy) would take an unknown
// reason for a broken agent: its group is aborted with no_resource instead,
// as its join was refused before per-call slots.
TEST_F(EngineCallsTest, OlderClientsGroupIsAbortedNoResourceNotToldBusy) {
  ASSERT_EQ(formGroup(t_, 3, 2, 5, 0, 0), 2u);
  send(1, 0, 0, 1);  // group 1 active
  contrib(5, t_, 3, 0, 0, 2, Dtype::kInt32, Op::kSum, bytesOf(std::vector<int32_t>{1, 2}), 4);
  EXPECT_TRUE(out_.take(MsgType::kError).empty());
  auto aborts = out_.take(MsgType::kAbort);
  ASSERT_EQ(aborts.size(), 2u);
  EXPECT_EQ(aborts[0].msg.reason, Reason::kNoResource);
  EXPECT_NE(aborts[0].msg.text.find("limit: lease"), std::string::npos) << aborts[0].msg.text;
  EXPECT_EQ(engine_->liveGroups(), 2u);
}

TEST_F(EngineCallsTest, ACallMustStartWhereTheLastOneEnded) {
  fullCall(1, 0, 1);
  send(1, 0, 5, 1);  // skips chunks 2..4
  auto aborts = out_.take(MsgType::kAbort);
  ASSERT_EQ(aborts.size(), 2u);
  EXPECT_EQ(aborts[0].msg.reason, Reason::kChunkOutOfWindow);
  EXPECT_EQ(engine_->counters().slots_reserved, 0u);
}

}  // namespace
}  // namespace switchagg::agent::testing
