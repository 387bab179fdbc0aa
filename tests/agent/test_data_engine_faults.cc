// Aggregation engine under bad input and failures: every rejection is
// counted by reason, a misbehaving or failed member aborts its own group
// (every member told why, slots returned) and never touches another group.
#include <cstring>

#include "test_data_engine_fixture.h"

namespace switchagg::agent::testing {
namespace {

using wire::MsgType;
using wire::Reason;

class EngineFaultTest : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    a_ = addLease(1, "jobA", 2);
    b_ = addLease(2, "jobB", 2);
    ASSERT_EQ(formGroup(a_, 7, 2, 1), 2u);   // job A: peers 1, 2
    ASSERT_EQ(formGroup(b_, 7, 2, 11), 2u);  // job B, same group id: peers 11, 12
  }

  void contribA(PeerId from, uint32_t rank, uint64_t chunk, std::vector<int32_t> v,
                Op op = Op::kSum, uint64_t call = 0) {
    contrib(from, a_, 7, rank, chunk, 2, Dtype::kInt32, op, bytesOf(v), call);
  }

  // Job B still computes right after whatever happened to job A.
  void expectJobBHealthy() {
    out_.take(MsgType::kResult);
    std::vector<int32_t> x{3, 4};
    contrib(11, b_, 7, 0, next_b_, 2, Dtype::kInt32, Op::kSum, bytesOf(x));
    contrib(12, b_, 7, 1, next_b_, 2, Dtype::kInt32, Op::kSum, bytesOf(x));
    ++next_b_;
    pump();
    auto res = out_.take(MsgType::kResult);
    ASSERT_EQ(res.size(), 2u);
    EXPECT_EQ(valuesOf<int32_t>(res[0]), (std::vector<int32_t>{6, 8}));
  }

  // Job A's group was aborted with `reason`: both members told, slots back.
  void expectAAborted(Reason reason, bool counted = true) {
    auto aborts = out_.take(MsgType::kAbort);
    ASSERT_EQ(aborts.size(), 2u);
    for (auto& a : aborts) {
      EXPECT_EQ(a.msg.reason, reason);
      EXPECT_TRUE(a.to == 1 || a.to == 2);
      EXPECT_FALSE(a.msg.text.empty());
    }
    auto c = engine_->counters();
    EXPECT_EQ(c.groups_aborted, 1u);
    EXPECT_EQ(c.groups_active, 1u);
    EXPECT_EQ(c.slots_reserved, 0u);  // A's call gave its slots back; idle B holds none
    EXPECT_EQ(c.groups_by_job.count("jobA"), 0u);
    if (counted) {
      EXPECT_EQ(c.rejected[wire::reasonName(reason)], 1u);
    }
    expectJobBHealthy();
  }

  wire::Token a_, b_;
  uint64_t next_b_ = 0;
};

TEST_F(EngineFaultTest, DuplicateContributionAbortsOnlyItsGroup) {
  contribA(1, 0, 0, {1, 2});
  contribA(1, 0, 0, {1, 2});
  expectAAborted(Reason::kDuplicateContribution);
}

TEST_F(EngineFaultTest, CountMismatchBetweenMembers) {
  contribA(1, 0, 0, {1, 2});
  contribA(2, 1, 0, {1, 2, 3});
  expectAAborted(Reason::kCountMismatch);
}

TEST_F(EngineFaultTest, CallSizeMismatchBetweenMembers) {
  contribA(1, 0, 0, {1, 2}, Op::kSum, 10);
  contribA(2, 1, 0, {1, 2}, Op::kSum, 12);
  expectAAborted(Reason::kCountMismatch);
}

TEST_F(EngineFaultTest, OpMismatchBetweenMembers) {
  contribA(1, 0, 0, {1, 2}, Op::kSum);
  contribA(2, 1, 0, {1, 2}, Op::kMax);
  expectAAborted(Reason::kOpMismatch);
}

TEST_F(EngineFaultTest, SlotOutOfRange) {
  wire::Message m = clientMessage(MsgType::kContrib, a_, 7);
  m.slot = 5;  // window is 2
  m.chunk = 5;
  m.count = 1;
  m.call_elems = 1;
  m.dtype = Dtype::kInt32;
  int32_t v = 1;
  deliver(1, m, &v, sizeof v);
  expectAAborted(Reason::kSlotOutOfRange);
}

TEST_F(EngineFaultTest, ChunkAheadOfTheWindow) {
  contribA(1, 0, 2, {1, 2});  // slot 0 collects chunk 0
  expectAAborted(Reason::kChunkOutOfWindow);
}

TEST_F(EngineFaultTest, OversizeChunk) {
  std::vector<int32_t> big(config_.slot_bytes / 4 + 1, 1);
  contribA(1, 0, 0, big);
  expectAAborted(Reason::kOversize);
}

TEST_F(EngineFaultTest, ContributionFromAnotherConnectionForARank) {
  contribA(2, 0, 0, {1, 2});  // peer 2 is rank 1
  expectAAborted(Reason::kWrongMember);
}

TEST_F(EngineFaultTest, UnknownTokenIsRejectedAndCounted) {
  const wire::Token stranger = tokenOf(99);
  std::vector<int32_t> v{1, 2};
  contrib(1, stranger, 7, 0, 0, 2, Dtype::kInt32, Op::kSum, bytesOf(v));
  join(3, stranger, 8, 2, 0);
  auto errs = out_.take(MsgType::kError);
  ASSERT_EQ(errs.size(), 2u);
  EXPECT_EQ(errs[0].msg.reason, Reason::kBadToken);
  EXPECT_EQ(engine_->counters().rejected["bad_token"], 2u);
  EXPECT_TRUE(out_.take(MsgType::kAbort).empty());
  expectJobBHealthy();
}

TEST_F(EngineFaultTest, AnotherJobsTokenCannotReachTheGroup) {
  // Group ids are per lease: with job B's token a group id names one of job
  // B's groups only, so job A's group 7 cannot be reached or disturbed.
  contribA(1, 0, 0, {1, 2});
  std::vector<int32_t> v{100, 100};
  contrib(1, b_, 8, 0, 0, 2, Dtype::kInt32, Op::kSum, bytesOf(v));  // unknown group of B
  auto errs = out_.take(MsgType::kError);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].msg.reason, Reason::kUnknownGroup);
  contribA(2, 1, 0, {10, 20});
  pump();
  auto res = out_.take(MsgType::kResult);
  ASSERT_EQ(res.size(), 2u);
  EXPECT_EQ(valuesOf<int32_t>(res[0]), (std::vector<int32_t>{11, 22}));
}

TEST_F(EngineFaultTest, MalformedMessagesAreRejectedAndCounted) {
  const uint8_t junk[40] = {1, 2, 3};
  engine_->onMessage(1, junk, sizeof junk, nullptr, 0, now_);
  engine_->onMessage(1, junk, 3, nullptr, 0, now_);
  auto errs = out_.take(MsgType::kError);
  ASSERT_EQ(errs.size(), 2u);
  EXPECT_EQ(errs[0].msg.reason, Reason::kMalformed);
  EXPECT_EQ(engine_->counters().rejected["malformed"], 2u);
  expectJobBHealthy();
}

TEST_F(EngineFaultTest, SizeMismatchOnJoinAbortsThePendingGroup) {
  join(21, a_, 30, 3, 0);
  join(22, a_, 30, 4, 1);
  auto errs = out_.take(MsgType::kError);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].to, 22u);
  auto aborts = out_.take(MsgType::kAbort);
  ASSERT_EQ(aborts.size(), 1u);
  EXPECT_EQ(aborts[0].to, 21u);
  EXPECT_EQ(aborts[0].msg.reason, Reason::kSizeMismatch);
}

TEST_F(EngineFaultTest, MemberConnectionFailureAbortsItsGroups) {
  contribA(1, 0, 0, {1, 2});
  engine_->onPeerFailed(2, "connection reset");
  auto aborts = out_.take(MsgType::kAbort);
  ASSERT_EQ(aborts.size(), 1u);  // peer 2 is gone: only rank 0 is told
  EXPECT_EQ(aborts[0].to, 1u);
  EXPECT_EQ(aborts[0].msg.reason, Reason::kMemberFailed);
  auto c = engine_->counters();
  EXPECT_EQ(c.slots_busy, 0u);
  EXPECT_EQ(c.slots_reserved, 0u);  // A's call gave its slots back; idle B holds none
  expectJobBHealthy();
}

TEST_F(EngineFaultTest, SilentMemberTimesOutButIdleGroupsLive) {
  now_ += 10 * config_.member_timeout_ms;  // idle for long: fine
  engine_->tick(now_);
  EXPECT_TRUE(out_.take(MsgType::kAbort).empty());
  contribA(1, 0, 0, {1, 2});
  engine_->tick(now_ + config_.member_timeout_ms / 2);
  EXPECT_TRUE(out_.take(MsgType::kAbort).empty());
  engine_->tick(now_ + config_.member_timeout_ms + 1);
  auto aborts = out_.take(MsgType::kAbort);
  ASSERT_GE(aborts.size(), 2u);
  EXPECT_EQ(aborts[0].msg.reason, Reason::kMemberTimeout);
  EXPECT_NE(aborts[0].msg.text.find("rank(s) 1"), std::string::npos) << aborts[0].msg.text;
}

TEST_F(EngineFaultTest, IncompleteJoinTimesOut) {
  join(21, a_, 30, 3, 0);
  engine_->tick(now_ + config_.member_timeout_ms + 1);
  auto aborts = out_.take(MsgType::kAbort);
  ASSERT_EQ(aborts.size(), 1u);
  EXPECT_EQ(aborts[0].msg.reason, Reason::kJoinTimeout);
}

// A token holder joining group after group (each waiting for 4096 members
// that never come) is held to data.max_groups_per_lease; the refusal is
// counted, other leases are untouched, and a group that ends frees a place.
TEST_F(EngineFaultTest, GroupsPerLeaseAreBounded) {
  const size_t cap = config_.max_groups_per_lease;
  for (uint64_t gid = 100; gid < 100 + cap - 1; ++gid) join(1, a_, gid, 4096, 0);  // + group 7
  EXPECT_TRUE(out_.take(MsgType::kError).empty());
  join(1, a_, 5000, 4096, 0);
  auto errors = out_.take(MsgType::kError);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].msg.reason, Reason::kNoResource);
  EXPECT_NE(errors[0].msg.text.find("data.max_groups_per_lease"), std::string::npos);
  EXPECT_EQ(engine_->counters().rejected.at("no_resource"), 1u);
  join(11, b_, 5000, 2, 0);  // job B's joins are not refused
  EXPECT_TRUE(out_.take(MsgType::kError).empty());
  engine_->tick(now_ + config_.member_timeout_ms + 1);  // the waiting groups time out
  out_.take(MsgType::kAbort);
  join(1, a_, 5001, 2, 0);
  EXPECT_TRUE(out_.take(MsgType::kError).empty());
}

TEST_F(EngineFaultTest, RevokedLeaseAbortsItsGroupsOnly) {
  contribA(1, 0, 0, {1, 2});
  engine_->revokeLease(a_, "deleted by admin");
  expectAAborted(Reason::kLeaseRevoked, false);
}

TEST_F(EngineFaultTest, ExpiredLeaseIsNoticedByTheTick) {
  leases_.erase(a_);
  engine_->tick(now_ + 1);
  expectAAborted(Reason::kLeaseRevoked, false);
}

TEST_F(EngineFaultTest, LeavingMidChunkAbortsButLeavingIdleDoesNot) {
  wire::Message l = clientMessage(MsgType::kLeave, b_, 7, 0);
  deliver(11, l);  // job B idle: a clean leave
  EXPECT_TRUE(out_.take(MsgType::kAbort).empty());
  contribA(1, 0, 0, {1, 2});
  l.token = a_;
  l.rank = 1;
  deliver(2, l);
  auto aborts = out_.take(MsgType::kAbort);
  ASSERT_EQ(aborts.size(), 2u);
  EXPECT_EQ(aborts[0].msg.reason, Reason::kMemberLeft);
}

TEST_F(EngineFaultTest, ShutdownAbortsEverything) {
  engine_->abortAll(Reason::kShutdown, "agent shutting down");
  EXPECT_EQ(out_.take(MsgType::kAbort).size(), 4u);
  EXPECT_EQ(engine_->counters().groups_active, 0u);
  EXPECT_EQ(engine_->counters().slots_reserved, 0u);
}

// The test fault point (SWITCHAGG_AGENT_TEST_FAULT): miss:N:M leaves member
// M out of the N-th chunk result; late:N:M:MS sends it to member M MS ms
// later, the slot's result kept intact until then (the slot's next chunk
// waits for that send); revoke:N aborts the lease's groups right after it.
class EngineTestFaultPoint : public EngineTest {
 protected:
  // Three members (peers 1..3) of group 7, the fault point armed.
  void arm(uint64_t n, uint32_t member, int64_t late_ms, bool revoke = false) {
    EngineConfig c;
    c.test_partial_result = n;
    c.test_miss_member = member;
    c.test_late_ms = late_ms;
    c.test_revoke = revoke;
    makeEngine(c);
    t_ = addLease(1, "job", 4);
    window_ = formGroup(t_, 7, 3, 1);
    ASSERT_GE(window_, 2u);
  }
  // Chunk `chunk` (a call of its own, or of a call of `call_elems`
  // elements) from every member: member r sends r + 1.
  void call(uint64_t chunk, uint64_t call_elems = 0) {
    for (uint32_t r = 0; r < 3; ++r)
      contrib(1 + r, t_, 7, r, chunk, window_, Dtype::kInt32, Op::kSum,
              bytesOf(std::vector<int32_t>{int32_t(r + 1)}), call_elems);
  }
  static std::vector<PeerId> peers(const std::vector<Sent>& v) {
    std::vector<PeerId> out;
    for (const Sent& s : v) out.push_back(s.to);
    return out;
  }
  wire::Token t_;
  uint32_t window_ = 0;
};

TEST_F(EngineTestFaultPoint, MissLeavesOneMemberOutOfOneResult) {
  arm(2, 1, 0);
  call(0);
  pump();
  EXPECT_EQ(peers(out_.take(MsgType::kResult)), (std::vector<PeerId>{1, 2, 3}));
  call(1);
  pump();
  auto second = out_.take(MsgType::kResult);
  EXPECT_EQ(peers(second), (std::vector<PeerId>{1, 3}));  // member 1 (peer 2) left out
  for (const Sent& s : second) EXPECT_EQ(s.msg.chunk, 1u);
  // Its slot is free again: the calls through the window and past it.
  for (uint64_t c = 2; c <= window_ + 1; ++c) {
    call(c);
    pump();
    EXPECT_EQ(out_.take(MsgType::kResult).size(), 3u) << "chunk " << c;
  }
  EXPECT_TRUE(out_.take(MsgType::kAbort).empty());
}

TEST_F(EngineTestFaultPoint, LateSendsTheHeldResultOnceDueAndHoldsItsSlotTillThen) {
  arm(1, 2, 500);
  call(0);
  pump();
  EXPECT_EQ(peers(out_.take(MsgType::kResult)), (std::vector<PeerId>{1, 2}));
  engine_->tick(now_ + 100);
  EXPECT_TRUE(out_.take(MsgType::kResult).empty());
  // Chunk `window_` needs slot 0, whose result still waits for its late send.
  for (uint64_t c = 1; c <= window_; ++c) {
    call(c);
    pump();
    EXPECT_EQ(out_.take(MsgType::kResult).size(), c < window_ ? 3u : 0u) << "chunk " << c;
  }
  EXPECT_TRUE(out_.take(MsgType::kAbort).empty());
  engine_->tick(now_ + 600);
  auto late = out_.take(MsgType::kResult);
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0].to, 3u);
  EXPECT_EQ(late[0].msg.chunk, 0u);
  int32_t sum = 0;
  ASSERT_EQ(late[0].payload.size(), sizeof sum);
  std::memcpy(&sum, late[0].payload.data(), sizeof sum);
  EXPECT_EQ(sum, 6);  // chunk 0's result, intact
  completeSends();  // the late send left: slot 0 takes chunk `window_`
  pump();
  auto next = out_.take(MsgType::kResult);
  ASSERT_EQ(next.size(), 3u);
  for (const Sent& s : next) EXPECT_EQ(s.msg.chunk, window_);
}

TEST_F(EngineTestFaultPoint, RevokeAbortsTheGroupBetweenTheChunksOfACall) {
  arm(1, EngineConfig::kNoMissMember, 0, true);
  call(0, 2);  // the first chunk of a two-chunk call
  engine_->reduceReady();
  EXPECT_EQ(peers(out_.take(MsgType::kResult)), (std::vector<PeerId>{1, 2, 3}));
  EXPECT_TRUE(out_.take(MsgType::kAbort).empty());
  pump();  // before the next reduction: the lease's groups aborted
  auto aborts = out_.take(MsgType::kAbort);
  ASSERT_EQ(aborts.size(), 3u);
  for (const Sent& a : aborts) EXPECT_EQ(a.msg.reason, Reason::kLeaseRevoked);
  EXPECT_EQ(engine_->counters().groups_aborted, 1u);
}

}  // namespace
}  // namespace switchagg::agent::testing
