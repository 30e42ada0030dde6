#include "wire/job_json.h"

#include "wire/json_number.h"

namespace jobctl::wire {

using nlohmann::json;

std::string SelectorText(const LabelSelector& s) {
  return s.key + (s.negated ? "!=" : "=") + s.value;
}

json JobToJson(const Job& job) {
  json params = json::object();
  for (const auto& [name, p] : job.params) {
    params[name] = {{"default", p.default_value ? json(*p.default_value) : json(nullptr)},
                    {"required", p.required},
                    {"max_length", p.max_length}};
  }
  json on = json::array();
  for (const LabelSelector& s : job.on) on.push_back(SelectorText(s));
  json j = {
      {"name", job.name},
      {"schedule", job.schedule},
      {"anchor_ms", job.anchor_ms},
      {"dialect", DialectName(job.dialect)},
      {"timezone", job.timezone},
      {"command", job.command},
      {"shell", job.shell},
      {"on", on},
      {"shards", job.shards},
      {"route", RouteName(job.route)},
      {"overlap", OverlapName(job.overlap)},
      {"misfire", MisfireName(job.misfire)},
      {"misfire_cap", job.misfire_cap},
      {"on_lost", OnLostName(job.on_lost)},
      {"retry",
       {{"max", job.retry.max},
        {"backoff", BackoffName(job.retry.backoff)},
        {"initial_ms", job.retry.initial.count()},
        {"max_delay_ms", job.retry.max_delay.count()}}},
      {"jitter_ms", job.jitter.count()},
      {"timeout_ms", job.timeout ? json(job.timeout->count()) : json(nullptr)},
      {"expect_success_within_ms",
       job.expect_success_within ? json(job.expect_success_within->count()) : json(nullptr)},
      {"kill_grace_ms", job.kill_grace.count()},
      {"log_cap_bytes", job.log_cap_bytes ? json(job.log_cap_bytes) : json(nullptr)},
      {"run_as", job.run_as},
      {"cwd", job.cwd},
      {"env", job.env},
      {"params", params},
      {"secrets", job.secrets},
      {"enabled", job.enabled},
      {"description", job.description},
      {"notify", job.notify.to},
      {"notify_on", NotifyEventList(job.notify.on)},
      {"repeat_after_ms", job.notify.repeat_after.count()},
  };
  LimitsToJson(job.limits, j);
  return j;
}

void LimitsToJson(const ResourceLimits& limits, json& j) {
  auto opt = [](const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); };
  j["memory_max_bytes"] = opt(limits.memory_max_bytes);
  j["cpu_max_percent"] = opt(limits.cpu_max_percent);
  j["pids_max"] = opt(limits.pids_max);
  j["io_weight"] = opt(limits.io_weight);
}

Status LimitsFromJson(const json& j, std::string_view what, ResourceLimits* out) {
  struct Field {
    const char* key;
    int64_t min, max;
    std::optional<int64_t>* value;
  };
  for (Field f : {Field{"memory_max_bytes", kMinMemoryMax, kMaxMemoryMax, &out->memory_max_bytes},
                  Field{"cpu_max_percent", 1, kMaxCpuPercent, &out->cpu_max_percent},
                  Field{"pids_max", 1, kMaxPids, &out->pids_max},
                  Field{"io_weight", 1, kMaxIoWeight, &out->io_weight}}) {
    auto it = j.find(f.key);
    if (it == j.end() || it->is_null()) continue;
    if (!it->is_number_integer() || !JsonNumberFits<int64_t>(*it) || it->get<int64_t>() < f.min ||
        it->get<int64_t>() > f.max) {
      return Status::InvalidArgument(std::string(what) + "." + f.key +
                                     ": expected an integer from " + std::to_string(f.min) +
                                     " to " + std::to_string(f.max));
    }
    *f.value = it->get<int64_t>();
  }
  return Status::Ok();
}

namespace {

template <typename T>
Status Get(const json& j, const char* key, T* out) {
  auto it = j.find(key);
  if (it == j.end()) return Status::Ok();
  if (!JsonNumberFits<T>(*it)) {
    return Status::InvalidArgument(std::string("job.") + key + ": out of range");
  }
  try {
    *out = it->get<T>();
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("job.") + key + ": " + e.what());
  }
  return Status::Ok();
}

template <typename E>
Status GetEnum(const json& j, const char* key, std::optional<E> (*parse)(std::string_view),
               E* out) {
  std::string text;
  if (Status s = Get(j, key, &text); !s.ok()) return s;
  if (text.empty()) return Status::Ok();
  std::optional<E> v = parse(text);
  if (!v)
    return Status::InvalidArgument(std::string("job.") + key + ": unknown value \"" + text + "\"");
  *out = *v;
  return Status::Ok();
}

// "params": {"NAME": {"default": "x" | null, "required": bool, "max_length": n}}; absent in
// specs stored before parameters existed.
Status GetParams(const json& j, std::map<std::string, Param>* out) {
  auto it = j.find("params");
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_object()) return Status::InvalidArgument("job.params: expected an object");
  for (auto p = it->begin(); p != it->end(); ++p) {
    if (!p.value().is_object())
      return Status::InvalidArgument("job.params." + p.key() + ": expected an object");
    Param param;
    const json& v = p.value();
    if (v.contains("default") && !v["default"].is_null()) {
      std::string d;
      if (Status s = Get(v, "default", &d); !s.ok()) return s;
      param.default_value = std::move(d);
    }
    if (Status s = Get(v, "required", &param.required); !s.ok()) return s;
    if (Status s = Get(v, "max_length", &param.max_length); !s.ok()) return s;
    if (!ParamNameProblem(p.key()).empty() || param.max_length < 1 ||
        param.max_length > kMaxParamLength) {
      return Status::InvalidArgument("job.params." + p.key() + ": not a valid parameter");
    }
    (*out)[p.key()] = std::move(param);
  }
  return Status::Ok();
}

Status GetSelectors(const json& j, std::vector<LabelSelector>* out) {
  std::vector<std::string> texts;
  if (Status s = Get(j, "on", &texts); !s.ok()) return s;
  for (const std::string& t : texts) {
    size_t ne = t.find("!=");
    size_t eq = t.find('=');
    if (ne != std::string::npos) {
      out->push_back({t.substr(0, ne), t.substr(ne + 2), true});
    } else if (eq != std::string::npos) {
      out->push_back({t.substr(0, eq), t.substr(eq + 1), false});
    } else {
      return Status::InvalidArgument("job.on: expected k=v or k!=v, got \"" + t + "\"");
    }
  }
  return Status::Ok();
}

// notify, notify_on and repeat_after_ms; a spec stored before them keeps the defaults.
Status GetNotify(const json& j, NotifyPolicy* out) {
  std::vector<std::string> on;
  int64_t repeat_after = out->repeat_after.count();
  Status s = Get(j, "notify", &out->to);
  if (s.ok()) s = Get(j, "repeat_after_ms", &repeat_after);
  if (s.ok() && j.contains("notify_on")) s = Get(j, "notify_on", &on);
  if (!s.ok()) return s;
  if (out->to.size() > kMaxNotifyTargets) return Status::InvalidArgument("job.notify: too many");
  for (const std::string& t : out->to) {
    if (!NotifyTargetProblem(t).empty()) return Status::InvalidArgument("job.notify: bad target");
  }
  if (repeat_after < 0) return Status::InvalidArgument("job.repeat_after_ms: out of range");
  out->repeat_after = Millis(repeat_after);
  if (j.contains("notify_on")) {
    out->on = 0;
    for (const std::string& name : on) {
      std::optional<NotifyEvent> e = ParseNotifyEvent(name);
      if (!e) return Status::InvalidArgument("job.notify_on: unknown event \"" + name + "\"");
      out->on |= NotifyBit(*e);
    }
  }
  return Status::Ok();
}

}  // namespace

Result<Job> JobFromJson(const json& j) {
  if (!j.is_object()) return Status::InvalidArgument("job: expected an object");
  Job job;
  std::string dialect = "cron";
  int64_t initial = job.retry.initial.count(), max_delay = job.retry.max_delay.count();
  int64_t kill_grace = job.kill_grace.count(), jitter = 0;
  std::optional<int64_t> timeout;
  const json* retry = j.contains("retry") ? &j["retry"] : nullptr;
  Status s = Get(j, "name", &job.name);
  if (s.ok()) s = Get(j, "schedule", &job.schedule);
  if (s.ok()) s = Get(j, "anchor_ms", &job.anchor_ms);
  if (s.ok()) s = Get(j, "dialect", &dialect);
  if (s.ok()) s = Get(j, "timezone", &job.timezone);
  if (s.ok()) s = Get(j, "command", &job.command);
  if (s.ok()) s = Get(j, "shell", &job.shell);
  if (s.ok()) s = GetSelectors(j, &job.on);
  if (s.ok()) s = Get(j, "shards", &job.shards);
  if (s.ok()) s = GetEnum(j, "route", ParseRoute, &job.route);
  if (s.ok()) s = GetEnum(j, "overlap", ParseOverlap, &job.overlap);
  if (s.ok()) s = GetEnum(j, "misfire", ParseMisfire, &job.misfire);
  if (s.ok()) s = Get(j, "misfire_cap", &job.misfire_cap);
  if (s.ok()) s = GetEnum(j, "on_lost", ParseOnLost, &job.on_lost);
  if (s.ok() && retry != nullptr) {
    s = Get(*retry, "max", &job.retry.max);
    if (s.ok()) s = GetEnum(*retry, "backoff", ParseBackoff, &job.retry.backoff);
    if (s.ok()) s = Get(*retry, "initial_ms", &initial);
    if (s.ok()) s = Get(*retry, "max_delay_ms", &max_delay);
  }
  if (s.ok() && j.contains("timeout_ms") && !j["timeout_ms"].is_null()) {
    int64_t t = 0;
    s = Get(j, "timeout_ms", &t);
    timeout = t;
  }
  if (s.ok() && j.contains("expect_success_within_ms") &&
      !j["expect_success_within_ms"].is_null()) {
    int64_t w = 0;
    s = Get(j, "expect_success_within_ms", &w);
    if (s.ok() && (Millis(w) < kMinExpectSuccessWithin || Millis(w) > kMaxExpectSuccessWithin)) {
      s = Status::InvalidArgument("job.expect_success_within_ms: out of range");
    }
    job.expect_success_within = Millis(w);
  }
  if (s.ok()) s = Get(j, "kill_grace_ms", &kill_grace);
  if (s.ok() && j.contains("log_cap_bytes") && !j["log_cap_bytes"].is_null()) {
    s = Get(j, "log_cap_bytes", &job.log_cap_bytes);
    if (s.ok() && job.log_cap_bytes <= 0)
      s = Status::InvalidArgument("job.log_cap_bytes: out of range");
  }
  if (s.ok()) s = Get(j, "jitter_ms", &jitter);
  if (s.ok() && (jitter < 0 || Millis(jitter) > kMaxJitter)) {
    s = Status::InvalidArgument("job.jitter_ms: out of range");
  }
  if (s.ok()) s = Get(j, "run_as", &job.run_as);
  if (s.ok()) s = Get(j, "cwd", &job.cwd);
  if (s.ok()) s = Get(j, "env", &job.env);
  if (s.ok()) s = GetParams(j, &job.params);
  if (s.ok()) s = Get(j, "secrets", &job.secrets);
  if (s.ok()) s = Get(j, "enabled", &job.enabled);
  if (s.ok()) s = Get(j, "description", &job.description);
  if (s.ok()) s = GetNotify(j, &job.notify);
  if (s.ok()) s = LimitsFromJson(j, "job", &job.limits);
  if (!s.ok()) return s;
  std::optional<Dialect> d = ParseDialect(dialect);
  if (!d) return Status::InvalidArgument("job.dialect: unknown value \"" + dialect + "\"");
  job.dialect = *d;
  job.retry.initial = Millis(initial);
  job.retry.max_delay = Millis(max_delay);
  job.kill_grace = Millis(kill_grace);
  job.jitter = Millis(jitter);
  if (timeout) job.timeout = Millis(*timeout);
  return job;
}

std::vector<std::string> ChangedFields(const Job& a, const Job& b) {
  json ja = JobToJson(a), jb = JobToJson(b);
  std::vector<std::string> out;
  for (auto it = ja.begin(); it != ja.end(); ++it) {
    if (jb[it.key()] != it.value()) out.push_back(it.key());
  }
  return out;
}

namespace {

// The job fields a flow has, so that a flow's JSON reads as a job's.
Job TimingOf(const Flow& f) {
  Job job;
  job.name = f.name;
  job.schedule = f.schedule;
  job.anchor_ms = f.anchor_ms;
  job.dialect = f.dialect;
  job.timezone = f.timezone;
  job.overlap = f.overlap;
  job.misfire = f.misfire;
  job.misfire_cap = f.misfire_cap;
  job.enabled = f.enabled;
  job.description = f.description;
  job.expect_success_within = f.expect_success_within;
  job.notify = f.notify;
  return job;
}

constexpr const char* kFlowFields[] = {"name",
                                       "schedule",
                                       "anchor_ms",
                                       "dialect",
                                       "timezone",
                                       "overlap",
                                       "misfire",
                                       "misfire_cap",
                                       "enabled",
                                       "description",
                                       "expect_success_within_ms",
                                       "notify",
                                       "notify_on",
                                       "repeat_after_ms"};

std::string StepLabel(const std::string& name) { return "step \"" + name + "\""; }

}  // namespace

json FlowToJson(const Flow& flow) {
  json job = JobToJson(TimingOf(flow));
  json j = json::object();
  for (const char* field : kFlowFields) j[field] = job[field];
  json steps = json::array();
  for (const FlowStep& step : flow.steps) {
    steps.push_back({{"name", step.name},
                     {"job", step.job},
                     {"own", step.own},
                     {"needs", step.needs},
                     {"when", StepWhenName(step.when)}});
  }
  j["steps"] = steps;
  return j;
}

Result<Flow> FlowFromJson(const json& j) {
  if (!j.is_object()) return Status::InvalidArgument("flow: expected an object");
  json timing = json::object();
  for (const char* field : kFlowFields) {
    if (j.contains(field)) timing[field] = j[field];
  }
  Result<Job> job = JobFromJson(timing);
  if (!job.ok()) return job.status();
  Flow flow;
  flow.name = job->name;
  flow.schedule = job->schedule;
  flow.anchor_ms = job->anchor_ms;
  flow.dialect = job->dialect;
  flow.timezone = job->timezone;
  flow.overlap = job->overlap;
  flow.misfire = job->misfire;
  flow.misfire_cap = job->misfire_cap;
  flow.enabled = job->enabled;
  flow.description = job->description;
  flow.expect_success_within = job->expect_success_within;
  flow.notify = job->notify;
  auto steps = j.find("steps");
  if (steps == j.end() || !steps->is_array() || steps->empty() ||
      steps->size() > static_cast<size_t>(kMaxFlowSteps)) {
    return Status::InvalidArgument("flow.steps: expected 1 to " + std::to_string(kMaxFlowSteps) +
                                   " steps");
  }
  for (const json& e : *steps) {
    FlowStep step;
    std::string when = "success";
    Status s =
        e.is_object() ? Status::Ok() : Status::InvalidArgument("flow.steps: expected objects");
    if (s.ok()) s = Get(e, "name", &step.name);
    if (s.ok()) s = Get(e, "job", &step.job);
    if (s.ok()) s = Get(e, "own", &step.own);
    if (s.ok()) s = Get(e, "needs", &step.needs);
    if (s.ok()) s = Get(e, "when", &when);
    if (!s.ok()) return s;
    std::optional<StepWhen> w = ParseStepWhen(when);
    bool job_ok =
        step.own ? step.job == StepJobName(flow.name, step.name) : IsValidJobName(step.job);
    if (!IsValidStepName(step.name) || !w || !job_ok ||
        step.needs.size() > static_cast<size_t>(kMaxFlowSteps)) {
      return Status::InvalidArgument("flow.steps: not a valid step");
    }
    for (const std::string& need : step.needs) {
      if (!IsValidStepName(need)) return Status::InvalidArgument("flow.steps: not a valid need");
    }
    for (const FlowStep& other : flow.steps) {
      if (StepEnvName(other.name) == StepEnvName(step.name)) {
        return Status::InvalidArgument("flow.steps: two steps of one name");
      }
    }
    step.when = *w;
    flow.steps.push_back(std::move(step));
  }
  // What the job file reader refuses: a flow AdvanceFlow could not run.
  if (!IsValidJobName(flow.name) || flow.schedule.empty()) {
    return Status::InvalidArgument("flow: not a valid name or schedule");
  }
  if (!CheckFlowGraph(GraphOf(flow)).empty()) {
    return Status::InvalidArgument("flow.steps: not a graph a flow may have");
  }
  return flow;
}

std::vector<std::string> FlowChangedFields(const Flow& a, const Flow& b) {
  json ja = FlowToJson(a), jb = FlowToJson(b);
  std::vector<std::string> out;
  for (const char* field : kFlowFields) {
    if (ja[field] != jb[field]) out.push_back(field);
  }
  auto find = [](const Flow& f, const std::string& name) -> const FlowStep* {
    for (const FlowStep& s : f.steps) {
      if (s.name == name) return &s;
    }
    return nullptr;
  };
  for (const FlowStep& before : a.steps) {
    const FlowStep* after = find(b, before.name);
    if (after == nullptr) {
      out.push_back(StepLabel(before.name) + " (removed)");
      continue;
    }
    if (after->needs != before.needs) out.push_back(StepLabel(before.name) + ".needs");
    if (after->when != before.when) out.push_back(StepLabel(before.name) + ".when");
    if (after->job != before.job) out.push_back(StepLabel(before.name) + ".job");
  }
  for (const FlowStep& after : b.steps) {
    if (find(a, after.name) == nullptr) out.push_back(StepLabel(after.name) + " (added)");
  }
  return out;
}

}  // namespace jobctl::wire
