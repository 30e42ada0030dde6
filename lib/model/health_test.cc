#include "model/health.h"

#include <gtest/gtest.h>

namespace jobctl {
namespace {

constexpr int64_t kHour = 3'600'000;

TEST(HealthTest, AJobWithoutAnExpectationIsNeverOverdue) {
  SuccessWatch w{.last_success_ms = 0, .since_ms = 0};
  EXPECT_FALSE(IsOverdue(w, 1000 * kHour));
  EXPECT_FALSE(OverdueAfter(w));
}

TEST(HealthTest, OverdueOnlyStrictlyPastTheLastSuccessPlusTheWindow) {
  SuccessWatch w{.expect_success_within = Millis(kHour), .last_success_ms = 10 * kHour};
  EXPECT_EQ(OverdueAfter(w), 11 * kHour);
  EXPECT_FALSE(IsOverdue(w, 10 * kHour + 1));
  EXPECT_FALSE(IsOverdue(w, 11 * kHour));  // a success exactly the window ago counts
  EXPECT_TRUE(IsOverdue(w, 11 * kHour + 1));
}

TEST(HealthTest, AJobThatNeverSucceededCountsFromWhenItWasCreatedOrChanged) {
  SuccessWatch w{.expect_success_within = Millis(kHour), .since_ms = 5 * kHour};
  EXPECT_FALSE(IsOverdue(w, 6 * kHour));
  EXPECT_TRUE(IsOverdue(w, 6 * kHour + 1));
}

TEST(HealthTest, TheLastSuccessWinsOverSinceEvenWhenOlder) {
  // A definition changed after the last success does not restart the clock.
  SuccessWatch w{
      .expect_success_within = Millis(kHour), .last_success_ms = 2 * kHour, .since_ms = 9 * kHour};
  EXPECT_TRUE(IsOverdue(w, 9 * kHour));
}

TEST(HealthTest, APausedJobIsNeverOverdue) {
  SuccessWatch w{.expect_success_within = Millis(kHour), .since_ms = 0, .paused = true};
  EXPECT_FALSE(IsOverdue(w, 100 * kHour));
  EXPECT_FALSE(OverdueAfter(w));
}

}  // namespace
}  // namespace jobctl
