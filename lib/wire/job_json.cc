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
  return j;
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

}  // namespace jobctl::wire
