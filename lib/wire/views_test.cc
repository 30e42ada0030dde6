#include "wire/views.h"

#include <gtest/gtest.h>

#include <functional>

#include "wire/fields.h"

namespace jobctl::wire {
namespace {

using nlohmann::json;

ShardView SampleShard() {
  ShardView s;
  s.index = 1;
  s.agent = "web-03";
  s.state = "succeeded";
  s.attempt = 2;
  s.token = 41;
  s.exit_code = 0;
  s.outcome = "exited";
  s.message = "ok";
  s.started_at = "2026-11-26T01:00:00Z";
  s.finished_at = "2026-11-26T01:00:05Z";
  return s;
}

RunView SampleRun() {
  RunView r;
  r.id = 1234;
  r.job = "nightly-backup";
  r.reason = "schedule";
  r.scheduled_at = "2026-11-26T01:00:00Z";
  r.created_at = "2026-11-26T01:00:00Z";
  r.not_before = "2026-11-26T01:00:07Z";
  r.jitter_ms = 7000;
  r.state = "running";
  r.trace_id = "0af7651916cd43dd8448eb211c80319c";
  r.shard_total = 2;
  r.shards = {SampleShard(), ShardView{}};
  return r;
}

JobSummaryView SampleSummary() {
  JobSummaryView j;
  j.name = "nightly-backup";
  j.next_fire = "2026-11-27T03:00:00Z";
  j.open_runs = 1;
  j.last_state = "failed";
  j.last_finished_at = "2026-11-26T03:00:09Z";
  return j;
}

template <typename T>
void ExpectRoundTrip(const T& v) {
  Result<T> back = T::FromJson(v.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << v.ToJson().dump();
  EXPECT_TRUE(*back == v) << v.ToJson().dump();
}

TEST(ViewsTest, EveryMessageSurvivesToJsonAndFromJson) {
  ExpectRoundTrip(SampleShard());
  ExpectRoundTrip(ShardView{});
  ExpectRoundTrip(SampleRun());
  RunView waited = SampleRun();
  waited.done = true;
  waited.existing = false;
  waited.jitter_ms.reset();
  ExpectRoundTrip(waited);
  ExpectRoundTrip(SampleSummary());
  JobSummaryView listed = SampleSummary();
  listed.schedule = "0 3 * * *";
  listed.timezone = "Europe/Paris";
  listed.description = "";
  listed.last_state.reset();
  ExpectRoundTrip(listed);
  JobSummaryView overdue = SampleSummary();
  overdue.last_success = "2026-11-20T03:00:07Z";
  overdue.overdue = true;
  ExpectRoundTrip(overdue);
  JobView job;
  job.summary = SampleSummary();
  job.definition.name = "nightly-backup";
  job.definition.schedule = "0 3 * * *";
  job.definition.command = {"/usr/bin/backup", "--all"};
  job.definition.env = {{"TOKEN", "(hidden)"}};
  job.definition.shards = 3;
  job.next_fires = {"2026-11-27T03:00:00+01:00"};
  job.recent_runs = {SampleRun()};
  ExpectRoundTrip(job);
  ExpectRoundTrip(JobFileView{7, "[jobs.a]\n", "alice (token ci)", "2026-11-26T01:00:00Z"});
  ExpectRoundTrip(ApplyReply{false, {"a"}, {{"b", {"schedule", "env"}}}, {"c"}, {"d"}, 8});
  ExpectRoundTrip(AgentView{"web-03", {{"role", "web"}}, 4, 1, "1.2.0", false, true, "x"});
  ExpectRoundTrip(AgentRemoved{"web-03", true, 2});
  ExpectRoundTrip(TokenCreated{5, "ci", "trigger", "deploy-*", "", {}, "", "jct_secret"});
  ExpectRoundTrip(
      TokenView{5, "agent-web-03", "agent", "", "web-03", {{"role", "web*"}}, "x", "", "y"});
  ExpectRoundTrip(
      AuditEvent{9, "2026-11-26T01:00:00Z", "apply", "ci", 5, "revision 8", "1 created"});
  ExpectRoundTrip(AuditEvent{10, "2026-11-26T01:00:00Z", "auth-failure", "", std::nullopt, "", ""});
  ExpectRoundTrip(MissView{"2026-11-26T01:00:00Z", 1, "2026-11-26T02:00:00Z", 2, 2, "paused"});
  LogPage page;
  page.chunks = {LogChunkView{12, 0, 1, 1, "stdout", "2026-11-26T01:00:00Z", "aGk="}};
  page.next = 12;
  page.done = true;
  ExpectRoundTrip(page);
  LogPage pruned;
  pruned.done = true;
  pruned.pruned = "logs_for 7d";
  ExpectRoundTrip(pruned);
  RunView gone = SampleRun();
  gone.output_pruned = "logs_max 1GiB";
  ExpectRoundTrip(gone);
  StoreStatsView stats{4096, 0, 65536, 1024, true, 3, "2026-11-26T01:00:00Z", 600, {}};
  stats.top_jobs = {{"nightly", 600, 1}, {"", 20, 2}};
  ExpectRoundTrip(stats);
  stats.backend = "postgresql";
  ExpectRoundTrip(stats);
}

TEST(ViewsTest, RunViewWritesTheFieldsTheApiDocuments) {
  json j = SampleRun().ToJson();
  for (const char* key :
       {"id", "job", "reason", "scheduled_at", "created_at", "not_before", "jitter_ms",
        "finished_at", "state", "trace_id", "note", "idempotency_key", "shard_total", "shards"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j.size(), 14u) << "existing and done are written only when set";
  RunView plain = SampleRun();
  plain.jitter_ms.reset();
  plain.shards[0].token.reset();
  json p = plain.ToJson();
  EXPECT_TRUE(p["jitter_ms"].is_null());
  EXPECT_TRUE(p["shards"][0]["token"].is_null());
  EXPECT_TRUE(p["shards"][1]["exit_code"].is_null());
}

struct BadReply {
  const char* what;
  std::function<Status()> decode;
  const char* message;  // the whole message up to the version hint
};

json Without(json j, const char* key) {
  j.erase(key);
  return j;
}

json With(json j, const char* key, json value) {
  j[key] = std::move(value);
  return j;
}

TEST(ViewsTest, AMissingOrMistypedFieldNamesTheMessageAndTheField) {
  const json run = SampleRun().ToJson();
  json bad_shard = run;
  bad_shard["shards"][1]["index"] = "1";
  json runs = json::array({run, Without(run, "state")});
  LogPage page;
  page.chunks = {LogChunkView{12, 0, 1, 1, "stdout", "x", "aGk="}};
  const json log = page.ToJson();
  json bad_chunk = log;
  bad_chunk["chunks"][0]["attempt"] = 1.5;
  JobView job;
  job.summary = SampleSummary();
  const json shown = job.ToJson();
  const BadReply cases[] = {
      {"missing integer", [&] { return RunView::FromJson(Without(run, "shard_total")).status(); },
       "run view: field \"shard_total\" is missing or not an integer"},
      {"string for integer", [&] { return RunView::FromJson(With(run, "id", "7")).status(); },
       "run view: field \"id\" is missing or not an integer"},
      {"true for integer", [&] { return RunView::FromJson(With(run, "id", true)).status(); },
       "run view: field \"id\" is missing or not an integer"},
      {"null for required", [&] { return RunView::FromJson(With(run, "job", nullptr)).status(); },
       "run view: field \"job\" is missing or not a string"},
      {"integer out of range",
       [&] { return RunView::FromJson(With(run, "shard_total", int64_t{1} << 40)).status(); },
       "run view: field \"shard_total\" is missing or not an integer"},
      {"mistyped optional",
       [&] { return RunView::FromJson(With(run, "jitter_ms", "7s")).status(); },
       "run view: field \"jitter_ms\" is missing or not an integer"},
      {"shards not a list", [&] { return RunView::FromJson(With(run, "shards", 2)).status(); },
       "run view: field \"shards\" is missing or not a list"},
      {"nested field", [&] { return RunView::FromJson(bad_shard).status(); },
       "run view: field \"shards[1].index\" is missing or not an integer"},
      {"shard not an object",
       [&] { return RunView::FromJson(With(run, "shards", json::array({3}))).status(); },
       "run view: field \"shards[0]\" is missing or not an object"},
      {"not an object", [&] { return RunView::FromJson(json::array()).status(); },
       "run view: not an object"},
      {"list item", [&] { return ListFromJson<RunView>(runs).status(); },
       "run view list: field \"[1].state\" is missing or not a string"},
      {"list not a list", [&] { return ListFromJson<RunView>(run).status(); },
       "run view list: not a list"},
      {"log page next", [&] { return LogPage::FromJson(Without(log, "next")).status(); },
       "log page: field \"next\" is missing or not an integer"},
      {"log page done", [&] { return LogPage::FromJson(With(log, "done", 1)).status(); },
       "log page: field \"done\" is missing or not true or false"},
      {"log chunk", [&] { return LogPage::FromJson(bad_chunk).status(); },
       "log page: field \"chunks[0].attempt\" is missing or not an integer"},
      {"job summary", [&] { return JobView::FromJson(Without(shown, "paused")).status(); },
       "job view: field \"paused\" is missing or not true or false"},
      {"job definition", [&] { return JobView::FromJson(With(shown, "definition", "x")).status(); },
       "job view: field \"definition\" is missing or not an object"},
      {"job next fires",
       [&] { return JobView::FromJson(With(shown, "next_fires", json::array({1}))).status(); },
       "job view: field \"next_fires\" is missing or not a list of strings"},
      {"apply revision",
       [&] { return ApplyReply::FromJson(Without(ApplyReply{}.ToJson(), "revision")).status(); },
       "apply reply: field \"revision\" is missing or not an integer"},
      {"apply changed",
       [&] {
         return ApplyReply::FromJson(
                    With(ApplyReply{}.ToJson(), "changed", json::array({{{"name", "a"}}})))
             .status();
       },
       "apply reply: field \"changed[0].fields\" is missing or not a list of strings"},
      {"agent labels",
       [&] {
         return AgentView::FromJson(With(AgentView{}.ToJson(), "labels", {{"role", 1}})).status();
       },
       "agent view: field \"labels\" is missing or not an object of strings"},
      {"agent list",
       [&] { return ListFromJson<AgentView>(json::array({json::object()})).status(); },
       "agent view list: field \"[0].name\" is missing or not a string"},
      {"audit id",
       [&] {
         return ListFromJson<AuditEvent>(json::array({Without(AuditEvent{}.ToJson(), "id")}))
             .status();
       },
       "audit event list: field \"[0].id\" is missing or not an integer"},
      {"job file revision",
       [&] {
         return JobFileView::FromJson(With(JobFileView{}.ToJson(), "revision", 1.0)).status();
       },
       "job file: field \"revision\" is missing or not an integer"},
      {"token id",
       [&] { return TokenCreated::FromJson(Without(TokenCreated{}.ToJson(), "id")).status(); },
       "token reply: field \"id\" is missing or not an integer"},
      {"token list",
       [&] {
         return ListFromJson<TokenView>(json::array({With(TokenView{}.ToJson(), "revoked_at", 0)}))
             .status();
       },
       "token view list: field \"[0].revoked_at\" is missing or not a string"},
      {"miss count",
       [&] { return MissView::FromJson(Without(MissView{}.ToJson(), "count")).status(); },
       "miss view: field \"count\" is missing or not an integer"},
      {"agent removal",
       [&] {
         return AgentRemoved::FromJson(With(AgentRemoved{}.ToJson(), "credentials_revoked", "2"))
             .status();
       },
       "agent removal: field \"credentials_revoked\" is missing or not an integer"},
  };
  for (const BadReply& c : cases) {
    Status s = c.decode();
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << c.what;
    EXPECT_EQ(s.message(), std::string(c.message) + " " + std::string(kVersionSkewHint)) << c.what;
  }
}

TEST(ViewsTest, OptionalFieldsMayBeAbsent) {
  json run = SampleRun().ToJson();
  run.erase("jitter_ms");
  run["shards"][0].erase("token");
  run["shards"][0].erase("exit_code");
  Result<RunView> r = RunView::FromJson(run);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->jitter_ms);
  EXPECT_FALSE(r->shards[0].token);
  EXPECT_FALSE(r->done);
  json summary = SampleSummary().ToJson();
  summary.erase("last_state");
  EXPECT_TRUE(JobSummaryView::FromJson(summary).ok());
  // From a coordinator older than per-job health.
  summary.erase("last_success");
  summary.erase("overdue");
  Result<JobSummaryView> old = JobSummaryView::FromJson(summary);
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_FALSE(old->last_success);
  EXPECT_FALSE(old->overdue);
}

TEST(ViewsTest, UnknownFieldsFromANewerCoordinatorAreIgnored) {
  json run = With(SampleRun().ToJson(), "priority", 3);
  EXPECT_TRUE(RunView::FromJson(run).ok());
}

}  // namespace
}  // namespace jobctl::wire
