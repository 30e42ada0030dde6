#include "backoff.h"

#include <gtest/gtest.h>

namespace jobctl::agentd {
namespace {

TEST(BackoffTest, CeilingDoublesUpToTheCap) {
  std::vector<int64_t> ceilings;
  Backoff b(500, 4'000, [&](int64_t max) {
    ceilings.push_back(max);
    return max;
  });
  for (int i = 0; i < 6; ++i) b.Next();
  EXPECT_EQ(ceilings, (std::vector<int64_t>{500, 1'000, 2'000, 4'000, 4'000, 4'000}));
  b.Reset();
  EXPECT_EQ(b.Ceiling(), 500);
}

TEST(BackoffTest, FullJitterStaysWithinTheCeiling) {
  Backoff b(500, 30'000);
  for (int i = 0; i < 100; ++i) {
    int64_t ceiling = b.Ceiling();
    int64_t d = b.Next();
    EXPECT_GE(d, 0);
    EXPECT_LE(d, ceiling);
  }
  EXPECT_EQ(b.Ceiling(), 30'000);
}

}  // namespace
}  // namespace jobctl::agentd
