// Flows against the real `jobctl serve`: a flow run starts each step once its needs ended,
// in the commit that ended them; a step that can no longer run is recorded as skipped with
// the reason; the flow run ends when nothing waits or runs, succeeded only when no step
// failed; cancel stops its steps; a coordinator killed between steps resumes the flow run and
// runs no step twice. The agent is a test agent that chooses each step's result, except in
// the last test, where real agentd processes run the steps' commands.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>

#include "testlib/cluster.h"
#include "testlib/coordinator_fixture.h"

namespace jobctl::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

int64_t NowMs() {
  return std::chrono::duration_cast<milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// a -> (b, c) -> d, each step with its own command.
constexpr const char* kDiamond = R"([[flow]]
name = "etl"
schedule = "@yearly"
  [[flow.step]]
  name = "a"
  shell = "echo a"
  [[flow.step]]
  name = "b"
  needs = ["a"]
  shell = "echo b"
  [[flow.step]]
  name = "c"
  needs = ["a"]
  shell = "echo c"
  [[flow.step]]
  name = "d"
  needs = ["b", "c"]
  shell = "echo d"
)";

class FlowTest : public CoordinatorFixture {
 protected:
  json Trigger(const std::string& flow) {
    json run = coord_->PostJson("/v1/jobs/" + flow + "/trigger", json::object());
    EXPECT_TRUE(run.contains("id")) << run.dump();
    return run;
  }
  // The step names of what one claim brings (waiting up to `wait_ms` for the first).
  static std::set<std::string> StepsOf(const std::vector<json>& grants) {
    std::set<std::string> out;
    for (const json& g : grants)
      out.insert(g.contains("step") ? g["step"]["step"].get<std::string>() : "-");
    return out;
  }
  // Every run of a step's job.
  json StepRuns(const std::string& job) { return coord_->Runs(job); }
};

// The diamond: a first; b and c together once a succeeded, each told a's run id; d only
// once both ended, told both; each step runs once, reason "flow", in the flow run's trace;
// the flow run succeeds when d does.
TEST_F(FlowTest, DiamondStartsEachStepOnceWhenItsNeedsHaveEnded) {
  Start();
  json applied = coord_->Apply(kDiamond);
  EXPECT_EQ(applied["created"], json::array({"etl"})) << applied.dump();
  json flow_run = Trigger("etl");
  EXPECT_EQ(flow_run["state"], "running") << flow_run.dump();
  EXPECT_EQ(flow_run["shard_total"], 0);
  const int64_t flow_run_id = flow_run["id"];
  TestAgent agent(*coord_, "a1");

  std::vector<json> first = agent.ClaimUpTo(4, 2000);
  ASSERT_EQ(StepsOf(first), std::set<std::string>{"a"});
  const json& a = first[0];
  EXPECT_EQ(a["job"], "etl:a");
  EXPECT_EQ(a["step"]["flow"], "etl");
  EXPECT_EQ(a["step"]["flow_run"], flow_run_id);
  EXPECT_TRUE(a["step"]["needs"].empty());
  EXPECT_EQ(a["trace_id"], flow_run["trace_id"]);
  ASSERT_EQ(agent.Finish(a, 0).status, 200);

  std::vector<json> second = agent.ClaimUpTo(2, 5000);
  ASSERT_EQ(StepsOf(second), (std::set<std::string>{"b", "c"}));
  for (const json& g : second) {
    EXPECT_EQ(g["step"]["needs"], json({{"a", a["run"]}})) << g.dump();
    EXPECT_EQ(g["trace_id"], flow_run["trace_id"]);
  }
  ASSERT_EQ(agent.Finish(second[0], 0).status, 200);
  // d waits for the other one.
  EXPECT_TRUE(agent.Claim(4, 300).empty());
  ASSERT_EQ(agent.Finish(second[1], 0).status, 200);

  std::vector<json> third = agent.ClaimUpTo(1, 5000);
  ASSERT_EQ(StepsOf(third), std::set<std::string>{"d"});
  std::map<std::string, int64_t> runs_of;
  for (const json& g : second) runs_of[g["step"]["step"]] = g["run"];
  EXPECT_EQ(third[0]["step"]["needs"], json({{"b", runs_of["b"]}, {"c", runs_of["c"]}}));
  EXPECT_TRUE(coord_->GetJson("/v1/runs/" + std::to_string(flow_run_id))["finished_at"]
                  .get<std::string>()
                  .empty());
  ASSERT_EQ(agent.Finish(third[0], 0).status, 200);

  json done = coord_->WaitRun(flow_run_id, seconds(10));
  EXPECT_EQ(done["state"], "succeeded") << done.dump();
  EXPECT_EQ(done["note"], "");
  for (const char* step : {"etl:a", "etl:b", "etl:c", "etl:d"}) {
    json runs = StepRuns(step);
    ASSERT_EQ(runs.size(), 1u) << step << ": " << runs.dump();
    EXPECT_EQ(runs[0]["reason"], "flow");
    EXPECT_EQ(runs[0]["state"], "succeeded");
    EXPECT_EQ(runs[0]["trace_id"], flow_run["trace_id"]);
  }
  // /metrics counts the flow run and its steps.
  EXPECT_EQ(coord_->Metric("jobctl_flow_runs_started_total"), 1);
  EXPECT_EQ(coord_->Metric("jobctl_flow_runs_finished_total{state=\"succeeded\"}"), 1);
  EXPECT_EQ(coord_->Metric("jobctl_flow_steps_started_total"), 4);
  EXPECT_EQ(coord_->Metric("jobctl_flow_steps_skipped_total"), 0);
  EXPECT_EQ(coord_->Metric("jobctl_flow_runs_open"), 0);
  EXPECT_EQ(coord_->Metric("jobctl_flow_step_handoff_seconds_count"), 4);
  EXPECT_EQ(coord_->Metric("jobctl_jobs"), 1);
  // A step's own job is shown with its flow, not as a job of its own.
  json list = coord_->GetJson("/v1/jobs");
  ASSERT_EQ(list.size(), 1u) << list.dump();
  EXPECT_EQ(list[0]["name"], "etl");
  EXPECT_EQ(list[0]["last_state"], "succeeded");
}

// load fails: page (when = "failure") and cleanup (when = "always") run, report (needs load's
// success) is skipped with the reason, and the flow run fails naming load. A step naming a
// [[job]] runs that job; the job also runs on its own.
TEST_F(FlowTest, FailedStepRunsTheFailureAndAlwaysStepsAndSkipsTheRest) {
  Start();
  coord_->Apply(R"([[job]]
name = "extract"
shell = "echo extract"

[[flow]]
name = "nightly"
schedule = "@yearly"
  [[flow.step]]
  name = "extract"
  job = "extract"
  [[flow.step]]
  name = "load"
  needs = ["extract"]
  shell = "exit 3"
  [[flow.step]]
  name = "report"
  needs = ["load"]
  shell = "echo report"
  [[flow.step]]
  name = "page"
  needs = ["load"]
  when = "failure"
  shell = "echo page"
  [[flow.step]]
  name = "cleanup"
  needs = ["load"]
  when = "always"
  shell = "echo cleanup"
)");
  json flow_run = Trigger("nightly");
  TestAgent agent(*coord_, "a1");
  std::vector<json> g = agent.ClaimUpTo(1, 2000);
  ASSERT_EQ(StepsOf(g), std::set<std::string>{"extract"});
  EXPECT_EQ(g[0]["job"], "extract");
  ASSERT_EQ(agent.Finish(g[0], 0).status, 200);
  g = agent.ClaimUpTo(1, 5000);
  ASSERT_EQ(StepsOf(g), std::set<std::string>{"load"});
  ASSERT_EQ(agent.Finish(g[0], 3).status, 200);
  g = agent.ClaimUpTo(2, 5000);
  ASSERT_EQ(StepsOf(g), (std::set<std::string>{"page", "cleanup"}));
  for (const json& x : g) ASSERT_EQ(agent.Finish(x, 0).status, 200);

  json done = coord_->WaitRun(flow_run["id"], seconds(10));
  EXPECT_EQ(done["state"], "failed") << done.dump();
  EXPECT_EQ(done["note"], "load failed; 1 step skipped");
  json report = StepRuns("nightly:report");
  ASSERT_EQ(report.size(), 1u) << report.dump();
  EXPECT_EQ(report[0]["state"], "skipped");
  EXPECT_EQ(report[0]["shard_total"], 0);
  EXPECT_EQ(coord_->Metric("jobctl_flow_steps_skipped_total"), 1);
  EXPECT_EQ(coord_->Metric("jobctl_flow_runs_finished_total{state=\"failed\"}"), 1);
  EXPECT_NE(report[0]["note"].get<std::string>().find("load"), std::string::npos)
      << report[0].dump();
  EXPECT_EQ(StepRuns("nightly:load")[0]["state"], "failed");

  // The named job still runs by itself, as a plain run.
  json plain = coord_->PostJson("/v1/jobs/extract/trigger", json::object());
  g = agent.ClaimUpTo(1, 2000);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_FALSE(g[0].contains("step")) << g[0].dump();
  EXPECT_EQ(g[0]["run"], plain["id"]);
}

// Cancel of a flow run: the running step is canceled (its holder learns it), the waiting ones
// are skipped "flow run canceled", the flow run ends canceled, and nothing more is handed out.
TEST_F(FlowTest, CancelStopsTheRunningStepsAndSkipsTheWaitingOnes) {
  Start();
  coord_->Apply(kDiamond);
  json flow_run = Trigger("etl");
  TestAgent agent(*coord_, "a1");
  std::vector<json> g = agent.ClaimUpTo(1, 2000);
  ASSERT_EQ(StepsOf(g), std::set<std::string>{"a"});
  json canceled = coord_->PostJson(
      "/v1/runs/" + std::to_string(flow_run["id"].get<int64_t>()) + "/cancel", json::object());
  EXPECT_EQ(canceled["state"], "canceled") << canceled.dump();
  EXPECT_EQ(StepRuns("etl:a")[0]["state"], "canceled");
  for (const char* step : {"etl:b", "etl:c", "etl:d"}) {
    json runs = StepRuns(step);
    ASSERT_EQ(runs.size(), 1u) << step;
    EXPECT_EQ(runs[0]["state"], "skipped");
    EXPECT_EQ(runs[0]["note"], "flow run canceled");
  }
  // The holder's late result changes nothing.
  agent.Finish(g[0], 0);
  EXPECT_TRUE(agent.Claim(4, 300).empty());
  EXPECT_EQ(coord_->WaitRun(flow_run["id"], seconds(5))["state"], "canceled");
}

// A coordinator killed with SIGKILL after a step's result was acknowledged starts the next
// steps from the store when it comes back, once each; killed again while they run, it keeps
// their leases, and the flow run ends as its graph says.
TEST_F(FlowTest, KilledCoordinatorResumesTheFlowRunAndRunsNoStepTwice) {
  Start();
  coord_->Apply(kDiamond);
  json flow_run = Trigger("etl");
  std::vector<json> g;
  {
    TestAgent agent(*coord_, "a1");
    g = agent.ClaimUpTo(1, 2000);
    ASSERT_EQ(StepsOf(g), std::set<std::string>{"a"});
    ASSERT_EQ(agent.Finish(g[0], 0).status, 200);
  }
  coord_->Kill9();
  coord_->Start();
  TestAgent agent(*coord_, "a1");
  g = agent.ClaimUpTo(2, 5000);
  ASSERT_EQ(StepsOf(g), (std::set<std::string>{"b", "c"}));
  ASSERT_EQ(agent.Finish(g[0], 0).status, 200);
  coord_->Kill9();
  coord_->Start();
  // The other step's lease survived the restart: its result is taken, and d follows.
  ASSERT_EQ(agent.Finish(g[1], 0).status, 200);
  g = agent.ClaimUpTo(1, 5000);
  ASSERT_EQ(StepsOf(g), std::set<std::string>{"d"});
  ASSERT_EQ(agent.Finish(g[0], 0).status, 200);
  EXPECT_TRUE(agent.Claim(4, 300).empty());
  EXPECT_EQ(coord_->WaitRun(flow_run["id"], seconds(10))["state"], "succeeded");
  for (const char* step : {"etl:a", "etl:b", "etl:c", "etl:d"}) {
    EXPECT_EQ(StepRuns(step).size(), 1u) << step;
  }
}

// retry --from: a new flow run (reason retry) that runs the named step and what depends on it
// again, keeping the steps before it as they ended (their runs named, their outputs given on);
// a step run itself is not retried alone. The flow run's view lists its steps in order.
TEST_F(FlowTest, RetryFromAStepRunsItAndItsDependentsAgainKeepingTheRest) {
  Start();
  coord_->Apply(R"([[flow]]
name = "nightly"
schedule = "@yearly"
  [[flow.step]]
  name = "extract"
  shell = "true"
  [[flow.step]]
  name = "load"
  needs = ["extract"]
  shell = "true"
  [[flow.step]]
  name = "report"
  needs = ["load"]
  shell = "true"
  [[flow.step]]
  name = "page"
  needs = ["load"]
  when = "failure"
  shell = "true"
)");
  json first = Trigger("nightly");
  TestAgent agent(*coord_, "a1");
  std::vector<json> g = agent.ClaimUpTo(1, 2000);
  ASSERT_EQ(StepsOf(g), std::set<std::string>{"extract"});
  const int64_t extract_run = g[0]["run"];
  json out = agent.ResultBody(g[0], 0);
  out["outputs"] = {{"ROWS", "7"}};
  ASSERT_EQ(agent.PostResult(out).status, 200);
  g = agent.ClaimUpTo(1, 5000);
  ASSERT_EQ(StepsOf(g), std::set<std::string>{"load"});
  const int64_t load_run = g[0]["run"];
  ASSERT_EQ(agent.Finish(g[0], 1).status, 200);
  g = agent.ClaimUpTo(1, 5000);
  ASSERT_EQ(StepsOf(g), std::set<std::string>{"page"});
  ASSERT_EQ(agent.Finish(g[0], 0).status, 200);
  json ended = coord_->WaitRun(first["id"], seconds(10));
  ASSERT_EQ(ended["state"], "failed");
  // The view of the ended flow run: each step, its run and state, in the flow's order.
  json view = coord_->GetJson("/v1/runs/" + std::to_string(first["id"].get<int64_t>()));
  ASSERT_EQ(view["steps"].size(), 4u) << view.dump();
  EXPECT_EQ(view["steps"][0]["name"], "extract");
  EXPECT_EQ(view["steps"][0]["run"], extract_run);
  EXPECT_EQ(view["steps"][1]["state"], "failed");
  EXPECT_EQ(view["steps"][2]["state"], "skipped");
  EXPECT_EQ(view["steps"][3]["when"], "failure");
  json step_view = coord_->GetJson("/v1/runs/" + std::to_string(load_run));
  EXPECT_EQ(step_view["flow_run"], first["id"]);
  EXPECT_EQ(step_view["step"], "load");

  // A step run is retried through its flow run.
  http::HttpResponse alone =
      coord_->Request("POST", "/v1/runs/" + std::to_string(load_run) + "/retry", "{}");
  EXPECT_EQ(alone.status, 409);
  EXPECT_NE(alone.body.find("jobctl retry " + std::to_string(first["id"].get<int64_t>()) +
                            " --from load"),
            std::string::npos)
      << alone.body;
  http::HttpResponse unknown =
      coord_->Request("POST", "/v1/runs/" + std::to_string(first["id"].get<int64_t>()) + "/retry",
                      R"({"from": ["lod"]})");
  EXPECT_EQ(unknown.status, 400) << unknown.body;

  json again = coord_->PostJson("/v1/runs/" + std::to_string(first["id"].get<int64_t>()) + "/retry",
                                {{"from", {"load"}}});
  ASSERT_TRUE(again.contains("id")) << again.dump();
  EXPECT_EQ(again["reason"], "retry");
  EXPECT_EQ(again["trace_id"], first["trace_id"]);
  g = agent.ClaimUpTo(1, 5000);
  ASSERT_EQ(StepsOf(g), std::set<std::string>{"load"});
  // The kept step's run and outputs reach the step run again.
  EXPECT_EQ(g[0]["step"]["needs"], json({{"extract", extract_run}}));
  EXPECT_EQ(g[0]["step"]["outputs"], json({{"ROWS", "7"}}));
  ASSERT_EQ(agent.Finish(g[0], 0).status, 200);
  g = agent.ClaimUpTo(1, 5000);
  ASSERT_EQ(StepsOf(g), std::set<std::string>{"report"});
  ASSERT_EQ(agent.Finish(g[0], 0).status, 200);
  json done = coord_->WaitRun(again["id"], seconds(10));
  EXPECT_EQ(done["state"], "succeeded") << done.dump();
  ASSERT_EQ(done["steps"].size(), 4u);
  EXPECT_TRUE(done["steps"][0]["kept"].get<bool>());
  EXPECT_EQ(done["steps"][0]["run"], extract_run);
  EXPECT_EQ(done["steps"][3]["state"], "skipped");
  EXPECT_EQ(StepRuns("nightly:extract").size(), 1u);
  EXPECT_EQ(StepRuns("nightly:load").size(), 2u);
  // Nothing failed in it: a retry without --from has nothing to run.
  http::HttpResponse nothing = coord_->Request(
      "POST", "/v1/runs/" + std::to_string(again["id"].get<int64_t>()) + "/retry", "{}");
  EXPECT_EQ(nothing.status, 409) << nothing.body;
}

// A token scoped to a flow reads its flow runs, its steps' own runs and their output; of a
// step that runs a [[job]] outside its scope it sees the step's state and run, not where or
// why it ran.
TEST_F(FlowTest, ATokenScopedToAFlowReadsItsStepsButNotAnotherJobsDetails) {
  Start();
  coord_->Apply(R"([[job]]
name = "shared"
shell = "true"

[[flow]]
name = "etl"
schedule = "@yearly"
  [[flow.step]]
  name = "first"
  job = "shared"
  [[flow.step]]
  name = "then"
  needs = ["first"]
  shell = "true"
)");
  http::HttpResponse made = coord_->Request(
      "POST", "/v1/tokens", json{{"role", "read"}, {"jobs", "etl"}, {"name", "etl-reader"}}.dump());
  ASSERT_EQ(made.status, 201) << made.body;
  std::string reader = json::parse(made.body)["token"];
  json flow_run = Trigger("etl");
  TestAgent agent(*coord_, "a1");
  for (int i = 0; i < 2; ++i) {
    std::vector<json> g = agent.ClaimUpTo(1, 5000);
    ASSERT_EQ(g.size(), 1u);
    ASSERT_EQ(agent.Finish(g[0], 0).status, 200);
  }
  ASSERT_EQ(coord_->WaitRun(flow_run["id"], seconds(10))["state"], "succeeded");
  http::HttpResponse view = coord_->Request(
      "GET", "/v1/runs/" + std::to_string(flow_run["id"].get<int64_t>()), "", reader);
  ASSERT_EQ(view.status, 200) << view.body;
  json steps = json::parse(view.body)["steps"];
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0]["state"], "succeeded");
  EXPECT_TRUE(steps[0]["hosts"].empty()) << steps.dump();  // "shared" is not etl's to show
  EXPECT_EQ(steps[1]["hosts"], json::array({"a1"}));
  EXPECT_EQ(
      coord_
          ->Request("GET", "/v1/runs/" + std::to_string(steps[1]["run"].get<int64_t>()), "", reader)
          .status,
      200);
  EXPECT_EQ(coord_->Request("GET", "/v1/runs?job=etl:then", "", reader).status, 200);
  EXPECT_EQ(
      coord_
          ->Request("GET", "/v1/runs/" + std::to_string(steps[0]["run"].get<int64_t>()), "", reader)
          .status,
      403);
}

// A flow fires on its schedule (overlap = "forbid": an instant while its run is open is
// recorded as skipped); a step's own job cannot be triggered alone; a flow takes no params;
// a flow run has no shards of its own to retry.
TEST_F(FlowTest, AFlowFiresOnItsScheduleAndRefusesWhatItCannotDo) {
  Start();
  coord_->Apply(R"([[flow]]
name = "tick"
schedule = "@every 1s"
  [[flow.step]]
  name = "only"
  shell = "true"
)");
  ASSERT_TRUE(
      Coordinator::Eventually([&] { return coord_->Runs("tick").size() >= 2; }, seconds(10)));
  json runs = coord_->Runs("tick");
  // The newest is skipped (overlap) or the first still runs: no step was finished.
  bool skipped = false;
  for (const json& r : runs) {
    EXPECT_EQ(r["reason"], "schedule");
    if (r["state"] == "skipped") {
      skipped = true;
      EXPECT_NE(r["note"].get<std::string>().find("overlap=forbid"), std::string::npos);
    }
  }
  EXPECT_TRUE(skipped) << runs.dump();
  EXPECT_EQ(StepRuns("tick:only").size(), 1u);

  http::HttpResponse step = coord_->Request("POST", "/v1/jobs/tick:only/trigger", "{}");
  EXPECT_EQ(step.status, 409) << step.body;
  http::HttpResponse params =
      coord_->Request("POST", "/v1/jobs/tick/trigger", R"({"params": {"X": "1"}})");
  EXPECT_EQ(params.status, 400) << params.body;

  TestAgent agent(*coord_, "a1");
  std::vector<json> g = agent.ClaimUpTo(1, 2000);
  ASSERT_EQ(g.size(), 1u);
  ASSERT_EQ(agent.Finish(g[0], 1).status, 200);
  int64_t first = g[0]["step"]["flow_run"];
  EXPECT_EQ(coord_->WaitRun(first, seconds(5))["state"], "failed");
  // Its shards are its steps': there are none of its own to retry.
  http::HttpResponse retry = coord_->Request("POST", "/v1/runs/" + std::to_string(first) + "/retry",
                                             R"({"failed_shards": true})");
  EXPECT_EQ(retry.status, 400) << retry.body;
}

// Applying: a flow and its steps' own jobs are created together; the same file again changes
// nothing; a step's command changed is listed as the flow's change; a flow left out of the
// file is removed with its steps' jobs.
TEST_F(FlowTest, ApplyCreatesChangesAndRemovesFlowsWithTheirSteps) {
  Start();
  json first = coord_->Apply(kDiamond);
  EXPECT_EQ(first["created"], json::array({"etl"}));
  json again = coord_->Apply(kDiamond);
  EXPECT_EQ(again["unchanged"], json::array({"etl"})) << again.dump();
  EXPECT_TRUE(again["changed"].empty());
  std::string edited = kDiamond;
  edited.replace(edited.find("echo d"), 6, "echo D");
  json changed = coord_->Apply(edited);
  ASSERT_EQ(changed["changed"].size(), 1u) << changed.dump();
  EXPECT_EQ(changed["changed"][0]["name"], "etl");
  EXPECT_EQ(changed["changed"][0]["fields"], json::array({"step \"d\".shell"}));
  json show = coord_->GetJson("/v1/jobs/etl");
  EXPECT_EQ(show["kind"], "flow") << show.dump();
  EXPECT_EQ(show["flow"]["steps"].size(), 4u);
  json removed = coord_->Apply("[[job]]\nname = \"x\"\nschedule = \"@yearly\"\nshell = \"true\"\n");
  EXPECT_EQ(removed["removed"], json::array({"etl"})) << removed.dump();
  EXPECT_EQ(coord_->Request("POST", "/v1/jobs/etl/trigger", "{}").status, 404);
  EXPECT_EQ(coord_->Request("GET", "/v1/jobs/etl:a").status, 404);
}

// A job becomes a flow of the same name only once its open runs have ended: until then the
// file is refused whole, saying why.
TEST_F(FlowTest, AJobBecomesAFlowOnlyOnceItsRunsHaveEnded) {
  Start();
  coord_->Apply("[[job]]\nname = \"etl\"\nschedule = \"@yearly\"\nshell = \"true\"\n");
  json run = coord_->PostJson("/v1/jobs/etl/trigger", json::object());
  http::HttpResponse refused =
      coord_->Request("POST", "/v1/jobfile", json{{"text", kDiamond}}.dump());
  EXPECT_EQ(refused.status, 409) << refused.body;
  EXPECT_NE(refused.body.find("etl has 1 open run(s) as a job"), std::string::npos) << refused.body;
  TestAgent agent(*coord_, "a1");
  std::vector<json> g = agent.ClaimUpTo(1, 2000);
  ASSERT_EQ(g.size(), 1u);
  ASSERT_EQ(agent.Finish(g[0], 0).status, 200);
  coord_->WaitRun(run["id"], seconds(5));
  json applied = coord_->Apply(kDiamond);
  ASSERT_EQ(applied["changed"].size(), 1u) << applied.dump();
  EXPECT_EQ(applied["changed"][0]["fields"], json::array({"kind"}));
  EXPECT_EQ(coord_->GetJson("/v1/jobs/etl")["kind"], "flow");
  // Its history stays; it restarts as a flow.
  coord_->Kill9();
  coord_->Start();
  json flow_run = Trigger("etl");
  g = agent.ClaimUpTo(1, 2000);
  ASSERT_EQ(StepsOf(g), std::set<std::string>{"a"});
  EXPECT_EQ(g[0]["step"]["flow_run"], flow_run["id"]);
  EXPECT_EQ(coord_->Runs("etl").size(), 2u);
}

// A deferred trigger of a flow: the flow run exists at once, its first steps start at the time
// asked for, not before.
TEST_F(FlowTest, ADeferredFlowRunStartsItsStepsAtItsTime) {
  Start();
  coord_->Apply(kDiamond);
  json flow_run = coord_->PostJson("/v1/jobs/etl/trigger", json{{"in", "3s"}});
  ASSERT_TRUE(flow_run.contains("id")) << flow_run.dump();
  TestAgent agent(*coord_, "a1");
  EXPECT_TRUE(agent.Claim(4, 1000).empty());
  std::vector<json> g = agent.ClaimUpTo(1, 5000);
  ASSERT_EQ(StepsOf(g), std::set<std::string>{"a"});
  EXPECT_GE(NowMs(), UnixMs(flow_run["not_before"].get<std::string>()));
}

// Real agents run the steps' commands, each with its flow context in the environment.
TEST_F(FlowTest, RealAgentsRunTheStepsWithTheirContext) {
  Start();
  coord_->Apply(R"([[flow]]
name = "pipe"
schedule = "@yearly"
  [[flow.step]]
  name = "first"
  shell = "echo first $JOB_FLOW $JOB_STEP"
  [[flow.step]]
  name = "second-one"
  needs = ["first"]
  shell = "echo second $JOB_FLOW_RUN_ID $JOB_NEED_FIRST_RUN_ID"
)");
  AgentProcess agent1(*coord_, dir_, "h1");
  AgentProcess agent2(*coord_, dir_, "h2");
  json flow_run = Trigger("pipe");
  json done = coord_->WaitRun(flow_run["id"], seconds(30));
  ASSERT_EQ(done["state"], "succeeded") << done.dump() << agent1.Logs() << agent2.Logs();
  json first = StepRuns("pipe:first");
  json second = StepRuns("pipe:second-one");
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(coord_->Output(first[0]["id"], 0, "stdout"), "first pipe first\n");
  EXPECT_EQ(coord_->Output(second[0]["id"], 0, "stdout"),
            "second " + std::to_string(flow_run["id"].get<int64_t>()) + " " +
                std::to_string(first[0]["id"].get<int64_t>()) + "\n");
}

// What a step writes to $JOB_OUTPUT reaches the steps that need it (merged in their needs'
// order, a later one winning), and a step goes only to agents that say they run steps.
TEST_F(FlowTest, OutputsReachTheStepsThatNeedThemAndStepsGoOnlyToAgentsThatRunThem) {
  Start();
  coord_->Apply(kDiamond);
  json flow_run = Trigger("etl");
  TestAgent old(*coord_, "old");
  old.set_features({});
  EXPECT_TRUE(old.Claim(4, 300).empty());
  TestAgent agent(*coord_, "a1");
  std::vector<json> g = agent.ClaimUpTo(1, 2000);
  ASSERT_EQ(StepsOf(g), std::set<std::string>{"a"});
  json body = agent.ResultBody(g[0], 0);
  body["outputs"] = {{"ROWS", "42"}, {"DAY", "mon"}};
  ASSERT_EQ(agent.PostResult(body).status, 200);
  g = agent.ClaimUpTo(2, 5000);
  ASSERT_EQ(StepsOf(g), (std::set<std::string>{"b", "c"}));
  for (const json& x : g) {
    EXPECT_EQ(x["step"]["outputs"], json({{"ROWS", "42"}, {"DAY", "mon"}})) << x.dump();
    json r = agent.ResultBody(x, 0);
    r["outputs"] = {{"DAY", x["step"]["step"] == "b" ? "tue" : "wed"}};
    ASSERT_EQ(agent.PostResult(r).status, 200);
  }
  g = agent.ClaimUpTo(1, 5000);
  ASSERT_EQ(StepsOf(g), std::set<std::string>{"d"});
  // d needs b then c: c's value wins; a's are not d's (it does not need a).
  EXPECT_EQ(g[0]["step"]["outputs"], json({{"DAY", "wed"}})) << g[0].dump();
  ASSERT_EQ(agent.Finish(g[0], 0).status, 200);
  EXPECT_EQ(coord_->WaitRun(flow_run["id"], seconds(10))["state"], "succeeded");
}

// With real agents: a diamond whose one branch fails until a file exists; the step after the
// fan-in is skipped, the "failure" step and the "always" cleanup run, and the flow run fails.
// retry --from the failed branch, once the file exists, runs it and what depends on it again,
// keeps the other steps, and succeeds. Each step notes in a file that it ran.
TEST_F(FlowTest, RealAgentsRunADiamondItsFailurePathAndARetryFromTheFailedStep) {
  Start();
  const std::string ran = dir_.path() + "/ran", fixed = dir_.path() + "/fixed";
  auto step = [&](const std::string& name, const std::string& needs, const std::string& when,
                  const std::string& also) {
    return "  [[flow.step]]\n  name = \"" + name + "\"\n" +
           (needs.empty() ? "" : "  needs = [" + needs + "]\n") +
           (when.empty() ? "" : "  when = \"" + when + "\"\n") + "  shell = \"echo " + name +
           " >> " + ran + also + "\"\n";
  };
  coord_->Apply("[[flow]]\nname = \"etl\"\nschedule = \"@yearly\"\n" + step("a", "", "", "") +
                step("b", "\"a\"", "", "") + step("c", "\"a\"", "", "; [ -e " + fixed + " ]") +
                step("d", "\"b\", \"c\"", "", "") + step("page", "\"d\"", "failure", "") +
                step("cleanup", "\"d\", \"page\"", "always", ""));
  AgentProcess agent1(*coord_, dir_, "h1");
  AgentProcess agent2(*coord_, dir_, "h2");
  json first = Trigger("etl");
  json done = coord_->WaitRun(first["id"], seconds(30));
  ASSERT_EQ(done["state"], "failed") << done.dump() << agent1.Logs();
  EXPECT_EQ(done["note"], "c failed; 2 steps skipped");
  std::map<std::string, json> by_name;
  for (const json& s : done["steps"]) by_name[s["name"]] = s;
  EXPECT_EQ(by_name["d"]["state"], "skipped");
  EXPECT_EQ(by_name["page"]["state"], "skipped");  // it needs d, which did not fail
  EXPECT_EQ(by_name["cleanup"]["state"], "succeeded");
  auto lines = [&] {
    std::multiset<std::string> out;
    std::istringstream in(dir_.Read("ran"));
    for (std::string l; std::getline(in, l);) out.insert(l);
    return out;
  };
  EXPECT_EQ(lines(), (std::multiset<std::string>{"a", "b", "c", "cleanup"}));

  dir_.Write("fixed", "");
  json again = coord_->PostJson("/v1/runs/" + std::to_string(first["id"].get<int64_t>()) + "/retry",
                                {{"from", {"c"}}});
  ASSERT_TRUE(again.contains("id")) << again.dump();
  done = coord_->WaitRun(again["id"], seconds(30));
  ASSERT_EQ(done["state"], "succeeded") << done.dump();
  // a and b kept; c, d and cleanup again; page skipped (d did not fail).
  EXPECT_EQ(lines(), (std::multiset<std::string>{"a", "b", "c", "c", "cleanup", "cleanup", "d"}));
  for (const json& s : done["steps"]) by_name[s["name"]] = s;
  EXPECT_TRUE(by_name["a"]["kept"].get<bool>());
  EXPECT_TRUE(by_name["b"]["kept"].get<bool>());
  EXPECT_FALSE(by_name["c"]["kept"].get<bool>());
  EXPECT_EQ(by_name["page"]["state"], "skipped");
}

// With real agents: a step's $JOB_OUTPUT lines become its dependent's environment, and a step
// that exits 0 having written what does not read fails (bad_output), failing the flow run.
TEST_F(FlowTest, RealAgentsPassOutputsDownstreamAndRefuseOutputThatDoesNotRead) {
  Start();
  coord_->Apply(R"([[flow]]
name = "pass"
schedule = "@yearly"
  [[flow.step]]
  name = "count"
  shell = "echo ROWS=42 >> $JOB_OUTPUT; echo 'NOTE=two words' >> $JOB_OUTPUT"
  [[flow.step]]
  name = "use"
  needs = ["count"]
  shell = "echo rows=$JOB_OUT_ROWS note=$JOB_OUT_NOTE"

[[flow]]
name = "broken"
schedule = "@yearly"
  [[flow.step]]
  name = "bad"
  shell = "echo 'not a key value line' > $JOB_OUTPUT"
  [[flow.step]]
  name = "after"
  needs = ["bad"]
  shell = "true"
)");
  AgentProcess agent(*coord_, dir_, "h1");
  json ok = Trigger("pass");
  json done = coord_->WaitRun(ok["id"], seconds(30));
  ASSERT_EQ(done["state"], "succeeded") << done.dump() << agent.Logs();
  json use = StepRuns("pass:use");
  ASSERT_EQ(use.size(), 1u);
  EXPECT_EQ(coord_->Output(use[0]["id"], 0, "stdout"), "rows=42 note=two words\n");

  json bad = Trigger("broken");
  done = coord_->WaitRun(bad["id"], seconds(30));
  EXPECT_EQ(done["state"], "failed") << done.dump();
  json step = StepRuns("broken:bad");
  ASSERT_EQ(step.size(), 1u);
  EXPECT_EQ(step[0]["shards"][0]["outcome"], "bad_output") << step[0].dump();
  EXPECT_NE(step[0]["shards"][0]["message"].get<std::string>().find("JOB_OUTPUT"),
            std::string::npos)
      << step[0].dump();
  EXPECT_EQ(StepRuns("broken:after")[0]["state"], "skipped");
}

}  // namespace
}  // namespace jobctl::testing
