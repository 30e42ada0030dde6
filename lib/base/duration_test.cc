#include "base/duration.h"

#include <gtest/gtest.h>

namespace jobctl {
namespace {

TEST(DurationTest, ParsesSingleAndCombinedUnits) {
  EXPECT_EQ(*ParseDuration("90s"), Millis(90'000));
  EXPECT_EQ(*ParseDuration("1h30m"), Millis(5'400'000));
  EXPECT_EQ(*ParseDuration("250ms"), Millis(250));
  EXPECT_EQ(*ParseDuration("2d"), Millis(172'800'000));
  EXPECT_EQ(*ParseDuration("1m500ms"), Millis(60'500));
  EXPECT_EQ(*ParseDuration("0s"), Millis(0));
}

TEST(DurationTest, RejectsMalformedText) {
  for (const char* bad : {"", "10", "s", "1x", "-5s", "1.5h", "30m1h", "1m1m", "1 h", "5s "}) {
    Result<Millis> r = ParseDuration(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("expected a duration"), std::string::npos);
    }
  }
}

TEST(DurationTest, RejectsOverflow) {
  EXPECT_FALSE(ParseDuration("99999999999999999999d").ok());
  EXPECT_FALSE(ParseDuration("9999999999999999d").ok());
}

TEST(DurationTest, FormatRoundTrips) {
  for (int64_t ms : {1, 999, 1000, 61'000, 5'400'000, 90'061'001}) {
    std::string text = FormatDuration(Millis(ms));
    EXPECT_EQ(*ParseDuration(text), Millis(ms)) << text;
  }
  EXPECT_EQ(FormatDuration(Millis(5'400'000)), "1h30m");
}

}  // namespace
}  // namespace jobctl
