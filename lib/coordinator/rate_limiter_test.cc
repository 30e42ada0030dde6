#include "coordinator/rate_limiter.h"

#include <gtest/gtest.h>

namespace jobctl::coordinator {
namespace {

TEST(RateLimiterTest, BurstPassesThenTheNextWaitsForTheRefill) {
  RateLimiter r;
  RateLimit limit{2, 3};  // 2 per second, 3 at once
  for (int i = 0; i < 3; ++i) EXPECT_EQ(r.Take("t1", limit, 1000), 0) << i;
  EXPECT_EQ(r.Take("t1", limit, 1000), 500);  // one token takes half a second
  EXPECT_EQ(r.Take("t1", limit, 1499), 1);
  EXPECT_EQ(r.Take("t1", limit, 1500), 0);
}

TEST(RateLimiterTest, KeysHaveTheirOwnBuckets) {
  RateLimiter r;
  RateLimit limit{1, 1};
  EXPECT_EQ(r.Take("a", limit, 0), 0);
  EXPECT_GT(r.Take("a", limit, 0), 0);
  EXPECT_EQ(r.Take("b", limit, 0), 0);
}

TEST(RateLimiterTest, ZeroRateIsNoLimit) {
  RateLimiter r;
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(r.Take("a", RateLimit{0, 1}, 0), 0);
  EXPECT_EQ(r.buckets(), 0u);
}

TEST(RateLimiterTest, FullBucketsAreForgotten) {
  RateLimiter r;
  RateLimit fast{100, 10};
  RateLimit slow{0.01, 1};  // refills once in 100 s
  EXPECT_EQ(r.Take("fast", fast, 20'000), 0);
  EXPECT_EQ(r.Take("slow", slow, 20'000), 0);
  EXPECT_EQ(r.Take("other", fast, 40'000), 0);  // sweeps: "fast" is full again, "slow" is not
  EXPECT_EQ(r.buckets(), 2u);
  EXPECT_GT(r.Take("slow", slow, 40'000), 0);
}

}  // namespace
}  // namespace jobctl::coordinator
