#include "model/time_format.h"

#include <gtest/gtest.h>

namespace jobctl {
namespace {

TEST(TimeFormatTest, ParsesOffsetsFractionsAndUnixSeconds) {
  EXPECT_EQ(ToUnixMs(*ParseInstant("1970-01-01T00:00:01Z")), 1000);
  EXPECT_EQ(ToUnixMs(*ParseInstant("1970-01-01T01:00:00+01:00")), 0);
  EXPECT_EQ(ToUnixMs(*ParseInstant("1970-01-01T00:00:00.250Z")), 250);
  EXPECT_EQ(ToUnixMs(*ParseInstant("@86400")), 86'400'000);
}

TEST(TimeFormatTest, RejectsMalformedInstants) {
  for (const char* bad : {"2024-01-01", "2024-13-01T00:00:00Z", "2024-01-01T00:00:00",
                          "2024-02-30T00:00:00Z", "yesterday", "@", "@12x"}) {
    EXPECT_FALSE(ParseInstant(bad).ok()) << bad;
  }
}

TEST(TimeFormatTest, FormatsInZoneWithOffset) {
  WallTime t = *ParseInstant("2024-03-10T07:00:00Z");
  EXPECT_EQ(*FormatInZone(t, "America/New_York"), "2024-03-10T03:00:00-04:00");
  EXPECT_EQ(*FormatInZone(t, "UTC"), "2024-03-10T07:00:00Z");
  EXPECT_EQ(*FormatInZone(t, "Asia/Kolkata"), "2024-03-10T12:30:00+05:30");
  EXPECT_FALSE(FormatInZone(t, "Not/AZone").ok());
}

TEST(TimeFormatTest, RelativeHints) {
  WallTime now = *ParseInstant("2024-01-01T00:00:00Z");
  EXPECT_EQ(RelativeHint(now + std::chrono::minutes(3), now), "in 3m");
  EXPECT_EQ(RelativeHint(now - std::chrono::hours(2), now), "2h ago");
  EXPECT_EQ(RelativeHint(now, now), "now");
}

}  // namespace
}  // namespace jobctl
