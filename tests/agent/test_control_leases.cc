// LeaseTable: idempotency, quotas with their numbers, TTL expiry firing the
// revoke callback, drain, tokens.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>

#include "lease_table.h"

using namespace switchagg;
using namespace switchagg::agent;

namespace {

constexpr int64_t kHour = 3600 * 1000;

TEST(ControlLeases, TokensAre128RandomBitsInHex) {
  std::set<std::string> seen;
  for (int i = 0; i < 200; ++i) {
    Result<LeaseToken> t = LeaseToken::random();
    ASSERT_TRUE(t.ok());
    const std::string hex = t->hex();
    ASSERT_EQ(hex.size(), 32u);
    for (char c : hex) EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << hex;
    seen.insert(hex);
  }
  EXPECT_EQ(seen.size(), 200u);
}

TEST(ControlLeases, CreateIsIdempotentPerJobAndUid) {
  LeaseTable t({64, 16, 32});
  auto a = t.create("100", 1000, 4, kHour);
  ASSERT_TRUE(a.ok()) << a.status().toString();
  EXPECT_TRUE(a->created);
  auto b = t.create("100", 1000, 8, kHour);  // a retry with other numbers: same lease
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(b->created);
  EXPECT_EQ(b->lease.token, a->lease.token);
  EXPECT_EQ(b->lease.slots, 4);
  EXPECT_EQ(t.slotsInUse(), 4);
  auto c = t.create("100", 1001, 4, kHour);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kDenied);
  EXPECT_NE(c.status().message().find("uid 1000"), std::string::npos);
}

TEST(ControlLeases, FindByTokenAndJob) {
  LeaseTable t({64, 16, 32});
  auto a = t.create("7_3", 5, 2, kHour);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(t.findByToken(a->lease.token).has_value());
  EXPECT_EQ(t.findByToken(a->lease.token)->job, "7_3");
  EXPECT_FALSE(t.findByToken(LeaseToken{}).has_value());
  EXPECT_FALSE(LeaseToken::fromHex("short").has_value());
  EXPECT_TRUE(t.findByJob("7_3").has_value());
  EXPECT_FALSE(t.findByJob("8").has_value());
}

TEST(ControlLeases, RejectsBadArguments) {
  LeaseTable t({64, 16, 32});
  for (const char* job : {"", "a/b", "a b", "x\n", "../x"}) {
    EXPECT_EQ(t.create(job, 1, 1, kHour).status().code(), Code::kInvalidArgument) << job;
  }
  EXPECT_EQ(t.create(std::string(65, '1'), 1, 1, kHour).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(t.create("1", 1, 0, kHour).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(t.create("1", 1, 1, 10).status().code(), Code::kInvalidArgument);
}

TEST(ControlLeases, QuotasSayTheNumbers) {
  LeaseTable t({20, 8, 12});
  auto per_job = t.create("1", 1, 9, kHour);
  EXPECT_EQ(per_job.status().code(), Code::kNoResource);
  EXPECT_NE(per_job.status().message().find("9 slots; policy.max_slots_per_job is 8"),
            std::string::npos)
      << per_job.status().message();

  ASSERT_TRUE(t.create("1", 1, 8, kHour).ok());
  auto per_user = t.create("2", 1, 5, kHour);
  EXPECT_EQ(per_user.status().code(), Code::kNoResource);
  EXPECT_NE(per_user.status().message().find("uid 1 holds 8 slots and asks for 5 more; "
                                             "policy.max_slots_per_user is 12"),
            std::string::npos)
      << per_user.status().message();

  ASSERT_TRUE(t.create("3", 2, 8, kHour).ok());
  auto pool = t.create("4", 3, 5, kHour);
  EXPECT_EQ(pool.status().code(), Code::kNoResource);
  EXPECT_NE(pool.status().message().find("4 of 20 pool slots are free"), std::string::npos)
      << pool.status().message();
  EXPECT_EQ(t.slotsInUse(), 16);
  EXPECT_EQ(t.slotsOfUser(1), 8);

  EXPECT_TRUE(t.remove("1", "test"));
  EXPECT_FALSE(t.remove("1", "test"));  // idempotent
  EXPECT_EQ(t.slotsInUse(), 8);
  EXPECT_TRUE(t.create("4", 3, 5, kHour).ok());
}

// policy.idle_reclaim: a lease nothing used for the idle time goes (an
// mpirun job that died without deleting it); a lookup by the data plane
// (a member's HELLO/JOIN, a live group's check) or a renew keeps it; 0 = never.
TEST(ControlLeases, IdleLeasesAreReclaimedUsedOnesKept) {
  LeaseLimits limits{64, 16, 32};
  limits.idle_reclaim_ms = 10000;
  LeaseTable t(limits);
  std::vector<std::pair<std::string, std::string>> revoked;
  t.setRevokeCallback([&](const Lease& l, const std::string& why) { revoked.emplace_back(l.job, why); });
  auto idle = t.create("idle", 1, 2, kHour);
  auto used = t.create("used", 1, 2, kHour);
  auto renewed = t.create("renewed", 1, 2, kHour);
  ASSERT_TRUE(idle.ok() && used.ok() && renewed.ok());
  const int64_t t0 = steadyNowMs();
  EXPECT_EQ(t.expireAt(t0 + 5000), 0);
  // The data plane uses "used" at t0 + 6 s (its lookup stamps the time);
  // findByToken (a control-side read) does not count as use.
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const int64_t before_use = steadyNowMs();
  ASSERT_TRUE(t.useByToken(used->lease.token).has_value());
  ASSERT_TRUE(t.findByToken(idle->lease.token).has_value());
  ASSERT_TRUE(t.renew("renewed", kHour).ok());
  // At t0 + 10 s only "idle" is reclaimed, with its own reason.
  EXPECT_EQ(t.expireAt(t0 + 10000), 1);
  ASSERT_EQ(revoked.size(), 1u);
  EXPECT_EQ(revoked[0].first, "idle");
  EXPECT_NE(revoked[0].second.find("policy.idle_reclaim"), std::string::npos) << revoked[0].second;
  EXPECT_FALSE(t.findByJob("idle").has_value());
  EXPECT_EQ(t.slotsInUse(), 4);
  // The others go 10 s after their last use.
  EXPECT_EQ(t.expireAt(before_use + 9000), 0);
  EXPECT_EQ(t.expireAt(steadyNowMs() + 10000), 2);
  EXPECT_EQ(t.slotsInUse(), 0);

  limits.idle_reclaim_ms = 0;  // never
  LeaseTable never(limits);
  ASSERT_TRUE(never.create("j", 1, 1, 2 * kHour).ok());
  EXPECT_EQ(never.expireAt(steadyNowMs() + kHour), 0);
}

TEST(ControlLeases, ExpiryRemovesLeasesAndFiresCallbackOutsideTheLock) {
  LeaseTable t({64, 16, 32});
  std::vector<std::pair<std::string, std::string>> revoked;
  t.setRevokeCallback([&](const Lease& l, const std::string& why) {
    // Calling back into the table must not deadlock.
    EXPECT_FALSE(t.findByJob(l.job).has_value());
    revoked.emplace_back(l.job, why);
  });
  ASSERT_TRUE(t.create("short", 1, 2, 2000).ok());
  ASSERT_TRUE(t.create("long", 1, 2, kHour).ok());
  int64_t now = steadyNowMs();
  EXPECT_EQ(t.expireAt(now), 0);
  EXPECT_EQ(t.expireAt(now + 2500), 1);
  ASSERT_EQ(revoked.size(), 1u);
  EXPECT_EQ(revoked[0].first, "short");
  EXPECT_EQ(revoked[0].second, "lease expired");
  EXPECT_EQ(t.slotsInUse(), 2);

  auto renewed = t.renew("long", 2000);
  ASSERT_TRUE(renewed.ok());
  EXPECT_EQ(renewed->ttl_ms, 2000);
  EXPECT_EQ(t.expireAt(now + 2500), 1);
  EXPECT_EQ(t.renew("long", kHour).status().code(), Code::kAborted);

  ASSERT_TRUE(t.create("a", 1, 1, kHour).ok());
  ASSERT_TRUE(t.create("b", 2, 1, kHour).ok());
  t.revokeAll("agent shutting down");
  EXPECT_EQ(revoked.size(), 4u);
  EXPECT_EQ(revoked.back().second, "agent shutting down");
  EXPECT_EQ(t.slotsInUse(), 0);
}

TEST(ControlLeases, ReaperExpiresInTheBackground) {
  LeaseTable t({64, 16, 32});
  std::atomic<int> revoked{0};
  t.setRevokeCallback([&](const Lease&, const std::string&) { ++revoked; });
  ASSERT_TRUE(t.create("1", 1, 1, 1000).ok());
  t.startReaper(50);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (revoked.load() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  t.stopReaper();
  EXPECT_EQ(revoked.load(), 1);
  EXPECT_TRUE(t.list().empty());
}

TEST(ControlLeases, DrainRefusesNewLeasesOnly) {
  LeaseTable t({64, 16, 32});
  ASSERT_TRUE(t.create("1", 1, 1, kHour).ok());
  t.setDraining(true);
  EXPECT_TRUE(t.draining());
  EXPECT_EQ(t.create("2", 1, 1, kHour).status().code(), Code::kUnsupported);
  auto again = t.create("1", 1, 1, kHour);  // the existing lease is still handed out
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->created);
  t.setDraining(false);
  EXPECT_TRUE(t.create("2", 1, 1, kHour).ok());
}

TEST(ControlLeases, ConcurrentCreatesNeverOverbookThePool) {
  LeaseTable t({40, 4, 40});
  std::vector<std::thread> threads;
  std::atomic<int> granted{0};
  for (int th = 0; th < 4; ++th) {
    threads.emplace_back([&, th] {
      for (int i = 0; i < 50; ++i) {
        if (t.create(std::to_string(th * 100 + i), static_cast<uint32_t>(th), 3, kHour).ok()) {
          ++granted;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(granted.load(), 13);  // floor(40 / 3)
  EXPECT_EQ(t.slotsInUse(), 39);
}

}  // namespace
