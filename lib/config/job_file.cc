// Reading jobs.toml. toml++ gives a tree whose tables are sorted by key, not kept in file
// order, so the reader walks it in any order and sorts the diagnostics by position at the
// end. Every key is checked by a small function from a key table (config/job_keys.h); a
// [defaults] table fills a Job that each [[job]] then starts from, so "a job value overrides
// the default" falls out of applying the job's keys second. Checks that need the whole job
// (required keys, command xor shell, the schedule, duplicate names) run after its keys.
#include "config/job_file.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <map>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "config/flow_file.h"
#include "config/job_keys.h"
#include "config/key_table.h"
#include "model/schedule.h"

namespace jobctl {
namespace jobs_toml {
namespace {

// ---- The file ----------------------------------------------------------------------------

class JobFileReader {
 public:
  JobFileReader(std::string_view filename, JobFileResult* result)
      : reporter_(filename, &result->errors), result_(result) {}

  void Read(const toml::table& root) {
    CheckTopLevel(root);
    Draft defaults;
    if (const toml::table* t = root["defaults"].as_table()) {
      Scope scope(reporter_, "", "defaults");
      ApplyKeys(*t, JobKeys(), "", scope, defaults);
    }
    const toml::array* jobs = root["job"].as_array();
    for (size_t i = 0; jobs != nullptr && i < jobs->size(); ++i) {
      const Node& node = *jobs->get(i);
      if (const toml::table* t = node.as_table()) {
        ReadJob(*t, defaults);
      } else {
        reporter_.Report(node.source(), "",
                         fmt::format("job[{}]: expected a table, got {}", i, Render(node)));
      }
    }
    FlowReader flows(reporter_, defaults, names_);
    const toml::array* flow_tables = root["flow"].as_array();
    for (size_t i = 0; flow_tables != nullptr && i < flow_tables->size(); ++i) {
      const Node& node = *flow_tables->get(i);
      if (const toml::table* t = node.as_table()) {
        flows.Read(*t, i);
      } else {
        reporter_.Report(node.source(), "",
                         fmt::format("flow[{}]: expected a table, got {}", i, Render(node)));
      }
    }
    flows.Finish(result_->file, result_->flow_places);
    // Only a job that runs as a step may leave out its schedule. A step of a flow with errors
    // still counts: the flow's errors are reported, not this one besides.
    std::set<std::string, std::less<>> refused;
    for (const auto& [name, t] : unscheduled_) {
      if (flows.named_jobs().contains(name)) continue;
      Scope(reporter_, name, "")
          .Fail(t->source(), "",
                "missing required key \"schedule\" (only a job a [[flow.step]] names may leave "
                "it out)");
      refused.insert(name);
    }
    std::erase_if(result_->file.jobs, [&](const Job& j) { return refused.contains(j.name); });
  }

 private:
  void CheckTopLevel(const toml::table& root);
  std::string ReadName(const toml::table& t);
  void ReadJob(const toml::table& t, const Draft& defaults);

  Reporter reporter_;
  JobFileResult* result_;
  FileNames names_;  // of jobs and flows, with the line of each name
  // Jobs without a schedule, which only a step may name, with their tables.
  std::vector<std::pair<std::string, const toml::table*>> unscheduled_;
};

void JobFileReader::CheckTopLevel(const toml::table& root) {
  static constexpr std::string_view kTables[] = {"defaults", "job", "flow"};
  for (auto&& [key, value] : root) {
    std::string_view name = key.str();
    if (name == "defaults" && !value.is_table()) {
      reporter_.Report(value.source(), "", "defaults: expected a table, got " + Render(value));
    } else if (name == "job" && value.is_table()) {
      reporter_.Report(value.source(), "", "job: write [[job]] (an array of tables), not [job]");
    } else if (name == "job" && !value.is_array()) {
      reporter_.Report(value.source(), "", "job: expected [[job]] tables, got " + Render(value));
    } else if (name == "flow" && value.is_table() && value.as_table()->contains("step")) {
      reporter_.Report(value.source(), "", "flow: [[flow.step]] needs a [[flow]] before it");
    } else if (name == "flow" && value.is_table()) {
      reporter_.Report(value.source(), "", "flow: write [[flow]] (an array of tables), not [flow]");
    } else if (name == "flow" && !value.is_array()) {
      reporter_.Report(value.source(), "", "flow: expected [[flow]] tables, got " + Render(value));
    } else if (name != "defaults" && name != "job" && name != "flow") {
      bool job_key = FindKey(JobKeys(), name) != nullptr;
      std::string hint =
          job_key ? " (it belongs in [defaults] or a [[job]])" : DidYouMean(name, kTables);
      if (hint.empty()) hint = " (expected only [defaults], [[job]] and [[flow]])";
      reporter_.Report(
          key.source(), "",
          fmt::format("unknown {} {}{}", value.is_table() ? "table" : "key", Quote(name), hint));
    }
  }
}

// The job's name if it is valid, else "" after reporting why. Duplicates are reported at
// the second job and keep their name, so the message says which job it is.
std::string JobFileReader::ReadName(const toml::table& t) {
  const Node* n = t.get("name");
  if (n == nullptr) {
    reporter_.Report(t.source(), "", "missing required key \"name\"");
    return "";
  }
  auto name = n->value_exact<std::string>();
  if (!name) {
    reporter_.Report(n->source(), "", "name: expected a string, got " + Render(*n));
    return "";
  }
  if (!IsValidJobName(*name)) {
    reporter_.Report(n->source(), "",
                     fmt::format("name {}: expected [a-z0-9][a-z0-9._-]*, at most 128 characters",
                                 Quote(*name)));
    return "";
  }
  return *name;
}

void JobFileReader::ReadJob(const toml::table& t, const Draft& defaults) {
  std::string name = ReadName(t);
  Scope scope(reporter_, name, "");
  bool duplicate = false;
  if (!name.empty()) {
    int line = static_cast<int>(t.get("name")->source().begin.line);
    auto [it, inserted] = names_.emplace(name, FileName{line, JobKind::kJob});
    duplicate = !inserted;
    if (!inserted) {
      scope.Fail(*t.get("name"), "",
                 fmt::format("duplicate name (first defined on line {})", it->second.line));
    }
  }
  Draft d = defaults;
  d.job.name = name;
  ApplyKeys(t, JobKeys(), "", scope, d);
  if (!t.contains("schedule")) {
    // A step names the first job of a name, never a duplicate.
    if (name.empty() || duplicate) {
      scope.Fail(t.source(), "", "missing required key \"schedule\"");
    } else {
      unscheduled_.emplace_back(name, &t);
    }
    // What only a schedule uses does nothing without one.
    for (std::string_view key : {"anchor", "jitter", "misfire", "misfire_cap"}) {
      if (const Node* v = t.get(key)) {
        scope.Fail(*v, key, "only applies with a schedule; this job has none (it runs as a step)");
      }
    }
  }
  CheckCommand(t, scope);
  CheckSchedule(t, d, scope);
  if (scope.errors() == 0 && !name.empty()) result_->file.jobs.push_back(std::move(d.job));
}

bool Before(const Diagnostic& a, const Diagnostic& b) {
  return std::tie(a.line, a.column) < std::tie(b.line, b.column);
}

}  // namespace
}  // namespace jobs_toml

std::string Diagnostic::ToString() const {
  std::string out = file;
  if (line > 0) out += fmt::format(":{}:{}", line, column);
  if (!out.empty()) out += ": ";
  if (!job.empty()) out += fmt::format("job {}: ", Quote(job));
  if (!flow.empty()) out += fmt::format("flow {}: ", Quote(flow));
  if (!step.empty()) out += fmt::format("step {}: ", Quote(step));
  return out + message;
}

JobFileResult ParseJobFile(std::string_view text, std::string_view filename) {
  JobFileResult result;
  toml::table root;
  // toml++ reports syntax errors only by throwing (STYLE.md §5): the flat config files catch
  // them in ParseTomlFile, and a job file here, to give them the form of its diagnostics.
  try {
    root = toml::parse(text, std::string(filename));
  } catch (const toml::parse_error& e) {
    jobs_toml::Reporter(filename, &result.errors)
        .Report(e.source(), "", std::string(e.description()));
    return result;
  }
  jobs_toml::JobFileReader(filename, &result).Read(root);
  std::stable_sort(result.errors.begin(), result.errors.end(), jobs_toml::Before);
  return result;
}

}  // namespace jobctl
