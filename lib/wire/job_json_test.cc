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

}  // namespace
}  // namespace jobctl::wire
