#include "coordinator/request_json.h"

#include <gtest/gtest.h>

#include <string>

namespace jobctl::coordinator {
namespace {

using nlohmann::json;

json Parse(const std::string& text) { return json::parse(text); }

TEST(RequestJsonTest, ClaimMayNameItsAgentAndBoundsItsLabels) {
  Result<ClaimRequest> r = ClaimRequestFromJson(
      Parse(R"({"agent":"a","labels":{"zone":"x"},"slots":4,"free":2,"wait_ms":100})"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->labels.at("zone"), "x");
  EXPECT_EQ(r->slots, 4);
  EXPECT_EQ(r->free, 2);
  EXPECT_EQ(r->wait_ms, 100);
  // The name comes from the credential: the body need not say it.
  EXPECT_TRUE(ClaimRequestFromJson(Parse(R"({"slots":1})")).ok());
  json many = {{"labels", json::object()}};
  for (int i = 0; i < 33; ++i) many["labels"]["k" + std::to_string(i)] = "v";
  EXPECT_EQ(ClaimRequestFromJson(many).status().message(), "claim: at most 32 labels");
  EXPECT_FALSE(ClaimRequestFromJson(Parse(R"({"labels":{"role":"a b"}})")).ok());
  EXPECT_TRUE(ClaimRequestFromJson(Parse(R"({"labels":{"topology/zone":"eu/1"}})")).ok());
  EXPECT_FALSE(ClaimRequestFromJson(json{{"labels", {{std::string(65, 'k'), "v"}}}}).ok());
}

TEST(RequestJsonTest, AnAgentTokenIsBoundToOneSafeName) {
  Result<TokenRequest> r = TokenRequestFromJson(
      Parse(R"({"role":"agent","agent":"web-1","labels":{"role":"web*"},"expires_in_ms":1000})"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->agent, "web-1");
  EXPECT_EQ(r->labels.at("role"), "web*");
  EXPECT_EQ(r->expires_in_ms, 1000);
  EXPECT_FALSE(TokenRequestFromJson(Parse(R"({"role":"agent"})")).ok());
  EXPECT_FALSE(TokenRequestFromJson(Parse(R"({"role":"read","agent":"x"})")).ok());
  EXPECT_FALSE(TokenRequestFromJson(Parse(R"({"role":"agent","agent":"a/b"})")).ok());
  EXPECT_FALSE(TokenRequestFromJson(json{{"role", "agent"}, {"agent", std::string(65, 'a')}}).ok());
  EXPECT_FALSE(TokenRequestFromJson(json{{"role", "read"}, {"name", std::string(65, 'a')}}).ok());
  EXPECT_FALSE(TokenRequestFromJson(Parse(R"({"role":"read","labels":{"a":"b"}})")).ok());
  EXPECT_FALSE(TokenRequestFromJson(Parse(R"({"role":"join","expires_in_ms":0})")).ok());
  EXPECT_TRUE(TokenRequestFromJson(Parse(R"({"role":"join","labels":{"zone":"eu-*"}})")).ok());
}

TEST(RequestJsonTest, LabelsOutsideTheAllowedOnesAreNamed) {
  std::map<std::string, std::string> allowed = {{"role", "web*"}, {"zone", "eu"}};
  EXPECT_EQ(LabelOutside({{"role", "web-2"}, {"zone", "eu"}}, allowed), std::nullopt);
  EXPECT_EQ(LabelOutside({{"role", "db"}}, allowed), "role=db");
  EXPECT_EQ(LabelOutside({{"gpu", "yes"}}, allowed), "gpu=yes");
  EXPECT_EQ(LabelOutside({{"gpu", "yes"}}, {}), std::nullopt);
}

TEST(RequestJsonTest, NumbersOutsideTheFieldsRangeAreRejected) {
  Result<ClaimRequest> claim = ClaimRequestFromJson(Parse(R"({"agent":"a","slots":1e300})"));
  EXPECT_EQ(claim.status().message(), "field \"slots\" is out of range");
  Result<ResultReport> result = ResultReport::FromJson(Parse(
      R"({"agent":"a","run":1,"shard":4294967296,"attempt":1,"token":1,"outcome":"exited"})"));
  EXPECT_EQ(result.status().message(), "field \"shard\" is out of range");
  EXPECT_FALSE(HeartbeatRequest::FromJson(
                   Parse(R"({"agent":"a","leases":[{"run":1,"shard":0,"token":1e19}]})"))
                   .ok());
  EXPECT_TRUE(ClaimRequestFromJson(Parse(R"({"agent":"a","wait_ms":-9223372036854775808})")).ok());
}

TEST(RequestJsonTest, TheEndOfAnAttemptsOutputIsABoundedCountAndMayBeMissing) {
  const std::string head = R"({"run":1,"shard":0,"attempt":1,"token":1,"outcome":"exited")";
  Result<ResultReport> old_agent = ResultReport::FromJson(Parse(head + "}"));
  ASSERT_TRUE(old_agent.ok());
  EXPECT_EQ(old_agent->output_seq, std::nullopt);
  EXPECT_EQ(ResultReport::FromJson(Parse(head + R"(,"output_seq":null})"))->output_seq,
            std::nullopt);
  EXPECT_EQ(ResultReport::FromJson(Parse(head + R"(,"output_seq":0})"))->output_seq, 0);
  EXPECT_EQ(ResultReport::FromJson(Parse(head + R"(,"output_seq":17})"))->output_seq, 17);
  for (const char* bad : {R"(-1)", R"(1000000001)", R"(9223372036854775807)", R"(1e300)", R"("5")",
                          R"(2.5)", R"(true)", R"({"seq":1})"}) {
    Result<ResultReport> r = ResultReport::FromJson(Parse(head + R"(,"output_seq":)" + bad + "}"));
    EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("output_seq"), std::string::npos) << bad;
  }
}

TEST(RequestJsonTest, BooleansAndFractionsAreNotIntegers) {
  EXPECT_EQ(ClaimRequestFromJson(Parse(R"({"agent":"a","free":true})")).status().message(),
            "field \"free\" has the wrong type");
  EXPECT_EQ(HeartbeatRequest::FromJson(
                Parse(R"({"agent":"a","leases":[{"run":1,"shard":0.5,"token":1}]})"))
                .status()
                .message(),
            "field \"shard\" has the wrong type");
  EXPECT_FALSE(
      ResultReport::FromJson(
          Parse(
              R"({"agent":"a","run":1,"shard":0,"attempt":1,"token":1,"outcome":"exited","exit_code":false})"))
          .ok());
  EXPECT_FALSE(DrainRequestFromJson(Parse(R"({"draining":1})")).ok());
  for (const char* bad : {"{}", R"({"channel":null})", R"({"channel":7})", R"({"channel":""})",
                          R"({"channel":["ops"]})"}) {
    EXPECT_FALSE(NotifyTestChannelFromJson(Parse(bad)).ok()) << bad;
  }
  EXPECT_FALSE(NotifyTestChannelFromJson(json{{"channel", std::string(65, 'x')}}).ok());
  EXPECT_EQ(*NotifyTestChannelFromJson(json{{"channel", std::string(64, 'x')}}),
            std::string(64, 'x'));
  EXPECT_EQ(*NotifyTestChannelFromJson(Parse(R"({"channel":"ops-mail"})")), "ops-mail");
}

TEST(RequestJsonTest, DeeplyNestedLeasesAreRejectedWithoutRecursing) {
  const int depth = 200'000;
  json body =
      Parse(R"({"agent":"a","leases":)" + std::string(depth, '[') + std::string(depth, ']') + "}");
  Result<HeartbeatRequest> r = HeartbeatRequest::FromJson(body);
  EXPECT_EQ(r.status().message(), "leases[] must be objects");
}

TEST(RequestJsonTest, HeartbeatReadsItsLeases) {
  Result<HeartbeatRequest> r = HeartbeatRequest::FromJson(
      Parse(R"({"agent":"a","free":1,"leases":[{"run":7,"shard":2,"token":9}]})"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->leases.size(), 1u);
  EXPECT_EQ(r->leases[0].key.run, 7);
  EXPECT_EQ(r->leases[0].key.shard, 2);
  EXPECT_EQ(r->leases[0].token, 9);
  EXPECT_TRUE(HeartbeatRequest::FromJson(Parse(R"({"agent":"a","leases":null})"))->leases.empty());
  EXPECT_FALSE(HeartbeatRequest::FromJson(Parse(R"({"agent":"a","leases":{}})")).ok());
}

TEST(RequestJsonTest, ApplyNamesTheTokenInTheAuthor) {
  EXPECT_EQ(ApplyRequestFromJson(Parse(R"({"text":""})"), "ci")->author, "ci");
  EXPECT_EQ(ApplyRequestFromJson(Parse(R"({"text":"","author":"alice"})"), "ci")->author,
            "alice (token ci)");
  EXPECT_FALSE(ApplyRequestFromJson(Parse(R"({"dry_run":true})"), "ci").ok());
}

TEST(RequestJsonTest, TokenJobsGlobOnlyForTheReadAndTriggerRoles) {
  Result<TokenRequest> r = TokenRequestFromJson(Parse(R"({"role":"trigger","jobs":"deploy-*"})"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->role, Role::kTrigger);
  EXPECT_EQ(TokenRequestFromJson(Parse("{}"))->role, Role::kRead);
  EXPECT_TRUE(TokenRequestFromJson(Parse(R"({"role":"read","jobs":"x"})")).ok());
  EXPECT_FALSE(TokenRequestFromJson(Parse(R"({"role":"admin","jobs":"x"})")).ok());
  EXPECT_FALSE(TokenRequestFromJson(Parse(R"({"role":"open"})")).ok());
}

TEST(RequestJsonTest, DrainingIsTheDefault) {
  EXPECT_TRUE(DrainRequestFromJson(Parse("{}"))->draining);
  EXPECT_FALSE(DrainRequestFromJson(Parse(R"({"draining":false})"))->draining);
  EXPECT_FALSE(DrainRequestFromJson(Parse(R"({"draining":"no"})")).ok());
}

TEST(RequestJsonTest, ARetryTakesOnlyFailedShards) {
  EXPECT_FALSE(RetryRequestFromJson(Parse("{}"))->failed_shards);
  EXPECT_FALSE(RetryRequestFromJson(Parse(R"({"failed_shards":null})"))->failed_shards);
  EXPECT_FALSE(RetryRequestFromJson(Parse(R"({"failed_shards":false})"))->failed_shards);
  EXPECT_TRUE(RetryRequestFromJson(Parse(R"({"failed_shards":true})"))->failed_shards);
  for (const char* bad : {R"({"failed_shards":1})", R"({"failed_shards":"true"})",
                          R"({"failed_shard":true})", R"({"failed_shards":true,"x":1})"}) {
    EXPECT_FALSE(RetryRequestFromJson(Parse(bad)).ok()) << bad;
  }
}

}  // namespace
}  // namespace jobctl::coordinator
