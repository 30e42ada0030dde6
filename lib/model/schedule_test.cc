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

TEST(ScheduleTest, AtFiresOnceAtItsInstant) {
  Result<Schedule> s = Schedule::Parse({"@at 2026-12-01T03:00:00Z"});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->kind(), Schedule::Kind::kAt);
  EXPECT_EQ(FormatUtc(*s->Next(*ParseInstant("2026-01-01T00:00:00Z"))), "2026-12-01T03:00:00Z");
  EXPECT_EQ(FormatUtc(*s->Next(*ParseInstant("2026-12-01T02:59:59.999Z"))), "2026-12-01T03:00:00Z");
  EXPECT_FALSE(s->Next(*ParseInstant("2026-12-01T03:00:00Z")).has_value());
  EXPECT_FALSE(s->Next(*ParseInstant("2027-01-01T00:00:00Z")).has_value());
  Result<Schedule> offset = Schedule::Parse({"@at 2026-12-01T04:00:00+01:00"});
  ASSERT_TRUE(offset.ok());
  EXPECT_EQ(offset->Next(FromUnixMs(0)), s->Next(FromUnixMs(0)));
}

TEST(ScheduleTest, AtWithoutAnOffsetIsALocalTimeInTheJobsZone) {
  ScheduleSpec spec{"@at 2024-07-01 09:30"};
  spec.timezone = "Europe/Berlin";
  Result<Schedule> s = Schedule::Parse(spec);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(FormatUtc(*s->Next(FromUnixMs(0))), "2024-07-01T07:30:00Z");
  // A time the fall-back repeats is its first pass.
  spec = {"@at 2024-11-03T01:30:00"};
  spec.timezone = "America/New_York";
  s = Schedule::Parse(spec);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(FormatUtc(*s->Next(FromUnixMs(0))), "2024-11-03T05:30:00Z");
  // A time the spring-forward skips is an error naming the zone.
  spec = {"@at 2024-03-10 02:30"};
  spec.timezone = "America/New_York";
  s = Schedule::Parse(spec);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("does not happen in America/New_York"), std::string::npos)
      << s.status().message();
}

TEST(ScheduleTest, AtRefusesWhatIsNotAnInstant) {
  for (const char* bad : {"@at", "@at tomorrow", "@at 2026-13-01 03:00", "@at 2026-12-01",
                          "@at 2026-12-01 03:00 extra"}) {
    Result<Schedule> s = Schedule::Parse({bad});
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.status().message().find("@at"), std::string::npos) << s.status().message();
  }
}

TEST(ScheduleTest, DelayIsTheTimeFromARunsEndToTheNextFire) {
  Result<Schedule> s = Schedule::Parse({"@delay 10m"});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->kind(), Schedule::Kind::kDelay);
  ASSERT_TRUE(s->delay().has_value());
  EXPECT_EQ(s->delay()->count(), 600'000);
  EXPECT_EQ(FormatUtc(*s->Next(*ParseInstant("2026-01-01T00:00:07.5Z"))),
            "2026-01-01T00:10:07.500Z");
  for (const char* bad : {"@delay", "@delay 500ms", "@delay 367d", "@delay soon"}) {
    Result<Schedule> b = Schedule::Parse({bad});
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_NE(b.status().message().find("@delay"), std::string::npos) << b.status().message();
  }
  EXPECT_FALSE(Schedule::Parse({"0 * * * *"})->delay().has_value());
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
