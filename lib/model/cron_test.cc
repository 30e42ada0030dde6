#include "model/cron.h"

#include <date/date.h>
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>

#include "model/schedule_testing.h"

namespace jobctl {
namespace {

using testing::NextFires;
using V = std::vector<std::string>;

V Next(const std::string& expr, const std::string& from, int count = 3,
       Dialect dialect = Dialect::kCron) {
  return NextFires({.expr = expr, .from = from, .count = count, .dialect = dialect});
}

std::string ErrorOf(const std::string& expr, Dialect dialect = Dialect::kCron) {
  V v = Next(expr, "2024-01-01T00:00:00Z", 1, dialect);
  return v.empty() ? "" : v[0];
}

TEST(CronExprTest, EveryMinuteFiresOnEachMinuteStrictlyAfter) {
  EXPECT_EQ(Next("* * * * *", "2024-01-01T00:00:00Z"),
            (V{"2024-01-01T00:01:00Z", "2024-01-01T00:02:00Z", "2024-01-01T00:03:00Z"}));
  EXPECT_EQ(Next("* * * * *", "2024-01-01T00:00:30Z", 1), (V{"2024-01-01T00:01:00Z"}));
}

TEST(CronExprTest, ListsRangesAndSteps) {
  EXPECT_EQ(Next("5,10 * * * *", "2024-01-01T00:07:00Z"),
            (V{"2024-01-01T00:10:00Z", "2024-01-01T01:05:00Z", "2024-01-01T01:10:00Z"}));
  EXPECT_EQ(Next("*/7 * * * *", "2024-01-01T00:50:00Z"),
            (V{"2024-01-01T00:56:00Z", "2024-01-01T01:00:00Z", "2024-01-01T01:07:00Z"}));
  EXPECT_EQ(Next("5-50/10 * * * *", "2024-01-01T00:45:00Z"),
            (V{"2024-01-01T01:05:00Z", "2024-01-01T01:15:00Z", "2024-01-01T01:25:00Z"}));
  EXPECT_EQ(Next("0 22-23,1 * * *", "2024-01-01T21:00:00Z"),
            (V{"2024-01-01T22:00:00Z", "2024-01-01T23:00:00Z", "2024-01-02T01:00:00Z"}));
  EXPECT_EQ(Next("50/5 * * * *", "2024-01-01T00:00:00Z"),
            (V{"2024-01-01T00:50:00Z", "2024-01-01T00:55:00Z", "2024-01-01T01:50:00Z"}));
}

TEST(CronExprTest, NamesAreCaseInsensitive) {
  // 2024-01-01 is a Monday.
  EXPECT_EQ(Next("0 9 * jan,Mar mon-wed", "2024-01-01T10:00:00Z"),
            (V{"2024-01-02T09:00:00Z", "2024-01-03T09:00:00Z", "2024-01-08T09:00:00Z"}));
  EXPECT_EQ(Next("0 0 1 FEB-mar *", "2024-01-05T00:00:00Z", 2),
            (V{"2024-02-01T00:00:00Z", "2024-03-01T00:00:00Z"}));
}

TEST(CronExprTest, ZeroAndSevenAreSunday) {
  // 2024-01-07 and 2024-01-14 are Sundays.
  V sundays{"2024-01-07T00:00:00Z", "2024-01-14T00:00:00Z"};
  EXPECT_EQ(Next("0 0 * * 0", "2024-01-01T00:00:00Z", 2), sundays);
  EXPECT_EQ(Next("0 0 * * 7", "2024-01-01T00:00:00Z", 2), sundays);
  EXPECT_EQ(Next("0 0 * * sun", "2024-01-01T00:00:00Z", 2), sundays);
  EXPECT_EQ(Next("0 0 * * 5-7", "2024-01-04T00:00:00Z", 3),
            (V{"2024-01-05T00:00:00Z", "2024-01-06T00:00:00Z", "2024-01-07T00:00:00Z"}));
}

// cronie reads a day-of-week range that ends on Sunday (0 or SUN) as ending on 7 (issue 19).
TEST(CronExprTest, Issue19_DayOfWeekRangeEndingOnSundayWrapsRoundTheWeek) {
  // 2024-01-05 is a Friday.
  const V weekend{"2024-01-06T00:00:00Z", "2024-01-07T00:00:00Z", "2024-01-13T00:00:00Z"};
  EXPECT_EQ(Next("0 0 * * sat-sun", "2024-01-01T00:00:00Z"), weekend);
  EXPECT_EQ(Next("0 0 * * SAT-SUN", "2024-01-01T00:00:00Z"), weekend);
  EXPECT_EQ(Next("0 0 * * 6-0", "2024-01-01T00:00:00Z"), weekend);
  EXPECT_EQ(Next("0 0 * * 6-7", "2024-01-01T00:00:00Z"), weekend);
  EXPECT_EQ(Next("0 0 * * fri-sun", "2024-01-01T00:00:00Z"),
            (V{"2024-01-05T00:00:00Z", "2024-01-06T00:00:00Z", "2024-01-07T00:00:00Z"}));
  EXPECT_EQ(Next("0 0 * * mon,fri-sun", "2024-01-06T12:00:00Z"),
            (V{"2024-01-07T00:00:00Z", "2024-01-08T00:00:00Z", "2024-01-12T00:00:00Z"}));
  EXPECT_EQ(Next("0 0 * * 7-0", "2024-01-01T00:00:00Z", 2),
            (V{"2024-01-07T00:00:00Z", "2024-01-14T00:00:00Z"}));
  // With a step the range is 5-7 too: Friday and Sunday.
  EXPECT_EQ(Next("0 0 * * fri-sun/2", "2024-01-01T00:00:00Z"),
            (V{"2024-01-05T00:00:00Z", "2024-01-07T00:00:00Z", "2024-01-12T00:00:00Z"}));
  // Both day fields restricted: the 1st, or Saturday and Sunday.
  EXPECT_EQ(Next("0 0 1 * sat-sun", "2024-01-07T12:00:00Z"),
            (V{"2024-01-13T00:00:00Z", "2024-01-14T00:00:00Z", "2024-01-20T00:00:00Z"}));
}

TEST(CronExprTest, OtherReversedRangesStayErrorsNamingTheField) {
  EXPECT_EQ(ErrorOf("0 0 * * thu-mon"),
            "error: schedule \"0 0 * * thu-mon\": field 5 (day-of-week): range thu-mon is "
            "reversed (write the smaller value first; only a range that ends on Sunday wraps "
            "round, as in sat-sun)");
  EXPECT_EQ(ErrorOf("0 0 * * 7-1"),
            "error: schedule \"0 0 * * 7-1\": field 5 (day-of-week): range 7-1 is reversed "
            "(write the smaller value first; only a range that ends on Sunday wraps round, as "
            "in sat-sun)");
  EXPECT_EQ(ErrorOf("0 5-0 * * *"),
            "error: schedule \"0 5-0 * * *\": field 2 (hour): range 5-0 is reversed (write the "
            "smaller value first)");
  EXPECT_EQ(ErrorOf("10-0 * * * *"),
            "error: schedule \"10-0 * * * *\": field 1 (minute): range 10-0 is reversed (write "
            "the smaller value first)");
  EXPECT_EQ(ErrorOf("0 0 * dec-jan *"),
            "error: schedule \"0 0 * dec-jan *\": field 4 (month): range dec-jan is reversed "
            "(write the smaller value first)");
  EXPECT_EQ(ErrorOf("0 0 0 ? * sat-sun", Dialect::kQuartz),
            "error: schedule \"0 0 0 ? * sat-sun\": field 6 (day-of-week): range sat-sun is "
            "reversed (write the smaller value first)");
}

TEST(CronExprTest, DayOfMonthOrDayOfWeekWhenBothRestricted) {
  // The 13th or any Friday (2024-01-05, -12 are Fridays; the 13th is a Saturday).
  EXPECT_EQ(Next("0 0 13 * 5", "2024-01-01T00:00:00Z", 4),
            (V{"2024-01-05T00:00:00Z", "2024-01-12T00:00:00Z", "2024-01-13T00:00:00Z",
               "2024-01-19T00:00:00Z"}));
}

TEST(CronExprTest, StarredDayFieldMeansBothMustMatch) {
  // "*/2" starts with '*', so cronie ANDs it with the day of week: odd days that are Mondays.
  EXPECT_EQ(Next("0 0 */2 * mon", "2024-01-01T00:00:00Z", 3),
            (V{"2024-01-15T00:00:00Z", "2024-01-29T00:00:00Z", "2024-02-05T00:00:00Z"}));
  EXPECT_EQ(Next("0 0 13 * *", "2024-01-01T00:00:00Z", 2),
            (V{"2024-01-13T00:00:00Z", "2024-02-13T00:00:00Z"}));
}

TEST(CronExprTest, SecondsFieldInSixFieldForm) {
  EXPECT_EQ(Next("*/20 * * * * *", "2024-01-01T00:00:00Z"),
            (V{"2024-01-01T00:00:20Z", "2024-01-01T00:00:40Z", "2024-01-01T00:01:00Z"}));
  EXPECT_EQ(Next("30 0 12 * * *", "2024-01-01T12:00:30Z", 1), (V{"2024-01-02T12:00:30Z"}));
}

TEST(CronExprTest, LeapDayOnlyInLeapYears) {
  EXPECT_EQ(Next("0 0 29 2 *", "2023-01-01T00:00:00Z", 3),
            (V{"2024-02-29T00:00:00Z", "2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}));
  // 2100 is not a leap year.
  EXPECT_EQ(Next("0 0 29 2 *", "2096-03-01T00:00:00Z", 1), (V{"2104-02-29T00:00:00Z"}));
}

TEST(CronExprTest, DayThirtyOneSkipsShortMonths) {
  EXPECT_EQ(Next("0 0 31 * *", "2024-01-31T00:00:00Z", 3),
            (V{"2024-03-31T00:00:00Z", "2024-05-31T00:00:00Z", "2024-07-31T00:00:00Z"}));
}

TEST(CronExprTest, YearRollover) {
  EXPECT_EQ(Next("59 23 31 12 *", "2024-12-31T23:59:00Z", 1), (V{"2025-12-31T23:59:00Z"}));
  EXPECT_EQ(Next("0 0 * * *", "2024-12-31T12:00:00Z", 2),
            (V{"2025-01-01T00:00:00Z", "2025-01-02T00:00:00Z"}));
}

TEST(CronExprTest, Macros) {
  EXPECT_EQ(Next("@yearly", "2024-06-01T00:00:00Z", 1), (V{"2025-01-01T00:00:00Z"}));
  EXPECT_EQ(Next("@annually", "2024-06-01T00:00:00Z", 1), (V{"2025-01-01T00:00:00Z"}));
  EXPECT_EQ(Next("@monthly", "2024-06-10T00:00:00Z", 1), (V{"2024-07-01T00:00:00Z"}));
  EXPECT_EQ(Next("@weekly", "2024-01-01T00:00:00Z", 1), (V{"2024-01-07T00:00:00Z"}));
  EXPECT_EQ(Next("@daily", "2024-01-01T05:00:00Z", 1), (V{"2024-01-02T00:00:00Z"}));
  EXPECT_EQ(Next("@midnight", "2024-01-01T05:00:00Z", 1), (V{"2024-01-02T00:00:00Z"}));
  EXPECT_EQ(Next("@HOURLY", "2024-01-01T05:10:00Z", 1), (V{"2024-01-01T06:00:00Z"}));
}

TEST(CronExprTest, EveryIsFixedRateFromTheAnchor) {
  EXPECT_EQ(Next("@every 90s", "2024-01-01T00:00:00Z"),
            (V{"2024-01-01T00:01:30Z", "2024-01-01T00:03:00Z", "2024-01-01T00:04:30Z"}));
  EXPECT_EQ(Next("@every 1h30m", "2024-01-01T00:10:00Z", 2),
            (V{"2024-01-01T01:30:00Z", "2024-01-01T03:00:00Z"}));
}

TEST(CronExprTest, CronTzPrefixSetsTheZone) {
  V v = NextFires({.expr = "CRON_TZ=Asia/Tokyo 0 9 * * *",
                   .from = "2024-01-01T00:00:00Z",
                   .zone = "Europe/Berlin",
                   .count = 1});
  EXPECT_EQ(v, (V{"2024-01-02T09:00:00+09:00"}));
}

TEST(QuartzTest, SecondsFirstAndOneIsSunday) {
  // 0 0 12 ? * 1 = noon every Sunday.
  EXPECT_EQ(Next("0 0 12 ? * 1", "2024-01-01T00:00:00Z", 2, Dialect::kQuartz),
            (V{"2024-01-07T12:00:00Z", "2024-01-14T12:00:00Z"}));
  EXPECT_EQ(Next("0 15 10 ? * MON-FRI", "2024-01-05T11:00:00Z", 2, Dialect::kQuartz),
            (V{"2024-01-08T10:15:00Z", "2024-01-09T10:15:00Z"}));
}

TEST(QuartzTest, OneDayFieldMustBeQuestionMark) {
  EXPECT_NE(ErrorOf("0 0 12 * * 1", Dialect::kQuartz).find("must be \"?\""), std::string::npos);
  EXPECT_NE(ErrorOf("0 0 12 ? * ?", Dialect::kQuartz).find("must be \"?\""), std::string::npos);
}

TEST(QuartzTest, YearField) {
  EXPECT_EQ(Next("0 0 0 1 1 ? 2030,2032", "2024-01-01T00:00:00Z", 3, Dialect::kQuartz),
            (V{"2030-01-01T00:00:00Z", "2032-01-01T00:00:00Z"}));
}

TEST(QuartzTest, LastDayOfMonthAndOffsets) {
  EXPECT_EQ(Next("0 0 0 L * ?", "2024-01-31T00:00:00Z", 3, Dialect::kQuartz),
            (V{"2024-02-29T00:00:00Z", "2024-03-31T00:00:00Z", "2024-04-30T00:00:00Z"}));
  EXPECT_EQ(Next("0 0 0 L-3 * ?", "2024-02-01T00:00:00Z", 2, Dialect::kQuartz),
            (V{"2024-02-26T00:00:00Z", "2024-03-28T00:00:00Z"}));
  // In the cron dialect too.
  EXPECT_EQ(Next("0 0 L * *", "2023-02-01T00:00:00Z", 1), (V{"2023-02-28T00:00:00Z"}));
}

TEST(QuartzTest, NearestWeekday) {
  // 2024-06-15 is a Saturday -> Friday the 14th; 2024-09-15 is a Sunday -> Monday the 16th.
  EXPECT_EQ(Next("0 0 0 15W * ?", "2024-06-01T00:00:00Z", 1, Dialect::kQuartz),
            (V{"2024-06-14T00:00:00Z"}));
  EXPECT_EQ(Next("0 0 0 15W * ?", "2024-09-01T00:00:00Z", 1, Dialect::kQuartz),
            (V{"2024-09-16T00:00:00Z"}));
  // 2024-06-01 is a Saturday: 1W does not leave the month, so Monday the 3rd.
  EXPECT_EQ(Next("0 0 0 1W * ?", "2024-05-20T00:00:00Z", 1, Dialect::kQuartz),
            (V{"2024-06-03T00:00:00Z"}));
  // 2024-03-31 is a Sunday: 31W -> Friday the 29th.
  EXPECT_EQ(Next("0 0 0 31W * ?", "2024-03-01T00:00:00Z", 1, Dialect::kQuartz),
            (V{"2024-03-29T00:00:00Z"}));
}

TEST(QuartzTest, LastWeekdayOfMonth) {
  // 2024-03-31 is a Sunday, 2024-08-31 a Saturday.
  EXPECT_EQ(Next("0 0 0 LW * ?", "2024-03-01T00:00:00Z", 1, Dialect::kQuartz),
            (V{"2024-03-29T00:00:00Z"}));
  EXPECT_EQ(Next("0 0 0 LW * ?", "2024-08-01T00:00:00Z", 1, Dialect::kQuartz),
            (V{"2024-08-30T00:00:00Z"}));
}

TEST(QuartzTest, LastGivenWeekdayOfMonth) {
  // Quartz 6L = last Friday; cron dialect 5L and FRIL are the same.
  V last_fridays{"2024-01-26T00:00:00Z", "2024-02-23T00:00:00Z"};
  EXPECT_EQ(Next("0 0 0 ? * 6L", "2024-01-01T00:00:00Z", 2, Dialect::kQuartz), last_fridays);
  EXPECT_EQ(Next("0 0 * * 5L", "2024-01-01T00:00:00Z", 2), last_fridays);
  EXPECT_EQ(Next("0 0 * * FRIL", "2024-01-01T00:00:00Z", 2), last_fridays);
}

TEST(QuartzTest, NthWeekdayOfMonth) {
  // Second Tuesday (Patch Tuesday): quartz 3#2, cron 2#2.
  V patch{"2024-01-09T00:00:00Z", "2024-02-13T00:00:00Z"};
  EXPECT_EQ(Next("0 0 0 ? * 3#2", "2024-01-01T00:00:00Z", 2, Dialect::kQuartz), patch);
  EXPECT_EQ(Next("0 0 * * 2#2", "2024-01-01T00:00:00Z", 2), patch);
  EXPECT_EQ(Next("0 0 * * TUE#2", "2024-01-01T00:00:00Z", 2), patch);
  // A fifth Monday exists only in some months: Jan 2024 has one (the 29th), Feb does not.
  EXPECT_EQ(Next("0 0 * * 1#5", "2024-01-01T00:00:00Z", 2),
            (V{"2024-01-29T00:00:00Z", "2024-04-29T00:00:00Z"}));
}

TEST(HashTest, StableForANameAndWithinItsRange) {
  V a = NextFires(
      {.expr = "H H * * *", .from = "2024-01-01T00:00:00Z", .count = 3, .name = "backup"});
  V b = NextFires(
      {.expr = "H H * * *", .from = "2024-01-01T00:00:00Z", .count = 3, .name = "backup"});
  EXPECT_EQ(a, b);
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0].substr(11), a[1].substr(11));  // same time every day
  std::set<std::string> times;
  for (int i = 0; i < 50; ++i) {
    V v = NextFires({.expr = "H H(0-5) * * *",
                     .from = "2024-01-01T00:00:00Z",
                     .count = 1,
                     .name = "job-" + std::to_string(i)});
    ASSERT_EQ(v.size(), 1u);
    int hour = std::stoi(v[0].substr(11, 2));
    EXPECT_LE(hour, 5);
    times.insert(v[0]);
  }
  EXPECT_GT(times.size(), 25u) << "H should spread 50 jobs over many minutes";
}

TEST(HashTest, HashedStepKeepsThePeriod) {
  V v = NextFires(
      {.expr = "H/15 * * * *", .from = "2023-12-31T23:59:00Z", .count = 4, .name = "poll"});
  ASSERT_EQ(v.size(), 4u);
  int m0 = std::stoi(v[0].substr(14, 2));
  EXPECT_LT(m0, 15);
  EXPECT_EQ(std::stoi(v[1].substr(14, 2)), (m0 + 15) % 60);
  V r = NextFires(
      {.expr = "H(0-29)/10 * * * *", .from = "2023-12-31T23:59:00Z", .count = 3, .name = "poll"});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_LT(std::stoi(r[0].substr(14, 2)), 10);
  EXPECT_LT(std::stoi(r[2].substr(14, 2)), 30);
}

TEST(CronErrorTest, NamesTheFieldAndWhatWasExpected) {
  EXPECT_EQ(ErrorOf("0 25 * * *"),
            "error: schedule \"0 25 * * *\": field 2 (hour): 25 is out of range 0-23");
  EXPECT_EQ(ErrorOf("*/0 * * * *"),
            "error: schedule \"*/0 * * * *\": field 1 (minute): step must be at least 1");
  EXPECT_EQ(ErrorOf("30-10 * * * *"),
            "error: schedule \"30-10 * * * *\": field 1 (minute): range 30-10 is reversed "
            "(write the smaller value first)");
  EXPECT_EQ(ErrorOf("*/60 * * * *"),
            "error: schedule \"*/60 * * * *\": field 1 (minute): step 60 is larger than the "
            "field (0-59)");
  EXPECT_EQ(ErrorOf("0 0 * * *  *  *"),
            "error: schedule \"0 0 * * *  *  *\": expected 5 fields (min hour dom month dow) or "
            "6 (seconds first), got 7");
  EXPECT_EQ(ErrorOf("0 0 * foo *"),
            "error: schedule \"0 0 * foo *\": field 4 (month): unknown name \"foo\" (expected "
            "1-12 or JAN-DEC)");
  EXPECT_EQ(ErrorOf("1,,2 * * * *"),
            "error: schedule \"1,,2 * * * *\": field 1 (minute): empty list item");
  EXPECT_EQ(ErrorOf("0 0 30 2 *"),
            "error: schedule \"0 0 30 2 *\": never fires (no date matches all its fields)");
  EXPECT_EQ(ErrorOf("0 0 * * 8"),
            "error: schedule \"0 0 * * 8\": field 5 (day-of-week): 8 is out of range 0-7");
  EXPECT_EQ(ErrorOf("0 0 * * 0", Dialect::kQuartz),
            "error: schedule \"0 0 * * 0\": expected 6 fields (sec min hour dom month dow) or 7 "
            "(plus year), got 5");
  EXPECT_NE(ErrorOf("@reboot").find("@reboot is not supported"), std::string::npos);
  EXPECT_NE(ErrorOf("@fortnightly").find("unknown macro"), std::string::npos);
  EXPECT_NE(ErrorOf("").find("empty schedule"), std::string::npos);
  EXPECT_NE(ErrorOf("? * * * *").find("only allowed in day-of-month"), std::string::npos);
  EXPECT_NE(ErrorOf("0 0 * * 1#6").find("k from 1 to 5"), std::string::npos);
  EXPECT_NE(ErrorOf("@every 0s").find("at least 1s"), std::string::npos);
  EXPECT_NE(ErrorOf("CRON_TZ=Mars/Base 0 0 * * *").find("unknown time zone"), std::string::npos);
}

// Against a naive minute-by-minute search over random 5-field expressions made of plain
// lists, which is the semantics spelled out by cronie's man page.
TEST(CronExprTest, MatchesNaiveSearchOnRandomExpressions) {
  std::mt19937 rng(42);
  auto random_set = [&](int lo, int hi, double density) {
    std::set<int> s;
    std::bernoulli_distribution pick(density);
    for (int v = lo; v <= hi; ++v) {
      if (pick(rng)) s.insert(v);
    }
    if (s.empty()) s.insert(std::uniform_int_distribution<int>(lo, hi)(rng));
    return s;
  };
  auto render = [](const std::set<int>& s) {
    std::string out;
    for (int v : s) out += (out.empty() ? "" : ",") + std::to_string(v);
    return out;
  };
  for (int iter = 0; iter < 300; ++iter) {
    auto mins = random_set(0, 59, 0.05), hours = random_set(0, 23, 0.2);
    auto doms = random_set(1, 31, 0.1), months = random_set(1, 12, 0.4);
    auto dows = random_set(0, 6, 0.3);
    bool dom_star = iter % 3 == 0, dow_star = iter % 3 == 1;
    std::string expr = render(mins) + " " + render(hours) + " " +
                       (dom_star ? std::string("*") : render(doms)) + " " + render(months) + " " +
                       (dow_star ? std::string("*") : render(dows));
    Result<CronExpr> cron = CronExpr::Parse(expr, {});
    ASSERT_TRUE(cron.ok()) << expr;
    std::uniform_int_distribution<int64_t> start_dist(1'600'000'000 / 60, 1'700'000'000 / 60);
    int64_t t = start_dist(rng) * 60;
    std::optional<int64_t> got = cron->NextAtOrAfter(t);
    // Naive scan, day by day and then minute by minute, over at most 8 years.
    const int64_t horizon = t + 8LL * 366 * 86400;
    std::optional<int64_t> want;
    for (int64_t day_start = t - t % 86400; day_start < horizon && !want; day_start += 86400) {
      date::sys_days dp{date::days{day_start / 86400}};
      date::year_month_day ymd(dp);
      int wd = static_cast<int>(date::weekday(dp).c_encoding());
      bool dom_ok = dom_star || doms.count(static_cast<int>(unsigned(ymd.day())));
      bool dow_ok = dow_star || dows.count(wd);
      bool day_ok = (!dom_star && !dow_star) ? (dom_ok || dow_ok) : (dom_ok && dow_ok);
      if (!day_ok || !months.count(static_cast<int>(unsigned(ymd.month())))) continue;
      for (int minute = 0; minute < 1440; ++minute) {
        int64_t m = day_start + minute * 60;
        if (m >= t && hours.count(minute / 60) && mins.count(minute % 60)) {
          want = m;
          break;
        }
      }
    }
    if (!want) {
      if (got) {
        EXPECT_GE(*got, horizon) << expr;
      }
      continue;
    }
    EXPECT_EQ(got, want) << expr << " from " << t;
  }
}

}  // namespace
}  // namespace jobctl
