#include "wire/job_json.h"

#include <gtest/gtest.h>

namespace jobctl::wire {
namespace {

using nlohmann::json;

TEST(JobJsonTest, AJobRoundTripsThroughJson) {
  Job job;
  job.name = "nightly";
  job.schedule = "30 2 * * *";
  job.command = {"/usr/bin/backup", "--full"};
  job.on = {{"role", "db", false}, {"env", "staging", true}};
  job.timeout = std::chrono::hours(1);
  job.expect_success_within = std::chrono::hours(26);
  job.env = {{"K", "V"}};
  job.log_cap_bytes = 4096;
  job.limits = {int64_t{512} << 20, 150, 64, 200};
  Result<Job> back = JobFromJson(json::parse(JobToJson(job).dump()));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, job);
}

TEST(JobJsonTest, NumbersOutsideTheFieldsRangeAreRejected) {
  EXPECT_EQ(JobFromJson(json::parse(R"({"name":"a","shards":1e300})")).status().message(),
            "job.shards: out of range");
  EXPECT_FALSE(JobFromJson(json::parse(R"({"name":"a","shards":4294967297})")).ok());
  EXPECT_FALSE(JobFromJson(json::parse(R"({"name":"a","timeout_ms":1e19})")).ok());
  EXPECT_TRUE(JobFromJson(json::parse(R"({"name":"a","shards":2.0})")).ok());
  EXPECT_EQ(JobFromJson(json::parse(R"({"name":"a","log_cap_bytes":0})")).status().message(),
            "job.log_cap_bytes: out of range");
  EXPECT_EQ(JobFromJson(json::parse(R"({"name":"a","log_cap_bytes":null})"))->log_cap_bytes, 0);
}

TEST(JobJsonTest, ResourceLimitsAreNullWhenUnsetAndBoundedWhenRead) {
  Job job{.name = "a"};
  json j = JobToJson(job);
  for (const char* k : {"memory_max_bytes", "cpu_max_percent", "pids_max", "io_weight"}) {
    EXPECT_TRUE(j.contains(k) && j[k].is_null()) << k;
  }
  EXPECT_EQ(JobFromJson(json::parse(R"({"name":"a","memory_max_bytes":1000})")).status().message(),
            "job.memory_max_bytes: expected an integer from 1048576 to 1099511627776");
  for (const char* bad :
       {R"({"name":"a","cpu_max_percent":0})", R"({"name":"a","cpu_max_percent":100001})",
        R"({"name":"a","pids_max":"64"})", R"({"name":"a","io_weight":1e300})",
        R"({"name":"a","pids_max":4194305})", R"({"name":"a","io_weight":0.5})"}) {
    EXPECT_FALSE(JobFromJson(json::parse(bad)).ok()) << bad;
  }
  // A limit added to a job that had none is a change (and one taken away too).
  job.limits.pids_max = 10;
  EXPECT_EQ(ChangedFields(Job{.name = "a"}, job), std::vector<std::string>{"pids_max"});
  EXPECT_EQ(ChangedFields(job, Job{.name = "a"}), std::vector<std::string>{"pids_max"});
}

TEST(JobJsonTest, ExpectSuccessWithinIsNullWhenUnsetAndBoundedWhenRead) {
  Job job;
  job.name = "a";
  EXPECT_TRUE(JobToJson(job)["expect_success_within_ms"].is_null());
  job.expect_success_within = std::chrono::minutes(90);
  EXPECT_EQ(JobToJson(job)["expect_success_within_ms"], 5'400'000);
  EXPECT_FALSE(JobFromJson(json::parse(R"({"name":"a","expect_success_within_ms":1000})")).ok());
  // Stored before the key existed: none.
  Result<Job> old = JobFromJson(json::parse(R"({"name":"a"})"));
  ASSERT_TRUE(old.ok());
  EXPECT_FALSE(old->expect_success_within);
  EXPECT_EQ(ChangedFields(Job{.name = "a"}, job),
            std::vector<std::string>{"expect_success_within_ms"});
}

Flow AFlow() {
  Flow flow;
  flow.name = "nightly-etl";
  flow.schedule = "15 2 * * *";
  flow.timezone = "Europe/Berlin";
  flow.overlap = Overlap::kAllow;
  flow.expect_success_within = std::chrono::hours(26);
  flow.notify.to = {"ops-mail"};
  flow.steps = {{.name = "extract", .job = "extract-orders"},
                {.name = "load", .job = "nightly-etl:load", .own = true, .needs = {"extract"}},
                {.name = "page",
                 .job = "nightly-etl:page",
                 .own = true,
                 .needs = {"extract", "load"},
                 .when = StepWhen::kFailure}};
  return flow;
}

TEST(FlowJsonTest, AFlowRoundTripsThroughJson) {
  Flow flow = AFlow();
  json j = json::parse(FlowToJson(flow).dump());
  EXPECT_FALSE(j.contains("command"));  // only what a flow has
  Result<Flow> back = FlowFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, flow);
  EXPECT_TRUE(FlowChangedFields(flow, *back).empty());
}

TEST(FlowJsonTest, StepsThatCouldNotComeFromAJobFileAreRefused) {
  auto with = [](auto change) {
    json j = FlowToJson(AFlow());
    change(j);
    return FlowFromJson(j);
  };
  EXPECT_FALSE(with([](json& j) { j["steps"] = json::array(); }).ok());
  EXPECT_FALSE(with([](json& j) { j.erase("steps"); }).ok());
  EXPECT_FALSE(with([](json& j) { j["steps"][0]["name"] = "Bad Name"; }).ok());
  EXPECT_FALSE(with([](json& j) { j["steps"][1]["name"] = "extract"; }).ok());
  EXPECT_FALSE(with([](json& j) { j["steps"][0]["when"] = "sometimes"; }).ok());
  EXPECT_FALSE(with([](json& j) { j["steps"][1]["job"] = "other:load"; }).ok());
  EXPECT_FALSE(with([](json& j) { j["steps"][0]["job"] = "a:b"; }).ok());
  EXPECT_FALSE(with([](json& j) { j["steps"][0]["needs"] = 3; }).ok());
  // What CheckFlowGraph refuses, and what the file's reader refuses besides.
  EXPECT_FALSE(with([](json& j) { j["steps"][0]["needs"] = {"page"}; }).ok());  // a cycle
  EXPECT_FALSE(with([](json& j) { j["steps"][0]["needs"] = {"nope"}; }).ok());  // unknown
  EXPECT_FALSE(with([](json& j) { j["steps"][1]["needs"] = {"Bad Name"}; }).ok());
  EXPECT_FALSE(with([](json& j) { j["steps"][0]["when"] = "failure"; }).ok());  // never runs
  EXPECT_FALSE(with([](json& j) {
                 j["steps"][0]["name"] = "load.x";
                 j["steps"][1]["name"] = "load-x";
               }).ok());
  EXPECT_FALSE(with([](json& j) { j["name"] = ""; }).ok());
  EXPECT_FALSE(with([](json& j) { j["name"] = "Bad Name"; }).ok());
  EXPECT_FALSE(with([](json& j) { j["schedule"] = ""; }).ok());
  EXPECT_FALSE(with([](json& j) {
                 for (int i = 0; i <= kMaxFlowSteps; ++i) j["steps"].push_back(j["steps"][0]);
               }).ok());
}

TEST(FlowJsonTest, ChangedFieldsNameTheFlowsKeysAndEachStepsChange) {
  Flow before = AFlow();
  Flow after = AFlow();
  after.schedule = "@daily";
  after.steps[1].needs = {};
  after.steps[2].when = StepWhen::kAlways;
  after.steps.erase(after.steps.begin());
  after.steps.push_back({.name = "cleanup", .job = "nightly-etl:cleanup", .own = true});
  EXPECT_EQ(
      FlowChangedFields(before, after),
      (std::vector<std::string>{"schedule", "step \"extract\" (removed)", "step \"load\".needs",
                                "step \"page\".when", "step \"cleanup\" (added)"}));
}

}  // namespace
}  // namespace jobctl::wire
