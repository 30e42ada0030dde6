#include "assignment.h"

#include <gtest/gtest.h>

namespace jobctl::agentd {
namespace {

TEST(AssignmentTest, AResultFileThatDoesNotDecodeIsCorrupt) {
  Result<ShardResult> r = ResultFromJson(
      R"({"run":18446744073709551615,"shard":0,"attempt":1,"token":2,"outcome":"exited"})");
  EXPECT_EQ(r.status().code(), Status::Code::kCorrupt);
  EXPECT_EQ(r.status().message(), "result: field \"run\" is out of range");
  EXPECT_EQ(ResultFromJson("not json").status().code(), Status::Code::kCorrupt);
}

TEST(AssignmentTest, ResultRoundTripsThroughJson) {
  ShardResult r{{12, 0, 1}, 57, Outcome::kTimedOut, std::nullopt, "timed out after 1h"};
  std::string text = ResultToJson(r, "host-a");
  EXPECT_NE(text.find("\"outcome\":\"timeout\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"exit_code\":null"), std::string::npos) << text;
  EXPECT_NE(text.find("\"agent\":\"host-a\""), std::string::npos) << text;
  Result<ShardResult> back = ResultFromJson(text);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->key, r.key);
  EXPECT_EQ(back->outcome, Outcome::kTimedOut);
  EXPECT_FALSE(back->exit_code);
  ShardResult exited{{1, 2, 3}, 4, Outcome::kExited, 3, ""};
  EXPECT_EQ(*ResultFromJson(ResultToJson(exited, "a"))->exit_code, 3);
}

TEST(AssignmentTest, TheEndOfTheOutputIsSentOnceKnownAndSurvivesTheResultFile) {
  ShardResult r{{12, 0, 1}, 57, Outcome::kExited, 0, ""};
  std::string before = ResultToJson(r, "host-a");
  EXPECT_EQ(before.find("output_seq"), std::string::npos) << before;  // not known yet
  EXPECT_EQ(ResultFromJson(before)->output_seq, std::nullopt);
  r.output_seq = 42;
  std::string after = ResultToJson(r, "host-a");
  EXPECT_NE(after.find("\"output_seq\":42"), std::string::npos) << after;
  EXPECT_EQ(ResultFromJson(after)->output_seq, 42);
  EXPECT_FALSE(ResultFromJson(R"({"run":1,"shard":0,"attempt":1,"token":1,"outcome":"exited",)"
                              R"("output_seq":-3})")
                   .ok());
}

}  // namespace
}  // namespace jobctl::agentd
