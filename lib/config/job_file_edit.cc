// Edits are splices of the original text: AddJob appends, RemoveJob cuts one range of whole
// lines, so nothing else can change. Which range to cut comes from two sources that each
// do what they are good at: toml++ says on which line each job's name is (it knows every
// quoting and escape of TOML), and SplitTomlLines says which lines are headers and comments.
#include "config/job_file_edit.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "base/duration.h"
#include "config/toml_lines.h"

namespace jobctl {
namespace {

bool IsControl(char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }

std::string BasicString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (IsControl(c)) {
          out += fmt::format("\\u{:04X}", static_cast<unsigned>(static_cast<unsigned char>(c)));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string StringArray(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + TomlString(items[i]);
  return out + "]";
}

std::string Selector(const LabelSelector& s) { return s.key + (s.negated ? "!=" : "=") + s.value; }

std::string InlineTable(const std::vector<std::string>& keys) {
  std::string out = "{ ";
  for (size_t i = 0; i < keys.size(); ++i) out += (i ? ", " : "") + keys[i];
  return out + " }";
}

// { max = 3, backoff = "fixed" }: only the keys that differ from the default policy.
std::string RetryTable(const RetryPolicy& r) {
  const RetryPolicy d;
  std::vector<std::string> keys;
  if (r.max != d.max) keys.push_back(fmt::format("max = {}", r.max));
  if (r.backoff != d.backoff) keys.push_back("backoff = " + TomlString(BackoffName(r.backoff)));
  if (r.initial != d.initial) keys.push_back("initial = " + TomlString(FormatDuration(r.initial)));
  if (r.max_delay != d.max_delay) {
    keys.push_back("max_delay = " + TomlString(FormatDuration(r.max_delay)));
  }
  return InlineTable(keys);
}

std::string EnvTable(const std::map<std::string, std::string>& env) {
  std::vector<std::string> keys;
  // Variable names are [A-Za-z_][A-Za-z0-9_]* (ParseJobFile checks), so bare keys.
  for (const auto& [k, v] : env) keys.push_back(k + " = " + TomlString(v));
  return InlineTable(keys);
}

bool IsBlankLine(std::string_view line) {
  return std::all_of(line.begin(), line.end(),
                     [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; });
}

bool UsesCrlf(std::string_view text) {
  size_t nl = text.find('\n');
  return nl != std::string_view::npos && nl > 0 && text[nl - 1] == '\r';
}

struct NamedTable {
  std::string name;
  int line = 0;  // 0-based line of its `name` key
};

// The [[job]] or [[flow]] tables (`kind`) in `text` that have a string name, in file order.
// kInvalidArgument when it is not TOML.
Result<std::vector<NamedTable>> FindTables(std::string_view text, std::string_view kind) {
  toml::table root;
  // toml++ reports syntax errors only by throwing; lib/config catches them (STYLE.md §5).
  try {
    root = toml::parse(text);
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument(fmt::format("line {}, column {}: {}", e.source().begin.line,
                                               e.source().begin.column, e.description()));
  }
  std::vector<NamedTable> tables;
  const toml::array* array = root[kind].as_array();
  for (size_t i = 0; array != nullptr && i < array->size(); ++i) {
    const toml::table* t = array->get(i)->as_table();
    const toml::node* name = t != nullptr ? t->get("name") : nullptr;
    auto text_name = name != nullptr ? name->value_exact<std::string>() : std::nullopt;
    if (!text_name) continue;
    tables.push_back({*text_name, static_cast<int>(name->source().begin.line) - 1});
  }
  return tables;
}

// [[job]] or [[flow]].
bool IsHeaderOf(const TomlLine& l, std::string_view kind) {
  return l.kind == TomlLineKind::kHeader && l.array_header && l.header.size() == 1 &&
         l.header[0] == kind;
}

// A header that belongs to the table above it: [job.retry], [[flow.step]], [flow.step.env].
bool IsSubTableOf(const TomlLine& l, std::string_view kind) {
  return l.kind == TomlLineKind::kHeader && l.header.size() > 1 && l.header[0] == kind;
}

// RemoveJob and RemoveFlow: `kind` is "job" or "flow".
Result<std::string> RemoveTable(std::string_view text, std::string_view name,
                                std::string_view kind) {
  Result<std::vector<NamedTable>> tables = FindTables(text, kind);
  if (!tables.ok()) return tables.status();
  auto table = std::find_if(tables->begin(), tables->end(),
                            [name](const NamedTable& t) { return t.name == name; });
  if (table == tables->end()) return Status::NotFound(fmt::format("no {} \"{}\"", kind, name));

  const std::vector<TomlLine> lines = SplitTomlLines(text);
  // The header at or above the name, with nothing but the table's own lines between.
  std::optional<size_t> header;
  for (size_t i = static_cast<size_t>(table->line) + 1; i-- > 0;) {
    if (IsHeaderOf(lines[i], kind)) {
      header = i;
      break;
    }
    if (lines[i].kind == TomlLineKind::kHeader && !IsSubTableOf(lines[i], kind)) break;
  }
  if (!header) {
    return Status::InvalidArgument(fmt::format(
        "{} \"{}\" is not written as a [[{}]] table; remove it by hand", kind, name, kind));
  }
  size_t next = *header + 1;  // the next header that is not the table's own
  while (next < lines.size() &&
         (lines[next].kind != TomlLineKind::kHeader || IsSubTableOf(lines[next], kind))) {
    ++next;
  }
  size_t first = *header;
  while (first > 0 && lines[first - 1].kind == TomlLineKind::kComment) --first;
  size_t last = next;  // one past the last line removed
  if (next < lines.size()) {
    while (last - 1 > *header && lines[last - 1].kind == TomlLineKind::kComment) --last;
  } else {
    // The last table: the blank lines that separated it from what is above go with it.
    while (first > 0 && lines[first - 1].kind == TomlLineKind::kBlank) --first;
  }
  size_t cut_begin = lines[first].begin;
  size_t cut_end = last < lines.size() ? lines[last].begin : text.size();
  return std::string(text.substr(0, cut_begin)) + std::string(text.substr(cut_end));
}

}  // namespace

std::string TomlString(std::string_view s) {
  bool needs_escapes = s.find_first_of("\"\\") != std::string_view::npos;
  bool literal_ok =
      s.find('\'') == std::string_view::npos && std::none_of(s.begin(), s.end(), IsControl);
  if (needs_escapes && literal_ok) return "'" + std::string(s) + "'";
  return BasicString(s);
}

std::string RenderJob(const Job& job) {
  const Job d;
  std::string out = "[[job]]\n";
  auto key = [&out](std::string_view k, const std::string& value) {
    out += fmt::format("{} = {}\n", k, value);
  };
  key("name", TomlString(job.name));
  key("schedule", TomlString(job.schedule));
  if (job.dialect != d.dialect) key("dialect", TomlString(DialectName(job.dialect)));
  if (job.timezone != d.timezone) key("timezone", TomlString(job.timezone));
  if (!job.command.empty()) key("command", StringArray(job.command));
  if (!job.shell.empty()) key("shell", TomlString(job.shell));
  if (job.description != d.description) key("description", TomlString(job.description));
  if (job.enabled != d.enabled) key("enabled", job.enabled ? "true" : "false");
  if (!job.on.empty()) {
    std::vector<std::string> selectors;
    for (const LabelSelector& s : job.on) selectors.push_back(Selector(s));
    key("on", StringArray(selectors));
  }
  if (job.shards != d.shards) key("shards", std::to_string(job.shards));
  if (job.route != d.route) key("route", TomlString(RouteName(job.route)));
  if (job.overlap != d.overlap) key("overlap", TomlString(OverlapName(job.overlap)));
  if (job.misfire != d.misfire) key("misfire", TomlString(MisfireName(job.misfire)));
  if (job.misfire_cap != d.misfire_cap) key("misfire_cap", std::to_string(job.misfire_cap));
  if (job.on_lost != d.on_lost) key("on_lost", TomlString(OnLostName(job.on_lost)));
  if (job.retry != d.retry) key("retry", RetryTable(job.retry));
  if (job.jitter.count() > 0) key("jitter", TomlString(FormatDuration(job.jitter)));
  if (job.timeout) key("timeout", TomlString(FormatDuration(*job.timeout)));
  if (job.kill_grace != d.kill_grace) key("kill_grace", TomlString(FormatDuration(job.kill_grace)));
  if (job.log_cap_bytes > 0) key("log_cap", TomlString(FormatSize(job.log_cap_bytes)));
  if (!job.run_as.empty()) key("run_as", TomlString(job.run_as));
  if (!job.cwd.empty()) key("cwd", TomlString(job.cwd));
  if (job.limits.memory_max_bytes) {
    key("memory_max", TomlString(FormatSize(*job.limits.memory_max_bytes)));
  }
  if (job.limits.cpu_max_percent) {
    key("cpu_max", TomlString(std::to_string(*job.limits.cpu_max_percent) + "%"));
  }
  if (job.limits.pids_max) key("pids_max", std::to_string(*job.limits.pids_max));
  if (job.limits.io_weight) key("io_weight", std::to_string(*job.limits.io_weight));
  if (!job.env.empty()) key("env", EnvTable(job.env));
  if (!job.notify.to.empty()) key("notify", StringArray(job.notify.to));
  if (job.notify.on != d.notify.on) key("notify_on", StringArray(NotifyEventList(job.notify.on)));
  if (job.notify.repeat_after != d.notify.repeat_after) {
    key("repeat_after", TomlString(FormatDuration(job.notify.repeat_after)));
  }
  return out;
}

std::string AppendBlock(std::string_view text, std::string_view block) {
  const std::string_view eol = UsesCrlf(text) ? "\r\n" : "\n";
  std::string out(text);
  if (!out.empty()) {
    if (out.back() != '\n') out += eol;
    // The last line, without its line ending: is it already the blank line we want?
    size_t prev = out.size() >= 2 ? out.rfind('\n', out.size() - 2) : std::string::npos;
    size_t start = prev == std::string::npos ? 0 : prev + 1;
    if (!IsBlankLine(std::string_view(out).substr(start))) out += eol;
  }
  for (char c : block) {
    if (c == '\n') {
      out += eol;
    } else {
      out += c;
    }
  }
  return out;
}

Result<std::string> AddJob(std::string_view text, const Job& job) {
  Result<std::vector<NamedTable>> jobs = FindTables(text, "job");
  if (!jobs.ok()) return jobs.status();
  for (const NamedTable& j : *jobs) {
    if (j.name == job.name)
      return Status::Conflict(fmt::format("job \"{}\" already exists", job.name));
  }
  return AppendBlock(text, RenderJob(job));
}

Result<std::string> RemoveJob(std::string_view text, std::string_view name) {
  return RemoveTable(text, name, "job");
}

Result<std::string> RemoveFlow(std::string_view text, std::string_view name) {
  return RemoveTable(text, name, "flow");
}

}  // namespace jobctl
