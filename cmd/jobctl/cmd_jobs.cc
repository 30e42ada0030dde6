// jobctl list, show, pause, resume, misses: the jobs the coordinator knows and their state.
#include <algorithm>
#include <iostream>
#include <memory>

#include "base/duration.h"
#include "cli.h"
#include "client.h"
#include "exit_codes.h"
#include "model/job.h"
#include "model/schedule.h"
#include "model/time_format.h"
#include "output.h"

namespace jobctl::cli {
namespace {

using nlohmann::json;

std::string ShardSummary(const wire::RunView& run) {
  int ok = 0, total = 0;
  for (const wire::ShardView& s : run.shards) {
    ++total;
    ok += s.state == "succeeded";
  }
  return total == 0 ? "-" : std::to_string(ok) + "/" + std::to_string(total);
}

// Failing jobs first, then overdue ones, then the rest, each group in the coordinator's order.
int HealthRank(const wire::JobSummaryView& j) {
  std::string last = j.last_state.value_or("");
  if (last == "failed" || last == "timed_out" || last == "lost") return 0;
  return j.overdue ? 1 : 2;
}

// The name in red for a failing job and yellow for an overdue one, when colour is on.
Cell NameCell(const wire::JobSummaryView& j, int rank, const GlobalOptions& g) {
  if (rank == 2 || !ColorEnabled(g)) return j.name;
  return Cell::Colored(j.name, rank == 0 ? "31" : "33");
}

int RunList(const std::string& label, const GlobalOptions& g) {
  if (label.size() > 256) {
    return Fail("list", "--label", Status::InvalidArgument("longer than 256 bytes"), kExitUsage);
  }
  Result<std::unique_ptr<Client>> client = Client::Connect(g);
  if (!client.ok()) return Fail("list", "", client.status(), kExitConfig);
  Result<json> reply = (*client)->Get(label.empty() ? std::string("/v1/jobs")
                                                    : "/v1/jobs?label=" + UrlEncode(label));
  if (!reply.ok()) return Fail("list", "", reply.status());
  Result<std::vector<wire::JobSummaryView>> jobs = ReplyListAs<wire::JobSummaryView>(*reply);
  if (!jobs.ok()) return Fail("list", "", jobs.status());
  // A coordinator that lists jobs without their `on` predates the filter, and ignored it.
  if (!label.empty() &&
      std::any_of(jobs->begin(), jobs->end(), [](const auto& j) { return !j.on; })) {
    return Fail("list", "--label",
                Status::Unavailable("the coordinator is older than this jobctl and does not "
                                    "filter by label; upgrade it, or filter the JSON of "
                                    "`jobctl list -o json`"),
                kExitUnavailable);
  }
  if (g.format() == OutputFormat::kJson) {
    PrintJson(*reply);
    return kExitOk;
  }
  std::stable_sort(jobs->begin(), jobs->end(),
                   [](const wire::JobSummaryView& a, const wire::JobSummaryView& b) {
                     return HealthRank(a) < HealthRank(b);
                   });
  Table t({"NAME", "SCHEDULE", "NEXT FIRE", "LAST RESULT", "LAST SUCCESS", "PAUSED"});
  for (const wire::JobSummaryView& j : *jobs) {
    std::string last = j.last_state.value_or("");
    std::string success = j.last_success ? LocalTime(*j.last_success) : "-";
    if (j.overdue) success += " overdue";
    t.Add({NameCell(j, HealthRank(j), g), j.schedule.value_or(""),
           j.paused ? "-" : LocalTime(j.next_fire),
           last.empty() ? "-" : Colored(last, g) + " " + LocalTime(j.last_finished_at), success,
           j.paused ? "yes" : "no"});
  }
  t.Print(std::cout);
  return kExitOk;
}

int RunShow(const std::string& name, const GlobalOptions& g) {
  Result<std::unique_ptr<Client>> client = Client::Connect(g);
  if (!client.ok()) return Fail("show", name, client.status(), kExitConfig);
  Result<json> reply = (*client)->Get("/v1/jobs/" + UrlEncode(name));
  if (!reply.ok()) return Fail("show", name, reply.status());
  Result<wire::JobView> job = ReplyAs<wire::JobView>(*reply);
  if (!job.ok()) return Fail("show", name, job.status());
  if (g.format() == OutputFormat::kJson) {
    PrintJson(*reply);
    return kExitOk;
  }
  if (job->flow) {
    const Flow& f = *job->flow;
    std::cout << "Name:      " << Shown(name) << " (flow)\n"
              << "Schedule:  "
              << Shown(f.schedule + (f.timezone.empty() ? "" : " (" + f.timezone + ")")) << '\n'
              << "Policies:  "
              << Shown("overlap " + std::string(OverlapName(f.overlap)) + "  misfire " +
                       std::string(MisfireName(f.misfire)))
              << '\n'
              << "Paused:    " << (job->summary.paused ? "yes" : "no") << '\n'
              << "Steps:\n";
    Table steps({"STEP", "RUNS", "NEEDS", "WHEN"});
    for (const FlowStep& s : f.steps) {
      std::string needs;
      for (const std::string& n : s.needs) needs += (needs.empty() ? "" : ", ") + n;
      steps.Add({s.name, s.own ? "its own command" : "job " + s.job, needs.empty() ? "-" : needs,
                 std::string(StepWhenName(s.when))});
    }
    steps.Print(std::cout);
  }
  const Job& d = job->definition;
  if (!job->flow) {
    std::cout << "Name:      " << Shown(name) << '\n'
              << "Schedule:  "
              << Shown(d.schedule + (d.timezone.empty() ? "" : " (" + d.timezone + ")")) << '\n';
    std::string cmd = d.shell;
    if (cmd.empty()) {
      for (const std::string& a : d.command) cmd += (cmd.empty() ? "" : " ") + a;
    }
    std::cout << "Command:   " << Shown(cmd) << '\n'
              << "Shards:    " << d.shards << "  route "
              << Shown(std::string(RouteName(d.route)) + "  overlap " +
                       std::string(OverlapName(d.overlap)) + "  misfire " +
                       std::string(MisfireName(d.misfire)))
              << '\n'
              << "Paused:    " << (job->summary.paused ? "yes" : "no") << '\n';
    if (d.expect_success_within) {
      const wire::JobSummaryView& sum = job->summary;
      std::cout << "Expect:    a success within " << FormatDuration(*d.expect_success_within)
                << "; last success " << (sum.last_success ? LocalTime(*sum.last_success) : "none")
                << (sum.overdue ? "; overdue" : "") << '\n';
    }
    if (d.jitter.count() > 0) {
      std::cout << "Jitter:    each fire starts up to " << FormatDuration(d.jitter)
                << " late (random per fire)\n";
    }
    if (d.log_cap_bytes > 0) {
      std::cout << "Log cap:   " << FormatSize(d.log_cap_bytes) << " of output kept per run\n";
    }
    if (!d.limits.empty()) {
      std::string l;
      auto add = [&l](const std::string& part) { l += (l.empty() ? "" : "  ") + part; };
      if (d.limits.memory_max_bytes) add("memory_max " + FormatSize(*d.limits.memory_max_bytes));
      if (d.limits.cpu_max_percent) {
        add("cpu_max " + std::to_string(*d.limits.cpu_max_percent) + "%");
      }
      if (d.limits.pids_max) add("pids_max " + std::to_string(*d.limits.pids_max));
      if (d.limits.io_weight) add("io_weight " + std::to_string(*d.limits.io_weight));
      std::cout << "Limits:    " << l << " (per shard, in its cgroup)\n";
    }
  }
  std::cout << "Next fires:\n";
  for (const std::string& f : job->next_fires) std::cout << "  " << Shown(f) << '\n';
  if (IsFixedDelay(job->flow ? job->flow->schedule : d.schedule)) {
    std::cout << "  then each one delay after the previous run ended\n";
  }
  std::cout << "Recent runs:\n";
  Table t({"RUN", "REASON", "SCHEDULED", "STATE", "SHARD", "HOST", "EXIT", "DURATION", "PEAK MEM",
           "CPU"});
  for (const wire::RunView& r : job->recent_runs) {
    bool first = true;
    for (const wire::ShardView& s : r.shards) {
      std::string dur = "-";
      Result<WallTime> a = ParseInstant(s.started_at), b = ParseInstant(s.finished_at);
      if (a.ok() && b.ok()) dur = FormatDuration(*b - *a);
      t.Add({first ? std::to_string(r.id) : "", first ? r.reason : "",
             first ? LocalTime(r.scheduled_at) : "", first ? Colored(r.state, g) : "",
             std::to_string(s.index), s.agent.empty() ? "-" : s.agent,
             s.exit_code ? std::to_string(*s.exit_code) : "-", dur, UsageSize(s.peak_rss_bytes),
             UsageCpu(s.cpu_ms)});
      first = false;
    }
    if (first) {
      t.Add({std::to_string(r.id), r.reason, LocalTime(r.scheduled_at), Colored(r.state, g), "-",
             "-", "-", r.note, "-", "-"});
    }
  }
  t.Print(std::cout);
  return kExitOk;
}

int RunPause(const std::string& verb, const std::string& name, const GlobalOptions& g) {
  Result<std::unique_ptr<Client>> client = Client::Connect(g);
  if (!client.ok()) return Fail(verb, name, client.status(), kExitConfig);
  Result<json> r = (*client)->Post("/v1/jobs/" + UrlEncode(name) + "/" + verb, json::object());
  if (!r.ok()) return Fail(verb, name, r.status());
  if (g.format() == OutputFormat::kJson) {
    PrintJson(*r);
  } else {
    std::cout << Shown(name) << (verb == "pause" ? " paused" : " resumed") << '\n';
  }
  return kExitOk;
}

struct MissesOptions {
  std::string job;
  std::string since;
};

// The fire times a job missed, as the coordinator recorded them: ranges, oldest first.
int RunMisses(const MissesOptions& opt, const GlobalOptions& g) {
  Result<std::unique_ptr<Client>> client = Client::Connect(g);
  if (!client.ok()) return Fail("misses", opt.job, client.status(), kExitConfig);
  std::string path = "/v1/misses?job=" + UrlEncode(opt.job);
  if (!opt.since.empty()) {
    Result<Millis> d = ParseDuration(opt.since);
    if (!d.ok()) return Fail("misses", "--since", d.status(), kExitUsage);
    path += "&since_ms=" + std::to_string(ToUnixMs(SystemClock().Now() - *d));
  }
  Result<json> reply = (*client)->Get(path);
  if (!reply.ok()) return Fail("misses", opt.job, reply.status());
  Result<std::vector<wire::MissView>> misses = ReplyListAs<wire::MissView>(*reply);
  if (!misses.ok()) return Fail("misses", opt.job, misses.status());
  if (g.format() == OutputFormat::kJson) {
    PrintJson(*reply);
    return kExitOk;
  }
  if (misses->empty()) {
    std::cout << "No missed fire times recorded for " << Shown(opt.job)
              << (opt.since.empty() ? "" : " in the last " + Shown(opt.since)) << ".\n";
    return kExitOk;
  }
  Table t({"FIRST MISSED", "LAST MISSED", "COUNT", "REASON"});
  int64_t total = 0;
  for (const wire::MissView& m : *misses) {
    total += m.count;
    // A range of one instant shows it once.
    std::string last = m.last == m.first ? "-" : LocalTime(m.last);
    t.Add({LocalTime(m.first), last, std::to_string(m.count), m.reason});
  }
  t.Print(std::cout);
  std::cout << total << " fire time" << (total == 1 ? "" : "s") << " missed in " << misses->size()
            << " range" << (misses->size() == 1 ? "" : "s") << '\n';
  return kExitOk;
}

}  // namespace

std::string ShardCount(const wire::RunView& run) { return ShardSummary(run); }

void RegisterJobs(CLI::App& app, GlobalOptions& g, int* rc) {
  auto* list = app.add_subcommand("list", "List jobs: failing and overdue first, then the rest");
  list->footer(
      "Jobs whose last run failed, timed out or was lost come first (their name in red on a\n"
      "terminal), then jobs overdue by their expect_success_within (yellow), then the rest.\n"
      "Example:\n  jobctl list\n  jobctl list --label role=web\n"
      "  jobctl list -o json | jq '.[] | select(.overdue)'\n"
      "JSON fields (in the coordinator's order): name, schedule, timezone, next_fire, paused,\n"
      "enabled, last_state, last_finished_at, last_success, overdue, open_runs, description,\n"
      "on.");
  auto label = std::make_shared<std::string>();
  list->add_option("--label", *label,
                   "Only jobs whose `on` has every one of these space-separated terms: a\n"
                   "selector as written (role=web, dc!=fra1) or a key alone (role)");
  list->callback([label, &g, rc] { *rc = RunList(*label, g); });

  auto name = std::make_shared<std::string>();
  auto* show = app.add_subcommand("show", "Show a job: definition, next 5 fires, recent runs");
  show->add_option("name", *name, "Job name")->required();
  show->footer("Example:\n  jobctl show nightly-backup");
  show->callback([name, &g, rc] { *rc = RunShow(*name, g); });

  for (const char* verb : {"pause", "resume"}) {
    auto job = std::make_shared<std::string>();
    auto* sub = app.add_subcommand(
        verb, std::string(verb) == "pause" ? "Stop a job from firing (runs already started go on)"
                                           : "Let a paused job fire again (missed instants follow "
                                             "its misfire policy)");
    sub->add_option("name", *job, "Job name")->required();
    sub->footer(std::string("Example:\n  jobctl ") + verb + " nightly-backup");
    std::string v = verb;
    sub->callback([job, v, &g, rc] { *rc = RunPause(v, *job, g); });
  }

  auto m = std::make_shared<MissesOptions>();
  auto* misses = app.add_subcommand("misses", "List the fire times a job missed, oldest first");
  misses->add_option("name", m->job, "Job name")->required();
  misses->add_option("--since", m->since,
                     "Only ranges whose last missed time is within this duration, e.g. 7d");
  misses->footer(
      "A miss is a fire time of the schedule that got no run. It happens when the time passed\n"
      "while the job was paused, or while the coordinator was down or behind by more than its\n"
      "misfire_grace; the job's misfire policy then decides what is made up:\n"
      "  misfire=skip                            none: every such time is a miss\n"
      "  misfire=fire-once: folded into one run  one run for the latest; the others are misses\n"
      "  misfire=fire-all: over misfire_cap      one run each up to misfire_cap; the rest are "
      "misses\n"
      "A fire skipped because the previous run was still active (overlap = \"forbid\") is not a\n"
      "miss: it is a run in state skipped (jobctl runs JOB --state skipped).\n"
      "Columns: FIRST MISSED and LAST MISSED bound one range of consecutive missed times (local\n"
      "time; LAST is - for a single time), COUNT is how many fire times it holds, REASON the\n"
      "policy that dropped them.\n"
      "Example:\n  jobctl misses nightly-backup --since 30d\n"
      "JSON: array of ranges, oldest first: first, last (UTC), first_ms, last_ms (Unix ms),\n"
      "count, reason.\n"
      "Exit status: 0 listed (also when none), 65 no such job, 77 the token may not read the job,\n"
      "69 coordinator unreachable.");
  misses->callback([m, &g, rc] { *rc = RunMisses(*m, g); });
}

}  // namespace jobctl::cli
