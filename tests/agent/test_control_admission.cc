// admitLease (the one check behind create, renew and restore) and the
// control server's ConnectionBudget, as pure functions.
#include <gtest/gtest.h>

#include "admission.h"
#include "connection_budget.h"
#include "lease_table.h"

using namespace switchagg;
using namespace switchagg::agent;

namespace {

constexpr int64_t kHour = 3600 * 1000;

LeaseLimits limits() {
  LeaseLimits l;
  l.pool_slots = 16;
  l.max_slots_per_job = 8;
  l.max_slots_per_user = 10;
  l.max_ttl_ms = 24 * kHour;
  return l;
}

ApiError refusal(const Admission& a) { return a.denial ? a.denial->error : ApiError::kInternal; }

TEST(Admission, EveryBoundIsATypedDenialNamingTheKey) {
  const PoolUse none{};
  EXPECT_FALSE(admitLease(limits(), Admit::kCreate, {"1", 1000, 4, kHour}, none).denial);
  Admission a = admitLease(limits(), Admit::kCreate, {"1 2", 1000, 4, kHour}, none);
  EXPECT_EQ(refusal(a), ApiError::kBadRequest);
  EXPECT_EQ(refusal(admitLease(limits(), Admit::kCreate, {"1", 1000, 0, kHour}, none)),
            ApiError::kBadRequest);
  EXPECT_EQ(refusal(admitLease(limits(), Admit::kCreate, {"1", 1000, 1, 999}, none)),
            ApiError::kBadRequest);
  a = admitLease(limits(), Admit::kCreate, {"1", 1000, 9, kHour}, none);
  EXPECT_EQ(refusal(a), ApiError::kQuotaExceeded);
  EXPECT_NE(a.denial->message.find("policy.max_slots_per_job is 8"), std::string::npos);
  a = admitLease(limits(), Admit::kCreate, {"1", 1000, 4, kHour}, PoolUse{10, 7, false});
  EXPECT_NE(a.denial->message.find("holds 7 slots and asks for 4 more"), std::string::npos);
  a = admitLease(limits(), Admit::kCreate, {"1", 1000, 4, kHour}, PoolUse{14, 0, false});
  EXPECT_NE(a.denial->message.find("2 of 16 pool slots are free"), std::string::npos);
  a = admitLease(limits(), Admit::kCreate, {"1", 1000, 4, 25 * kHour}, none);
  EXPECT_EQ(refusal(a), ApiError::kQuotaExceeded);
  EXPECT_NE(a.denial->message.find("policy.max_ttl (86400 s)"), std::string::npos);
  EXPECT_EQ(refusal(admitLease(limits(), Admit::kCreate, {"1", 1000, 1, kHour}, {0, 0, true})),
            ApiError::kDraining);
}

TEST(Admission, RenewAndRestoreUseTheSameBounds) {
  // Renew: the TTL range; draining does not stop a renew.
  EXPECT_FALSE(admitLease(limits(), Admit::kRenew, {"1", 1000, 4, kHour}, {4, 0, true}).denial);
  EXPECT_EQ(refusal(admitLease(limits(), Admit::kRenew, {"1", 1000, 4, 48 * kHour}, {})),
            ApiError::kQuotaExceeded);
  // Restore: quotas apply, draining does not, a long remaining time is cut.
  Admission a = admitLease(limits(), Admit::kRestore, {"1", 1000, 4, 100 * kHour}, {0, 0, true});
  EXPECT_FALSE(a.denial);
  EXPECT_TRUE(a.ttl_cut);
  EXPECT_EQ(a.ttl_ms, 24 * kHour);
  a = admitLease(limits(), Admit::kRestore, {"1", 1000, 4, 500}, {});
  EXPECT_FALSE(a.denial);  // half a second left is still a lease to restore
  EXPECT_FALSE(a.ttl_cut);
  EXPECT_EQ(refusal(admitLease(limits(), Admit::kRestore, {"1", 1000, 9, kHour}, {})),
            ApiError::kQuotaExceeded);
}

// Every denial admitLease can give, one named case each: which kind of
// request, what it asks, what the pool holds, and the refusal (kInternal:
// admitted) with a fragment its message must carry.
struct DenialCase {
  const char* name;
  Admit kind;
  LeaseAsk ask;
  PoolUse use;
  ApiError refusal;
  const char* says;
};

class AdmissionDenials : public ::testing::TestWithParam<DenialCase> {};

TEST_P(AdmissionDenials, Table) {
  const DenialCase& c = GetParam();
  Admission a = admitLease(limits(), c.kind, c.ask, c.use);
  EXPECT_EQ(refusal(a), c.refusal);
  if (a.denial) {
    EXPECT_NE(a.denial->message.find(c.says), std::string::npos) << a.denial->message;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Admission, AdmissionDenials,
    ::testing::Values(
        DenialCase{"Fits", Admit::kCreate, {"1", 7, 4, kHour}, {}, ApiError::kInternal, ""},
        DenialCase{"BadJobId", Admit::kCreate, {"a/b", 7, 4, kHour}, {}, ApiError::kBadRequest, "job id"},
        DenialCase{"NoSlots", Admit::kCreate, {"1", 7, 0, kHour}, {}, ApiError::kBadRequest, "slots must"},
        DenialCase{"TtlUnderOneSecond", Admit::kRenew, {"1", 7, 4, 999}, {}, ApiError::kBadRequest, "at least 1 s"},
        DenialCase{"TtlBeyondMax", Admit::kCreate, {"1", 7, 4, 25 * kHour}, {}, ApiError::kQuotaExceeded, "policy.max_ttl"},
        DenialCase{"PerJob", Admit::kRestore, {"1", 7, 9, kHour}, {}, ApiError::kQuotaExceeded, "max_slots_per_job"},
        DenialCase{"PerUser", Admit::kCreate, {"1", 7, 4, kHour}, {4, 7, false}, ApiError::kQuotaExceeded, "max_slots_per_user"},
        DenialCase{"Pool", Admit::kCreate, {"1", 7, 4, kHour}, {14, 0, false}, ApiError::kQuotaExceeded, "pool slots are free"},
        DenialCase{"Draining", Admit::kCreate, {"1", 7, 4, kHour}, {0, 0, true}, ApiError::kDraining, "draining"},
        DenialCase{"RenewWhileDraining", Admit::kRenew, {"1", 7, 4, kHour}, {0, 0, true}, ApiError::kInternal, ""},
        DenialCase{"RestoreWhileDraining", Admit::kRestore, {"1", 7, 4, 500}, {0, 0, true}, ApiError::kInternal, ""}),
    [](const ::testing::TestParamInfo<DenialCase>& p) { return std::string(p.param.name); });

TEST(Admission, LeaseTableRefusalsStayTyped) {
  LeaseTable t(limits());
  ASSERT_TRUE(t.create("1", 1000, 4, kHour).ok());
  EXPECT_EQ(t.create("1", 1001, 4, kHour).error(), ApiError::kConflict);
  EXPECT_EQ(t.create("2", 1000, 9, kHour).error(), ApiError::kQuotaExceeded);
  EXPECT_EQ(t.create("3", 1000, 1, 10).error(), ApiError::kBadRequest);
  EXPECT_EQ(t.renew("4", kHour).error(), ApiError::kNotFound);
  t.setDraining(true);
  EXPECT_EQ(t.create("5", 1000, 1, kHour).error(), ApiError::kDraining);
}

TEST(ConnectionBudget, TcpFloodNeverTakesTheUnixBudget) {
  ConnectionBudget b({2, 4, 100});
  int64_t t = 0;
  for (int id = 0; id < 4; ++id) EXPECT_TRUE(b.arrive(id, Listener::kTcp, "10.0.0.9", false, ++t).admit);
  auto d = b.arrive(10, Listener::kUnix, "uid 0", true, ++t);
  EXPECT_TRUE(d.admit);
  EXPECT_FALSE(d.evict);
  EXPECT_EQ(b.open(Listener::kTcp), 4);
  EXPECT_EQ(b.open(Listener::kUnix), 1);
}

TEST(ConnectionBudget, PeerShareFullCutsThatPeersOldestReader) {
  ConnectionBudget b({8, 8, 3});
  int64_t t = 0;
  for (int id = 0; id < 3; ++id) ASSERT_TRUE(b.arrive(id, Listener::kTcp, "attacker", false, ++t).admit);
  b.served(0);  // a complete request is no longer a candidate
  auto d = b.arrive(3, Listener::kTcp, "attacker", false, ++t);
  EXPECT_TRUE(d.admit);
  EXPECT_EQ(d.why, ConnectionBudget::Why::kPeerLimit);
  EXPECT_EQ(d.evict, 1);
  EXPECT_EQ(b.openFrom(Listener::kTcp, "attacker"), 3);
  // Another peer is not touched by the attacker's share.
  d = b.arrive(4, Listener::kTcp, "node7", false, ++t);
  EXPECT_TRUE(d.admit);
  EXPECT_FALSE(d.evict);
}

TEST(ConnectionBudget, FullBudgetCutsTheBusiestPeerAndRefusesOnlyWhenAllAreServed) {
  ConnectionBudget b({8, 4, 100});
  int64_t t = 0;
  ASSERT_TRUE(b.arrive(0, Listener::kTcp, "node1", false, ++t).admit);
  for (int id = 1; id < 4; ++id) ASSERT_TRUE(b.arrive(id, Listener::kTcp, "flood", false, ++t).admit);
  auto d = b.arrive(4, Listener::kTcp, "node2", false, ++t);
  EXPECT_TRUE(d.admit);
  EXPECT_EQ(d.why, ConnectionBudget::Why::kBudgetFull);
  EXPECT_EQ(d.evict, 1);  // the flood's oldest, not node1's older one
  for (int id : {0, 2, 3, 4}) b.served(id);
  d = b.arrive(5, Listener::kTcp, "node3", false, ++t);
  EXPECT_FALSE(d.admit);
  EXPECT_FALSE(d.evict);
  b.release(2);
  EXPECT_TRUE(b.arrive(6, Listener::kTcp, "node3", false, ++t).admit);
}

TEST(ConnectionBudget, RootOnTheUnixSocketHasNoPeerShare) {
  ConnectionBudget b({10, 10, 2});
  int64_t t = 0;
  for (int id = 0; id < 5; ++id) {
    auto d = b.arrive(id, Listener::kUnix, "uid 0", true, ++t);
    EXPECT_TRUE(d.admit);
    EXPECT_FALSE(d.evict);
  }
  ASSERT_TRUE(b.arrive(5, Listener::kUnix, "uid 1000", false, ++t).admit);
  ASSERT_TRUE(b.arrive(6, Listener::kUnix, "uid 1000", false, ++t).admit);
  EXPECT_EQ(b.arrive(7, Listener::kUnix, "uid 1000", false, ++t).evict, 5);
}

}  // namespace
