// Reading a caller's W3C traceparent: what the specification accepts, and what it refuses.
#include "model/trace_context.h"

#include <gtest/gtest.h>

namespace jobctl {
namespace {

TEST(TraceParentTest, ReadsTheSpecificationsExample) {
  Result<TraceParent> tp =
      ParseTraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  ASSERT_TRUE(tp.ok()) << tp.status().ToString();
  EXPECT_EQ(tp->trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(tp->parent_id, "00f067aa0ba902b7");
  EXPECT_EQ(tp->flags, 1);
}

TEST(TraceParentTest, ALaterVersionMayCarryMoreFields) {
  Result<TraceParent> tp =
      ParseTraceParent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-extra");
  ASSERT_TRUE(tp.ok()) << tp.status().ToString();
  EXPECT_EQ(tp->trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(tp->flags, 0);
}

TEST(TraceParentTest, RefusesWhatTheSpecificationRefuses) {
  for (const char* bad : {
           "",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",      // no flags
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",  // 00 is 55 characters
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // version ff
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",   // uppercase
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",   // zero trace id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   // zero parent id
           "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // separator
           "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",   // not hex
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x",   // flags
           "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",  // later version, no -
       }) {
    EXPECT_FALSE(ParseTraceParent(bad).ok()) << bad;
  }
  std::string long_one =
      "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-" + std::string(300, 'a');
  EXPECT_FALSE(ParseTraceParent(long_one).ok());
}

TEST(TraceParentTest, TraceIdsAre32LowercaseHexDigitsNotAllZero) {
  EXPECT_TRUE(IsTraceId("4bf92f3577b34da6a3ce929d0e0e4736"));
  EXPECT_FALSE(IsTraceId("4BF92F3577B34DA6A3CE929D0E0E4736"));
  EXPECT_FALSE(IsTraceId("00000000000000000000000000000000"));
  EXPECT_FALSE(IsTraceId("4bf92f3577b34da6a3ce929d0e0e473"));
  EXPECT_FALSE(IsTraceId(""));
}

}  // namespace
}  // namespace jobctl
