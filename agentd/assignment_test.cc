#include "assignment.h"

#include <gtest/gtest.h>

namespace jobctl::agentd {
namespace {

TEST(AssignmentTest, ParsesAClaimReply) {
  Result<std::vector<Assignment>> r = ParseClaimReply(R"({"assignments":[{
    "run":12,"shard":1,"shard_total":3,"attempt":2,"token":57,"ttl_ms":15000,
    "heartbeat_ms":5000,"job":"nightly","scheduled_at":"2026-11-22T04:29:20Z",
    "trace_id":"0af7651916cd43dd8448eb211c80319c","command":["/bin/echo","x"],"shell":"",
    "env":{"K":"V"},"run_as":"","cwd":"","timeout_ms":null,"kill_grace_ms":10000}]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 1u);
  const Assignment& a = (*r)[0];
  EXPECT_EQ(a.key, (AttemptKey{12, 1, 2}));
  EXPECT_EQ(a.shard_total, 3);
  EXPECT_EQ(a.token, 57);
  EXPECT_EQ(a.command, (std::vector<std::string>{"/bin/echo", "x"}));
  EXPECT_EQ(a.env.at("K"), "V");
  EXPECT_FALSE(a.timeout_ms);
  EXPECT_EQ(*a.kill_grace_ms, 10000);
}

TEST(AssignmentTest, EmptyReplyAndBadReplies) {
  EXPECT_TRUE(ParseClaimReply(R"({"assignments":[]})")->empty());
  EXPECT_FALSE(ParseClaimReply("not json").ok());
  EXPECT_FALSE(ParseClaimReply(R"({"assignments":[{"run":1}]})").ok());
  EXPECT_FALSE(
      ParseClaimReply(R"({"assignments":[{"run":"x","shard":0,"attempt":1,"token":2}]})").ok());
}

TEST(AssignmentTest, NumbersOutOfRangeAreRejected) {
  Result<std::vector<Assignment>> r =
      ParseClaimReply(R"({"assignments":[{"run":1,"shard":1e300,"attempt":1,"token":2}]})");
  EXPECT_EQ(r.status().message(), "claim reply: \"shard\" is out of range");
  EXPECT_FALSE(
      ParseClaimReply(R"({"assignments":[{"run":1,"shard":0,"attempt":4294967297,"token":2}]})")
          .ok());
  EXPECT_FALSE(
      ResultFromJson(
          R"({"run":18446744073709551615,"shard":0,"attempt":1,"token":2,"outcome":"exited"})")
          .ok());
}

TEST(AssignmentTest, ClaimReplyTellsTheLargestBatchesWhenTheCoordinatorTakesThem) {
  ClaimReplyExtras extras;
  ASSERT_TRUE(
      ParseClaimReply(R"({"assignments":[],"log_batch_bytes":4194304,"result_batch_max":1000})",
                      &extras)
          .ok());
  EXPECT_EQ(extras.log_batch_bytes, 4194304);
  EXPECT_EQ(extras.result_batch_max, 1000);
  ClaimReplyExtras none;
  ASSERT_TRUE(ParseClaimReply(R"({"assignments":[]})", &none).ok());
  EXPECT_FALSE(none.log_batch_bytes);
  EXPECT_FALSE(none.result_batch_max);
  ASSERT_TRUE(ParseClaimReply(R"({"assignments":[],"log_batch_bytes":"big"})", &none).ok());
  ASSERT_TRUE(ParseClaimReply(R"({"assignments":[],"log_batch_bytes":-1})", &none).ok());
  EXPECT_FALSE(none.log_batch_bytes);
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
