// Import runs in two passes. The first reads every line (ParseCrontabLine), tracking the
// settings in force the way cron does (a NAME=value applies to the job lines below it),
// and produces a list of items in file order: free comment groups, notes, and jobs with
// the comments attached above them. The second factors out what every job shares into
// [defaults] and writes the text. Nothing is dropped silently: a line that cannot be
// imported gives a warning and is kept as a comment where it was.
#include "config/crontab_import.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "config/crontab_line.h"
#include "config/job_file_edit.h"
#include "model/job.h"
#include "model/schedule.h"

namespace jobctl {
namespace {

// Settings cron reads for its own mail; jobctl keeps output instead (jobctl logs).
constexpr std::string_view kMailSettings[] = {"MAILFROM", "CONTENT_TYPE",
                                              "CONTENT_TRANSFER_ENCODING"};
template <typename List>
bool Contains(const List& list, std::string_view s) {
  return std::find(std::begin(list), std::end(list), s) != std::end(list);
}

// A TOML comment line for arbitrary text: TOML comments may not hold control characters.
std::string CommentLine(std::string_view text) {
  std::string out;
  for (char c : text)
    out += (static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f ? '?' : c;
  return out;
}

// ---- Names -------------------------------------------------------------------------------

std::vector<std::string> ShellWords(std::string_view s) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (char c : s) {
    if (quote != 0) {
      if (c == quote)
        quote = 0;
      else
        word += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == ' ' || c == '\t') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  return words;
}

bool IsAssignment(std::string_view w) {
  size_t eq = w.find('=');
  return eq != std::string_view::npos && eq > 0 && IsEnvName(w.substr(0, eq));
}

bool EndsClause(std::string_view w) {
  return w == "&&" || w == "||" || w == ";" || w.ends_with(';');
}

// Shell words that only lead into a command: "if [ -x X ]; then X; fi" runs X.
constexpr std::string_view kKeywords[] = {"if",    "then",  "else", "elif", "do",
                                          "while", "until", "!",    "{",    "("};

// Commands that test, guard or prepare and say nothing of the job: the whole clause up to
// its && || or ; is skipped ("test -x X &&", "[ -d D ] ||", "|| exit 0;", "sleep 30;").
constexpr std::string_view kClauses[] = {"test",  "[",    "[[",   "cd", "for",
                                         "sleep", "true", "exit", ":"};

// The index of the first word after the clause that starts at i.
size_t SkipClause(const std::vector<std::string>& w, size_t i) {
  while (i < w.size() && !EndsClause(w[i])) ++i;
  return i + 1;
}

// Programs that run the rest of their arguments as the command: their options that take
// a value, and how many arguments of their own come first (a duration, a lock file).
struct Wrapper {
  std::string_view name;
  std::string_view value_options;  // " -n -c ": blank-separated, blank-enclosed
  int own_args;
};
constexpr Wrapper kWrappers[] = {
    {"nice", " -n ", 0},       {"ionice", " -c -n -p ", 0}, {"nohup", "", 0},
    {"exec", "", 0},           {"env", " -u -C -S ", 0},    {"time", "", 0},
    {"chronic", "", 0},        {"sudo", " -u -g ", 0},      {"setsid", "", 0},
    {"timeout", " -s -k ", 1}, {"flock", " -w -E ", 1},     {"command", "", 0},
};

const Wrapper* FindWrapper(std::string_view name) {
  for (const Wrapper& w : kWrappers) {
    if (w.name == name) return &w;
  }
  return nullptr;
}

// Programs whose operand says better what runs: interpreters (the script), run-parts (the
// directory), and service managers (the service; systemctl's comes after its verb).
struct Runner {
  std::string_view name;
  int skip_operands;
};
constexpr Runner kRunners[] = {
    {"sh", 0},      {"bash", 0},      {"zsh", 0},     {"dash", 0},        {"python", 0},
    {"python2", 0}, {"python3", 0},   {"perl", 0},    {"php", 0},         {"ruby", 0},
    {"node", 0},    {"run-parts", 0}, {"service", 0}, {"invoke-rc.d", 0}, {"systemctl", 1},
};
constexpr std::string_view kShells[] = {"sh", "bash", "zsh", "dash"};

const Runner* FindRunner(std::string_view name) {
  for (const Runner& r : kRunners) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

std::string Basename(std::string_view w) {
  while (w.size() > 1 && w.back() == '/') w.remove_suffix(1);  // "/etc/cron.daily/"
  size_t slash = w.find_last_of('/');
  return std::string(slash == std::string_view::npos ? w : w.substr(slash + 1));
}

std::string WithoutSemicolons(std::string w) {
  while (!w.empty() && w.back() == ';') w.pop_back();
  return w;
}

// A redirection word: ">/dev/null", "2>&1", and ">" or "2>>" whose target is the next word.
bool IsRedirection(std::string_view w, bool* takes_next) {
  size_t digits = 0;
  while (digits < w.size() && w[digits] >= '0' && w[digits] <= '9') ++digits;
  std::string_view op = w.substr(digits);
  if (op.empty() || (op[0] != '>' && op[0] != '<')) return false;
  *takes_next = op == ">" || op == ">>" || op == "<" || op == ">|";
  return true;
}

// sh -c 'sh -c "..."' nests at most this deep before the shell's own name is used.
constexpr int kMaxInlineDepth = 4;

// The word naming what the command runs (see JobNameForCommand).
std::string ProgramWord(const std::vector<std::string>& w, int depth) {
  // Past the options at j; those listed in `values` take the next word too.
  auto skip_options = [&w](size_t j, std::string_view values) {
    for (; j < w.size() && w[j].starts_with('-'); ++j) {
      if (values.find(" " + w[j] + " ") != std::string_view::npos) ++j;
    }
    return j;
  };
  size_t i = 0;
  while (i < w.size()) {
    std::string word = WithoutSemicolons(w[i]);
    std::string base = Basename(word);
    bool takes_next = false;
    if (word.empty() || IsAssignment(word) || Contains(kKeywords, word)) {
      ++i;
    } else if (IsRedirection(word, &takes_next)) {
      i += takes_next ? 2 : 1;
    } else if (Contains(kClauses, base) ||
               (base == "command" && i + 1 < w.size() && (w[i + 1] == "-v" || w[i + 1] == "-V"))) {
      i = SkipClause(w, i);
    } else if (const Wrapper* wrapper = FindWrapper(base)) {
      i = skip_options(i + 1, wrapper->value_options) + static_cast<size_t>(wrapper->own_args);
    } else if (const Runner* runner = FindRunner(base)) {
      size_t j = skip_options(i + 1, "");
      bool inline_code =
          std::any_of(w.begin() + static_cast<long>(i) + 1, w.begin() + static_cast<long>(j),
                      [](const std::string& o) { return o == "-c" || o == "-e"; });
      if (!inline_code) {
        for (int k = 0; k < runner->skip_operands && j < w.size(); ++k) j = skip_options(j + 1, "");
        bool operand = j < w.size() && !WithoutSemicolons(w[j]).empty() && w[j] != "&&" &&
                       w[j] != "||" && w[j] != "|" && w[j] != "&";
        return operand ? WithoutSemicolons(w[j]) : word;
      }
      // Inline code has no name: what follows it in the list names the job better
      // ("perl -e 'sleep int(rand(3600))' && certbot renew"); else a shell's code does.
      if (size_t next = SkipClause(w, i); next < w.size()) {
        i = next;
        continue;
      }
      if (Contains(kShells, base) && j < w.size() && depth < kMaxInlineDepth) {
        std::string inner = ProgramWord(ShellWords(w[j]), depth + 1);
        if (!inner.empty()) return inner;
      }
      return word;
    } else {
      return word;
    }
  }
  return "";
}

// The jobs of /etc/cron.d/NAME (any file in a directory called cron.d) are named after the
// file too, because what they run often says little alone ("sessionclean", "debian-sa1").
std::string CronDFileName(std::string_view source) {
  size_t slash = source.find_last_of('/');
  if (slash == std::string_view::npos || slash + 1 == source.size()) return "";
  std::string_view dir = source.substr(0, slash);
  if (dir != "cron.d" && !dir.ends_with("/cron.d")) return "";
  return JobNameFromWord(source.substr(slash + 1));
}

// "php" + "sessionclean" -> "php-sessionclean"; a name that already starts with the file's
// ("certbot", "e2scrub_all_cron" in e2scrub_all) is kept as it is.
std::string PrefixedName(const std::string& prefix, const std::string& name) {
  if (prefix.empty() || name == prefix) return name;
  if (name.starts_with(prefix) &&
      std::string_view("-_.").find(name[prefix.size()]) != std::string_view::npos) {
    return name;
  }
  return JobNameFromWord(prefix + "-" + name);
}

std::string UniqueName(const std::string& base, std::set<std::string>* used) {
  std::string name = base;
  for (int n = 2; used->count(name) != 0; ++n) name = fmt::format("{}-{}", base, n);
  used->insert(name);
  return name;
}

// ---- Reading the crontab -----------------------------------------------------------------

// A job as cron would run it, before it is written.
struct Entry {
  int line = 0;
  std::vector<std::string> comments;  // attached above it
  Job job;
};

struct Item {
  std::vector<std::string> comments;  // a free comment group or note, or a job's comments
  int entry = -1;                     // index into entries, or -1
};

// What NAME=value lines have set so far.
struct Settings {
  std::string timezone;  // CRON_TZ, else the host's
  std::string shell;     // SHELL
  std::map<std::string, std::string> env;
  std::vector<std::string> notify;  // MAILTO as mailto: targets
};

class Importer {
 public:
  Importer(const CrontabImportOptions& options, CrontabColumns columns)
      : options_(options), columns_(columns) {
    settings_.timezone = options.timezone;
    name_prefix_ = CronDFileName(options.source);
    used_names_.insert(options.taken_names.begin(), options.taken_names.end());
  }

  void Read(std::string_view text) {
    int number = 0;
    for (size_t pos = 0; pos < text.size();) {
      size_t nl = text.find('\n', pos);
      size_t end = nl == std::string_view::npos ? text.size() : nl + 1;
      ReadLine(++number, text.substr(pos, end - pos));
      pos = end;
    }
    FlushComments();
  }

  std::vector<Entry>& entries() { return entries_; }
  const std::vector<Item>& items() const { return items_; }
  std::vector<CrontabWarning>& warnings() { return warnings_; }

 private:
  void ReadLine(int number, std::string_view raw) {
    CrontabLine line = ParseCrontabLine(raw, columns_);
    switch (line.kind) {
      case CrontabLine::Kind::kBlank: FlushComments(); break;
      case CrontabLine::Kind::kComment: pending_.push_back(CommentLine(line.comment)); break;
      case CrontabLine::Kind::kVariable: Set(number, line); break;
      case CrontabLine::Kind::kJob: AddJob(number, line, raw); break;
      case CrontabLine::Kind::kInvalid: Skip(number, raw, line.error); break;
    }
  }

  void FlushComments() {
    if (!pending_.empty()) items_.push_back({std::move(pending_), -1});
    pending_.clear();
  }

  void Note(std::string text) {
    FlushComments();
    items_.push_back({{CommentLine("# " + text)}, -1});
  }

  void Warn(int number, std::string message) { warnings_.push_back({number, std::move(message)}); }

  void Skip(int number, std::string_view raw, const std::string& why) {
    std::string_view text = raw.substr(0, raw.find_first_of("\r\n"));
    Warn(number, fmt::format("{}; line skipped", why));
    Note(fmt::format("not imported (line {}: {}): {}", number, why, text));
  }

  void Set(int number, const CrontabLine& line) {
    const std::string& name = line.name;
    const std::string assignment = name + "=" + line.value;
    if (name == "CRON_TZ") {
      settings_.timezone = line.value;
    } else if (name == "SHELL") {
      settings_.shell = line.value == "/bin/sh" ? "" : line.value;
      if (!settings_.shell.empty()) {
        Note(
            fmt::format("{}: the jobs below run their command with {} -c", assignment, line.value));
      }
    } else if (name == "MAILTO") {
      SetMailto(number, line.value, assignment);
    } else if (Contains(kMailSettings, name)) {
      Note(fmt::format("{}: not imported (jobctl sends no mail; see jobctl logs)", assignment));
    } else if (name == "RANDOM_DELAY") {
      Note(fmt::format("{}: not imported; for a fixed spread per job use H in the schedule",
                       assignment));
    } else if (!EnvNameProblem(name).empty()) {
      Warn(number, fmt::format("{}: {}; not imported", name,
                               !IsEnvName(name)          ? "not a valid variable name"
                               : IsReservedEnvName(name) ? "reserved for the agent"
                                                         : "read by the dynamic loader, refused"));
      Note(fmt::format("not imported (line {}): {}", number, assignment));
    } else {
      settings_.env[name] = line.value;
    }
  }

  // MAILTO=a@x,b@y: cron mails each job's output there; the jobs below notify those addresses
  // (notify = ["mailto:..."]) when they fail. MAILTO="" (no mail) clears it.
  void SetMailto(int number, const std::string& value, const std::string& assignment) {
    std::vector<std::string> targets;
    std::string word;
    for (size_t i = 0; i <= value.size(); ++i) {
      char c = i < value.size() ? value[i] : ',';
      if (c != ',' && c != ' ' && c != '\t') {
        word += c;
        continue;
      }
      if (word.empty()) continue;
      std::string target = "mailto:" + word;
      if (word.find('@') == std::string::npos && IsValidUserName(word)) {
        Note(
            fmt::format("MAILTO: {} is a local user; not imported (notify needs an address "
                        "like {}@example.com)",
                        word, word));
      } else if (!NotifyTargetProblem(target).empty() || targets.size() == kMaxNotifyTargets) {
        Warn(number, fmt::format("MAILTO: \"{}\" is not an address like user@example.com; "
                                 "not imported",
                                 CommentLine(word)));
      } else {
        targets.push_back(std::move(target));
      }
      word.clear();
    }
    settings_.notify = targets;
    if (targets.empty()) {
      if (value.empty()) Note(fmt::format("{}: the jobs below notify nobody", assignment));
      return;
    }
    Note(
        fmt::format("{}: the jobs below notify it when a run fails or recovers (notify in "
                    "jobs.toml(5), sent by the coordinator's mailto_channel)",
                    assignment));
  }

  void AddJob(int number, const CrontabLine& line, std::string_view raw) {
    if (line.schedule == "@reboot") {
      return Skip(number, raw, "@reboot has no equivalent in jobctl (nothing runs at boot)");
    }
    // A user crontab read as a system one puts the command's first word in the user column.
    if (columns_ == CrontabColumns::kSystem && !IsValidUserName(line.user)) {
      std::string user = line.user.size() > 40 ? line.user.substr(0, 37) + "..." : line.user;
      return Skip(number, raw,
                  fmt::format("the user column \"{}\" is not a user name (is this a user crontab? "
                              "then import it with --user)",
                              CommentLine(user)));
    }
    Entry e;
    e.line = number;
    e.job.schedule = line.schedule;
    e.job.timezone = settings_.timezone;
    e.job.env = settings_.env;
    e.job.notify.to = settings_.notify;
    e.job.run_as = columns_ == CrontabColumns::kSystem ? line.user : options_.user;
    CronCommand cmd = SplitCronCommand(line.command);
    std::string script = cmd.input ? WithInput(cmd.command, *cmd.input) : cmd.command;
    if (settings_.shell.empty()) {
      e.job.shell = script;
    } else {
      e.job.command = {settings_.shell, "-c", script};
    }
    std::string base = PrefixedName(name_prefix_, JobNameForCommand(cmd.command));
    Result<Schedule> schedule =
        Schedule::Parse({.expr = e.job.schedule, .timezone = e.job.timezone, .hash_key = base});
    if (!schedule.ok()) return Skip(number, raw, schedule.status().message());
    e.job.name = UniqueName(base, &used_names_);
    e.comments = std::move(pending_);
    pending_.clear();
    if (cmd.input) {
      e.comments.push_back(CommentLine(
          fmt::format("# crontab line {}: {}", number, raw.substr(0, raw.find_first_of("\r\n")))));
    }
    items_.push_back({{}, static_cast<int>(entries_.size())});
    entries_.push_back(std::move(e));
  }

  // cron writes the text after '%' to the command's stdin; printf does the same.
  static std::string WithInput(const std::string& command, const std::string& input) {
    std::string quoted = "'";
    for (char c : input) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    quoted += "'";
    // A list (a; b, a && b, a &) must take stdin as a whole: put it in a group.
    bool list = command.find_first_of(";&#\n") != std::string::npos ||
                command.find("||") != std::string::npos;
    std::string target = list ? "{ " + command + "\n}" : command;
    return "printf '%s' " + quoted + " | " + target;
  }

  const CrontabImportOptions& options_;
  CrontabColumns columns_;
  Settings settings_;
  std::string name_prefix_;  // the cron.d file's name, or ""
  std::set<std::string> used_names_;
  std::vector<std::string> pending_;  // comment lines not yet attached
  std::vector<Entry> entries_;
  std::vector<Item> items_;
  std::vector<CrontabWarning> warnings_;
};

// ---- Format detection --------------------------------------------------------------------

CrontabFormat Detect(std::string_view text, const CrontabImportOptions& o, std::string* because) {
  if (o.format != CrontabFormat::kAuto) return o.format;
  if (o.source == "/etc/crontab" || o.source.starts_with("/etc/cron.d/")) {
    *because =
        o.source == "/etc/crontab" ? "the file is /etc/crontab" : "the file is in /etc/cron.d";
    return CrontabFormat::kSystem;
  }
  if (!o.is_user) return CrontabFormat::kUser;
  int jobs = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t nl = text.find('\n', pos);
    size_t end = nl == std::string_view::npos ? text.size() : nl + 1;
    CrontabLine line = ParseCrontabLine(text.substr(pos, end - pos), CrontabColumns::kSystem);
    pos = end;
    if (line.kind == CrontabLine::Kind::kInvalid) return CrontabFormat::kUser;
    if (line.kind != CrontabLine::Kind::kJob) continue;
    if (!o.is_user(line.user)) return CrontabFormat::kUser;
    ++jobs;
  }
  if (jobs == 0) return CrontabFormat::kUser;
  *because = "every job line names a user on this host before its command";
  return CrontabFormat::kSystem;
}

// ---- Writing -----------------------------------------------------------------------------

struct Shared {
  std::string timezone;
  std::map<std::string, std::string> env;
  std::vector<std::string> notify;
  bool empty() const { return timezone.empty() && env.empty() && notify.empty(); }
};

// Moves what every job has in common into a [defaults] table's worth of settings.
Shared FactorOut(std::vector<Entry>& entries) {
  Shared shared;
  if (entries.empty()) return shared;
  auto all = [&entries](auto same) { return std::all_of(entries.begin(), entries.end(), same); };
  const Job& first = entries.front().job;
  if (!first.timezone.empty() &&
      all([&first](const Entry& e) { return e.job.timezone == first.timezone; })) {
    shared.timezone = first.timezone;
  }
  // Named references, not structured bindings: clang 14 cannot capture the latter.
  for (const auto& kv : first.env) {
    const std::string& name = kv.first;
    const std::string& value = kv.second;
    if (all([&](const Entry& e) {
          auto it = e.job.env.find(name);
          return it != e.job.env.end() && it->second == value;
        })) {
      shared.env[name] = value;
    }
  }
  if (all([&first](const Entry& e) { return e.job.notify.to == first.notify.to; })) {
    shared.notify = first.notify.to;
  }
  for (Entry& e : entries) {
    if (!shared.notify.empty()) e.job.notify.to.clear();
    if (!shared.timezone.empty()) e.job.timezone.clear();
    for (const auto& kv : shared.env) e.job.env.erase(kv.first);
  }
  return shared;
}

std::string RenderDefaults(const Shared& shared) {
  std::string out = "[defaults]\n";
  if (!shared.timezone.empty()) out += "timezone = " + TomlString(shared.timezone) + "\n";
  if (!shared.env.empty()) {
    out += "env = { ";
    std::string sep;
    for (const auto& [k, v] : shared.env) {
      out += sep + k + " = " + TomlString(v);
      sep = ", ";
    }
    out += " }\n";
  }
  if (!shared.notify.empty()) {
    out += "notify = [";
    for (size_t i = 0; i < shared.notify.size(); ++i) {
      out += (i ? ", " : "") + TomlString(shared.notify[i]);
    }
    out += "]\n";
  }
  return out;
}

std::string Lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

}  // namespace

std::string JobNameForCommand(std::string_view command) {
  return JobNameFromWord(Basename(ProgramWord(ShellWords(command), 0)));
}

std::string JobNameFromWord(std::string_view word) {
  std::string name;
  for (char c : word) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) c = '-';
    if (c == '-' && !name.empty() && name.back() == '-') continue;
    if (name.empty() && !((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) continue;
    name += c;
  }
  if (name.size() > 100) name.resize(100);  // room for "-N" within the 128 allowed
  while (!name.empty() && (name.back() == '-' || name.back() == '.')) name.pop_back();
  return name.empty() ? "job" : name;
}

CrontabImport ImportCrontab(std::string_view text, const CrontabImportOptions& options) {
  CrontabImport result;
  result.format = Detect(text, options, &result.detected_because);
  Importer importer(options, result.format == CrontabFormat::kSystem ? CrontabColumns::kSystem
                                                                     : CrontabColumns::kUser);
  importer.Read(text);
  result.warnings = std::move(importer.warnings());
  std::vector<Entry>& entries = importer.entries();
  result.jobs = static_cast<int>(entries.size());
  if (entries.empty()) return result;

  Shared shared;
  if (options.shared == SharedSettings::kDefaultsTable) {
    shared = FactorOut(entries);
  } else {
    for (Entry& e : entries) {
      if (e.job.timezone.empty()) e.job.timezone = "UTC";
    }
  }
  std::string out = CommentLine(fmt::format(
                        "# Imported from {} by jobctl import-crontab ({} crontab).", options.source,
                        result.format == CrontabFormat::kSystem ? "system" : "user")) +
                    "\n";
  const std::vector<Item>& items = importer.items();
  size_t i = 0;
  for (; i < items.size() && items[i].entry < 0; ++i) out += "\n" + Lines(items[i].comments);
  if (!shared.empty()) out += "\n" + RenderDefaults(shared);
  for (; i < items.size(); ++i) {
    out += "\n" + Lines(items[i].comments);
    if (items[i].entry >= 0) {
      const Entry& e = entries[static_cast<size_t>(items[i].entry)];
      out += Lines(e.comments) + RenderJob(e.job);
    }
  }
  result.toml = std::move(out);
  return result;
}

}  // namespace jobctl
