// PeerGroup tag slots (label ucx, one process, real UCX): a group id that
// shares its default slot with a live group is refused, an explicit slot
// agreed from every member's busy mask works beside it, and a destroyed
// group gives its slot back.
#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <vector>

#include "switchagg/ucx/transport.h"

namespace switchagg::ucx {
namespace {

using Mask = std::array<uint64_t, 2>;

bool busy(const Mask& m, int slot) { return (m[slot / 64] >> (slot % 64)) & 1; }

TEST(GroupSlots, FirstCommonFreeSlotSkipsSlotsBusyAnywhere) {
  EXPECT_EQ(PeerGroup::firstCommonFreeSlot({}), 1);
  EXPECT_EQ(PeerGroup::firstCommonFreeSlot({{1, 0}, {1, 0}}), 1);
  // Slot 1 busy on rank 0 only, slot 2 on rank 1 only: 3 is the first free on both.
  EXPECT_EQ(PeerGroup::firstCommonFreeSlot({{0b011, 0}, {0b101, 0}}), 3);
  // Everything below 100 busy somewhere: the answer lives in the second word.
  Mask low{~uint64_t(0), (uint64_t(1) << 36) - 1};
  EXPECT_EQ(PeerGroup::firstCommonFreeSlot({low, {1, 0}}), 100);
  // All 127 slots busy: none.
  Mask full{~uint64_t(0), ~uint64_t(0)};
  EXPECT_EQ(PeerGroup::firstCommonFreeSlot({{1, 0}, full}), 0);
}

// Communicators set up by different threads at once search from different
// slots (the component starts at 1 + cid % 127) and wrap round.
TEST(GroupSlots, FirstCommonFreeSlotSearchesFromStartAndWraps) {
  EXPECT_EQ(PeerGroup::firstCommonFreeSlot({{1, 0}, {1, 0}}, 5), 5);
  EXPECT_EQ(PeerGroup::firstCommonFreeSlot({{1 | (1u << 5), 0}, {1, 0}}, 5), 6);
  // Slots 126 and 127 busy: the search from 126 wraps to 1.
  Mask top{1, uint64_t(3) << 62};
  EXPECT_EQ(PeerGroup::firstCommonFreeSlot({top}, 126), 1);
  // Out of range starts behave like 1.
  EXPECT_EQ(PeerGroup::firstCommonFreeSlot({{1, 0}}, 0), 1);
  EXPECT_EQ(PeerGroup::firstCommonFreeSlot({{1, 0}}, 500), 1);
}

class GroupSlotsOnWorker : public ::testing::Test {
 protected:
  void SetUp() override {
    auto options = TransportOptions::fromEnvironment();
    ASSERT_TRUE(options.ok()) << options.status().toString();
    auto context = Context::create(*options);
    ASSERT_TRUE(context.ok()) << context.status().toString();
    context_ = std::move(context.value());
    auto worker = Worker::create(*context_);
    ASSERT_TRUE(worker.ok()) << worker.status().toString();
    worker_ = std::move(worker.value());
  }
  Result<std::unique_ptr<PeerGroup>> group(uint32_t id, int slot = 0) {
    return PeerGroup::create(*worker_, id, 0, {worker_->address()}, slot);
  }
  std::unique_ptr<Context> context_;
  std::unique_ptr<Worker> worker_;
};

TEST_F(GroupSlotsOnWorker, CollidingIdsGetDistinctAgreedSlots) {
  EXPECT_EQ(worker_->busyGroupSlots(), (Mask{1, 0}));
  auto first = group(1);  // default slot 1 + 1 % 127 = 2
  ASSERT_TRUE(first.ok()) << first.status().toString();
  EXPECT_TRUE(busy(worker_->busyGroupSlots(), 2));

  // 128 % 127 == 1: the old fixed mapping puts it into the same slot.
  auto clash = group(128);
  ASSERT_FALSE(clash.ok());
  EXPECT_NE(clash.status().toString().find("tag slot 2"), std::string::npos)
      << clash.status().toString();

  const int slot = PeerGroup::firstCommonFreeSlot({worker_->busyGroupSlots()});
  EXPECT_EQ(slot, 1);
  auto second = group(128, slot);
  ASSERT_TRUE(second.ok()) << second.status().toString();
  EXPECT_TRUE(busy(worker_->busyGroupSlots(), 1));

  // Both groups carry traffic (a message to self) without crossing over.
  int a = 11, b = 22, ra = 0, rb = 0;
  Request sa, sb, qa, qb;
  ASSERT_TRUE((*first)->irecv(0, 5, &ra, sizeof ra, qa).ok());
  ASSERT_TRUE((*second)->irecv(0, 5, &rb, sizeof rb, qb).ok());
  ASSERT_TRUE((*second)->isend(0, 5, &b, sizeof b, sb).ok());
  ASSERT_TRUE((*first)->isend(0, 5, &a, sizeof a, sa).ok());
  ASSERT_TRUE(worker_->waitAll({&sa, &sb, &qa, &qb}, 10000).ok());
  EXPECT_EQ(ra, 11);
  EXPECT_EQ(rb, 22);

  first->reset();
  EXPECT_FALSE(busy(worker_->busyGroupSlots(), 2));
  EXPECT_TRUE(busy(worker_->busyGroupSlots(), 1));
}

TEST_F(GroupSlotsOnWorker, SlotOutsideRangeIsRefused) {
  auto bad = group(3, PeerGroup::kMaxSlot + 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().toString().find("outside 1..127"), std::string::npos)
      << bad.status().toString();
}

}  // namespace
}  // namespace switchagg::ucx
