// Credits at the agent's port (data.inflight_bytes, docs/agent-protocol.md
// "Credits at the agent's port"): the slot pool cuts a group's window (not
// below 2), then its chunk, then the window to 1, so one call's members x
// window x chunk fits the port's bound,
// and refuses a call whose grant would pass what the calls in progress hold.
#include <gtest/gtest.h>

#include <string>

#include "slot_pool.h"

namespace switchagg::agent {
namespace {

constexpr size_t kChunk = 64 * 1024;
constexpr size_t kGiB = size_t{1} << 30;

TEST(SlotPoolCredits, TheWindowIsCutSoOneCallFitsThePortsBound) {
  SlotPool pool(0, kGiB, kChunk);
  pool.setInflightBytes(1 << 20);
  // 8 members asking for 8 chunks would put 4 MiB toward the port: 2 fit.
  const SlotGrant g = pool.plan(8, 8, 8);
  EXPECT_EQ(g.window, 2u);
  EXPECT_EQ(g.slot_bytes, kChunk);
  EXPECT_STREQ(g.limit, "inflight");
  EXPECT_LE(SlotPool::creditFor(g.window, 8, g.slot_bytes), size_t{1} << 20);
  // Without a bound the window is the lease's.
  SlotPool open(0, kGiB, kChunk);
  EXPECT_EQ(open.plan(8, 8, 8).window, 8u);
}

TEST(SlotPoolCredits, TheChunkShrinksAtAWindowOfTwoBeforeTheWindowGoesToOne) {
  SlotPool pool(0, kGiB, kChunk);
  pool.setInflightBytes(256 * 1024);
  // 16 x 64 KiB = 1 MiB > 256 KiB even at a window of 1: the chunk shrinks
  // at a window of 2 (one arriving while the previous result leaves).
  const SlotGrant g = pool.plan(8, 8, 16);
  EXPECT_EQ(g.window, 2u);
  EXPECT_EQ(g.slot_bytes, 8192u);
  EXPECT_STREQ(g.limit, "inflight");
  // 48 members: 2 x 48 x 4 KiB does not fit, 1 x 48 x 5440 B does.
  const SlotGrant one = pool.plan(8, 8, 48);
  EXPECT_EQ(one.window, 1u);
  EXPECT_EQ(one.slot_bytes, 5440u);
  EXPECT_LE(SlotPool::creditFor(one.window, 48, one.slot_bytes), size_t{256} * 1024);
  // A group that asked for one slot keeps it and its whole chunk if it fits.
  const SlotGrant asked = pool.plan(8, 1, 4);
  EXPECT_EQ(asked.window, 1u);
  EXPECT_EQ(asked.slot_bytes, kChunk);
  // Not even 4 KiB per member: refused at formation, the limit named.
  const SlotGrant none = pool.plan(8, 8, 128);
  EXPECT_EQ(none.window, 0u);
  EXPECT_STREQ(none.limit, "inflight");
}

TEST(SlotPoolCredits, ACallPastTheCreditHeldByOthersIsRefusedAndReleasedCreditIsReusable) {
  SlotPool pool(0, kGiB, kChunk);
  pool.setInflightBytes(1 << 20);
  const size_t call = SlotPool::creditFor(2, 4, kChunk);  // 512 KiB
  EXPECT_EQ(pool.acquire("a", 8, 2, call), nullptr);
  EXPECT_EQ(pool.acquire("b", 8, 2, call), nullptr);
  EXPECT_EQ(pool.inflightGranted(), size_t{1} << 20);
  EXPECT_STREQ(pool.acquire("c", 8, 2, call), "inflight");  // never waits
  EXPECT_EQ(pool.reserved(), 4u) << "a refused call took slots";
  pool.releaseSlots("a", 2, call);
  EXPECT_EQ(pool.acquire("c", 8, 2, call), nullptr);
  EXPECT_EQ(pool.inflightGrantedMax(), size_t{1} << 20);
  pool.releaseSlots("b", 2, call);
  pool.releaseSlots("c", 2, call);
  EXPECT_EQ(pool.inflightGranted(), 0u);
}

}  // namespace
}  // namespace switchagg::agent
