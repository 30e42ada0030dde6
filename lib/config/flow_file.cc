#include "config/flow_file.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace jobctl::jobs_toml {
namespace {

// The job keys a [[flow]] takes: those that say when it fires and whom it notifies.
constexpr std::string_view kFlowKeys[] = {
    "schedule",    "anchor",    "dialect",     "timezone",    "misfire",
    "misfire_cap", "overlap",   "enabled",     "description", "expect_success_within",
    "notify",      "notify_on", "repeat_after"};
// The job keys a step refuses: the flow says when its steps start.
constexpr std::string_view kFlowOnlyKeys[] = {"schedule", "anchor",  "dialect",
                                              "timezone", "misfire", "misfire_cap",
                                              "overlap",  "enabled", "expect_success_within"};
// Job keys flows do not take yet, on the flow or its steps.
constexpr std::string_view kNotYet[] = {"jitter", "params"};
constexpr std::string_view kWhens[] = {"success", "failure", "always"};

template <size_t N>
bool In(const std::string_view (&list)[N], std::string_view name) {
  return std::find(std::begin(list), std::end(list), name) != std::end(list);
}

// Readers that refuse a job key where it does not belong, saying where it does.
void RefuseStepKey(const Node& n, Key k, Scope& s, Draft&) {
  s.Fail(n, k, "belongs in a [[flow.step]]: a flow's steps say what runs and how");
}
void RefuseTimeout(const Node& n, Key k, Scope& s, Draft&) {
  s.Fail(n, k, "not supported on a [[flow]] yet; set it on its steps");
}
void RefuseNotYet(const Node& n, Key k, Scope& s, Draft&) {
  s.Fail(n, k, "not supported in flows yet");
}
void RefuseFlowKey(const Node& n, Key k, Scope& s, Draft&) {
  s.Fail(n, k, "a step starts when its needs are met; set it on the [[flow]]");
}
void RefuseWithJob(const Node& n, Key k, Scope& s, Draft&) {
  s.Fail(n, k, "a step that names a job takes no job keys: set it on that [[job]]");
}

struct KeyTables {
  std::vector<JobKey> flow;        // a [[flow]]
  std::vector<JobKey> own_step;    // a [[flow.step]] with command or shell
  std::vector<JobKey> named_step;  // a [[flow.step]] with job = "NAME"
};

const KeyTables& Tables() {
  static const KeyTables tables = [] {
    KeyTables t;
    constexpr std::string_view kStepKeys[] = {"name", "needs", "when", "job"};
    for (std::string_view name : kStepKeys) {
      t.own_step.push_back({name, nullptr});
      t.named_step.push_back({name, nullptr});
    }
    for (const JobKey& key : JobKeys()) {
      if (key.name == "name") {
        t.flow.push_back(key);
        continue;
      }
      t.flow.push_back({key.name, In(kFlowKeys, key.name) ? key.read
                                  : key.name == "timeout" ? RefuseTimeout
                                  : In(kNotYet, key.name) ? RefuseNotYet
                                                          : RefuseStepKey});
      JobKey::Read step = In(kFlowOnlyKeys, key.name) ? RefuseFlowKey
                          : In(kNotYet, key.name)     ? RefuseNotYet
                                                      : key.read;
      t.own_step.push_back({key.name, step});
      // command and shell beside job have a message of their own.
      bool command = key.name == "command" || key.name == "shell";
      t.named_step.push_back({key.name, command            ? nullptr
                                        : step == key.read ? RefuseWithJob
                                                           : step});
    }
    t.flow.push_back({"step", nullptr});
    return t;
  }();
  return tables;
}

int Line(const Node& n) { return static_cast<int>(n.source().begin.line); }

// The table's name when it is a string that `valid` accepts, else nullopt after reporting why
// (to a scope that names the table by its place).
std::optional<std::string> ReadName(const toml::table& t, Scope& unnamed,
                                    bool (*valid)(std::string_view), size_t max_length) {
  const Node* n = t.get("name");
  std::optional<std::string> name = n ? n->value_exact<std::string>() : std::nullopt;
  if (n == nullptr) {
    unnamed.Fail(t.source(), "", "missing required key \"name\"");
  } else if (!name) {
    unnamed.Fail(*n, "name", "expected a string, got " + Render(*n));
  } else if (!valid(*name)) {
    unnamed.Fail(*n, "name",
                 fmt::format("expected [a-z0-9][a-z0-9._-]*, at most {} characters, got {}",
                             max_length, Render(*n)));
    return std::nullopt;
  }
  return name;
}

}  // namespace

void FlowReader::Read(const toml::table& t, size_t index) {
  FlowRead f;
  f.table = &t;
  f.root = fmt::format("flow[{}]", index);
  Scope unnamed(reporter_, Subject{}, f.root);
  const Node* n = t.get("name");
  std::optional<std::string> name = ReadName(t, unnamed, IsValidJobName, 128);
  f.errors += unnamed.errors();
  f.flow.name = name.value_or("");
  Scope scope(reporter_, Subject{.flow = f.flow.name}, name ? "" : f.root);
  if (name) {
    auto [it, inserted] = names_.emplace(*name, FileName{Line(*n), JobKind::kFlow});
    if (!inserted) {
      scope.Fail(*n, "",
                 it->second.kind == JobKind::kFlow
                     ? fmt::format("duplicate name (first defined on line {})", it->second.line)
                     : fmt::format("a [[job]] is also named {} (line {}); jobs and flows share "
                                   "one namespace",
                                   Quote(*name), it->second.line));
    }
  }
  Draft d = defaults_;
  d.job.name = f.flow.name;
  ApplyKeys(t, Tables().flow, "", scope, d);
  if (!t.contains("schedule")) scope.Fail(t.source(), "", "missing required key \"schedule\"");
  CheckSchedule(t, d, scope);
  f.flow.schedule = d.job.schedule;
  f.flow.anchor_ms = d.job.anchor_ms;
  f.flow.dialect = d.job.dialect;
  f.flow.timezone = d.job.timezone;
  f.flow.overlap = d.job.overlap;
  f.flow.misfire = d.job.misfire;
  f.flow.misfire_cap = d.job.misfire_cap;
  f.flow.enabled = d.job.enabled;
  f.flow.description = d.job.description;
  f.flow.expect_success_within = d.job.expect_success_within;
  f.flow.notify = d.job.notify;
  f.errors += scope.errors();
  ReadSteps(t, f);
  flows_.push_back(std::move(f));
}

void FlowReader::ReadSteps(const toml::table& t, FlowRead& f) {
  Scope scope(reporter_, Subject{.flow = f.flow.name}, f.flow.name.empty() ? f.root : "");
  const Node* n = t.get("step");
  const toml::array* a = n ? n->as_array() : nullptr;
  std::string expected = fmt::format("1 to {} [[flow.step]] tables", kMaxFlowSteps);
  if (n == nullptr) {
    scope.Fail(t.source(), "", "missing [[flow.step]] (a flow has " + expected + ")");
  } else if (n->is_table()) {
    scope.Fail(*n, "step", "write [[flow.step]] (an array of tables), not [flow.step]");
  } else if (a == nullptr || a->empty()) {
    scope.Fail(*n, "step", "expected " + expected + ", got " + Render(*n));
  }
  for (size_t i = 0; a != nullptr && i < a->size(); ++i) {
    const Node& e = *a->get(i);
    if (i == static_cast<size_t>(kMaxFlowSteps)) {
      scope.Fail(e, fmt::format("step[{}]", i),
                 fmt::format("a flow has at most {} steps", kMaxFlowSteps));
      break;
    }
    if (const toml::table* st = e.as_table()) {
      ReadStep(*st, i, f);
    } else {
      scope.Fail(e, fmt::format("step[{}]", i), "expected a table, got " + Render(e));
    }
  }
  f.errors += scope.errors();
  bool graph_ok = !f.steps.empty();
  for (const StepRead& s : f.steps) {
    f.flow.steps.push_back(s.step);
    graph_ok = graph_ok && !s.step.name.empty() && s.graph_ok;
  }
  if (graph_ok) CheckGraph(f);
}

Scope FlowReader::StepScope(const FlowRead& f, const std::string& step, size_t index) {
  if (!f.flow.name.empty() && !step.empty()) {
    return Scope(reporter_, Subject{.flow = f.flow.name, .step = step}, "");
  }
  if (!f.flow.name.empty()) {
    return Scope(reporter_, Subject{.flow = f.flow.name}, fmt::format("step[{}]", index));
  }
  return Scope(reporter_, Subject{}, fmt::format("{}.step[{}]", f.root, index));
}

void FlowReader::ReadStep(const toml::table& t, size_t index, FlowRead& f) {
  StepRead s;
  s.table = &t;
  s.index = index;
  Scope unnamed = StepScope(f, "", index);
  std::optional<std::string> name = ReadName(t, unnamed, IsValidStepName, kMaxStepNameLength);
  f.errors += unnamed.errors();
  s.step.name = name.value_or("");
  Scope scope = StepScope(f, s.step.name, index);

  if (const Node* needs = t.get("needs")) {
    const toml::array* a = needs->as_array();
    if (a == nullptr) {
      scope.Fail(*needs, "needs",
                 "expected an array of step names like [\"extract\"], got " + Render(*needs));
      s.graph_ok = false;
    }
    for (size_t j = 0; a != nullptr && j < a->size(); ++j) {
      if (auto need = a->get(j)->value_exact<std::string>(); need && IsValidStepName(*need)) {
        s.step.needs.push_back(std::move(*need));
      } else {
        scope.Fail(*a->get(j), fmt::format("needs[{}]", j),
                   "expected a step name, got " + Render(*a->get(j)));
        s.graph_ok = false;
      }
    }
  }
  if (const Node* when = t.get("when")) {
    std::optional<StepWhen> w = ReadEnum(*when, "when", scope, ParseStepWhen, kWhens);
    if (w) s.step.when = *w;
    s.graph_ok = s.graph_ok && w.has_value();
  }

  if (const Node* job = t.get("job")) {
    std::optional<std::string> v = job->value_exact<std::string>();
    if (v && IsValidJobName(*v)) {
      s.step.job = *v;
      named_jobs_.insert(std::move(*v));
    } else {
      scope.Fail(*job, "job", "expected the name of a [[job]] of this file, got " + Render(*job));
    }
    for (std::string_view other : {"command", "shell"}) {
      if (const Node* c = t.get(other)) {
        scope.Fail(*c, other,
                   fmt::format("job is also set (line {}); a step has exactly one of job, "
                               "command and shell",
                               Line(*job)));
      }
    }
    Draft ignored;
    ApplyKeys(t, Tables().named_step, "", scope, ignored);
  } else {
    s.step.own = true;
    s.step.job = StepJobName(f.flow.name, s.step.name);
    // The step's own job starts from [defaults], less what only a flow or a job run on a
    // schedule has, and it notifies only when it says so.
    Draft d = defaults_;
    const Job unset;
    d.job.name = s.step.job;
    d.job.schedule = unset.schedule;
    d.job.anchor_ms = unset.anchor_ms;
    d.job.dialect = unset.dialect;
    d.job.timezone = unset.timezone;
    d.job.overlap = unset.overlap;
    d.job.misfire = unset.misfire;
    d.job.misfire_cap = unset.misfire_cap;
    d.job.jitter = unset.jitter;
    d.job.params = unset.params;
    d.job.enabled = unset.enabled;
    d.job.expect_success_within = unset.expect_success_within;
    d.job.notify = unset.notify;
    ApplyKeys(t, Tables().own_step, "", scope, d);
    if (!t.contains("command") && !t.contains("shell")) {
      scope.Fail(t.source(), "",
                 "missing \"job\", \"command\" or \"shell\" (a step has exactly one)");
    } else {
      CheckCommand(t, scope, "a step");
    }
    s.own = std::move(d.job);
  }
  f.errors += scope.errors();
  f.steps.push_back(std::move(s));
}

void FlowReader::CheckGraph(FlowRead& f) {
  std::vector<std::string_view> step_names;
  for (const StepRead& s : f.steps) step_names.push_back(s.step.name);
  for (const FlowGraphProblem& p : CheckFlowGraph(GraphOf(f.flow))) {
    const StepRead& s = f.steps[static_cast<size_t>(p.step)];
    const toml::table& t = *s.table;
    Scope scope = StepScope(f, s.step.name, s.index);
    const Node* needs = t.get("needs");
    const Node* need = p.need >= 0 && needs != nullptr && needs->as_array() != nullptr
                           ? needs->as_array()->get(static_cast<size_t>(p.need))
                           : nullptr;
    using Kind = FlowGraphProblem::Kind;
    switch (p.kind) {
      case Kind::kDuplicateStep: {
        auto first = std::find_if(f.steps.begin(), f.steps.end(),
                                  [&](const StepRead& o) { return o.step.name == s.step.name; });
        scope.Fail(*t.get("name"), "",
                   fmt::format("duplicate step name (first defined on line {})",
                               Line(*first->table->get("name"))));
        break;
      }
      case Kind::kUnknownNeed:
      case Kind::kSelfNeed:
      case Kind::kRepeatedNeed: {
        std::string hint;
        if (p.kind == Kind::kUnknownNeed && reporter_.TakeSuggestion()) {
          hint = DidYouMean(s.step.needs[static_cast<size_t>(p.need)], step_names);
        }
        scope.Fail(need ? need->source() : t.source(), fmt::format("needs[{}]", p.need),
                   p.message + hint);
        break;
      }
      case Kind::kCycle:
        scope.Fail(needs ? needs->source() : t.source(), "needs", p.message);
        break;
      case Kind::kNeverRuns: {
        const Node* at = t.get("when") ? t.get("when") : needs;
        scope.Fail(at ? at->source() : t.source(), "", p.message);
        break;
      }
    }
    f.errors += scope.errors();
  }
  // Two steps whose names read the same in their dependents' environment.
  for (size_t j = 0; j < f.steps.size(); ++j) {
    for (size_t i = 0; i < j; ++i) {
      const FlowStep& a = f.steps[i].step;
      const FlowStep& b = f.steps[j].step;
      if (a.name == b.name || StepEnvName(a.name) != StepEnvName(b.name)) continue;
      Scope scope = StepScope(f, b.name, f.steps[j].index);
      scope.Fail(
          *f.steps[j].table->get("name"), "",
          fmt::format("reads the same as step {} (line {}) in the environment "
                      "(JOB_NEED_{}_RUN_ID); rename one",
                      Quote(a.name), Line(*f.steps[i].table->get("name")), StepEnvName(b.name)));
      ++f.errors;
      break;
    }
  }
}

void FlowReader::Finish(JobFile& out, std::vector<JobFileResult::Place>& places) {
  std::vector<std::string_view> job_names;
  for (const auto& [name, entry] : names_) {
    if (entry.kind == JobKind::kJob) job_names.push_back(name);
  }
  for (FlowRead& f : flows_) {
    for (const StepRead& s : f.steps) {
      if (s.step.own || s.step.job.empty()) continue;
      auto it = names_.find(s.step.job);
      if (it != names_.end() && it->second.kind == JobKind::kJob) continue;
      Scope scope = StepScope(f, s.step.name, s.index);
      std::string hint = reporter_.TakeSuggestion() ? DidYouMean(s.step.job, job_names) : "";
      scope.Fail(*s.table->get("job"), "job",
                 it != names_.end()
                     ? fmt::format("{} is a [[flow]]; a step runs a [[job]] (flows do not nest)",
                                   Quote(s.step.job))
                     : fmt::format("{} is not a [[job]] of this file{}", Quote(s.step.job), hint));
      ++f.errors;
    }
    if (f.errors != 0) continue;
    for (StepRead& s : f.steps) {
      if (s.step.own) out.step_jobs.push_back(std::move(s.own));
    }
    const toml::source_position at = f.table->get("name")->source().begin;
    places.push_back({static_cast<int>(at.line), static_cast<int>(at.column)});
    out.flows.push_back(std::move(f.flow));
  }
}

}  // namespace jobctl::jobs_toml
