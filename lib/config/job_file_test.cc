#include "config/job_file.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "model/time_format.h"

namespace jobctl {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

// Test files start on the line after R"( so that line numbers read naturally.
std::string_view Text(std::string_view raw) {
  if (!raw.empty() && raw.front() == '\n') raw.remove_prefix(1);
  return raw;
}

JobFileResult Parse(std::string_view raw) { return ParseJobFile(Text(raw), "jobs.toml"); }

std::vector<std::string> Errors(std::string_view raw) {
  std::vector<std::string> out;
  for (const Diagnostic& d : Parse(raw).errors) out.push_back(d.ToString());
  return out;
}

using Lines = std::vector<std::string>;

TEST(JobFileTest, FullExampleAppliesDefaultsAndKeepsFileOrder) {
  JobFileResult r = Parse(R"(
[defaults]
timezone = "Europe/Berlin"
timeout  = "1h"
on       = ["role=web"]
retry    = { max = 3, backoff = "fixed" }
env      = { LANG = "C.UTF-8", REPORT_DIR = "/tmp" }
run_as   = "www-data"

[[job]]
name     = "daily-report"
description = "The nightly PHP report"
schedule = "15 2 * * *"
command  = ["/usr/bin/php", "/data/scripts/daily_report.php"]
on       = ["role=web", "env!=test"]
shards   = 10
route    = "round-robin"
overlap  = "replace"
misfire  = "fire-all"
misfire_cap = 5
on_lost  = "fail"
retry    = { initial = "30s", max_delay = "10m" }
kill_grace = "30s"
cwd      = "/srv"
env      = { REPORT_DIR = "/srv/reports" }

[[job]]
name     = "cleanup"
schedule = "0 0 12 ? * MON"
dialect  = "quartz"
timezone = "UTC"
shell    = "find /tmp -mtime +7 -delete"
enabled  = false
)");
  ASSERT_TRUE(r.ok()) << r.errors[0].ToString();
  ASSERT_EQ(r.file.jobs.size(), 2u);

  const Job& report = r.file.jobs[0];
  EXPECT_EQ(report.name, "daily-report");
  EXPECT_EQ(report.description, "The nightly PHP report");
  EXPECT_EQ(report.schedule, "15 2 * * *");
  EXPECT_EQ(report.dialect, Dialect::kCron);
  EXPECT_EQ(report.timezone, "Europe/Berlin");
  EXPECT_EQ(report.command,
            (std::vector<std::string>{"/usr/bin/php", "/data/scripts/daily_report.php"}));
  EXPECT_EQ(report.shell, "");
  EXPECT_EQ(report.on, (std::vector<LabelSelector>{{"role", "web", false}, {"env", "test", true}}));
  EXPECT_EQ(report.shards, 10);
  EXPECT_EQ(report.route, Route::kRoundRobin);
  EXPECT_EQ(report.overlap, Overlap::kReplace);
  EXPECT_EQ(report.misfire, Misfire::kFireAll);
  EXPECT_EQ(report.misfire_cap, 5);
  EXPECT_EQ(report.on_lost, OnLost::kFail);
  // retry merges field by field: max and backoff from [defaults], the rest from the job.
  EXPECT_EQ(report.retry, (RetryPolicy{3, Backoff::kFixed, seconds(30), minutes(10)}));
  EXPECT_EQ(report.timeout, hours(1));
  EXPECT_EQ(report.kill_grace, seconds(30));
  EXPECT_EQ(report.run_as, "www-data");
  EXPECT_EQ(report.cwd, "/srv");
  // env merges key by key: the job's REPORT_DIR wins, LANG comes from [defaults].
  EXPECT_EQ(report.env, (std::map<std::string, std::string>{{"LANG", "C.UTF-8"},
                                                            {"REPORT_DIR", "/srv/reports"}}));
  EXPECT_TRUE(report.enabled);

  const Job& cleanup = r.file.jobs[1];
  EXPECT_EQ(cleanup.name, "cleanup");
  EXPECT_EQ(cleanup.dialect, Dialect::kQuartz);
  EXPECT_EQ(cleanup.timezone, "UTC");
  EXPECT_TRUE(cleanup.command.empty());
  EXPECT_EQ(cleanup.shell, "find /tmp -mtime +7 -delete");
  EXPECT_EQ(cleanup.on, (std::vector<LabelSelector>{{"role", "web", false}}));
  EXPECT_EQ(cleanup.retry, (RetryPolicy{3, Backoff::kFixed, seconds(10), minutes(5)}));
  EXPECT_FALSE(cleanup.enabled);
}

TEST(JobFileTest, UnsetKeysTakeBuiltInDefaults) {
  JobFileResult r = Parse(R"(
[[job]]
name = "a"
schedule = "@every 10s"
shell = "true"
)");
  ASSERT_TRUE(r.ok());
  Job expected;
  expected.name = "a";
  expected.schedule = "@every 10s";
  expected.shell = "true";
  EXPECT_EQ(r.file.jobs, std::vector<Job>{expected});
}

TEST(JobFileTest, EmptyFileHasNoJobs) {
  JobFileResult r = Parse("# nothing yet\n");
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.file.jobs.empty());
}

TEST(JobFileTest, EmptySelectorListClearsTheDefault) {
  JobFileResult r = Parse(R"(
[defaults]
on = ["role=web"]
[[job]]
name = "a"
schedule = "@hourly"
shell = "true"
on = []
)");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.file.jobs[0].on.empty());
}

TEST(JobFileTest, WrongTypeShowsTheValueAsWritten) {
  EXPECT_EQ(Errors(R"(
[[job]]
name = "backup"
schedule = "@daily"
shell = "backup.sh"
retry = { max = "three" }
run_as = 5
enabled = "yes"
)"),
            (Lines{
                R"(jobs.toml:5:17: job "backup": retry.max: expected an integer >= 0, got "three")",
                R"(jobs.toml:6:10: job "backup": run_as: expected a string, got 5)",
                R"(jobs.toml:7:11: job "backup": enabled: expected true or false, got "yes")",
            }));
}

TEST(JobFileTest, ArraysAndNumbersAreShownAsTomlWritesThem) {
  EXPECT_EQ(Errors(R"(
[[job]]
name = "a"
schedule = "@daily"
shell = ["echo", 'hi']
timeout = 1.5
)"),
            (Lines{
                R"(jobs.toml:4:9: job "a": shell: expected a non-empty string, got ["echo", "hi"])",
                R"(jobs.toml:5:11: job "a": timeout: expected a duration like "90s" or "1h30m", )"
                R"(got 1.5)",
            }));
}

TEST(JobFileTest, IntegerRangesAreChecked) {
  EXPECT_EQ(Errors(R"(
[[job]]
name = "a"
schedule = "@daily"
shell = "true"
shards = 0
misfire_cap = 0
retry.max = -1
)"),
            (Lines{
                R"(jobs.toml:5:10: job "a": shards: expected an integer from 1 to 10000, got 0)",
                R"(jobs.toml:6:15: job "a": misfire_cap: expected an integer >= 1, got 0)",
                R"(jobs.toml:7:13: job "a": retry.max: expected an integer >= 0, got -1)",
            }));
}

TEST(JobFileTest, DurationsAreChecked) {
  EXPECT_EQ(Errors(R"(
[[job]]
name = "a"
schedule = "@daily"
shell = "true"
timeout = "0s"
kill_grace = "5 sec"
)"),
            (Lines{
                R"(jobs.toml:5:11: job "a": timeout: expected a duration > 0, got "0s")",
                R"(jobs.toml:6:14: job "a": kill_grace: expected a duration like "90s" or )"
                R"("1h30m" (units ms, s, m, h, d), got "5 sec")",
            }));
}

TEST(JobFileTest, ExpectSuccessWithinIsADurationFromAMinuteToAYearAndADay) {
  EXPECT_EQ(Errors(R"(
[defaults]
expect_success_within = "400d"
[[job]]
name = "a"
schedule = "@daily"
shell = "true"
expect_success_within = "30s"
[[job]]
name = "b"
schedule = "@daily"
shell = "true"
expect_success_within = 3600
)"),
            (Lines{
                R"(jobs.toml:2:25: defaults.expect_success_within: expected a duration from )"
                R"("1m" to "366d", got "400d")",
                R"(jobs.toml:7:25: job "a": expect_success_within: expected a duration from )"
                R"("1m" to "366d", got "30s")",
                R"(jobs.toml:12:25: job "b": expect_success_within: expected a duration like )"
                R"("90s" or "1h30m", got 3600)",
            }));
  JobFileResult r = ParseJobFile(R"(
[defaults]
expect_success_within = "26h"
[[job]]
name = "a"
schedule = "@daily"
shell = "true"
[[job]]
name = "b"
schedule = "@hourly"
shell = "true"
expect_success_within = "2h"
[[job]]
name = "c"
schedule = "@hourly"
shell = "true"
expect_success_within = "366d"
)",
                                 "jobs.toml");
  ASSERT_TRUE(r.errors.empty()) << r.errors[0].ToString();
  ASSERT_EQ(r.file.jobs.size(), 3u);
  EXPECT_EQ(r.file.jobs[0].expect_success_within, hours(26));
  EXPECT_EQ(r.file.jobs[1].expect_success_within, hours(2));
  EXPECT_EQ(r.file.jobs[2].expect_success_within, hours(24 * 366));
  EXPECT_FALSE(
      ParseJobFile("[[job]]\nname = \"a\"\nschedule = \"@daily\"\nshell = \"true\"\n", "jobs.toml")
          .file.jobs.at(0)
          .expect_success_within);
}

TEST(JobFileTest, NotifyKeysTakeDefaultsAndJobValues) {
  JobFileResult r = Parse(R"(
[defaults]
notify = ["ops-mail", "mailto:root@example.com", "ops-mail"]
repeat_after = "30m"

[[job]]
name = "a"
schedule = "@daily"
shell = "true"

[[job]]
name = "b"
schedule = "@daily"
shell = "true"
notify = ["chat"]
notify_on = ["failed", "recovered", "agent_lost"]
repeat_after = "0s"
)");
  ASSERT_TRUE(r.errors.empty()) << r.errors[0].ToString();
  ASSERT_EQ(r.file.jobs.size(), 2u);
  const Job& a = r.file.jobs[0];
  EXPECT_EQ(a.notify.to, (std::vector<std::string>{"ops-mail", "mailto:root@example.com"}));
  EXPECT_EQ(a.notify.on, kDefaultNotifyOn);
  EXPECT_EQ(a.notify.repeat_after, std::chrono::minutes(30));
  const Job& b = r.file.jobs[1];
  EXPECT_EQ(b.notify.to, std::vector<std::string>{"chat"});
  EXPECT_EQ(b.notify.on, NotifyBit(NotifyEvent::kFailed) | NotifyBit(NotifyEvent::kRecovered) |
                             NotifyBit(NotifyEvent::kAgentLost));
  EXPECT_EQ(b.notify.repeat_after.count(), 0);
}

TEST(JobFileTest, NotifyKeysAreChecked) {
  EXPECT_EQ(Errors(R"(
[[job]]
name = "a"
schedule = "@daily"
shell = "true"
notify = ["Ops", "mailto:a@b\r\nBcc: x@y"]
notify_on = ["failed", "fail"]
repeat_after = "60d"
)"),
            (Lines{
                R"(jobs.toml:5:11: job "a": notify[0]: expected a channel name )"
                R"(([a-z0-9][a-z0-9._-]*, at most 64 characters) or )"
                R"("mailto:user@example.com", got "Ops")",
                R"(jobs.toml:5:18: job "a": notify[1]: expected an address like )"
                R"("mailto:user@example.com", got "mailto:a@b\u000D\nBcc: x@y")",
                R"(jobs.toml:6:24: job "a": notify_on[1]: expected failed, timed_out, )"
                R"(lost, canceled, recovered, missed, skipped, agent_lost or overdue, got )"
                R"("fail" (did you mean "failed"?))",
                R"(jobs.toml:7:16: job "a": repeat_after: expected at most "30d" ("0s": every )"
                R"(time), got "60d")",
            }));
}

TEST(JobFileTest, JitterIsADurationOfAtMostADay) {
  EXPECT_EQ(Errors(R"(
[[job]]
name = "a"
schedule = "@daily"
shell = "true"
jitter = "25h"
)"),
            (Lines{R"(jobs.toml:5:10: job "a": jitter: expected at most "24h", got "25h")"}));
  JobFileResult r = ParseJobFile(
      "[defaults]\njitter = \"90s\"\n[[job]]\nname = \"a\"\n"
      "schedule = \"@hourly\"\nshell = \"true\"\n",
      "jobs.toml");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.file.jobs[0].jitter, std::chrono::seconds(90));
}

TEST(JobFileTest, LogCapIsAPositiveSizeInDefaultsOrPerJob) {
  EXPECT_EQ(Errors(R"(
[[job]]
name = "a"
schedule = "@daily"
shell = "true"
log_cap = "10M"
[[job]]
name = "b"
schedule = "@daily"
shell = "true"
log_cap = 0
)"),
            (Lines{
                R"(jobs.toml:5:11: job "a": log_cap: expected a size > 0 like "10MiB" )"
                R"((at most 1TiB), got "10M")",
                R"(jobs.toml:10:11: job "b": log_cap: expected a size > 0 like "10MiB" )"
                R"((at most 1TiB), got 0)",
            }));
  JobFileResult r = ParseJobFile(
      "[defaults]\nlog_cap = \"1MiB\"\n[[job]]\nname = \"a\"\nschedule = \"@hourly\"\n"
      "shell = \"true\"\n[[job]]\nname = \"b\"\nschedule = \"@hourly\"\nshell = \"true\"\n"
      "log_cap = 4096\n",
      "jobs.toml");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.file.jobs[0].log_cap_bytes, 1 << 20);
  EXPECT_EQ(r.file.jobs[1].log_cap_bytes, 4096);
}

TEST(JobFileTest, ResourceLimitsAreReadInDefaultsOrPerJobWithinTheirRanges) {
  JobFileResult r = Parse(R"(
[defaults]
memory_max = "512MiB"
[[job]]
name = "a"
schedule = "@daily"
shell = "true"
cpu_max = "150%"
pids_max = 64
io_weight = 200
[[job]]
name = "b"
schedule = "@daily"
shell = "true"
memory_max = "2GiB"
)");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.file.jobs[0].limits.memory_max_bytes, int64_t{512} << 20);
  EXPECT_EQ(r.file.jobs[0].limits.cpu_max_percent, 150);
  EXPECT_EQ(r.file.jobs[0].limits.pids_max, 64);
  EXPECT_EQ(r.file.jobs[0].limits.io_weight, 200);
  EXPECT_EQ(r.file.jobs[1].limits, ResourceLimits{.memory_max_bytes = int64_t{2} << 30});
  EXPECT_EQ(Errors(R"(
[[job]]
name = "a"
schedule = "@daily"
shell = "true"
memory_max = "512M"
cpu_max = 1.5
pids_max = 0
io_weight = 10001
[[job]]
name = "b"
schedule = "@daily"
shell = "true"
memory_max = 1000
cpu_max = "0%"
)"),
            (Lines{
                R"(jobs.toml:5:14: job "a": memory_max: expected a size from "1MiB" to )"
                R"("1024GiB" like "512MiB", got "512M")",
                R"(jobs.toml:6:11: job "a": cpu_max: expected a share of one CPU from "1%" )"
                R"(to "100000%" like "150%" (one and a half CPUs), got 1.5)",
                R"(jobs.toml:7:12: job "a": pids_max: expected an integer from 1 to 4194304, )"
                R"(got 0)",
                R"(jobs.toml:8:13: job "a": io_weight: expected an integer from 1 to 10000, )"
                R"(got 10001)",
                R"(jobs.toml:13:14: job "b": memory_max: expected a size from "1MiB" to )"
                R"("1024GiB" like "512MiB", got 1000)",
                R"(jobs.toml:14:11: job "b": cpu_max: expected a share of one CPU from "1%" )"
                R"(to "100000%" like "150%" (one and a half CPUs), got "0%")",
            }));
}

TEST(JobFileTest, UnknownKeySuggestsTheClosestKey) {
  EXPECT_EQ(Errors(R"(
[[job]]
name = "a"
schedule = "@daily"
shell = "true"
timout = "1h"
tiemzone = "UTC"
user = "nobody"
retry = { mxa = 2 }
colour = "blue"
)"),
            (Lines{
                R"(jobs.toml:5:1: job "a": unknown key "timout" (did you mean "timeout"?))",
                R"(jobs.toml:6:1: job "a": unknown key "tiemzone" (did you mean "timezone"?))",
                R"(jobs.toml:7:1: job "a": unknown key "user" (did you mean "run_as"?))",
                R"(jobs.toml:8:11: job "a": retry: unknown key "mxa" (did you mean "max"?))",
                // With no key close enough, the message lists the keys a job takes.
                R"(jobs.toml:9:1: job "a": unknown key "colour" (expected name, schedule, )"
                R"(anchor, command, shell, description, dialect, timezone, on, shards, route, )"
                R"(overlap, misfire, misfire_cap, on_lost, retry, timeout, jitter, )"
                R"(expect_success_within, kill_grace, log_cap, run_as, cwd, memory_max, )"
                R"(cpu_max, pids_max, io_weight, env, params, )"
                R"(secrets, enabled, notify, notify_on or repeat_after))",
            }));
}

TEST(JobFileTest, DefaultsRejectPerJobKeysAndSuggestOnlyItsOwn) {
  EXPECT_EQ(Errors(R"(
[defaults]
schedule = "@daily"
timeot = "1h"
retry = { backof = "fixed" }
)"),
            (Lines{
                R"(jobs.toml:2:1: defaults.schedule: set it in each [[job]], not in [defaults])",
                R"(jobs.toml:3:1: defaults: unknown key "timeot" (did you mean "timeout"?))",
                R"(jobs.toml:4:11: defaults.retry: unknown key "backof" (did you mean "backoff"?))",
            }));
}

TEST(JobFileTest, DefaultsValuesAreCheckedOnce) {
  // A bad default is reported at [defaults], not again for every job that inherits it.
  EXPECT_EQ(Errors(R"(
[defaults]
route = "spred"

[[job]]
name = "a"
schedule = "@daily"
shell = "true"

[[job]]
name = "b"
schedule = "@daily"
shell = "true"
)"),
            (Lines{
                R"(jobs.toml:2:9: defaults.route: expected spread, round-robin, random, hash, )"
                R"(failover or broadcast, got "spred" (did you mean "spread"?))",
            }));
}

TEST(JobFileTest, UnknownTopLevelTablesAndKeys) {
  EXPECT_EQ(
      Errors(R"(
timezone = "UTC"
colour = 1

[jobs]
name = "a"

[default]
timeout = "1h"
)"),
      (Lines{
          R"(jobs.toml:1:1: unknown key "timezone" (it belongs in [defaults] or a [[job]]))",
          R"(jobs.toml:2:1: unknown key "colour" (expected only [defaults], [[job]] and [[flow]]))",
          R"(jobs.toml:4:2: unknown table "jobs" (did you mean "job"?))",
          R"(jobs.toml:7:2: unknown table "default" (did you mean "defaults"?))",
      }));
}

TEST(JobFileTest, SingleJobTableMustBeAnArrayOfTables) {
  EXPECT_EQ(Errors(R"(
[job]
name = "a"
)"),
            (Lines{R"(jobs.toml:1:1: job: write [[job]] (an array of tables), not [job])"}));
}

TEST(JobFileTest, TopLevelValuesOfTheWrongKind) {
  EXPECT_EQ(Errors(R"(
defaults = 5
job = [{ name = "a", schedule = "@daily", shell = "true" }, "b"]
)"),
            (Lines{
                R"(jobs.toml:1:12: defaults: expected a table, got 5)",
                R"(jobs.toml:2:61: job[1]: expected a table, got "b")",
            }));
}

TEST(JobFileTest, DuplicateNamePointsAtTheSecondAndNamesTheFirstLine) {
  JobFileResult r = Parse(R"(
[[job]]
name = "backup"
schedule = "@daily"
shell = "true"

[[job]]
name = "backup"
schedule = "@hourly"
shell = "true"
)");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0],
            (Diagnostic{"jobs.toml", 7, 8, "backup", "duplicate name (first defined on line 2)"}));
  EXPECT_EQ(r.errors[0].ToString(),
            R"(jobs.toml:7:8: job "backup": duplicate name (first defined on line 2))");
  // The first job is fine and stays; the duplicate is left out.
  ASSERT_EQ(r.file.jobs.size(), 1u);
  EXPECT_EQ(r.file.jobs[0].schedule, "@daily");
}

TEST(JobFileTest, InvalidNameIsReportedAndOtherErrorsCarryNoName) {
  EXPECT_EQ(Errors(R"(
[[job]]
name = "Bad Name"
schedule = "@daily"
shell = "true"
shards = "many"
)"),
            (Lines{
                R"(jobs.toml:2:8: name "Bad Name": expected [a-z0-9][a-z0-9._-]*, at most 128 )"
                R"(characters)",
                R"(jobs.toml:5:10: shards: expected an integer from 1 to 10000, got "many")",
            }));
}

TEST(JobFileTest, MissingKeysPointAtTheJobHeader) {
  EXPECT_EQ(Errors(R"(
[[job]]
description = "nothing else"

[[job]]
name = "half"
)"),
            (Lines{
                R"(jobs.toml:1:1: missing required key "name")",
                R"(jobs.toml:1:1: missing required key "schedule")",
                R"(jobs.toml:1:1: missing "command" or "shell" (a job has exactly one))",
                R"(jobs.toml:4:1: job "half": missing "command" or "shell" (a job has exactly )"
                R"(one))",
                R"(jobs.toml:4:1: job "half": missing required key "schedule" (only a job a )"
                R"([[flow.step]] names may leave it out))",
            }));
}

TEST(JobFileTest, CommandAndShellTogetherPointAtTheLaterOne) {
  EXPECT_EQ(Errors(R"(
[[job]]
name = "a"
schedule = "@daily"
command = ["/bin/true"]
shell = "true"
)"),
            (Lines{R"(jobs.toml:5:9: job "a": shell: command is also set (line 4); a job has )"
                   R"(exactly one of command and shell)"}));
}

TEST(JobFileTest, CommandMustBeANonEmptyArgv) {
  EXPECT_EQ(Errors(R"(
[[job]]
name = "a"
schedule = "@daily"
command = []

[[job]]
name = "b"
schedule = "@daily"
command = ["", 5]
)"),
            (Lines{
                R"(jobs.toml:4:11: job "a": command: expected a non-empty array of strings like )"
                R"(["/usr/bin/env", "true"], got [])",
                R"(jobs.toml:9:12: job "b": command[0]: expected a program, got "")",
                R"(jobs.toml:9:16: job "b": command[1]: expected a string, got 5)",
            }));
}

TEST(JobFileTest, EnumErrorsListTheAllowedValues) {
  EXPECT_EQ(Errors(R"(
[[job]]
name = "a"
schedule = "@daily"
shell = "true"
overlap = "queue"
misfire = "fireonce"
on_lost = 1
dialect = "vixie"
retry = { backoff = "linear" }
)"),
            (Lines{
                R"(jobs.toml:5:11: job "a": overlap: expected forbid, allow or replace, got )"
                R"("queue")",
                R"(jobs.toml:6:11: job "a": misfire: expected fire-once, skip or fire-all, got )"
                R"("fireonce" (did you mean "fire-once"?))",
                R"(jobs.toml:7:11: job "a": on_lost: expected rerun or fail, got 1)",
                R"(jobs.toml:8:11: job "a": dialect: expected cron or quartz, got "vixie")",
                R"(jobs.toml:9:21: job "a": retry.backoff: expected exponential or fixed, got )"
                R"("linear")",
            }));
}

TEST(JobFileTest, UnknownTimeZoneIsReportedOnceWithoutAScheduleError) {
  EXPECT_EQ(Errors(R"(
[[job]]
name = "a"
schedule = "0 9 * * *"
timezone = "Europe/Berln"
shell = "true"
)"),
            (Lines{R"(jobs.toml:4:12: job "a": timezone: unknown time zone "Europe/Berln" )"
                   R"((expected an IANA name like "Europe/Berlin"))"}));
}

TEST(JobFileTest, ScheduleErrorNamesTheScheduleOnce) {
  EXPECT_EQ(Errors(R"(
[[job]]
name = "x"
schedule = "0 25 * * *"
shell = "true"
)"),
            (Lines{R"(jobs.toml:3:12: job "x": schedule "0 25 * * *": field 2 (hour): 25 is out )"
                   R"(of range 0-23)"}));
}

TEST(JobFileTest, AnchorMovesTheGridOfAnEverySchedule) {
  JobFileResult r = Parse(R"(
[[job]]
name = "a"
schedule = "@every 10s"
anchor = 2026-01-01T00:00:07.250Z
shell = "true"
[[job]]
name = "b"
schedule = "@every 1m"
anchor = "2026-01-01T01:00:30+01:00"
shell = "true"
)");
  ASSERT_TRUE(r.ok()) << r.errors[0].ToString();
  EXPECT_EQ(r.file.jobs[0].anchor_ms, ToUnixMs(*ParseInstant("2026-01-01T00:00:07.250Z")));
  EXPECT_EQ(r.file.jobs[1].anchor_ms, ToUnixMs(*ParseInstant("2026-01-01T00:00:30Z")));
  Result<Schedule> every = Schedule::Parse(ScheduleSpecOf(r.file.jobs[0]));
  ASSERT_TRUE(every.ok());
  EXPECT_EQ(every->Next(*ParseInstant("2026-11-22T09:00:00Z")),
            *ParseInstant("2026-11-22T09:00:07.250Z"));
}

TEST(JobFileTest, AnchorNeedsAnEveryScheduleAndAnInstant) {
  EXPECT_EQ(
      Errors(R"(
[[job]]
name = "a"
schedule = "0 * * * *"
anchor = 2026-01-01T00:00:00Z
shell = "true"
[[job]]
name = "b"
schedule = "@every 10s"
anchor = 2026-01-01T00:00:00
shell = "true"
[[job]]
name = "c"
schedule = "@every 10s"
anchor = "tomorrow"
shell = "true"
)"),
      (Lines{
          R"(jobs.toml:4:10: job "a": anchor: only applies to @every schedules; "0 * * * *" fires on the calendar)",
          R"(jobs.toml:9:10: job "b": anchor: expected an instant with an offset (Z or +HH:MM), got 2026-01-01T00:00:00)",
          R"(jobs.toml:14:10: job "c": anchor: expected an instant like 2024-03-10T07:00:00Z or 2024-03-10T02:00:00-05:00, got "tomorrow")"}));
}

TEST(JobFileTest, ScheduleIsCheckedInTheDialectFromDefaults) {
  JobFileResult r = Parse(R"(
[defaults]
dialect = "quartz"

[[job]]
name = "q"
schedule = "0 0 12 ? * MON"
shell = "true"

[[job]]
name = "c"
dialect = "cron"
schedule = "15 2 * * *"
shell = "true"

[[job]]
name = "five-fields"
schedule = "15 2 * * *"
shell = "true"
)");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].line, 17);
  EXPECT_EQ(r.errors[0].column, 12);
  EXPECT_EQ(r.errors[0].job, "five-fields");
  EXPECT_TRUE(r.errors[0].message.starts_with("schedule \"15 2 * * *\": ")) << r.errors[0].message;
  ASSERT_EQ(r.file.jobs.size(), 2u);
  EXPECT_EQ(r.file.jobs[0].dialect, Dialect::kQuartz);
  EXPECT_EQ(r.file.jobs[1].dialect, Dialect::kCron);
}

TEST(JobFileTest, ParamsDeclareWhatATriggerMaySet) {
  JobFileResult r = Parse(R"(
[[job]]
name = "deploy"
schedule = "@yearly"
shell = "true"
params = { VERSION = "latest", REGION = { required = true, max_length = 8 }, NOTE = {} }
)");
  ASSERT_TRUE(r.ok()) << r.errors[0].ToString();
  const Job& j = r.file.jobs[0];
  ASSERT_EQ(j.params.size(), 3u);
  EXPECT_EQ(j.params.at("VERSION"), (Param{"latest", false, 1024}));
  EXPECT_EQ(j.params.at("REGION"), (Param{std::nullopt, true, 8}));
  EXPECT_EQ(j.params.at("NOTE"), (Param{std::nullopt, false, 1024}));
}

TEST(JobFileTest, ParamsAreChecked) {
  EXPECT_EQ(Errors(R"(
[[job]]
name = "a"
schedule = "@daily"
shell = "true"
params = { PATH = "/x", LD_PRELOAD = "", OK = { required = true, default = "x" } }
[[job]]
name = "b"
schedule = "@daily"
shell = "true"
params = { A = { max_len = 3 }, B = 5, C = { default = "long", max_length = 2 } }
)"),
            (Lines{
                R"(jobs.toml:5:12: job "a": params.PATH: refused: a trigger may not change the )"
                R"(user's identity or PATH)",
                R"(jobs.toml:5:25: job "a": params.LD_PRELOAD: refused: the dynamic loader and )"
                R"(the C library read it (a way to run code in another process))",
                R"(jobs.toml:5:47: job "a": params.OK: a required parameter has no default)",
                R"(jobs.toml:10:18: job "b": params.A: unknown key "max_len" (expected default, )"
                R"(required or max_length))",
                R"(jobs.toml:10:37: job "b": params.B: expected a default value (a string) or a )"
                R"(table like { required = true, max_length = 64 }, got 5)",
                R"(jobs.toml:10:44: job "b": params.C: the default is longer than max_length 2)",
            }));
}

TEST(JobFileTest, EnvNamesAndValuesAreChecked) {
  EXPECT_EQ(Errors(R"(
[[job]]
name = "a"
schedule = "@daily"
shell = "true"
env = { 1FOO = "x", PORT = 8080, JOB_NAME = "y", OK_1 = "fine" }
)"),
            (Lines{
                R"(jobs.toml:5:9: job "a": env: invalid variable name "1FOO" (expected )"
                R"([A-Za-z_][A-Za-z0-9_]*, at most 128 characters))",
                R"(jobs.toml:5:28: job "a": env.PORT: expected a string, got 8080)",
                R"(jobs.toml:5:34: job "a": env.JOB_NAME: reserved: the agent sets it for every )"
                R"(run)",
            }));
}

TEST(JobFileTest, SelectorsAndPathsAreChecked) {
  EXPECT_EQ(Errors(R"(
[[job]]
name = "a"
schedule = "@daily"
shell = "true"
on = ["role=web", "gpu", "=x", 3]
cwd = "srv/data"
)"),
            (Lines{
                R"(jobs.toml:5:19: job "a": on[1]: expected "key=value" or "key!=value", got )"
                R"("gpu")",
                R"(jobs.toml:5:26: job "a": on[2]: expected "key=value" or "key!=value", got "=x")",
                R"(jobs.toml:5:32: job "a": on[3]: expected "key=value" or "key!=value", got 3)",
                R"(jobs.toml:6:7: job "a": cwd: expected an absolute path, got "srv/data")",
            }));
}

// A crontab imported with --system by mistake puts the command's first word in run_as.
TEST(JobFileTest, Issue19_RunAsMustBeAUserName) {
  const std::string kUserNameExpected =
      "expected a user name ([A-Za-z_][A-Za-z0-9._-]*, optionally ending in $, at most 32 "
      "characters), got ";
  EXPECT_EQ(Errors(R"(
[defaults]
run_as = "root;id"

[[job]]
name = "sa1"
schedule = "*/10 * * * *"
shell = "1 1"
run_as = "/usr/lib/sysstat/sa1"

[[job]]
name = "b"
schedule = "@daily"
shell = "true"
run_as = "1000"

[[job]]
name = "c"
schedule = "@daily"
shell = "true"
run_as = "a-name-of-thirty-three-characters"
)"),
            (Lines{
                R"(jobs.toml:2:10: defaults.run_as: )" + kUserNameExpected + R"("root;id")",
                R"(jobs.toml:8:10: job "sa1": run_as: )" + kUserNameExpected +
                    R"("/usr/lib/sysstat/sa1")",
                R"(jobs.toml:14:10: job "b": run_as: )" + kUserNameExpected + R"("1000")",
                R"(jobs.toml:20:10: job "c": run_as: )" + kUserNameExpected +
                    R"("a-name-of-thirty-three-characters")",
            }));
}

TEST(JobFileTest, RunAsAcceptsTheUserNamesDebianCreates) {
  for (const char* user : {"www-data", "_apt", "Debian-exim", "systemd-timesync", "backup",
                           "john.doe", "host01$", "name-of-exactly-thirty-two-chars"}) {
    JobFileResult r = Parse(std::string(R"(
[[job]]
name = "a"
schedule = "@daily"
shell = "true"
run_as = ")") + user + "\"\n");
    ASSERT_TRUE(r.ok()) << user << ": " << r.errors[0].ToString();
    EXPECT_EQ(r.file.jobs[0].run_as, user);
  }
  // "" is the agent's own user, as when run_as is not set.
  JobFileResult r = Parse(R"(
[defaults]
run_as = "backup"

[[job]]
name = "a"
schedule = "@daily"
shell = "true"
run_as = ""
)");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.file.jobs[0].run_as, "");
}

TEST(JobFileTest, AllErrorsOfAFileAreReportedInFileOrder) {
  std::string_view file = R"(
[[job]]
name = "one"
schedule = "* * * * *"
shell = "true"
timeout = "forever"

[defaults]
shards = 20000

[[job]]
name = "two"
schedule = "@dialy"
shell = "true"
overlap = "forbid"
retry = { max = 2.5 }

[[job]]
name = "three"
schedule = "@daily"
shell = "true"
)";
  JobFileResult r = Parse(file);
  std::vector<int> lines;
  for (const Diagnostic& d : r.errors) lines.push_back(d.line);
  EXPECT_EQ(lines, (std::vector<int>{5, 8, 12, 15})) << ::testing::PrintToString(Errors(file));
  ASSERT_EQ(r.errors.size(), 4u);
  EXPECT_EQ(r.errors[0].job, "one");
  EXPECT_EQ(r.errors[1].job, "");
  EXPECT_EQ(r.errors[1].message, "defaults.shards: expected an integer from 1 to 10000, got 20000");
  EXPECT_EQ(r.errors[2].job, "two");
  EXPECT_TRUE(r.errors[2].message.starts_with("schedule \"@dialy\": ")) << r.errors[2].message;
  EXPECT_EQ(r.errors[3].message, "retry.max: expected an integer >= 0, got 2.5");
  // Only the job with no error of its own is kept.
  ASSERT_EQ(r.file.jobs.size(), 1u);
  EXPECT_EQ(r.file.jobs[0].name, "three");
  EXPECT_FALSE(r.ok());
}

TEST(JobFileTest, ShippedExampleIsValid) {
  std::filesystem::path example = JOBCTL_EXAMPLE_JOBS;  // from CMake: the source tree's file
  std::ifstream in(example);
  ASSERT_TRUE(in) << "cannot read " << example;
  std::stringstream text;
  text << in.rdbuf();
  JobFileResult r = ParseJobFile(text.str(), "examples/jobs.toml");
  for (const Diagnostic& d : r.errors) ADD_FAILURE() << d.ToString();
  ASSERT_EQ(r.file.jobs.size(), 4u);
  EXPECT_EQ(r.file.jobs[1].shards, 3);
  EXPECT_EQ(r.file.jobs[2].retry.max, 2);
  EXPECT_EQ(r.file.jobs[3].timezone, "Europe/Berlin");
}

TEST(JobFileTest, SyntaxErrorYieldsOneDiagnosticAtTomlsPosition) {
  JobFileResult r = Parse(R"(
[[job]]
name = "a"
schedule = "@daily" shell = "true"
)");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].file, "jobs.toml");
  EXPECT_EQ(r.errors[0].line, 3);
  EXPECT_EQ(r.errors[0].column, 21);
  EXPECT_EQ(r.errors[0].job, "");
  EXPECT_FALSE(r.errors[0].message.empty());
  EXPECT_TRUE(r.file.jobs.empty());
}

TEST(JobFileTest, DuplicateTomlKeyIsASyntaxError) {
  JobFileResult r = Parse(R"(
[[job]]
name = "a"
name = "b"
)");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].line, 3);
}

TEST(JobFileTest, DiagnosticWithoutPositionOmitsIt) {
  EXPECT_EQ((Diagnostic{"jobs.toml", 0, 0, "", "empty"}).ToString(), "jobs.toml: empty");
  EXPECT_EQ((Diagnostic{"", 0, 0, "a", "bad"}).ToString(), "job \"a\": bad");
}

}  // namespace
}  // namespace jobctl
