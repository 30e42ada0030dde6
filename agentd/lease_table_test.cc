#include "lease_table.h"

#include <gtest/gtest.h>

namespace jobctl::agentd {
namespace {

TEST(LeaseDeadlineTest, IsNinetyNinePercentOfTtlLessOneSecondFromTheSend) {
  EXPECT_EQ(LeaseDeadline(100'000, 15'000), 100'000 + 14'850 - 1'000);
  EXPECT_EQ(LeaseDeadline(0, 60'000), 58'400);
}

TEST(LeaseDeadlineTest, HeartbeatEveryThirdOfTtlOrWhatTheCoordinatorAsks) {
  EXPECT_EQ(HeartbeatEvery(15'000, 5'000), 5'000);
  EXPECT_EQ(HeartbeatEvery(15'000, 10'000), 5'000);
  EXPECT_EQ(HeartbeatEvery(15'000, 2'000), 2'000);
  EXPECT_EQ(HeartbeatEvery(15'000, 0), 5'000);
}

TEST(LeaseTableTest, RenewalMovesTheDeadlineFromItsSendTime) {
  LeaseTable t;
  EXPECT_TRUE(t.Add({1, 0}, 7, /*sent=*/1'000, 15'000, /*now=*/1'010));
  EXPECT_EQ(t.Find({1, 0})->deadline_ms, 14'850);
  EXPECT_TRUE(t.Renewed({1, 0}, 7, /*sent=*/6'000, 15'000));
  EXPECT_EQ(t.Find({1, 0})->deadline_ms, 19'850);
  // A late answer to an older heartbeat never moves it back.
  EXPECT_TRUE(t.Renewed({1, 0}, 7, /*sent=*/2'000, 15'000));
  EXPECT_EQ(t.Find({1, 0})->deadline_ms, 19'850);
}

TEST(LeaseTableTest, RenewalOfAnotherTokenIsIgnored) {
  LeaseTable t;
  t.Add({1, 0}, 7, 0, 15'000, 0);
  EXPECT_FALSE(t.Renewed({1, 0}, 8, 5'000, 15'000));
  EXPECT_FALSE(t.Remove({1, 0}, 8));
  EXPECT_TRUE(t.Remove({1, 0}, 7));
  EXPECT_TRUE(t.empty());
}

TEST(LeaseTableTest, ExpiredLeasesAreTakenOnceAtTheirDeadline) {
  LeaseTable t;
  t.Add({1, 0}, 7, 0, 15'000, 0);          // deadline 13850
  t.Add({1, 1}, 8, 5'000, 15'000, 5'000);  // deadline 18850
  EXPECT_EQ(*t.NextDeadline(), 13'850);
  EXPECT_TRUE(t.TakeExpired(13'849).empty());
  std::vector<HeldLease> expired = t.TakeExpired(13'850);
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].token, 7);
  EXPECT_TRUE(t.TakeExpired(13'850).empty());
  EXPECT_EQ(*t.NextDeadline(), 18'850);
}

// The earliest deadline follows every change: a renewal moves a lease later, a removal or a
// new grant of the same shard replaces its old deadline, and none is left behind.
TEST(LeaseTableTest, TheNextDeadlineFollowsRenewalsRemovalsAndRegrants) {
  LeaseTable t;
  t.Add({1, 0}, 7, 0, 15'000, 0);                     // deadline 13850
  t.Add({1, 1}, 8, 5'000, 15'000, 5'000);             // deadline 18850
  t.Add({2, 0}, 9, 6'000, 15'000, 6'000);             // deadline 19850
  EXPECT_TRUE(t.Renewed({1, 0}, 7, 10'000, 15'000));  // deadline 23850
  EXPECT_EQ(*t.NextDeadline(), 18'850);
  EXPECT_TRUE(t.Remove({1, 1}, 8));
  EXPECT_EQ(*t.NextDeadline(), 19'850);
  t.Add({2, 0}, 10, 1'000, 15'000, 1'000);  // the shard granted again: deadline 14850
  EXPECT_EQ(*t.NextDeadline(), 14'850);
  std::vector<HeldLease> expired = t.TakeExpired(30'000);
  ASSERT_EQ(expired.size(), 2u);
  EXPECT_EQ(expired[0].token, 10);  // earliest first
  EXPECT_EQ(expired[1].token, 7);
  EXPECT_TRUE(t.empty());
  EXPECT_FALSE(t.NextDeadline());
}

TEST(LeaseTableTest, LeaseFromALongHeldClaimIsUnconfirmedUntilRenewed) {
  LeaseTable t;
  // The claim was sent 29 s before its answer: its send-based deadline has passed.
  EXPECT_FALSE(t.Add({1, 0}, 7, /*sent=*/0, 15'000, /*now=*/29'000));
  HeldLease l = *t.Find({1, 0});
  EXPECT_FALSE(l.confirmed);
  EXPECT_EQ(l.deadline_ms, 29'000 + 15'000);  // gives up waiting after one TTL
  EXPECT_TRUE(t.TakeExpired(29'001).empty());
  // The renewal sent after the answer sets the real deadline, even an earlier one.
  EXPECT_TRUE(t.Renewed({1, 0}, 7, /*sent=*/29'010, 15'000));
  EXPECT_TRUE(t.Find({1, 0})->confirmed);
  EXPECT_EQ(t.Find({1, 0})->deadline_ms, LeaseDeadline(29'010, 15'000));
}

TEST(LeaseTableTest, LeaseWithLessThanTheStartMarginLeftIsUnconfirmed) {
  LeaseTable t;
  EXPECT_FALSE(t.Add({1, 0}, 7, 0, 15'000, 13'850 - kMinStartMs + 1));
  EXPECT_TRUE(t.Add({1, 1}, 8, 0, 15'000, 13'850 - kMinStartMs));
}

}  // namespace
}  // namespace jobctl::agentd
