// [[flow]] tables of jobs.toml: what a flow and its steps read into, and every problem reported
// at the value that is wrong, naming the flow and the step.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "config/job_file.h"

namespace jobctl {
namespace {

using std::chrono::hours;
using std::chrono::minutes;

// Test files start on the line after R"( so that line numbers read naturally.
JobFileResult Parse(std::string_view raw) {
  if (!raw.empty() && raw.front() == '\n') raw.remove_prefix(1);
  return ParseJobFile(raw, "jobs.toml");
}

using Lines = std::vector<std::string>;

Lines Errors(std::string_view raw) {
  Lines out;
  for (const Diagnostic& d : Parse(raw).errors) out.push_back(d.ToString());
  return out;
}

TEST(FlowFileTest, AFlowReadsItsKeysAndStepsWithDefaultsApplied) {
  JobFileResult r = Parse(R"(
[defaults]
timezone = "Europe/Berlin"
timeout  = "1h"
env      = { LANG = "C.UTF-8" }
notify   = ["ops-mail"]
enabled  = false

[[job]]
name    = "extract-orders"
command = ["/opt/etl/extract", "orders"]

[[flow]]
name     = "nightly-etl"
schedule = "15 2 * * *"
overlap  = "allow"
description = "orders into the warehouse"
expect_success_within = "26h"
  [[flow.step]]
  name = "extract"
  job  = "extract-orders"
  [[flow.step]]
  name   = "transform"
  shell  = "transform --part $JOB_SHARD_INDEX"
  shards = 4
  env    = { PART = "x" }
  [flow.step.retry]
  max = 2
  [[flow.step]]
  name  = "load"
  needs = ["extract", "transform"]
  command = ["/opt/etl/load"]
  notify = ["dba-mail"]
  [[flow.step]]
  name  = "page"
  needs = ["extract", "transform", "load"]
  when  = "failure"
  command = ["/usr/local/bin/page-oncall", "etl"]
)");
  ASSERT_TRUE(r.ok()) << r.errors[0].ToString();
  // A job that only a step names may leave out its schedule.
  ASSERT_EQ(r.file.jobs.size(), 1u);
  EXPECT_EQ(r.file.jobs[0].schedule, "");

  ASSERT_EQ(r.file.flows.size(), 1u);
  const Flow& f = r.file.flows[0];
  EXPECT_EQ(f.name, "nightly-etl");
  EXPECT_EQ(f.schedule, "15 2 * * *");
  EXPECT_EQ(f.timezone, "Europe/Berlin");  // from [defaults]
  EXPECT_EQ(f.overlap, Overlap::kAllow);
  EXPECT_FALSE(f.enabled);  // from [defaults]
  EXPECT_EQ(f.description, "orders into the warehouse");
  EXPECT_EQ(f.expect_success_within, hours(26));
  EXPECT_EQ(f.notify.to, std::vector<std::string>{"ops-mail"});
  ASSERT_EQ(f.steps.size(), 4u);
  EXPECT_EQ(f.steps[0], (FlowStep{.name = "extract", .job = "extract-orders"}));
  EXPECT_EQ(f.steps[1],
            (FlowStep{.name = "transform", .job = "nightly-etl:transform", .own = true}));
  EXPECT_EQ(f.steps[2].needs, (std::vector<std::string>{"extract", "transform"}));
  EXPECT_EQ(f.steps[2].when, StepWhen::kSuccess);
  EXPECT_EQ(f.steps[3].when, StepWhen::kFailure);

  // The steps with their own command are jobs of their own, from [defaults] less its notify
  // and its enabled, with no schedule.
  ASSERT_EQ(r.file.step_jobs.size(), 3u);
  const Job& transform = r.file.step_jobs[0];
  EXPECT_EQ(transform.name, "nightly-etl:transform");
  EXPECT_EQ(transform.schedule, "");
  EXPECT_EQ(transform.shell, "transform --part $JOB_SHARD_INDEX");
  EXPECT_EQ(transform.shards, 4);
  EXPECT_EQ(transform.retry.max, 2);
  EXPECT_EQ(transform.timeout, hours(1));
  EXPECT_EQ(transform.env,
            (std::map<std::string, std::string>{{"LANG", "C.UTF-8"}, {"PART", "x"}}));
  EXPECT_TRUE(transform.notify.to.empty());
  EXPECT_TRUE(transform.enabled);
  EXPECT_EQ(r.file.step_jobs[1].name, "nightly-etl:load");
  EXPECT_EQ(r.file.step_jobs[1].notify.to, std::vector<std::string>{"dba-mail"});
}

TEST(FlowFileTest, GraphProblemsAreReportedAtTheNeedOrStepTheyAreAbout) {
  EXPECT_EQ(Errors(R"(
[[flow]]
name = "etl"
schedule = "@daily"
  [[flow.step]]
  name = "extract"
  command = ["true"]
  [[flow.step]]
  name = "transform"
  needs = ["extract", "transfrom"]
  command = ["true"]
  [[flow.step]]
  name = "a"
  needs = ["b"]
  command = ["true"]
  [[flow.step]]
  name = "b"
  needs = ["a", "a"]
  command = ["true"]
  [[flow.step]]
  name = "page"
  when = "failure"
  command = ["true"]
  [[flow.step]]
  name = "extract"
  command = ["true"]
)"),
            (Lines{
                "jobs.toml:9:23: flow \"etl\": step \"transform\": needs[1]: needs "
                "\"transfrom\", which is not a step of this flow (did you mean \"transform\"?)",
                "jobs.toml:13:11: flow \"etl\": step \"a\": needs: cycle: \"a\" -> \"b\" -> "
                "\"a\" (each needs the next)",
                "jobs.toml:17:17: flow \"etl\": step \"b\": needs[1]: names \"a\" twice",
                "jobs.toml:21:10: flow \"etl\": step \"page\": can never run: when = "
                "\"failure\" runs a step after a step it needs failed, and it needs none",
                "jobs.toml:24:10: flow \"etl\": step \"extract\": duplicate step name (first "
                "defined on line 5)",
            }));
}

TEST(FlowFileTest, AStepNamesAJobOfTheFileOrHasItsOwnCommand) {
  EXPECT_EQ(Errors(R"(
[[job]]
name = "extract-orders"
schedule = "@daily"
command = ["true"]

[[flow]]
name = "etl"
schedule = "@daily"
  [[flow.step]]
  name = "a"
  job = "extract-order"
  [[flow.step]]
  name = "b"
  job = "extract-orders"
  command = ["true"]
  [[flow.step]]
  name = "c"
  job = "extract-orders"
  timeout = "1h"
  [[flow.step]]
  name = "d"
  [[flow.step]]
  name = "e"
  job = "other"
  [[flow.step]]
  name = "f"
  command = ["true"]
  shell = "true"

[[flow]]
name = "other"
schedule = "@daily"
  [[flow.step]]
  name = "x"
  command = ["true"]
)"),
            (Lines{
                "jobs.toml:11:9: flow \"etl\": step \"a\": job: \"extract-order\" is not a "
                "[[job]] of this file (did you mean \"extract-orders\"?)",
                "jobs.toml:15:13: flow \"etl\": step \"b\": command: job is also set (line 14); "
                "a step has exactly one of job, command and shell",
                "jobs.toml:19:13: flow \"etl\": step \"c\": timeout: a step that names a job "
                "takes no job keys: set it on that [[job]]",
                "jobs.toml:20:3: flow \"etl\": step \"d\": missing \"job\", \"command\" or "
                "\"shell\" (a step has exactly one)",
                "jobs.toml:24:9: flow \"etl\": step \"e\": job: \"other\" is a [[flow]]; a step "
                "runs a [[job]] (flows do not nest)",
                "jobs.toml:28:11: flow \"etl\": step \"f\": shell: command is also set (line "
                "27); a step has exactly one of command and shell",
            }));
}

TEST(FlowFileTest, KeysAreRefusedWhereTheyDoNotBelongSayingWhere) {
  EXPECT_EQ(Errors(R"(
[[flow]]
name = "etl"
schedule = "@daily"
command = ["true"]
timeout = "1h"
jitter = "5m"
colour = "red"
  [[flow.step]]
  name = "a"
  schedule = "@hourly"
  params = { X = "1" }
  command = ["true"]
  wen = "always"
)"),
            (Lines{
                "jobs.toml:4:11: flow \"etl\": command: belongs in a [[flow.step]]: a flow's "
                "steps say what runs and how",
                "jobs.toml:5:11: flow \"etl\": timeout: not supported on a [[flow]] yet; set it "
                "on its steps",
                "jobs.toml:6:10: flow \"etl\": jitter: not supported in flows yet",
                "jobs.toml:7:1: flow \"etl\": unknown key \"colour\" (expected name, schedule, "
                "anchor, command, shell, description, dialect, timezone, on, shards, route, "
                "overlap, misfire, misfire_cap, on_lost, retry, timeout, jitter, "
                "expect_success_within, kill_grace, log_cap, run_as, cwd, memory_max, cpu_max, "
                "pids_max, io_weight, env, params, secrets, "
                "enabled, notify, notify_on, repeat_after or step)",
                "jobs.toml:10:14: flow \"etl\": step \"a\": schedule: a step starts when its "
                "needs are met; set it on the [[flow]]",
                "jobs.toml:11:12: flow \"etl\": step \"a\": params: not supported in flows yet",
                "jobs.toml:13:3: flow \"etl\": step \"a\": unknown key \"wen\" (did you mean "
                "\"when\"?)",
            }));
}

TEST(FlowFileTest, AFlowNeedsANameAScheduleAndOneToAHundredSteps) {
  EXPECT_EQ(Errors(R"(
[[flow]]
schedule = "@daily"
  [[flow.step]]
  name = "Bad Name"
  command = ["true"]
[[flow]]
name = "no-steps"
schedule = "every day"
[[flow]]
name = "table"
schedule = "@daily"
  [flow.step]
  name = "a"
)"),
            (Lines{
                "jobs.toml:1:1: flow[0]: missing required key \"name\"",
                "jobs.toml:4:10: flow[0].step[0].name: expected [a-z0-9][a-z0-9._-]*, at most "
                "64 characters, got \"Bad Name\"",
                "jobs.toml:6:1: flow \"no-steps\": missing [[flow.step]] (a flow has 1 to 100 "
                "[[flow.step]] tables)",
                "jobs.toml:8:12: flow \"no-steps\": schedule \"every day\": expected 5 fields "
                "(min hour dom month dow) or 6 (seconds first), got 2",
                "jobs.toml:12:3: flow \"table\": step: write [[flow.step]] (an array of "
                "tables), not [flow.step]",
            }));

  std::string many = "[[flow]]\nname = \"big\"\nschedule = \"@daily\"\n";
  for (int i = 0; i <= kMaxFlowSteps; ++i) {
    many += "[[flow.step]]\nname = \"s" + std::to_string(i) + "\"\ncommand = [\"true\"]\n";
  }
  EXPECT_EQ(Errors(many), Lines{"jobs.toml:304:1: flow \"big\": step[100]: a flow has at most "
                                "100 steps"});
}

TEST(FlowFileTest, JobsAndFlowsShareOneNamespace) {
  EXPECT_EQ(Errors(R"(
[[job]]
name = "etl"
schedule = "@daily"
command = ["true"]
[[flow]]
name = "etl"
schedule = "@daily"
  [[flow.step]]
  name = "a-b"
  command = ["true"]
  [[flow.step]]
  name = "a.b"
  command = ["true"]
[[flow]]
name = "etl"
schedule = "@daily"
  [[flow.step]]
  name = "a"
  command = ["true"]
)"),
            (Lines{
                "jobs.toml:6:8: flow \"etl\": a [[job]] is also named \"etl\" (line 2); jobs "
                "and flows share one namespace",
                "jobs.toml:12:10: flow \"etl\": step \"a.b\": reads the same as step \"a-b\" "
                "(line 9) in the environment (JOB_NEED_A_B_RUN_ID); rename one",
                // The first "etl" is the job's.
                "jobs.toml:15:8: flow \"etl\": a [[job]] is also named \"etl\" (line 2); jobs "
                "and flows share one namespace",
            }));
}

TEST(FlowFileTest, OnlyAJobAStepNamesMayLeaveOutItsSchedule) {
  JobFileResult r = Parse(R"(
[[job]]
name = "lonely"
command = ["true"]
[[job]]
name = "scheduled"
schedule = "@daily"
command = ["true"]
)");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].ToString(),
            "jobs.toml:1:1: job \"lonely\": missing required key \"schedule\" (only a job a "
            "[[flow.step]] names may leave it out)");
  ASSERT_EQ(r.file.jobs.size(), 1u);
  EXPECT_EQ(r.file.jobs[0].name, "scheduled");
}

TEST(FlowFileTest, AFlowTableWrittenAsATableIsExplained) {
  EXPECT_EQ(Errors("[flow]\nname = \"x\"\n"),
            Lines{"jobs.toml:1:1: flow: write [[flow]] (an array of tables), not [flow]"});
  EXPECT_EQ(Errors("flow = 3\n"), Lines{"jobs.toml:1:8: flow: expected [[flow]] tables, got 3"});
}

TEST(FlowFileTest, StepsOfAFlowWithoutAValidNameAreNamedByTheirPlace) {
  EXPECT_EQ(Errors(R"(
[[flow]]
name = "Bad Flow"
schedule = "@daily"
  [[flow.step]]
  name = "a"
  command = ["true"]
  shards = 0
  [[flow.step]]
  name = "b"
  needs = ["zz"]
  command = ["true"]
)"),
            (Lines{
                "jobs.toml:2:8: flow[0].name: expected [a-z0-9][a-z0-9._-]*, at most 128 "
                "characters, got \"Bad Flow\"",
                "jobs.toml:7:12: flow[0].step[0].shards: expected an integer from 1 to 10000, "
                "got 0",
                "jobs.toml:10:12: flow[0].step[1].needs[0]: needs \"zz\", which is not a step of "
                "this flow",
            }));
}

TEST(FlowFileTest, NamesAreCheckedAsNamesBeforeAnythingIsLookedUp) {
  EXPECT_EQ(Errors(R"(
[[flow]]
name = "f"
schedule = "@daily"
  [[flow.step]]
  name = "a"
  job = "Not A Job"
  [[flow.step]]
  name = "b"
  needs = ["a", "Not A Step"]
  command = ["true"]
  [[flow.step]]
  name = "c"
  needs = ["c"]
  command = ["true"]
)"),
            (Lines{
                "jobs.toml:6:9: flow \"f\": step \"a\": job: expected the name of a [[job]] of "
                "this file, got \"Not A Job\"",
                "jobs.toml:9:17: flow \"f\": step \"b\": needs[1]: expected a step name, got "
                "\"Not A Step\"",
            }));
  // Once names read, the graph is checked: a step that needs itself.
  EXPECT_EQ(Errors(R"(
[[flow]]
name = "f"
schedule = "@daily"
  [[flow.step]]
  name = "c"
  needs = ["c"]
  command = ["true"]
)"),
            Lines{"jobs.toml:6:12: flow \"f\": step \"c\": needs[0]: a step cannot need itself"});
  // A long wrong value is shown cut, and costs no more than a short one.
  std::string huge(1 << 20, 'x');
  Lines errors = Errors(
      "[[job]]\nname = \"j\"\ncommand = [\"true\"]\n[[flow]]\nname = \"f\"\n"
      "schedule = \"@daily\"\n[[flow.step]]\nname = \"a\"\njob = \"" +
      huge + "\"\n[[flow.step]]\nname = \"b\"\nneeds = [\"" + huge + "\"]\ncommand = [\"true\"]\n");
  ASSERT_EQ(errors.size(), 3u);
  for (const std::string& e : errors) EXPECT_LT(e.size(), 300u) << e.substr(0, 300);
}

TEST(FlowFileTest, AJobWithoutAScheduleTakesNoKeysOnlyASchedulesUse) {
  EXPECT_EQ(Errors(R"(
[[job]]
name = "x"
command = ["true"]
anchor = 2026-01-01T00:00:00Z
jitter = "5m"
misfire = "skip"
[[flow]]
name = "f"
schedule = "@daily"
  [[flow.step]]
  name = "a"
  job = "x"
)"),
            (Lines{
                "jobs.toml:4:10: job \"x\": anchor: only applies with a schedule; this job has "
                "none (it runs as a step)",
                "jobs.toml:5:10: job \"x\": jitter: only applies with a schedule; this job has "
                "none (it runs as a step)",
                "jobs.toml:6:11: job \"x\": misfire: only applies with a schedule; this job has "
                "none (it runs as a step)",
            }));
}

TEST(FlowFileTest, AStepsOwnJobTakesFromDefaultsOnlyWhatAStepMaySet) {
  JobFileResult r = Parse(R"(
[defaults]
timezone = "Asia/Tokyo"
overlap  = "replace"
misfire  = "skip"
jitter   = "1m"
notify_on = ["failed", "recovered"]
repeat_after = "5m"
kill_grace = "3s"
[[flow]]
name = "f"
schedule = "@daily"
  [[flow.step]]
  name = "a"
  command = ["true"]
)");
  ASSERT_TRUE(r.ok()) << r.errors[0].ToString();
  ASSERT_EQ(r.file.step_jobs.size(), 1u);
  const Job& a = r.file.step_jobs[0];
  const Job unset;
  EXPECT_EQ(a.timezone, unset.timezone);
  EXPECT_EQ(a.overlap, unset.overlap);
  EXPECT_EQ(a.misfire, unset.misfire);
  EXPECT_EQ(a.jitter, unset.jitter);
  EXPECT_EQ(a.notify, unset.notify);
  EXPECT_EQ(a.kill_grace, std::chrono::seconds(3));  // a key a step may set: from [defaults]
  // The flow takes them, as a job would.
  const Flow& f = r.file.flows[0];
  EXPECT_EQ(f.timezone, "Asia/Tokyo");
  EXPECT_EQ(f.overlap, Overlap::kReplace);
  EXPECT_EQ(f.misfire, Misfire::kSkip);
  EXPECT_EQ(f.notify.repeat_after, minutes(5));
}

TEST(FlowFileTest, ADuplicateJobWithoutAScheduleLeavesTheFirstAlone) {
  JobFileResult r = Parse(R"(
[[job]]
name = "a"
schedule = "@daily"
command = ["true"]
[[job]]
name = "a"
command = ["true"]
)");
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_EQ(r.errors[0].ToString(), "jobs.toml:5:1: job \"a\": missing required key \"schedule\"");
  EXPECT_EQ(r.errors[1].ToString(),
            "jobs.toml:6:8: job \"a\": duplicate name (first defined on line 2)");
  ASSERT_EQ(r.file.jobs.size(), 1u);
  EXPECT_EQ(r.file.jobs[0].schedule, "@daily");
}

TEST(FlowFileTest, AStepBeforeAnyFlowIsExplained) {
  EXPECT_EQ(Errors("[[flow.step]]\nname = \"a\"\n"),
            Lines{"jobs.toml:1:1: flow: [[flow.step]] needs a [[flow]] before it"});
}

TEST(FlowFileTest, FlowsAreFoundWhereTheirNamesAre) {
  JobFileResult r = Parse(R"(
# [[flow]] in a comment
[[ flow ]]
name = 'first'
schedule = "@daily"
  [[flow.step]]
  name = "a"
  command = ["true"]
[[flow]]
schedule = "@daily"
name = "second"
  [[flow.step]]
  name = "a"
  command = ["true"]
)");
  ASSERT_TRUE(r.ok()) << r.errors[0].ToString();
  ASSERT_EQ(r.flow_places.size(), 2u);
  EXPECT_EQ(r.flow_places[0].line, 3);
  EXPECT_EQ(r.flow_places[0].column, 8);
  EXPECT_EQ(r.flow_places[1].line, 10);
  EXPECT_EQ(r.flow_places[1].column, 8);
}

TEST(FlowFileTest, DiagnosticsNameTheFlowAndStep) {
  JobFileResult r = Parse(R"(
[[flow]]
name = "etl"
schedule = "@daily"
  [[flow.step]]
  name = "a"
  needs = "b"
  command = ["true"]
)");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].flow, "etl");
  EXPECT_EQ(r.errors[0].step, "a");
  EXPECT_EQ(r.errors[0].job, "");
  EXPECT_EQ(r.errors[0].message,
            "needs: expected an array of step names like [\"extract\"], got \"b\"");
  EXPECT_TRUE(r.file.flows.empty());
}

}  // namespace
}  // namespace jobctl
