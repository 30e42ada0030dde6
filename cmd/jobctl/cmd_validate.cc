// jobctl validate: checks a job file with the same code the coordinator applies it with,
// and prints every problem at once.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "config/job_file.h"
#include "exit_codes.h"
#include "model/schedule.h"
#include "model/time_format.h"
#include "output.h"

namespace jobctl::cli {
namespace {

struct ValidateOptions {
  std::string file;
  int next = 0;
};

// The next `count` fires of a schedule, as ISO-8601 local times in its zone.
std::vector<std::string> NextFires(const ScheduleSpec& spec, int count, WallTime from) {
  std::vector<std::string> out;
  Result<Schedule> s = Schedule::Parse(spec);
  if (!s.ok()) return out;
  for (WallTime t = from; static_cast<int>(out.size()) < count;) {
    std::optional<WallTime> n = s->Next(t);
    if (!n) break;
    out.push_back(*FormatInZone(*n, s->zone().name()));
    t = *n;
  }
  return out;
}

// One line of the --next table: a job or a flow.
struct Fires {
  std::string name, schedule;
  std::vector<std::string> next;
};

std::vector<Fires> FiresOf(const JobFile& file, int count, WallTime now) {
  std::vector<Fires> rows;
  for (const Job& job : file.jobs) {
    if (job.schedule.empty()) {
      rows.push_back({job.name, "-", {"none (runs as a step)"}});
    } else {
      rows.push_back({job.name, job.schedule, NextFires(ScheduleSpecOf(job), count, now)});
    }
  }
  for (const Flow& flow : file.flows) {
    rows.push_back(
        {flow.name + " (flow)", flow.schedule, NextFires(ScheduleSpecOf(flow), count, now)});
  }
  return rows;
}

void PrintNextTable(const JobFile& file, int count, WallTime now) {
  std::vector<Fires> rows = FiresOf(file, count, now);
  size_t name_w = 4, sched_w = 8;
  for (const Fires& row : rows) {
    name_w = std::max(name_w, row.name.size());
    sched_w = std::max(sched_w, row.schedule.size());
  }
  std::cout << '\n'
            << std::left << std::setw(static_cast<int>(name_w) + 2) << "NAME"
            << std::setw(static_cast<int>(sched_w) + 2) << "SCHEDULE"
            << "NEXT FIRES\n";
  for (const Fires& row : rows) {
    std::cout << std::setw(static_cast<int>(name_w) + 2) << row.name
              << std::setw(static_cast<int>(sched_w) + 2) << row.schedule;
    std::string sep;
    for (const std::string& f : row.next) {
      std::cout << sep << f;
      sep = ", ";
    }
    std::cout << '\n';
  }
}

// "3 jobs", "3 jobs and 1 flow (5 steps)".
std::string Counted(const JobFile& file) {
  auto n = [](size_t count, const char* one, const char* many) {
    return std::to_string(count) + " " + (count == 1 ? one : many);
  };
  std::string out = n(file.jobs.size(), "job", "jobs");
  if (file.flows.empty()) return out;
  size_t steps = 0;
  for (const Flow& flow : file.flows) steps += flow.steps.size();
  return out + " and " + n(file.flows.size(), "flow", "flows") + " (" + n(steps, "step", "steps") +
         ")";
}

int RunValidate(const ValidateOptions& opt, const GlobalOptions& g) {
  const std::string& path = opt.file.empty() ? g.file : opt.file;
  Result<std::string> text = ReadFileText(path);
  if (!text.ok()) return Fail("validate", path, text.status(), kExitNoInput);
  JobFileResult result = ParseJobFile(*text, path == "-" ? "<stdin>" : path);
  if (g.format() == OutputFormat::kJson) {
    nlohmann::json errors = nlohmann::json::array();
    for (const Diagnostic& d : result.errors) {
      errors.push_back({{"file", d.file},
                        {"line", d.line},
                        {"column", d.column},
                        {"job", d.job},
                        {"flow", d.flow},
                        {"step", d.step},
                        {"message", d.message}});
    }
    WallTime now = SystemClock().Now();
    nlohmann::json jobs = nlohmann::json::array();
    for (const Job& job : result.file.jobs) {
      nlohmann::json j = {{"name", job.name}, {"schedule", job.schedule}};
      if (opt.next > 0) j["next_fires"] = NextFires(ScheduleSpecOf(job), opt.next, now);
      jobs.push_back(std::move(j));
    }
    nlohmann::json flows = nlohmann::json::array();
    for (const Flow& flow : result.file.flows) {
      nlohmann::json steps = nlohmann::json::array();
      for (const FlowStep& step : flow.steps) {
        steps.push_back({{"name", step.name},
                         {"job", step.job},
                         {"needs", step.needs},
                         {"when", StepWhenName(step.when)}});
      }
      nlohmann::json j = {{"name", flow.name}, {"schedule", flow.schedule}, {"steps", steps}};
      if (opt.next > 0) j["next_fires"] = NextFires(ScheduleSpecOf(flow), opt.next, now);
      flows.push_back(std::move(j));
    }
    nlohmann::json out = {
        {"file", path}, {"ok", result.ok()}, {"jobs", jobs}, {"flows", flows}, {"errors", errors}};
    std::cout << out.dump(2) << '\n';
    return result.ok() ? kExitOk : kExitDataErr;
  }
  if (result.ok()) {
    std::cout << path << ": " << Counted(result.file) << " OK\n";
    if (opt.next > 0) PrintNextTable(result.file, opt.next, SystemClock().Now());
    return kExitOk;
  }
  for (const Diagnostic& d : result.errors) std::cerr << Shown(d.ToString(), STDERR_FILENO) << '\n';
  std::cerr << "jobctl: validate " << path << ": " << result.errors.size()
            << (result.errors.size() == 1 ? " error" : " errors") << '\n';
  return kExitDataErr;
}

}  // namespace

void RegisterValidate(CLI::App& app, GlobalOptions& g, int* rc) {
  auto opt = std::make_shared<ValidateOptions>();
  auto* sub = app.add_subcommand("validate", "Check a job file and report every problem");
  sub->add_option("file", opt->file,
                  "Job file (default: --file, $JOBCTL_FILE or ./jobs.toml; - = stdin)");
  sub->add_option("--next", opt->next, "Also show each job's and flow's next N fire times")
      ->check(CLI::Range(0, 1000));
  sub->footer(
      "Examples:\n"
      "  jobctl validate                 # ./jobs.toml\n"
      "  jobctl validate /etc/jobctl/jobs.toml -o json\n"
      "  jobctl validate --next 3       # and when each job fires next\n"
      "Exit status: 0 valid, 65 the file has errors (all are listed), 66 cannot read it.");
  sub->callback([opt, &g, rc] { *rc = RunValidate(*opt, g); });
}

}  // namespace jobctl::cli
