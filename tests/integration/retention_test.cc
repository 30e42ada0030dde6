// Retention with the real coordinator and CLI (coordinator.toml runs_for, keep_last,
// logs_for, logs_max): runs and output past their bounds are deleted in slices while the
// coordinator serves, never an open run nor the newest runs of a job, and a run whose output
// was deleted says so (`jobctl logs`, `jobctl runs`). The agent speaks the protocol by hand,
// so that which run is open and what each run printed is decided by the test. Small bounds
// ("1s", "1KiB") and a pruner slice every 100 ms; every wait polls against a deadline.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "testlib/coordinator_fixture.h"
#include "testlib/subprocess.h"

namespace jobctl::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

constexpr const char* kJob =
    "[[job]]\nname = \"nightly\"\nschedule = \"@yearly\"\nshell = \"true\"\noverlap = \"allow\"\n";

class RetentionTest : public CoordinatorFixture {
 protected:
  ProcessResult Jobctl(std::vector<std::string> args) {
    args.insert(args.begin(), JOBCTL_BIN);
    RunOptions o;
    o.env = {{"JOBCTL_COORDINATOR", coord_->url()},
             {"JOBCTL_TOKEN", coord_->admin_token()},
             {"HOME", dir_.path()},
             {"NO_COLOR", "1"}};
    o.cwd = dir_.path();
    o.timeout = seconds(60);
    return jobctl::testing::Run(args, o);
  }
  int64_t Trigger() {
    return coord_->PostJson("/v1/jobs/nightly/trigger", json::object())["id"].get<int64_t>();
  }
  // Triggers a run, claims it as `agent`, logs `output` and finishes it; its id.
  int64_t RunToEnd(TestAgent& agent, const std::string& output) {
    int64_t id = Trigger();
    std::vector<json> a = agent.Claim(1, 5000);
    EXPECT_EQ(a.size(), 1u);
    if (a.empty()) return id;
    EXPECT_EQ(a[0]["run"].get<int64_t>(), id);
    EXPECT_EQ(agent.Log(a[0], 1, "stdout", output).status, 200);
    EXPECT_EQ(agent.Finish(a[0], 0).status, 200);
    EXPECT_EQ(coord_->WaitRun(id, seconds(10))["state"], "succeeded");
    return id;
  }
  std::vector<int64_t> RunIds() {
    std::vector<int64_t> ids;
    for (const json& r : coord_->Runs("nightly")) ids.push_back(r["id"].get<int64_t>());
    return ids;
  }
  std::string OutputPruned(int64_t run) {
    json r = coord_->GetJson("/v1/runs/" + std::to_string(run));
    return r.contains("output_pruned") ? r["output_pruned"].get<std::string>() : "";
  }
};

// runs_for 1s, keep_last 2: of a job's ended runs only its two newest stay; the open run,
// though the oldest, stays too. Their shards go with them (GET of a pruned run: 404).
TEST_F(RetentionTest, RunsPastRunsForAreDeletedButNotTheNewestOfTheJobNorAnOpenOne) {
  Start("runs_for = \"1s\"\nkeep_last = 2\nlogs_for = \"0s\"\nprune_every = \"100ms\"\n");
  coord_->Apply(kJob);
  TestAgent agent(*coord_, "host-1");
  int64_t open = Trigger();
  std::vector<json> held = agent.Claim(1, 5000);
  ASSERT_EQ(held.size(), 1u);
  ASSERT_EQ(agent.Log(held[0], 1, "stdout", "still going\n").status, 200);
  std::vector<int64_t> ended;
  for (int i = 0; i < 4; ++i) ended.push_back(RunToEnd(agent, "run " + std::to_string(i) + "\n"));
  ASSERT_TRUE(Coordinator::Eventually([&] { return RunIds().size() == 3; }, seconds(20)))
      << ::testing::PrintToString(RunIds());
  EXPECT_EQ(RunIds(), (std::vector<int64_t>{ended[3], ended[2], open}));
  EXPECT_EQ(coord_->Request("GET", "/v1/runs/" + std::to_string(ended[0])).status, 404);
  EXPECT_EQ(coord_->Metric("jobctl_pruned_runs_total"), 2);
  // 2 runs, 2 shards, and their output ends.
  EXPECT_GE(coord_->Metric("jobctl_pruned_rows_total"), 4);
  // Each slice's time on the loop is on /metrics.
  EXPECT_GE(coord_->Metric("jobctl_prune_slice_seconds_count"), 1);
  EXPECT_EQ(coord_->Output(open, 0, "stdout"), "still going\n");
  // The open run ends and is the oldest ended one: past keep_last, it goes too.
  ASSERT_EQ(agent.Finish(held[0], 0).status, 200);
  ASSERT_TRUE(Coordinator::Eventually([&] { return RunIds().size() == 2; }, seconds(20)));
  EXPECT_EQ(RunIds(), (std::vector<int64_t>{ended[3], ended[2]}));
}

// logs_for 1s: an ended run's output is deleted once it is older, and `jobctl logs` and
// `jobctl runs` say so; the output of a run still open, older still, is kept.
TEST_F(RetentionTest, OutputPastLogsForIsDeletedAndJobctlLogsSaysItWasPruned) {
  Start("runs_for = \"0s\"\nlogs_for = \"1s\"\nprune_every = \"100ms\"\n");
  coord_->Apply(kJob);
  TestAgent agent(*coord_, "host-1");
  int64_t open = Trigger();
  std::vector<json> held = agent.Claim(1, 5000);
  ASSERT_EQ(held.size(), 1u);
  ASSERT_EQ(agent.Log(held[0], 1, "stdout", "still going\n").status, 200);
  int64_t run = RunToEnd(agent, "hello from the past\n");
  ASSERT_TRUE(Coordinator::Eventually([&] { return !OutputPruned(run).empty(); }, seconds(20)));
  EXPECT_EQ(OutputPruned(run), "logs_for 1s");
  EXPECT_EQ(coord_->Output(run, 0, "stdout"), "");
  EXPECT_EQ(coord_->Output(open, 0, "stdout"), "still going\n");
  EXPECT_EQ(OutputPruned(open), "");
  EXPECT_GE(coord_->Metric("jobctl_pruned_log_bytes_total"), 20);

  ProcessResult logs = Jobctl({"logs", std::to_string(run)});
  EXPECT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_EQ(logs.out, "");
  EXPECT_NE(logs.err.find("output pruned (logs_for 1s)"), std::string::npos) << logs.err;
  ProcessResult runs = Jobctl({"runs", "nightly"});
  EXPECT_EQ(runs.exit_code, 0) << runs.err;
  EXPECT_NE(runs.out.find("succeeded (output pruned)"), std::string::npos) << runs.out;
  ProcessResult still = Jobctl({"logs", std::to_string(open)});
  EXPECT_EQ(still.out, "still going\n");
  EXPECT_EQ(still.err.find("pruned"), std::string::npos) << still.err;
}

// logs_max 1KiB: a job over it loses the output of its oldest ended runs first, until what
// it keeps fits; `jobctl store stats` shows the sizes and the job's bytes.
TEST_F(RetentionTest, AJobOverLogsMaxLosesItsOldestOutputFirst) {
  Start("runs_for = \"0s\"\nlogs_for = \"0s\"\nlogs_max = \"1KiB\"\nprune_every = \"100ms\"\n");
  coord_->Apply(kJob);
  TestAgent agent(*coord_, "host-1");
  std::vector<int64_t> runs;
  for (char c : {'a', 'b', 'c'}) runs.push_back(RunToEnd(agent, std::string(600, c)));
  // 1800 bytes: the oldest two runs go (1200), the newest stays (600 <= 1024).
  ASSERT_TRUE(Coordinator::Eventually([&] { return !OutputPruned(runs[1]).empty(); }, seconds(20)));
  EXPECT_EQ(OutputPruned(runs[0]), "logs_max 1KiB");
  EXPECT_EQ(OutputPruned(runs[1]), "logs_max 1KiB");
  EXPECT_EQ(OutputPruned(runs[2]), "");
  EXPECT_EQ(coord_->Output(runs[2], 0, "stdout"), std::string(600, 'c'));

  ProcessResult stats = Jobctl({"store", "stats", "-o", "json"});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  json st = json::parse(stats.out);
  EXPECT_EQ(st["runs"], 3);
  EXPECT_EQ(st["output_bytes"], 600);
  EXPECT_GT(st["store_bytes"].get<int64_t>(), 0);
  EXPECT_GT(st["logs_bytes"].get<int64_t>(), 0);
  EXPECT_TRUE(st["reclaims_space"].get<bool>());
  EXPECT_EQ(st["backend"], "sqlite");
  EXPECT_FALSE(st["oldest_run"].get<std::string>().empty());
  ASSERT_EQ(st["top_jobs"].size(), 1u) << st.dump();
  EXPECT_EQ(st["top_jobs"][0]["job"], "nightly");
  EXPECT_EQ(st["top_jobs"][0]["bytes"], 600);
  EXPECT_EQ(st["top_jobs"][0]["runs"], 1);
  ProcessResult table = Jobctl({"store", "stats"});
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("nightly"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("600 B"), std::string::npos) << table.out;
}

}  // namespace
}  // namespace jobctl::testing
