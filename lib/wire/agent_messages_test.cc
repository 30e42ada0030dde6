#include "wire/agent_messages.h"

#include <gtest/gtest.h>

namespace jobctl::wire {
namespace {

using nlohmann::json;

Grant FullGrant() {
  Grant g;
  g.key = {12, 1, 2};
  g.shard_total = 3;
  g.token = 57;
  g.ttl_ms = 15'000;
  g.heartbeat_ms = 5'000;
  g.job = "nightly";
  g.scheduled_at = "2026-11-22T04:29:20Z";
  g.trace_id = "0af7651916cd43dd8448eb211c80319c";
  g.command = {"/bin/echo", "x"};
  g.env = {{"K", "V"}};
  g.secrets = {{"DB_PASSWORD", "db"}};
  g.run_as = "backup";
  g.cwd = "/srv";
  g.timeout_ms = 60'000;
  g.kill_grace_ms = 10'000;
  g.limits = {int64_t{256} << 20, 50, 100, 300};
  return g;
}

TEST(AgentMessagesTest, AClaimReplyAsTheApiDocumentsItDecodes) {
  Result<ClaimReply> r = ClaimReply::FromJson(R"({"assignments":[{
    "run":12,"shard":1,"shard_total":3,"attempt":2,"token":57,"ttl_ms":15000,
    "heartbeat_ms":5000,"job":"nightly","scheduled_at":"2026-11-22T04:29:20Z",
    "trace_id":"0af7651916cd43dd8448eb211c80319c","command":["/bin/echo","x"],"shell":"",
    "env":{"K":"V"},"run_as":"","cwd":"","timeout_ms":null,"kill_grace_ms":10000}],
    "log_batch_bytes":4194304,"result_batch_max":1000})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->assignments.size(), 1u);
  const Grant& a = r->assignments[0];
  EXPECT_EQ(a.key, (AttemptKey{12, 1, 2}));
  EXPECT_EQ(a.shard_total, 3);
  EXPECT_EQ(a.token, 57);
  EXPECT_EQ(a.command, (std::vector<std::string>{"/bin/echo", "x"}));
  EXPECT_EQ(a.env.at("K"), "V");
  EXPECT_FALSE(a.timeout_ms);
  EXPECT_EQ(a.kill_grace_ms, 10000);
  EXPECT_EQ(r->log_batch_bytes, 4194304);
  EXPECT_EQ(r->result_batch_max, 1000);
}

TEST(AgentMessagesTest, AGrantRoundTripsAndKeepsTheApiFieldNames) {
  ClaimReply reply;
  reply.assignments = {FullGrant(), Grant{}};
  reply.log_batch_bytes = 4 << 20;
  reply.result_batch_max = 1000;
  std::string text = reply.ToJson();
  Result<ClaimReply> back = ClaimReply::FromJson(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, reply);
  json j = json::parse(text);
  for (const char* key : {"run", "shard", "shard_total", "attempt", "token", "ttl_ms",
                          "heartbeat_ms", "job", "scheduled_at", "trace_id", "command", "shell",
                          "env", "secrets", "run_as", "cwd", "timeout_ms", "kill_grace_ms"}) {
    EXPECT_TRUE(j["assignments"][0].contains(key)) << key;
  }
  // No secrets: no key (older agents never saw one).
  EXPECT_FALSE(j["assignments"][1].contains("secrets"));
  // Limits only where set.
  EXPECT_EQ(j["assignments"][0]["memory_max_bytes"], 256 << 20);
  EXPECT_EQ(j["assignments"][0]["cpu_max_percent"], 50);
  EXPECT_FALSE(j["assignments"][1].contains("pids_max"));
}

TEST(AgentMessagesTest, LimitsOutsideTheirRangesAreRefused) {
  for (const char* bad :
       {R"("pids_max":0)", R"("memory_max_bytes":-1)", R"("cpu_max_percent":"50")",
        R"("io_weight":10001)", R"("memory_max_bytes":1e300)"}) {
    std::string text =
        std::string(R"({"assignments":[{"run":1,"shard":0,"attempt":1,"token":1,)") + bad + "}]}";
    EXPECT_FALSE(ClaimReply::FromJson(text).ok()) << text;
  }
}

TEST(AgentMessagesTest, AGrantAheadOfItsInstantAndCanceledLeasesRoundTrip) {
  ClaimReply reply;
  Grant ahead;
  ahead.key = {7, 0, 1};
  ahead.token = 9;
  ahead.start_in_us = 750'250;
  reply.assignments = {ahead, Grant{}};
  reply.canceled = {{{5, 2}, 11}, {{6, 0}, 12}};
  std::string text = reply.ToJson();
  json j = json::parse(text);
  EXPECT_EQ(j["assignments"][0]["start_in_us"], 750'250);
  // At once: no key (older agents never saw one), and the coordinator's own start_mono_us
  // never.
  EXPECT_FALSE(j["assignments"][1].contains("start_in_us"));
  EXPECT_FALSE(j["assignments"][0].contains("start_mono_us"));
  EXPECT_EQ(j["canceled"][1]["token"], 12);
  Result<ClaimReply> back = ClaimReply::FromJson(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, reply);
  // Nothing canceled: no key.
  EXPECT_FALSE(json::parse(ClaimReply{}.ToJson()).contains("canceled"));
}

TEST(AgentMessagesTest, AStartInOutsideItsBoundsIsRefused) {
  for (const char* bad :
       {R"({"assignments":[{"run":1,"shard":0,"attempt":1,"token":1,"start_in_us":-1}]})",
        R"({"assignments":[{"run":1,"shard":0,"attempt":1,"token":1,"start_in_us":60000001}]})",
        R"({"assignments":[{"run":1,"shard":0,"attempt":1,"token":1,"start_in_us":"1"}]})"}) {
    Result<ClaimReply> r = ClaimReply::FromJson(bad);
    EXPECT_FALSE(r.ok()) << bad;
  }
}

// The assignments of the same answer are leased already: a canceled list that does not read
// loses only what does not read, never them.
TEST(AgentMessagesTest, ACanceledListIsReadLenientlyAndBounded) {
  for (
      const char* text :
      {R"({"assignments":[{"run":1,"shard":0,"attempt":1,"token":1}],"canceled":{}})",
       R"({"assignments":[{"run":1,"shard":0,"attempt":1,"token":1}],"canceled":[{"run":1,"shard":0}]})",
       R"({"assignments":[{"run":1,"shard":0,"attempt":1,"token":1}],"canceled":[{"run":"1","shard":0,"token":1}]})"}) {
    Result<ClaimReply> r = ClaimReply::FromJson(text);
    ASSERT_TRUE(r.ok()) << text;
    EXPECT_EQ(r->assignments.size(), 1u) << text;
    EXPECT_TRUE(r->canceled.empty()) << text;
  }
  json many = {{"assignments", json::array()}, {"canceled", json::array()}};
  many["canceled"].push_back("junk");
  for (size_t i = 0; i <= kMaxCanceledInReply; ++i) {
    many["canceled"].push_back({{"run", 1}, {"shard", 0}, {"token", static_cast<int64_t>(i)}});
  }
  Result<ClaimReply> r = ClaimReply::FromJson(many.dump());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->canceled.size(), kMaxCanceledInReply);
  EXPECT_EQ(r->canceled.front().token, 0);
}

TEST(AgentMessagesTest, OldCoordinatorsSayNothingOfBatches) {
  for (const char* text : {R"({"assignments":[]})", R"({"assignments":[],"log_batch_bytes":"big"})",
                           R"({"assignments":[],"log_batch_bytes":-1,"result_batch_max":0})"}) {
    Result<ClaimReply> r = ClaimReply::FromJson(text);
    ASSERT_TRUE(r.ok()) << text;
    EXPECT_FALSE(r->log_batch_bytes) << text;
    EXPECT_FALSE(r->result_batch_max) << text;
  }
}

TEST(AgentMessagesTest, AReplyThatDoesNotDecodeNamesTheFieldAndTheVersions) {
  struct Case {
    const char* reply;
    const char* says;
  };
  const std::string kSkew = " (agentd and the coordinator may be different versions)";
  for (const Case& c : std::vector<Case>{
           {"not json", "claim reply: not a JSON object"},
           {R"({"grants":[]})", "claim reply: field \"assignments\" is missing or not an array"},
           {R"({"assignments":[{"run":1}]})", "claim reply: field \"shard\" is required"},
           {R"({"assignments":[{"run":"x","shard":0,"attempt":1,"token":2}]})",
            "claim reply: field \"run\" has the wrong type"},
           {R"({"assignments":[{"run":1,"shard":1e300,"attempt":1,"token":2}]})",
            "claim reply: field \"shard\" is out of range"},
           {R"({"assignments":[{"run":1,"shard":0,"attempt":4294967297,"token":2}]})",
            "claim reply: field \"attempt\" is out of range"},
           {R"({"assignments":[{"run":1,"shard":0.5,"attempt":1,"token":2}]})",
            "claim reply: field \"shard\" has the wrong type"},
           {R"({"assignments":[{"run":1,"shard":0,"attempt":1,"token":2,"ttl_ms":0}]})",
            "claim reply: field \"ttl_ms\" must be positive"},
           {R"({"assignments":[{"run":1,"shard":0,"attempt":1,"token":2,"env":{"K":1}}]})",
            "claim reply: field \"env\" has the wrong type"},
       }) {
    Result<ClaimReply> r = ClaimReply::FromJson(c.reply);
    ASSERT_FALSE(r.ok()) << c.reply;
    EXPECT_EQ(r.status().message(), c.says + kSkew) << c.reply;
  }
  EXPECT_EQ(HeartbeatReply::FromJson("[]").status().message(),
            "heartbeat reply: not a JSON object" + kSkew);
  EXPECT_EQ(ResultBatchReply::FromJson(R"({"answers":[]})").status().message(),
            "result batch reply: field \"results\" is required" + kSkew);
}

// Each renewal is the coordinator's own statement about one lease: a reply from another
// version with one item agentd cannot read still renews the others, and a period it cannot
// read leaves the agent's own.
TEST(AgentMessagesTest, AHeartbeatReplyItemThatDoesNotDecodeIsLeftOutAlone) {
  std::vector<std::string> skipped;
  Result<HeartbeatReply> r = HeartbeatReply::FromJson(
      R"({"ttl_ms":"15s","heartbeat_ms":99999999999,
          "renewed":[{"run":1,"token":3},{"run":1,"shard":1,"token":4}],
          "revoked":[{"run":2,"shard":0,"token":5,"reason":7},"x"]})",
      &skipped);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->ttl_ms, 0);
  EXPECT_EQ(r->heartbeat_ms, kMaxLeasePeriodMs);
  EXPECT_EQ(r->renewed, (std::vector<LeaseRef>{{{1, 1}, 4}}));
  EXPECT_EQ(r->revoked, (std::vector<RevokedLease>{{{2, 0}, 5, Revocation::kStale}}));
  EXPECT_EQ(skipped, (std::vector<std::string>{"renewed[0]: field \"shard\" is required",
                                               "revoked[1]: leases[] must be objects"}));
}

TEST(AgentMessagesTest, AnAnswerThatDoesNotDecodeIsRetriedAloneAsA500) {
  Result<ResultBatchReply> r = ResultBatchReply::FromJson(
      R"({"results":[{"accepted":true,"state":"running"},{"error":"x"},{"accepted":"yes"}]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->results.size(), 3u);
  EXPECT_TRUE(r->results[0].accepted);
  EXPECT_FALSE(r->results[1].accepted);
  EXPECT_EQ(r->results[1].status, 500);
  EXPECT_EQ(r->results[1].message, "answer not understood: field \"status\" is required");
  EXPECT_EQ(r->results[2].status, 500);
}

TEST(AgentMessagesTest, ALeasePeriodBeyondADayReadsAsADay) {
  Result<ClaimReply> r = ClaimReply::FromJson(
      R"({"assignments":[{"run":1,"shard":0,"attempt":1,"token":2,"ttl_ms":9000000000000,
          "heartbeat_ms":9000000000000}]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->assignments[0].ttl_ms, kMaxLeasePeriodMs);
  EXPECT_EQ(r->assignments[0].heartbeat_ms, kMaxLeasePeriodMs);
}

TEST(AgentMessagesTest, AHeartbeatAndItsReplyRoundTrip) {
  HeartbeatRequest hb{"host-a", 3, {{{7, 0}, 11}, {{7, 1}, 12}}};
  Result<HeartbeatRequest> hb_back = HeartbeatRequest::FromJson(hb.ToJson());
  ASSERT_TRUE(hb_back.ok());
  EXPECT_EQ(*hb_back, hb);

  HeartbeatReply reply{15'000,
                       5'000,
                       {{{7, 0}, 11}},
                       {{{7, 1}, 12, Revocation::kCanceled},
                        {{8, 0}, 13, Revocation::kFinished},
                        {{9, 2}, 14, Revocation::kStale}}};
  std::string text = reply.ToJson();
  EXPECT_EQ(json::parse(text)["revoked"][0]["reason"], "canceled");
  EXPECT_EQ(text.find(" "), std::string::npos);  // written directly, compact
  Result<HeartbeatReply> back = HeartbeatReply::FromJson(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, reply);
}

TEST(AgentMessagesTest, AnUnknownRevocationIsStaleAndAMissingPeriodIsNone) {
  Result<HeartbeatReply> r = HeartbeatReply::FromJson(
      R"({"revoked":[{"run":1,"shard":0,"token":2,"reason":"moon phase"},{"run":1,"shard":1,"token":3}]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->ttl_ms, 0);
  EXPECT_EQ(r->heartbeat_ms, 0);
  ASSERT_EQ(r->revoked.size(), 2u);
  EXPECT_EQ(r->revoked[0].reason, Revocation::kStale);
  EXPECT_EQ(r->revoked[1].reason, Revocation::kStale);
}

TEST(AgentMessagesTest, AResultRoundTripsWithOrWithoutTheEndOfItsOutput) {
  ShardResult r{{12, 0, 1}, 57, Outcome::kTimedOut, std::nullopt, "timed out after 1h"};
  json j = r.ToJson();
  EXPECT_EQ(j["outcome"], "timeout");
  EXPECT_TRUE(j["exit_code"].is_null());
  EXPECT_FALSE(j.contains("output_seq"));  // not known yet
  EXPECT_EQ(*ShardResult::FromJson(j), r);
  r.output_seq = 42;
  r.exit_code = 3;
  r.agent = "host-a";
  EXPECT_EQ(*ShardResult::FromJson(r.ToJson()), r);
  EXPECT_FALSE(j.contains("peak_rss_bytes"));  // not measured
  r.peak_rss_bytes = int64_t{3} << 40;
  r.cpu_ms = 0;
  j = r.ToJson();
  EXPECT_EQ(j["peak_rss_bytes"], int64_t{3} << 40);
  EXPECT_EQ(j["cpu_ms"], 0);
  EXPECT_EQ(*ShardResult::FromJson(j), r);
}

TEST(AgentMessagesTest, AResultOutsideTheRulesIsRefusedNamingWhy) {
  const std::string head = R"({"run":1,"shard":0,"attempt":1,"token":1,"outcome":"exited")";
  struct Case {
    std::string body;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {head + R"(,"output_seq":-3})",
            "field \"output_seq\" is out of range (0 to 1000000000)"},
           {head + R"(,"output_seq":1000000001})",
            "field \"output_seq\" is out of range (0 to 1000000000)"},
           {head + R"(,"peak_rss_bytes":-1})",
            "field \"peak_rss_bytes\" is out of range (0 to 9007199254740992)"},
           {head + R"(,"cpu_ms":9007199254740993})",
            "field \"cpu_ms\" is out of range (0 to 9007199254740992)"},
           {head + R"(,"cpu_ms":1.5})", "field \"cpu_ms\" has the wrong type"},
           {R"({"run":1,"shard":0,"attempt":1,"token":1,"outcome":"melted"})",
            "unknown outcome \"melted\""},
           {R"({"run":1,"shard":0,"attempt":1,"outcome":"exited"})", "field \"token\" is required"},
           {head + R"(,"exit_code":"3"})", "field \"exit_code\" has the wrong type"},
       }) {
    Result<ShardResult> r = ShardResult::FromJson(json::parse(c.body));
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.status().message(), c.says) << c.body;
  }
}

TEST(AgentMessagesTest, EachResultOfABatchIsDecodedAlone) {
  Result<ResultBatch> b = ResultBatch::FromJson(json::parse(
      R"({"results":[{"run":1,"shard":0,"attempt":1,"token":1,"outcome":"exited"},{"run":"x"}]})"));
  ASSERT_TRUE(b.ok());
  ASSERT_EQ(b->results.size(), 2u);
  EXPECT_TRUE(b->results[0].ok());
  EXPECT_FALSE(b->results[1].ok());
  EXPECT_FALSE(ResultBatch::FromJson(json::parse(R"({"results":[1]})")).ok());
  EXPECT_FALSE(ResultBatch::FromJson(json::parse(R"({"result":[]})")).ok());
  EXPECT_FALSE(ResultBatch::FromJson(json::parse(R"({"results":{}})")).ok());
  json many = {{"results", json::array()}};
  for (size_t i = 0; i <= kMaxResultBatch; ++i) many["results"].push_back(json::object());
  EXPECT_EQ(ResultBatch::FromJson(many).status().message(), "at most 1000 results per request");

  ResultBatchReply reply{{{true, "running"}, {false, "", 409, "conflict", "stale token"}}};
  Result<ResultBatchReply> back = ResultBatchReply::FromJson(reply.ToJson().dump());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, reply);
}

TEST(AgentMessagesTest, ALogAppendSaysStoredAsABooleanAloneAndACountInABatch) {
  LogAppendReply r{3, 1, true};
  EXPECT_EQ(r.ToJson(false), (json{{"stored", true}, {"truncated", true}}));
  EXPECT_EQ(r.ToJson(true), (json{{"stored", 3}, {"duplicates", 1}, {"truncated", true}}));
  EXPECT_EQ(*LogAppendReply::FromJson(r.ToJson(true).dump()), r);
  Result<LogAppendReply> single = LogAppendReply::FromJson(r.ToJson(false).dump());
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(single->stored, 1);
  EXPECT_TRUE(single->truncated);
}

TEST(AgentMessagesTest, AClaimRoundTrips) {
  ClaimRequest c{"host-a", {{"zone", "eu"}}, 4, 2, "1.2.0", 30'000};
  Result<ClaimRequest> back = ClaimRequest::FromJson(c.ToJson());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, c);
  EXPECT_EQ(ClaimRequest::FromJson(json::parse(R"({"slots":true})")).status().message(),
            "field \"slots\" has the wrong type");
  // An agent that runs flow steps says so; older ones say nothing.
  c.features = {kStepOutputFeature};
  back = ClaimRequest::FromJson(json::parse(c.ToJson().dump()));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->features, std::vector<std::string>{"step_output"});
  EXPECT_FALSE(ClaimRequest{}.ToJson().contains("features"));
  json many = c.ToJson();
  many["features"] = std::vector<std::string>(kMaxFeatures + 1, "x");
  EXPECT_FALSE(ClaimRequest::FromJson(many).ok());
  many["features"] = {std::string(65, 'x')};
  EXPECT_FALSE(ClaimRequest::FromJson(many).ok());
  for (const char* bad : {"", "Step", "a b", "x\n"}) {
    many["features"] = {bad};
    EXPECT_FALSE(ClaimRequest::FromJson(many).ok()) << bad;
  }
}

StepContext AStep() {
  return {.flow = "nightly-etl",
          .flow_run = 812,
          .step = "load",
          .needs = {{"extract", 813}, {"transform", 814}},
          .outputs = {{"ROWS", "1200"}, {"DAY", "2026-03-01"}}};
}

TEST(AgentMessagesTest, AStepsGrantCarriesItsFlowAndWhatItsNeedsWrote) {
  Grant g = FullGrant();
  g.step = AStep();
  json j = json::parse(g.ToJson().dump());
  EXPECT_EQ(j["step"]["needs"]["extract"], 813);
  Result<Grant> back = Grant::FromJson(j);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, g);
  EXPECT_FALSE(FullGrant().ToJson().contains("step"));
  EXPECT_EQ(Grant::FromJson(FullGrant().ToJson())->step, std::nullopt);
}

TEST(AgentMessagesTest, AStepContextACheckedFlowCouldNotHoldIsRefused) {
  auto with = [](auto change) {
    json j = AStep().ToJson();
    change(j);
    return StepContext::FromJson(j);
  };
  EXPECT_TRUE(with([](json&) {}).ok());
  EXPECT_FALSE(with([](json& j) { j["flow"] = "Bad Name"; }).ok());
  EXPECT_FALSE(with([](json& j) { j["step"] = "x:y"; }).ok());
  EXPECT_FALSE(with([](json& j) { j["flow_run"] = 0; }).ok());
  EXPECT_FALSE(with([](json& j) { j["needs"]["extract"] = -1; }).ok());
  EXPECT_FALSE(with([](json& j) { j["needs"]["Bad Step"] = 1; }).ok());
  EXPECT_FALSE(with([](json& j) { j["needs"] = json::array({1}); }).ok());
  EXPECT_FALSE(with([](json& j) { j["outputs"]["PATH"] = "/tmp"; }).ok());
  EXPECT_FALSE(with([](json& j) { j["outputs"]["JOB_RUN_ID"] = "1"; }).ok());
  EXPECT_FALSE(with([](json& j) { j["outputs"]["A"] = "two\nlines"; }).ok());
  EXPECT_FALSE(with([](json& j) { j["outputs"]["BASH_ENV"] = "/tmp/x"; }).ok());
  EXPECT_FALSE(with([](json& j) { j["outputs"]["A"] = "cr\r"; }).ok());
  EXPECT_FALSE(with([](json& j) {
                 j["needs"]["a-b"] = 1;
                 j["needs"]["a.b"] = 2;
               }).ok());
  EXPECT_FALSE(with([](json& j) { j["needs"]["extract"] = 1.5; }).ok());
  EXPECT_FALSE(with([](json& j) { j["needs"]["extract"] = true; }).ok());
  EXPECT_FALSE(
      with([](json& j) { j["outputs"]["A"] = std::string(kMaxNeededOutputBytes, 'x'); }).ok());
  EXPECT_FALSE(with([](json& j) {
                 for (int i = 0; i <= kMaxFlowSteps; ++i) j["needs"]["s" + std::to_string(i)] = 1;
               }).ok());
}

TEST(AgentMessagesTest, AResultCarriesItsStepsOutputsWithinTheLimit) {
  ShardResult r{{12, 1, 2}, 57, Outcome::kExited, 0, "", std::nullopt, ""};
  EXPECT_FALSE(r.ToJson().contains("outputs"));
  r.outputs = {{"ROWS", "1200"}};
  Result<ShardResult> back = ShardResult::FromJson(json::parse(r.ToJson().dump()));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, r);
  r.outputs = {{"A", std::string(kMaxStepOutputBytes, 'x')}};
  EXPECT_FALSE(ShardResult::FromJson(r.ToJson()).ok());
  r.outputs = {{"LD_PRELOAD", "/tmp/x.so"}};
  EXPECT_FALSE(ShardResult::FromJson(r.ToJson()).ok());
  r.outputs = {};
  r.outcome = Outcome::kBadOutput;
  back = ShardResult::FromJson(json::parse(r.ToJson().dump()));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->outcome, Outcome::kBadOutput);
  EXPECT_EQ(r.ToJson()["outcome"], "bad_output");
}

}  // namespace
}  // namespace jobctl::wire
