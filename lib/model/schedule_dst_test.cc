// DST behaviour of schedules, after cronie (Vixie cron): fixed-time jobs fire once per local
// time (a time in a spring-forward gap fires at the first instant after it; a repeated time
// fires in the first pass only); wildcard jobs fire at every real instant that matches.
#include <gtest/gtest.h>

#include "model/schedule_testing.h"

namespace jobctl {
namespace {

using testing::NextFires;
using V = std::vector<std::string>;

V Next(const std::string& expr, const std::string& zone, const std::string& from, int count) {
  return NextFires({.expr = expr, .from = from, .zone = zone, .count = count});
}

// America/New_York 2024: 02:00 EST -> 03:00 EDT on March 10; 02:00 EDT -> 01:00 EST on Nov 3.
TEST(ScheduleDstTest, FixedTimeInSpringForwardGapFiresRightAfterTheGap) {
  EXPECT_EQ(Next("30 2 * * *", "America/New_York", "2024-03-09T12:00:00-05:00", 2),
            (V{"2024-03-10T03:00:00-04:00", "2024-03-11T02:30:00-04:00"}));
}

// The search used to start at the gap's end when it began in the last second before the gap,
// so the day's fire was lost. schedule_dst_edges_test.cc covers every start around a change.
TEST(ScheduleDstTest, Issue19_GapStillFiresWhenTheSearchStartsTheSecondBeforeIt) {
  EXPECT_EQ(Next("30 2 * * *", "America/New_York", "2024-03-10T06:59:59Z", 2),
            (V{"2024-03-10T03:00:00-04:00", "2024-03-11T02:30:00-04:00"}));
  EXPECT_EQ(Next("0,30 2 * * *", "America/New_York", "2024-03-10T06:59:59.500Z", 2),
            (V{"2024-03-10T03:00:00-04:00", "2024-03-11T02:00:00-04:00"}));
}

TEST(ScheduleDstTest, SeveralFixedTimesInTheGapMergeIntoOneFire) {
  EXPECT_EQ(Next("0,15,30,45 2 * * *", "America/New_York", "2024-03-10T00:00:00-05:00", 2),
            (V{"2024-03-10T03:00:00-04:00", "2024-03-11T02:00:00-04:00"}));
}

TEST(ScheduleDstTest, WildcardJobsSkipTheMissingTimes) {
  EXPECT_EQ(
      Next("*/30 * * * *", "America/New_York", "2024-03-10T01:00:00-05:00", 3),
      (V{"2024-03-10T01:30:00-05:00", "2024-03-10T03:00:00-04:00", "2024-03-10T03:30:00-04:00"}));
  EXPECT_EQ(Next("30 * * * *", "America/New_York", "2024-03-10T01:00:00-05:00", 2),
            (V{"2024-03-10T01:30:00-05:00", "2024-03-10T03:30:00-04:00"}));
}

TEST(ScheduleDstTest, FixedTimeInRepeatedHourFiresOnceInTheFirstPass) {
  EXPECT_EQ(Next("30 1 * * *", "America/New_York", "2024-11-02T12:00:00-04:00", 2),
            (V{"2024-11-03T01:30:00-04:00", "2024-11-04T01:30:00-05:00"}));
  EXPECT_EQ(Next("0 2 * * *", "America/New_York", "2024-11-03T00:00:00-04:00", 1),
            (V{"2024-11-03T02:00:00-05:00"}));
}

TEST(ScheduleDstTest, WildcardJobsFireInBothPassesOfTheRepeatedHour) {
  EXPECT_EQ(Next("30 * * * *", "America/New_York", "2024-11-03T00:00:00-04:00", 4),
            (V{"2024-11-03T00:30:00-04:00", "2024-11-03T01:30:00-04:00",
               "2024-11-03T01:30:00-05:00", "2024-11-03T02:30:00-05:00"}));
  EXPECT_EQ(
      Next("*/20 1 * * *", "America/New_York", "2024-11-03T00:59:00-04:00", 6),
      (V{"2024-11-03T01:00:00-04:00", "2024-11-03T01:20:00-04:00", "2024-11-03T01:40:00-04:00",
         "2024-11-03T01:00:00-05:00", "2024-11-03T01:20:00-05:00", "2024-11-03T01:40:00-05:00"}));
}

TEST(ScheduleDstTest, StartingInsideTheSecondPassDoesNotRefireFixedTimes) {
  EXPECT_EQ(Next("45 1 * * *", "America/New_York", "2024-11-03T01:10:00-05:00", 1),
            (V{"2024-11-04T01:45:00-05:00"}));
}

// Europe/London 2024: 01:00 GMT -> 02:00 BST on March 31; 02:00 BST -> 01:00 GMT on Oct 27.
TEST(ScheduleDstTest, London) {
  EXPECT_EQ(Next("30 1 * * *", "Europe/London", "2024-03-30T12:00:00Z", 2),
            (V{"2024-03-31T02:00:00+01:00", "2024-04-01T01:30:00+01:00"}));
  EXPECT_EQ(Next("30 1 * * *", "Europe/London", "2024-10-26T12:00:00Z", 2),
            (V{"2024-10-27T01:30:00+01:00", "2024-10-28T01:30:00+00:00"}));
  EXPECT_EQ(Next("*/30 * * * *", "Europe/London", "2024-10-27T00:45:00+01:00", 4),
            (V{"2024-10-27T01:00:00+01:00", "2024-10-27T01:30:00+01:00",
               "2024-10-27T01:00:00+00:00", "2024-10-27T01:30:00+00:00"}));
}

// Australia/Lord_Howe moves by 30 minutes: 02:00 +10:30 -> 02:30 +11:00 on 2024-10-06;
// 02:00 +11:00 -> 01:30 +10:30 on 2024-04-07.
TEST(ScheduleDstTest, LordHoweHalfHourShift) {
  EXPECT_EQ(Next("15 2 * * *", "Australia/Lord_Howe", "2024-10-05T12:00:00+10:30", 2),
            (V{"2024-10-06T02:30:00+11:00", "2024-10-07T02:15:00+11:00"}));
  EXPECT_EQ(Next("*/15 * * * *", "Australia/Lord_Howe", "2024-10-06T01:50:00+10:30", 2),
            (V{"2024-10-06T02:30:00+11:00", "2024-10-06T02:45:00+11:00"}));
  EXPECT_EQ(Next("45 1 * * *", "Australia/Lord_Howe", "2024-04-06T12:00:00+11:00", 2),
            (V{"2024-04-07T01:45:00+11:00", "2024-04-08T01:45:00+10:30"}));
  EXPECT_EQ(
      Next("*/15 * * * *", "Australia/Lord_Howe", "2024-04-07T01:20:00+11:00", 5),
      (V{"2024-04-07T01:30:00+11:00", "2024-04-07T01:45:00+11:00", "2024-04-07T01:30:00+10:30",
         "2024-04-07T01:45:00+10:30", "2024-04-07T02:00:00+10:30"}));
}

// Pacific/Chatham: 02:45 +12:45 -> 03:45 +13:45 on 2024-09-29; 03:45 +13:45 -> 02:45 +12:45
// on 2024-04-07.
TEST(ScheduleDstTest, ChathamQuarterHourOffsets) {
  EXPECT_EQ(Next("0 3 * * *", "Pacific/Chatham", "2024-09-28T12:00:00+12:45", 2),
            (V{"2024-09-29T03:45:00+13:45", "2024-09-30T03:00:00+13:45"}));
  EXPECT_EQ(Next("0 3 * * *", "Pacific/Chatham", "2024-04-06T12:00:00+13:45", 2),
            (V{"2024-04-07T03:00:00+13:45", "2024-04-08T03:00:00+12:45"}));
  EXPECT_EQ(
      Next("0 * * * *", "Pacific/Chatham", "2024-04-07T02:30:00+13:45", 3),
      (V{"2024-04-07T03:00:00+13:45", "2024-04-07T03:00:00+12:45", "2024-04-07T04:00:00+12:45"}));
}

TEST(ScheduleDstTest, FarFutureTransitionsStillApply) {
  // 2040-03-11 is the second Sunday of March.
  EXPECT_EQ(Next("30 2 * * *", "America/New_York", "2040-03-10T12:00:00-05:00", 1),
            (V{"2040-03-11T03:00:00-04:00"}));
}

TEST(ScheduleDstTest, ZoneWithoutDstStaysPutInTheFarFuture) {
  EXPECT_EQ(Next("0 9 1 7 *", "Europe/Moscow", "2045-01-01T00:00:00+03:00", 1),
            (V{"2045-07-01T09:00:00+03:00"}));
}

TEST(ScheduleDstTest, EveryIgnoresLocalTime) {
  EXPECT_EQ(
      Next("@every 1h", "America/New_York", "2024-11-03T00:30:00-04:00", 3),
      (V{"2024-11-03T01:00:00-04:00", "2024-11-03T01:00:00-05:00", "2024-11-03T02:00:00-05:00"}));
}

}  // namespace
}  // namespace jobctl
