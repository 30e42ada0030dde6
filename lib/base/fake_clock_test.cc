#include "base/fake_clock.h"

#include <gtest/gtest.h>

#include <chrono>

namespace jobctl {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;

TEST(FakeClockTest, StandsStillUntilTheTestMovesIt) {
  FakeClock clock(FromUnixMs(1'700'000'000'000), 5'000);
  EXPECT_EQ(ToUnixMs(clock.Now()), 1'700'000'000'000);
  EXPECT_EQ(clock.MonotonicMs(), 5'000);
  EXPECT_EQ(ToUnixMs(clock.Now()), 1'700'000'000'000);
}

TEST(FakeClockTest, AdvanceMovesBothClocks) {
  FakeClock clock(FromUnixMs(1'000), 10);
  clock.Advance(milliseconds(250));
  EXPECT_EQ(ToUnixMs(clock.Now()), 1'250);
  EXPECT_EQ(clock.MonotonicMs(), 260);
}

TEST(FakeClockTest, AWallClockStepLeavesTheMonotonicClockAlone) {
  FakeClock clock(FromUnixMs(10'000'000), 10);
  clock.SetWall(FromUnixMs(10'000'000) - hours(1));  // NTP steps back an hour
  EXPECT_EQ(ToUnixMs(clock.Now()), 10'000'000 - 3'600'000);
  EXPECT_EQ(clock.MonotonicMs(), 10);
  clock.SetWall(FromUnixMs(10'000'000) + hours(2));
  EXPECT_EQ(ToUnixMs(clock.Now()), 10'000'000 + 7'200'000);
  EXPECT_EQ(clock.MonotonicMs(), 10);
}

TEST(FakeClockTest, IsUsedThroughTheClockInterface) {
  FakeClock fake(FromUnixMs(42), 7);
  const Clock& clock = fake;
  fake.Advance(milliseconds(1));
  EXPECT_EQ(ToUnixMs(clock.Now()), 43);
  EXPECT_EQ(clock.MonotonicMs(), 8);
}

}  // namespace
}  // namespace jobctl
