#include "model/schedule.h"

#include <gtest/gtest.h>

#include "model/time_format.h"

namespace jobctl {
namespace {

TEST(ScheduleTest, NextIsStrictlyAfterAndNeverBefore) {
  Result<Schedule> s = Schedule::Parse({"*/5 * * * * *"});
  ASSERT_TRUE(s.ok());
  WallTime t = *ParseInstant("2024-01-01T00:00:05Z");
  EXPECT_EQ(FormatUtc(*s->Next(t)), "2024-01-01T00:00:10Z");
  EXPECT_EQ(FormatUtc(*s->Next(t - std::chrono::milliseconds(1))), "2024-01-01T00:00:05Z");
  EXPECT_EQ(FormatUtc(*s->Next(t + std::chrono::milliseconds(999))), "2024-01-01T00:00:10Z");
}

TEST(ScheduleTest, EndedQuartzScheduleHasNoNext) {
  Result<Schedule> s = Schedule::Parse({"0 0 0 1 1 ? 2020", Dialect::kQuartz});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_FALSE(s->Next(*ParseInstant("2024-01-01T00:00:00Z")).has_value());
}

TEST(ScheduleTest, EveryUsesTheAnchor) {
  ScheduleSpec spec{"@every 10m"};
  spec.anchor = *ParseInstant("2024-01-01T00:03:00Z");
  Result<Schedule> s = Schedule::Parse(spec);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(FormatUtc(*s->Next(*ParseInstant("2024-01-01T01:00:00Z"))), "2024-01-01T01:03:00Z");
}

// Found by the cron fuzz target: an @every of some 58,000 years overflowed the instant of its
// sixth fire (undefined behaviour). Past the last representable instant there is no next fire.
TEST(ScheduleTest, AnEveryPastTheLastRepresentableInstantHasNoNext) {
  Result<Schedule> s = Schedule::Parse({"@every 1h30444444444445m"});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  WallTime t = FromUnixMs(1'700'000'000'000);
  int fires = 0;
  for (std::optional<WallTime> n = s->Next(t); n; n = s->Next(*n)) {
    ASSERT_GT(*n, t);
    t = *n;
    ASSERT_LT(++fires, 100);
  }
  EXPECT_GE(fires, 1);
}

TEST(ScheduleTest, ZoneComesFromSpecUnlessPrefixed) {
  Result<Schedule> s = Schedule::Parse({"0 9 * * *", Dialect::kCron, "Europe/Berlin"});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->zone().name(), "Europe/Berlin");
  EXPECT_EQ(FormatUtc(*s->Next(*ParseInstant("2024-01-01T00:00:00Z"))), "2024-01-01T08:00:00Z");
  EXPECT_FALSE(Schedule::Parse({"0 9 * * *", Dialect::kCron, "Nowhere/City"}).ok());
}

}  // namespace
}  // namespace jobctl
