// The one backoff rule, and the retry delay of a failed shard built on it.
#include "model/backoff.h"

#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <ostream>

#include "base/fake_random.h"

namespace jobctl {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

struct CeilingCase {
  const char* name;
  BackoffPolicy policy;
  int64_t doublings;
  int64_t ceiling_ms;
};

// ctest lists each row by its name.
void PrintTo(const CeilingCase& c, std::ostream* os) { *os << c.name; }

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

const CeilingCase kCeilings[] = {
    {"NoFailureYetIsTheBase", {500, 4000}, 0, 500},
    {"OneDoubling", {500, 4000}, 1, 1000},
    {"TwoDoublings", {500, 4000}, 2, 2000},
    {"ReachesTheCapExactly", {500, 4000}, 3, 4000},
    {"StaysAtTheCap", {500, 4000}, 4, 4000},
    {"ANegativeCountIsTheBase", {500, 4000}, -3, 500},
    {"ABaseAboveTheCapIsTheCap", {5000, 4000}, 0, 4000},
    {"ThousandsOfDoublingsDoNotOverflow", {500, kMax}, 1'000'000, kMax},
    {"DoublingPastHalfTheCapStopsAtTheCap", {kMax / 2 + 1, kMax}, 1, kMax},
    {"AZeroBaseStaysZero", {0, 4000}, 100, 0},
};

class BackoffCeilingTest : public ::testing::TestWithParam<CeilingCase> {};

TEST_P(BackoffCeilingTest, Is) {
  const CeilingCase& c = GetParam();
  EXPECT_EQ(BackoffCeilingMs(c.policy, c.doublings), c.ceiling_ms);
}

INSTANTIATE_TEST_SUITE_P(Rows, BackoffCeilingTest, ::testing::ValuesIn(kCeilings),
                         [](const ::testing::TestParamInfo<CeilingCase>& i) {
                           return i.param.name;
                         });

struct DelayCase {
  const char* name;
  BackoffPolicy policy;
  int64_t doublings;
  uint64_t draw;
  int64_t delay_ms;
  size_t draws_taken;
};

// ctest lists each row by its name.
void PrintTo(const DelayCase& c, std::ostream* os) { *os << c.name; }

const DelayCase kDelays[] = {
    {"NoJitterIsTheCeilingAndDrawsNothing", {100, 2000, Jitter::kNone}, 2, 7, 400, 0},
    {"FullJitterOfAZeroDrawIsZero", {500, 30'000, Jitter::kFull}, 1, 0, 0, 1},
    {"FullJitterReachesTheCeiling", {500, 30'000, Jitter::kFull}, 1, 1000, 1000, 1},
    {"FullJitterIsTheDrawModuloTheCeilingPlusOne", {500, 30'000, Jitter::kFull}, 1, 1001, 0, 1},
    {"UpperHalfJitterOfAZeroDrawIsHalfTheCeiling", {400, 2000, Jitter::kUpperHalf}, 0, 0, 200, 1},
    {"UpperHalfJitterReachesTheCeiling", {400, 2000, Jitter::kUpperHalf}, 0, 200, 400, 1},
    {"UpperHalfJitterOfAnOddCeilingStaysBelowIt", {5, 100, Jitter::kUpperHalf}, 0, 2, 4, 1},
    {"AZeroCeilingIsZeroAndDrawsNothing", {0, 2000, Jitter::kFull}, 3, 9, 0, 0},
};

class BackoffDelayTest : public ::testing::TestWithParam<DelayCase> {};

TEST_P(BackoffDelayTest, Is) {
  const DelayCase& c = GetParam();
  FakeRandom random({c.draw});
  EXPECT_EQ(BackoffDelayMs(c.policy, c.doublings, random), c.delay_ms);
  EXPECT_EQ(random.calls(), c.draws_taken);
}

INSTANTIATE_TEST_SUITE_P(Rows, BackoffDelayTest, ::testing::ValuesIn(kDelays),
                         [](const ::testing::TestParamInfo<DelayCase>& i) { return i.param.name; });

// A failed shard's retry delay from the job's [retry] table, as the RunBook asks for it.
struct RetryCase {
  const char* name;
  RetryPolicy retry;
  int attempt;  // the attempt that failed
  uint64_t draw;
  int64_t delay_ms;
};

// ctest lists each row by its name.
void PrintTo(const RetryCase& c, std::ostream* os) { *os << c.name; }

const RetryPolicy k400msTo2s{2, Backoff::kExponential, milliseconds(400), seconds(2)};
const RetryPolicy k400msTo2sNineTimes{9, Backoff::kExponential, milliseconds(400), seconds(2)};
const RetryPolicy kAnHour{1, Backoff::kExponential, hours(1), hours(1)};
const RetryPolicy k10mCutTo1m{1, Backoff::kExponential, minutes(10), minutes(1)};
const RetryPolicy kFixed200ms{3, Backoff::kFixed, milliseconds(200), minutes(5)};
const RetryPolicy kFixed10mOver1m{3, Backoff::kFixed, minutes(10), minutes(1)};

const RetryCase kRetries[] = {
    // FailedShardIsRetriedWithBackoffThenTheRunFails: initial 400ms, max_delay 2s; jitter
    // over the upper half, so at least 200 ms, then at least 400 ms.
    {"FirstRetryWaitsAtLeastHalfTheInitialDelay", k400msTo2s, 1, 0, 200},
    {"FirstRetryWaitsAtMostTheInitialDelay", k400msTo2s, 1, 200, 400},
    {"SecondRetryWaitsAtLeastTheInitialDelay", k400msTo2s, 2, 0, 400},
    {"SecondRetryWaitsAtMostTwiceTheInitialDelay", k400msTo2s, 2, 400, 800},
    {"LateRetriesStayWithinMaxDelay", k400msTo2sNineTimes, 8, 1000, 2000},
    {"LateRetriesWaitAtLeastHalfMaxDelay", k400msTo2sNineTimes, 8, 0, 1000},
    // ABackedOffShardDoesNotDelayNewWork: an hour's backoff.
    {"AnHourLongInitialDelayWaitsAtLeastHalfAnHour", kAnHour, 1, 0, 1'800'000},
    {"AnInitialDelayAboveMaxDelayIsCutToIt", k10mCutTo1m, 1, 30'000, 60'000},
    // The fault suite's probe: backoff = "fixed" waits `initial` every time, unjittered.
    {"FixedWaitsTheInitialDelayOnTheFirstRetry", kFixed200ms, 1, 77, 200},
    {"FixedWaitsTheInitialDelayOnEveryRetry", kFixed200ms, 3, 77, 200},
    {"FixedIgnoresMaxDelay", kFixed10mOver1m, 2, 77, 600'000},
};

class RetryDelayTest : public ::testing::TestWithParam<RetryCase> {};

TEST_P(RetryDelayTest, Is) {
  const RetryCase& c = GetParam();
  FakeRandom random({c.draw});
  EXPECT_EQ(RetryDelayMs(c.retry, c.attempt, random), c.delay_ms);
}

INSTANTIATE_TEST_SUITE_P(Rows, RetryDelayTest, ::testing::ValuesIn(kRetries),
                         [](const ::testing::TestParamInfo<RetryCase>& i) { return i.param.name; });

TEST(RetryBackoffTest, FixedDrawsNothing) {
  FakeRandom random({5});
  RetryDelayMs(kFixed200ms, 2, random);
  EXPECT_EQ(random.calls(), 0u);
}

}  // namespace
}  // namespace jobctl
