// jobctl schedule next: prints what the schedule engine will do, so anyone can check a
// schedule (and its DST behaviour) before relying on it.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "exit_codes.h"
#include "model/job.h"
#include "model/schedule.h"
#include "model/time_format.h"

namespace jobctl::cli {
namespace {

struct ScheduleNextOptions {
  std::vector<std::string> expr;
  std::string dialect = "cron";
  std::string tz;
  std::string from;
  int count = 5;
  std::string name;
  std::string jitter;
};

std::string_view KindName(Schedule::Kind k) {
  switch (k) {
    case Schedule::Kind::kCron: return "cron";
    case Schedule::Kind::kEvery: return "every";
    case Schedule::Kind::kAt: return "at";
    case Schedule::Kind::kDelay: return "delay";
  }
  return "cron";
}

int RunScheduleNext(const ScheduleNextOptions& opt, const GlobalOptions& g) {
  std::string expr;
  for (const std::string& word : opt.expr) expr += (expr.empty() ? "" : " ") + word;
  WallTime from = SystemClock().Now();
  if (!opt.from.empty()) {
    Result<WallTime> parsed = ParseInstant(opt.from);
    if (!parsed.ok()) return Fail("schedule next", "--from", parsed.status(), kExitUsage);
    from = *parsed;
  }
  Millis jitter{0};
  if (!opt.jitter.empty()) {
    Result<Millis> parsed = ParseDuration(opt.jitter);
    if (parsed.ok() && *parsed > kMaxJitter) {
      parsed = Status::InvalidArgument("expected at most 24h, got \"" + opt.jitter + "\"");
    }
    if (!parsed.ok()) return Fail("schedule next", "--jitter", parsed.status(), kExitUsage);
    jitter = *parsed;
  }
  ScheduleSpec spec{expr, *ParseDialect(opt.dialect), opt.tz, opt.name};
  Result<Schedule> schedule = Schedule::Parse(spec);
  if (!schedule.ok()) return Fail("schedule next", "", schedule.status(), kExitDataErr);

  // A fixed delay's later fires depend on when its runs end: only the first is known.
  const int count = schedule->delay() ? 1 : opt.count;
  std::vector<std::string> fires, latest;
  WallTime t = from;
  for (int i = 0; i < count; ++i) {
    std::optional<WallTime> next = schedule->Next(t);
    if (!next) break;
    fires.push_back(*FormatInZone(*next, schedule->zone().name()));
    latest.push_back(*FormatInZone(*next + jitter, schedule->zone().name()));
    t = *next;
  }
  if (g.format() == OutputFormat::kJson) {
    nlohmann::json out = {{"schedule", expr},        {"kind", KindName(schedule->kind())},
                          {"dialect", opt.dialect},  {"timezone", schedule->zone().name()},
                          {"from", FormatUtc(from)}, {"fires", fires}};
    if (jitter.count() > 0) {
      out["jitter_ms"] = jitter.count();
      out["latest_starts"] = latest;
    }
    if (schedule->delay()) out["delay_ms"] = schedule->delay()->count();
    std::cout << out.dump(2) << '\n';
  } else {
    for (size_t i = 0; i < fires.size(); ++i) {
      std::cout << fires[i];
      if (jitter.count() > 0) std::cout << "  starts by " << latest[i];
      std::cout << '\n';
    }
    if (schedule->delay()) {
      std::cerr << "jobctl: schedule next: then each fire comes "
                << FormatDuration(*schedule->delay()) << " after the job's previous run ended\n";
    } else if (static_cast<int>(fires.size()) < opt.count) {
      std::cerr << "jobctl: schedule next: the schedule has no more fires\n";
    }
  }
  return kExitOk;
}

}  // namespace

void RegisterSchedule(CLI::App& app, GlobalOptions& g, int* rc) {
  auto* schedule = app.add_subcommand("schedule", "Check schedules with the engine itself");
  schedule->require_subcommand(1);
  auto opt = std::make_shared<ScheduleNextOptions>();
  auto* next =
      schedule->add_subcommand("next", "Print the next fire instants of a schedule expression");
  next->add_option("--dialect", opt->dialect, "cron (default) or quartz")
      ->check(CLI::IsMember({"cron", "quartz"}));
  next->add_option("--tz", opt->tz, "IANA time zone to evaluate in (default UTC)");
  next->add_option("--from", opt->from,
                   "Start instant, RFC 3339 (default now); fires are strictly after it");
  next->add_option("-n,--count", opt->count, "How many fires to print")
      ->check(CLI::Range(1, 100000));
  next->add_option("--name", opt->name, "Job name that H values hash from");
  next->add_option("--jitter", opt->jitter,
                   "The job's jitter: each fire also shows the latest its shards may start");
  next->add_option("expr", opt->expr,
                   "The schedule, e.g. '15 2 * * *', '@daily', '@every 90s', '@delay 10m', "
                   "'@at 2026-12-01 03:00'")
      ->required();
  next->footer(
      "Examples:\n"
      "  jobctl schedule next --tz America/New_York --from 2024-03-09T00:00:00Z -- '30 2 * * *'\n"
      "  jobctl schedule next --dialect quartz -n 3 -- '0 0 12 ? * MON-FRI'\n"
      "  jobctl schedule next --name nightly-backup -- 'H H(1-4) * * *'\n"
      "  jobctl schedule next --tz Europe/Paris -- '@at 2026-12-24 18:00'\n"
      "  jobctl schedule next --jitter 5m -n 2 -- '@hourly'\n"
      "Schedule forms: cron (5 fields, or quartz's 6-7), @hourly/@daily/..., @every D (fixed\n"
      "rate on a grid), @delay D (the next run starts D after the previous one ended; the\n"
      "first D after the job is applied: only that first fire is printed), @at T (once; T is\n"
      "RFC 3339, or a local time 'YYYY-MM-DD HH:MM' in --tz).\n"
      "Output: one ISO-8601 instant per line, in the schedule's zone with its offset; with\n"
      "--jitter, each line also gives the latest instant the fire's shards may start.\n"
      "Exit status: 0 ok, 65 the expression is invalid, 64 bad usage.");
  next->callback([opt, &g, rc] { *rc = RunScheduleNext(*opt, g); });
}

}  // namespace jobctl::cli
