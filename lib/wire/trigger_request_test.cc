#include "wire/trigger_request.h"

#include <gtest/gtest.h>

namespace jobctl::wire {
namespace {

using nlohmann::json;

TEST(TriggerRequestTest, WhatJobctlSendsTheCoordinatorReadsBack) {
  TriggerRequest req;
  req.params = {{"VERSION", "1.4.2"}};
  req.idempotency_key = "deploy-1.4.2";
  req.at_ms = int64_t{1'893'456'000'000};
  Result<TriggerRequest> back = TriggerRequest::FromJson(req.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(*back == req);
  EXPECT_EQ(req.ToJson()["at"], "2030-01-01T00:00:00Z");
  TriggerRequest later;
  later.in = std::chrono::minutes(90);
  EXPECT_EQ(later.ToJson(), (json{{"params", json::object()}, {"in", "1h30m"}}));
  back = TriggerRequest::FromJson(later.ToJson());
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(*back == later);
}

TEST(TriggerRequestTest, ADeferredTriggerGivesAtOrInAsShortReadableTexts) {
  Result<TriggerRequest> at = TriggerRequest::FromJson({{"at", "2030-01-01T00:00:00Z"}});
  ASSERT_TRUE(at.ok()) << at.status().ToString();
  EXPECT_EQ(at->at_ms, int64_t{1'893'456'000'000});
  Result<TriggerRequest> in = TriggerRequest::FromJson({{"in", "2h"}});
  ASSERT_TRUE(in.ok());
  EXPECT_EQ(in->in, std::chrono::hours(2));
  EXPECT_FALSE(TriggerRequest::FromJson(json::object()).value().at_ms.has_value());
  for (const json& bad : {json{{"at", "2030-01-01T00:00:00Z"}, {"in", "1s"}}, json{{"at", "soon"}},
                          json{{"in", "2 hours"}}, json{{"in", "367d"}}, json{{"at", 5}},
                          json{{"at", std::string(65, '1')}}}) {
    EXPECT_FALSE(TriggerRequest::FromJson(bad).ok()) << bad.dump();
  }
}

TEST(TriggerRequestTest, ParamsAreStringsAndOlderClientsMaySendEnv) {
  Result<TriggerRequest> env = TriggerRequest::FromJson({{"env", {{"A", "b"}}}});
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->params.at("A"), "b");
  EXPECT_FALSE(TriggerRequest::FromJson({{"params", {{"A", 1}}}}).ok());
  EXPECT_FALSE(
      TriggerRequest::FromJson({{"params", json::object()}, {"env", json::object()}}).ok());
  EXPECT_FALSE(TriggerRequest::FromJson({{"idempotency_key", std::string(201, 'k')}}).ok());
  EXPECT_FALSE(TriggerRequest::FromJson({{"idempotency_key", 7}}).ok());
}

}  // namespace
}  // namespace jobctl::wire
