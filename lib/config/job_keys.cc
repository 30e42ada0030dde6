#include "config/job_keys.h"

#include <algorithm>
#include <climits>
#include <map>
#include <sstream>
#include <utility>

#include "config/toml_values.h"
#include "model/env_rules.h"
#include "model/schedule.h"
#include "model/zone.h"

namespace jobctl::jobs_toml {
namespace {

// The value as it would read in TOML, so "got ..." shows what the user wrote: strings in
// double quotes, numbers and dates as toml++ prints them (hex stays hex).
std::string RenderInner(const Node& n) {
  if (auto s = n.value_exact<std::string>()) return Quote(*s);
  if (n.is_table()) return "{...}";
  if (const toml::array* a = n.as_array()) {
    std::string out = "[";
    for (size_t i = 0; i < a->size(); ++i) out += (i ? ", " : "") + RenderInner(*a->get(i));
    return out + "]";
  }
  std::ostringstream os;
  n.visit([&os](const auto& v) { os << v; });
  return os.str();
}

}  // namespace

std::string Render(const Node& n) {
  if (n.is_table()) return "a table";
  std::string out = RenderInner(n);
  constexpr size_t kMax = 60;
  if (out.size() <= kMax) return out;
  size_t cut = kMax - 3;
  // Cut on a UTF-8 character boundary.
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
  return out.substr(0, cut) + "...";
}

// ---- Reading one value -------------------------------------------------------------------

std::optional<std::string> ReadString(const Node& n, Key k, Scope& s) {
  if (auto v = n.value_exact<std::string>()) return v;
  s.Fail(n, k, "expected a string, got " + Render(n));
  return std::nullopt;
}

std::optional<std::string> ReadNonEmptyString(const Node& n, Key k, Scope& s) {
  auto v = n.value_exact<std::string>();
  if (v && !v->empty()) return v;
  s.Fail(n, k, "expected a non-empty string, got " + Render(n));
  return std::nullopt;
}

std::optional<int> ReadInt(const Node& n, Key k, Scope& s, int min, int max) {
  const toml::value<int64_t>* v = n.as_integer();
  if (v != nullptr && v->get() >= min && v->get() <= max) return static_cast<int>(v->get());
  std::string expected = max == INT_MAX ? fmt::format("an integer >= {}", min)
                                        : fmt::format("an integer from {} to {}", min, max);
  if (v != nullptr && v->get() > max && max == INT_MAX) expected = "an integer <= 2147483647";
  s.Fail(n, k, fmt::format("expected {}, got {}", expected, Render(n)));
  return std::nullopt;
}

std::optional<bool> ReadBool(const Node& n, Key k, Scope& s) {
  if (const toml::value<bool>* v = n.as_boolean()) return v->get();
  s.Fail(n, k, "expected true or false, got " + Render(n));
  return std::nullopt;
}

std::optional<Millis> ReadDuration(const Node& n, Key k, Scope& s, Zero zero) {
  auto text = n.value_exact<std::string>();
  if (!text) {
    s.Fail(n, k, "expected a duration like \"90s\" or \"1h30m\", got " + Render(n));
    return std::nullopt;
  }
  Result<Millis> d = ParseDuration(*text);
  if (!d.ok()) {
    s.Fail(n, k, d.status().message());
    return std::nullopt;
  }
  if (zero == Zero::kRejected && d->count() == 0) {
    s.Fail(n, k, "expected a duration > 0, got " + Render(n));
    return std::nullopt;
  }
  return *d;
}

namespace {

// ---- Reading composite values ------------------------------------------------------------

std::optional<std::vector<std::string>> ReadCommand(const Node& n, Key k, Scope& s) {
  const toml::array* a = n.as_array();
  if (a == nullptr || a->empty()) {
    s.Fail(n, k,
           "expected a non-empty array of strings like [\"/usr/bin/env\", \"true\"], got " +
               Render(n));
    return std::nullopt;
  }
  std::vector<std::string> argv;
  int before = s.errors();
  for (size_t i = 0; i < a->size(); ++i) {
    std::string key = fmt::format("{}[{}]", k, i);
    std::optional<std::string> arg = ReadString(*a->get(i), key, s);
    if (arg && i == 0 && arg->empty()) s.Fail(*a->get(i), key, "expected a program, got \"\"");
    if (arg) argv.push_back(std::move(*arg));
  }
  if (s.errors() != before) return std::nullopt;
  return argv;
}

// "role=web" or "role!=db". Keys and values are plain words: no spaces, no '=' in keys.
std::optional<LabelSelector> ParseSelector(std::string_view text) {
  size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) return std::nullopt;
  bool negated = text[eq - 1] == '!';
  LabelSelector sel{std::string(text.substr(0, negated ? eq - 1 : eq)),
                    std::string(text.substr(eq + 1)), negated};
  auto plain = [](std::string_view w) {
    return !w.empty() && w.find_first_of(" \t=!") == std::string_view::npos;
  };
  if (!plain(sel.key) || !plain(sel.value)) return std::nullopt;
  return sel;
}

std::optional<std::vector<LabelSelector>> ReadSelectors(const Node& n, Key k, Scope& s) {
  const toml::array* a = n.as_array();
  if (a == nullptr) {
    s.Fail(n, k, "expected an array like [\"role=web\", \"env!=test\"], got " + Render(n));
    return std::nullopt;
  }
  std::vector<LabelSelector> out;
  int before = s.errors();
  for (size_t i = 0; i < a->size(); ++i) {
    const Node& e = *a->get(i);
    auto text = e.value_exact<std::string>();
    std::optional<LabelSelector> sel = text ? ParseSelector(*text) : std::nullopt;
    if (!sel) {
      s.Fail(e, fmt::format("{}[{}]", k, i),
             "expected \"key=value\" or \"key!=value\", got " + Render(e));
      continue;
    }
    out.push_back(std::move(*sel));
  }
  if (s.errors() != before) return std::nullopt;
  return out;
}

// The tables of variables (env, secrets, params): calls `each(name, value, path)` for every
// key that `problem` accepts and reports the others; `example` shows the table's form.
template <typename Each>
void ForEachVariable(const Node& n, Key k, Scope& s, std::string_view example,
                     std::string (*problem)(std::string_view), Each each) {
  const toml::table* t = n.as_table();
  if (t == nullptr) {
    s.Fail(n, k, fmt::format("expected a table like {}, got {}", example, Render(n)));
    return;
  }
  for (auto&& [name, value] : *t) {
    std::string_view var = name.str();
    std::string path = fmt::format("{}.{}", k, var);
    if (std::string why = problem(var); !why.empty()) {
      s.Fail(name.source(), IsEnvName(var) ? path : std::string(k), why);
      continue;
    }
    each(var, value, path);
  }
}

// Merges into `env` key by key, so a job's env adds to and overrides the defaults' env.
void ReadEnv(const Node& n, Key k, Scope& s, std::map<std::string, std::string>& env) {
  ForEachVariable(n, k, s, "{ NAME = \"value\" }", EnvNameProblem,
                  [&](std::string_view var, const Node& value, const std::string& path) {
                    if (auto v = ReadString(value, path, s)) {
                      env.insert_or_assign(std::string(var), std::move(*v));
                    }
                  });
}

// secrets = { DB_PASSWORD = "db-password" }: each variable's value is read by the agent from
// that file in its secrets_dir, so the value is never in the job file or the coordinator.
void ReadSecrets(const Node& n, Key k, Scope& s, std::map<std::string, std::string>& secrets) {
  ForEachVariable(
      n, k, s, "{ DB_PASSWORD = \"db-password\" }", EnvNameProblem,
      [&](std::string_view var, const Node& value, const std::string& path) {
        std::optional<std::string> file = ReadString(value, path, s);
        if (file && !IsSecretFileName(*file)) {
          s.Fail(value, path,
                 "expected a file name in the agent's secrets_dir ([A-Za-z0-9][A-Za-z0-9._-]*, "
                 "no path), got " +
                     Render(value));
        } else if (file) {
          secrets.insert_or_assign(std::string(var), std::move(*file));
        }
      });
}

// The keys of a parameter written as a table.
// clang-format off
constexpr KeySpec<Param, Scope> kParamKeys[] = {
    {"default", [](const Node& n, Key k, Scope& s, Param& p) {
       p.default_value = ReadString(n, k, s); }},
    {"required", [](const Node& n, Key k, Scope& s, Param& p) {
       p.required = ReadBool(n, k, s).value_or(false); }},
    {"max_length", [](const Node& n, Key k, Scope& s, Param& p) {
       p.max_length = ReadInt(n, k, s, 1, kMaxParamLength).value_or(p.max_length); }},
};
// clang-format on

// One parameter: a default (a string), or a table of default, required and max_length.
std::optional<Param> ReadParam(const Node& value, const std::string& path, Scope& s) {
  Param p;
  if (value.is_string()) {
    p.default_value = ReadString(value, path, s);
  } else if (const toml::table* spec = value.as_table()) {
    ReadKeys(*spec, kParamKeys, s, p, {.parent = path});
  } else {
    s.Fail(value, path,
           "expected a default value (a string) or a table like { required = true, "
           "max_length = 64 }, got " +
               Render(value));
    return std::nullopt;
  }
  if (p.required && p.default_value) {
    s.Fail(value, path, "a required parameter has no default");
  } else if (p.default_value && p.default_value->size() > static_cast<size_t>(p.max_length)) {
    s.Fail(value, path, fmt::format("the default is longer than max_length {}", p.max_length));
  }
  return p;
}

// params = { VERSION = "latest", REGION = { required = true, max_length = 16 } }: the names a
// trigger may set.
void ReadParams(const Node& n, Key k, Scope& s, std::map<std::string, Param>& params) {
  if (const toml::table* t = n.as_table(); t != nullptr && t->size() > kMaxParams) {
    s.Fail(n, k, fmt::format("at most {} parameters, got {}", kMaxParams, t->size()));
    return;
  }
  ForEachVariable(n, k, s, "{ VERSION = \"latest\" }", ParamNameProblem,
                  [&](std::string_view var, const Node& value, const std::string& path) {
                    if (std::optional<Param> p = ReadParam(value, path, s)) {
                      params.insert_or_assign(std::string(var), std::move(*p));
                    }
                  });
}

// The tables below keep one key to two lines so that they read as a table.
// clang-format off
constexpr JobKey kRetryKeys[] = {
    {"max", [](const Node& n, Key k, Scope& s, Draft& d) {
       Set(d.job.retry.max, ReadInt(n, k, s, 0, INT_MAX)); }},
    {"backoff", [](const Node& n, Key k, Scope& s, Draft& d) {
       Set(d.job.retry.backoff, ReadEnum(n, k, s, ParseBackoff, kBackoffs)); }},
    {"initial", [](const Node& n, Key k, Scope& s, Draft& d) {
       Set(d.job.retry.initial, ReadDuration(n, k, s, Zero::kAllowed)); }},
    {"max_delay", [](const Node& n, Key k, Scope& s, Draft& d) {
       Set(d.job.retry.max_delay, ReadDuration(n, k, s, Zero::kAllowed)); }},
};
// clang-format on

void ApplyRetry(const Node& n, Key k, Scope& s, Draft& d) {
  if (const toml::table* t = n.as_table()) return ApplyKeys(*t, kRetryKeys, k, s, d);
  s.Fail(n, k, "expected a table like { max = 3, initial = \"10s\" }, got " + Render(n));
}

void ApplyTimezone(const Node& n, Key k, Scope& s, Draft& d) {
  d.timezone_ok = false;
  std::optional<std::string> name = ReadString(n, k, s);
  if (!name) return;
  Result<const Zone*> zone = LookupZone(*name);
  if (!zone.ok()) return s.Fail(n, k, zone.status().message());
  d.timezone_ok = true;
  d.job.timezone = std::move(*name);
}

// An instant: a TOML offset date-time (anchor = 2026-01-01T00:00:30Z) or the same as a string.
void ApplyAnchor(const Node& n, Key k, Scope& s, Draft& d) {
  std::string text;
  if (const toml::value<toml::date_time>* v = n.as_date_time()) {
    const toml::date_time& dt = v->get();
    if (!dt.offset) {
      return s.Fail(n, k, "expected an instant with an offset (Z or +HH:MM), got " + Render(n));
    }
    int off = dt.offset->minutes;
    text = fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}{}{:02}:{:02}", dt.date.year,
                       dt.date.month, dt.date.day, dt.time.hour, dt.time.minute, dt.time.second,
                       dt.time.nanosecond / 1'000'000, off < 0 ? '-' : '+', std::abs(off) / 60,
                       std::abs(off) % 60);
  } else if (auto str = n.value_exact<std::string>()) {
    text = *str;
  } else {
    return s.Fail(n, k, "expected an instant like 2026-01-01T00:00:30Z, got " + Render(n));
  }
  Result<WallTime> at = ParseInstant(text);
  if (!at.ok()) return s.Fail(n, k, at.status().message());
  d.job.anchor_ms = ToUnixMs(*at);
}

void ApplyCwd(const Node& n, Key k, Scope& s, Draft& d) {
  std::optional<std::string> dir = ReadString(n, k, s);
  if (dir && !dir->starts_with('/')) {
    s.Fail(n, k, "expected an absolute path, got " + Render(n));
  } else {
    Set(d.job.cwd, std::move(dir));
  }
}

// A user name the agent looks up ("" is the agent's own user), never a path or a command.
void ApplyRunAs(const Node& n, Key k, Scope& s, Draft& d) {
  std::optional<std::string> user = ReadString(n, k, s);
  if (user && !user->empty() && !IsValidUserName(*user)) {
    return s.Fail(n, k,
                  fmt::format("expected a user name ([A-Za-z_][A-Za-z0-9._-]*, optionally "
                              "ending in $, at most {} characters), got {}",
                              kMaxUserNameLength, Render(n)));
  }
  Set(d.job.run_as, std::move(user));
}

// notify = ["ops-mail", "mailto:root@example.com"]: where the job's notifications go.
void ApplyNotify(const Node& n, Key k, Scope& s, Draft& d) {
  const toml::array* a = n.as_array();
  if (a == nullptr || a->size() > kMaxNotifyTargets) {
    return s.Fail(n, k,
                  fmt::format("expected an array of at most {} channel names or \"mailto:\" "
                              "addresses like [\"ops-mail\"], got {}",
                              kMaxNotifyTargets, Render(n)));
  }
  std::vector<std::string> to;
  int before = s.errors();
  for (size_t i = 0; i < a->size(); ++i) {
    std::string key = fmt::format("{}[{}]", k, i);
    std::optional<std::string> target = ReadString(*a->get(i), key, s);
    if (!target) continue;
    if (std::string why = NotifyTargetProblem(*target); !why.empty()) {
      s.Fail(*a->get(i), key, fmt::format("{}, got {}", why, Render(*a->get(i))));
    } else if (std::find(to.begin(), to.end(), *target) == to.end()) {
      to.push_back(std::move(*target));
    }
  }
  if (s.errors() == before) d.job.notify.to = std::move(to);
}

// notify_on = ["failed", "recovered"]: which events notify.
void ApplyNotifyOn(const Node& n, Key k, Scope& s, Draft& d) {
  const toml::array* a = n.as_array();
  if (a == nullptr) {
    return s.Fail(n, k, "expected an array like [\"failed\", \"recovered\"], got " + Render(n));
  }
  NotifyEvents on = 0;
  int before = s.errors();
  for (size_t i = 0; i < a->size(); ++i) {
    std::string key = fmt::format("{}[{}]", k, i);
    std::span<const std::string_view> names(NotifyEventNames());
    if (std::optional<NotifyEvent> e = ReadEnum(*a->get(i), key, s, ParseNotifyEvent, names)) {
      on |= NotifyBit(*e);
    }
  }
  if (s.errors() == before) d.job.notify.on = on;
}

void ApplyRepeatAfter(const Node& n, Key k, Scope& s, Draft& d) {
  std::optional<Millis> v = ReadDuration(n, k, s, Zero::kAllowed);
  if (v && *v > std::chrono::hours(24 * 30)) {
    s.Fail(n, k, "expected at most \"30d\" (\"0s\": every time), got " + Render(n));
    v.reset();
  }
  Set(d.job.notify.repeat_after, v);
}

// The dead-man's switch (model/health.h): from a minute to a year and a day.
void ApplyExpectSuccessWithin(const Node& n, Key k, Scope& s, Draft& d) {
  std::optional<Millis> v = ReadDuration(n, k, s, Zero::kRejected);
  if (v && (*v < kMinExpectSuccessWithin || *v > kMaxExpectSuccessWithin)) {
    return s.Fail(n, k, "expected a duration from \"1m\" to \"366d\", got " + Render(n));
  }
  if (v) d.job.expect_success_within = *v;
}

// Output kept per run: a size > 0 ("10MiB"); the coordinator's own log_cap applies too.
void ApplyLogCap(const Node& n, Key k, Scope& s, Draft& d) {
  std::optional<int64_t> v = ParseSize(n);
  if (!v || *v <= 0) {
    return s.Fail(n, k, "expected a size > 0 like \"10MiB\" (at most 1TiB), got " + Render(n));
  }
  d.job.log_cap_bytes = *v;
}

// Resource limits (model/job.h), enforced by agentd in the shard's cgroup.
void ApplyMemoryMax(const Node& n, Key k, Scope& s, Draft& d) {
  std::optional<int64_t> v = ParseSize(n);
  if (!v || *v < kMinMemoryMax || *v > kMaxMemoryMax) {
    return s.Fail(n, k,
                  "expected a size from \"1MiB\" to \"1024GiB\" like \"512MiB\", got " + Render(n));
  }
  d.job.limits.memory_max_bytes = *v;
}

// "150%": a share of one CPU, so "150%" is one and a half CPUs.
void ApplyCpuMax(const Node& n, Key k, Scope& s, Draft& d) {
  std::optional<std::string> text = n.value<std::string>();
  int64_t v = 0;
  bool ok =
      text && text->size() >= 2 && text->size() <= 8 && text->back() == '%' && (*text)[0] != '0';
  for (size_t i = 0; ok && i + 1 < text->size(); ++i) {
    char c = (*text)[i];
    ok = c >= '0' && c <= '9';
    v = v * 10 + (c - '0');
  }
  if (!ok || v < 1 || v > kMaxCpuPercent) {
    return s.Fail(n, k,
                  "expected a share of one CPU from \"1%\" to \"100000%\" like \"150%\" (one "
                  "and a half CPUs), got " +
                      Render(n));
  }
  d.job.limits.cpu_max_percent = v;
}

void ApplyPidsMax(const Node& n, Key k, Scope& s, Draft& d) {
  if (std::optional<int> v = ReadInt(n, k, s, 1, static_cast<int>(kMaxPids))) {
    d.job.limits.pids_max = *v;
  }
}

void ApplyIoWeight(const Node& n, Key k, Scope& s, Draft& d) {
  if (std::optional<int> v = ReadInt(n, k, s, 1, static_cast<int>(kMaxIoWeight))) {
    d.job.limits.io_weight = *v;
  }
}

// clang-format off
constexpr JobKey kJobKeys[] = {
    {"name", nullptr, KeyPlace::kNotInDefaults},
    {"schedule", [](const Node& n, Key k, Scope& s, Draft& d) {
       Set(d.job.schedule, ReadNonEmptyString(n, k, s)); }, KeyPlace::kNotInDefaults},
    {"anchor", ApplyAnchor, KeyPlace::kNotInDefaults},
    {"command", [](const Node& n, Key k, Scope& s, Draft& d) {
       Set(d.job.command, ReadCommand(n, k, s)); }, KeyPlace::kNotInDefaults},
    {"shell", [](const Node& n, Key k, Scope& s, Draft& d) {
       Set(d.job.shell, ReadNonEmptyString(n, k, s)); }, KeyPlace::kNotInDefaults},
    {"description", [](const Node& n, Key k, Scope& s, Draft& d) {
       Set(d.job.description, ReadString(n, k, s)); }, KeyPlace::kNotInDefaults},
    {"dialect", [](const Node& n, Key k, Scope& s, Draft& d) {
       std::optional<Dialect> v = ReadEnum(n, k, s, ParseDialect, kDialects);
       d.dialect_ok = v.has_value();
       Set(d.job.dialect, v); }},
    {"timezone", ApplyTimezone},
    {"on", [](const Node& n, Key k, Scope& s, Draft& d) {
       Set(d.job.on, ReadSelectors(n, k, s)); }},
    {"shards", [](const Node& n, Key k, Scope& s, Draft& d) {
       Set(d.job.shards, ReadInt(n, k, s, 1, 10000)); }},
    {"route", [](const Node& n, Key k, Scope& s, Draft& d) {
       Set(d.job.route, ReadEnum(n, k, s, ParseRoute, kRoutes)); }},
    {"overlap", [](const Node& n, Key k, Scope& s, Draft& d) {
       Set(d.job.overlap, ReadEnum(n, k, s, ParseOverlap, kOverlaps)); }},
    {"misfire", [](const Node& n, Key k, Scope& s, Draft& d) {
       Set(d.job.misfire, ReadEnum(n, k, s, ParseMisfire, kMisfires)); }},
    {"misfire_cap", [](const Node& n, Key k, Scope& s, Draft& d) {
       Set(d.job.misfire_cap, ReadInt(n, k, s, 1, INT_MAX)); }},
    {"on_lost", [](const Node& n, Key k, Scope& s, Draft& d) {
       Set(d.job.on_lost, ReadEnum(n, k, s, ParseOnLost, kOnLosts)); }},
    {"retry", ApplyRetry},
    {"timeout", [](const Node& n, Key k, Scope& s, Draft& d) {
       if (auto v = ReadDuration(n, k, s, Zero::kRejected)) d.job.timeout = *v; }},
    {"jitter", [](const Node& n, Key k, Scope& s, Draft& d) {
       std::optional<Millis> v = ReadDuration(n, k, s, Zero::kAllowed);
       if (v && *v > kMaxJitter) {
         s.Fail(n, k, "expected at most \"24h\", got " + Render(n));
         v.reset();
       }
       Set(d.job.jitter, v); }},
    {"expect_success_within", ApplyExpectSuccessWithin},
    {"kill_grace", [](const Node& n, Key k, Scope& s, Draft& d) {
       Set(d.job.kill_grace, ReadDuration(n, k, s, Zero::kAllowed)); }},
    {"log_cap", ApplyLogCap},
    {"run_as", ApplyRunAs},
    {"cwd", ApplyCwd},
    {"memory_max", ApplyMemoryMax},
    {"cpu_max", ApplyCpuMax},
    {"pids_max", ApplyPidsMax},
    {"io_weight", ApplyIoWeight},
    {"env", [](const Node& n, Key k, Scope& s, Draft& d) {
       ReadEnv(n, k, s, d.job.env); }},
    {"params", [](const Node& n, Key k, Scope& s, Draft& d) {
       ReadParams(n, k, s, d.job.params); }},
    {"secrets", [](const Node& n, Key k, Scope& s, Draft& d) {
       ReadSecrets(n, k, s, d.job.secrets); }},
    {"enabled", [](const Node& n, Key k, Scope& s, Draft& d) {
       Set(d.job.enabled, ReadBool(n, k, s)); }},
    {"notify", ApplyNotify},
    {"notify_on", ApplyNotifyOn},
    {"repeat_after", ApplyRepeatAfter},
};
// clang-format on

}  // namespace

std::span<const JobKey> JobKeys() { return kJobKeys; }

void CheckCommand(const toml::table& t, Scope& s, std::string_view what) {
  const Node* command = t.get("command");
  const Node* shell = t.get("shell");
  if (command == nullptr && shell == nullptr) {
    s.Fail(t.source(), "",
           fmt::format("missing \"command\" or \"shell\" ({} has exactly one)", what));
    return;
  }
  if (command == nullptr || shell == nullptr) return;
  auto line = [](const Node* n) { return n->source().begin.line; };
  bool shell_later = line(shell) > line(command) ||
                     (line(shell) == line(command) &&
                      shell->source().begin.column > command->source().begin.column);
  const Node* later = shell_later ? shell : command;
  s.Fail(*later, shell_later ? "shell" : "command",
         fmt::format("{} is also set (line {}); {} has exactly one of command and shell",
                     shell_later ? "command" : "shell", line(shell_later ? command : shell), what));
}

void CheckSchedule(const toml::table& t, const Draft& d, Scope& s) {
  if (d.job.schedule.empty() || !d.dialect_ok || !d.timezone_ok) return;
  Result<Schedule> schedule = Schedule::Parse(ScheduleSpecOf(d.job));
  if (schedule.ok()) {
    if (const Node* anchor = t.get("anchor"); anchor && !schedule->is_every()) {
      s.Fail(*anchor, "anchor",
             "only applies to @every schedules; \"" + d.job.schedule + "\" fires on the calendar");
    }
    return;
  }
  // Schedule's messages already start with `schedule "EXPR"`; don't say "schedule" twice.
  const std::string& message = schedule.status().message();
  s.Fail(*t.get("schedule"), message.starts_with("schedule ") ? "" : "schedule", message);
}

void ApplyKeys(const toml::table& t, std::span<const JobKey> specs, Key parent, Scope& s,
               Draft& d) {
  ReadKeys(t, specs, s, d,
           {.parent = parent,
            .defaults_note = s.in_defaults() ? "set it in each [[job]], not in [defaults]" : ""});
}

}  // namespace jobctl::jobs_toml
