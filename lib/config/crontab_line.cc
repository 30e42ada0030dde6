// The rules follow cronie: entry.c (load_entry) for job lines, env.c (load_env) for
// NAME=value lines, and do_command.c for '%'. A line is a setting when its first word is
// followed by '=' (so "0 * * * * x=1 cmd" is a job), else a job line.
#include "config/crontab_line.h"

#include <vector>

namespace jobctl {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

std::string_view TrimLeft(std::string_view s) {
  while (!s.empty() && IsBlank(s.front())) s.remove_prefix(1);
  return s;
}

// The next blank-separated word of `*s`, consumed along with the blanks after it.
std::string_view NextWord(std::string_view* s) {
  size_t end = 0;
  while (end < s->size() && !IsBlank((*s)[end])) ++end;
  std::string_view word = s->substr(0, end);
  *s = TrimLeft(s->substr(end));
  return word;
}

std::string Unquote(std::string_view s) {
  if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front()) {
    s = s.substr(1, s.size() - 2);
  }
  return std::string(s);
}

// NAME=value, "NAME" = 'value', ...: false when the line is not a setting.
bool ParseVariable(std::string_view s, CrontabLine* out) {
  size_t end = 0;
  if (s.front() == '"' || s.front() == '\'') {
    end = s.find(s.front(), 1);
    if (end == std::string_view::npos) return false;
    ++end;
  } else {
    while (end < s.size() && !IsBlank(s[end]) && s[end] != '=') ++end;
  }
  std::string_view name = s.substr(0, end);
  std::string_view rest = TrimLeft(s.substr(end));
  if (name.empty() || rest.empty() || rest.front() != '=') return false;
  std::string_view value = TrimLeft(rest.substr(1));
  bool quoted = value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
                value.back() == value.front();
  while (!quoted && !value.empty() && IsBlank(value.back())) value.remove_suffix(1);
  out->kind = CrontabLine::Kind::kVariable;
  out->name = Unquote(name);
  out->value = Unquote(value);
  return true;
}

CrontabLine Invalid(std::string why) {
  CrontabLine line;
  line.kind = CrontabLine::Kind::kInvalid;
  line.error = std::move(why);
  return line;
}

}  // namespace

CrontabLine ParseCrontabLine(std::string_view raw, CrontabColumns columns) {
  while (!raw.empty() && (raw.back() == '\n' || raw.back() == '\r')) raw.remove_suffix(1);
  std::string_view s = TrimLeft(raw);
  CrontabLine line;
  if (s.empty()) return line;
  if (s.front() == '#') {
    line.kind = CrontabLine::Kind::kComment;
    line.comment = std::string(s);
    return line;
  }
  if (ParseVariable(s, &line)) return line;
  // A leading '-' only turns off cron's syslog line for the job.
  if (s.front() == '-') s = TrimLeft(s.substr(1));
  if (!s.empty() && s.front() == '@') {
    line.schedule = std::string(NextWord(&s));
  } else {
    std::vector<std::string_view> fields;
    while (fields.size() < 5 && !s.empty()) fields.push_back(NextWord(&s));
    if (fields.size() < 5) return Invalid("expected 5 schedule fields and a command");
    for (std::string_view f : fields)
      line.schedule += (line.schedule.empty() ? "" : " ") + std::string(f);
  }
  if (columns == CrontabColumns::kSystem) {
    line.user = std::string(NextWord(&s));
    if (line.user.empty()) return Invalid("expected a user and a command after the schedule");
  }
  if (s.empty()) return Invalid("no command after the schedule");
  line.kind = CrontabLine::Kind::kJob;
  line.command = std::string(s);
  return line;
}

CronCommand SplitCronCommand(std::string_view text) {
  CronCommand out;
  size_t i = 0;
  bool escaped = false;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (escaped) {
      // "\%" is a '%'; any other backslash stays.
      if (c == '%')
        out.command.back() = '%';
      else
        out.command += c;
      escaped = false;
      continue;
    }
    if (c == '%') break;
    out.command += c;
    escaped = c == '\\';
  }
  if (i >= text.size()) return out;
  // Stdin: each '%' a newline, "\%" a '%', and a final newline when the data lacks one
  // (cronie's need_newline). cron sends nothing when the data is empty.
  std::string input;
  bool need_newline = false;
  escaped = false;
  for (char c : text.substr(i + 1)) {
    if (escaped) {
      if (c != '%') input += '\\';
    } else if (c == '%') {
      c = '\n';
    }
    escaped = c == '\\';
    if (!escaped) {
      input += c;
      need_newline = c != '\n';
    }
  }
  if (escaped) input += '\\';
  if (need_newline) input += '\n';
  if (!input.empty()) out.input = std::move(input);
  return out;
}

}  // namespace jobctl
