// CrontabLine is one line of a crontab read the way cronie reads it: a comment, a NAME=value
// setting or a job line (schedule, the user column of system crontabs, the command), and
// CronCommand splits a job's command at cron's '%'. Used by crontab_import. Pure
// functions, any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace jobctl {

struct CrontabLine {
  enum class Kind { kBlank, kComment, kVariable, kJob, kInvalid };
  Kind kind = Kind::kBlank;
  std::string comment;   // kComment: from the '#' on
  std::string name;      // kVariable, quotes removed
  std::string value;     // kVariable, quotes removed
  std::string schedule;  // kJob: the five fields joined by one space, or the @word
  std::string user;      // kJob, system format
  std::string command;   // kJob: the rest of the line as written, '%' and all
  std::string error;     // kInvalid: why, e.g. "expected 5 schedule fields and a command"
};

enum class CrontabColumns { kUser, kSystem };  // kSystem: a user column after the schedule

CrontabLine ParseCrontabLine(std::string_view line, CrontabColumns columns);

// A job's command split as cron does it: up to the first unescaped '%', with "\%" turned
// into '%'; the rest is stdin, each unescaped '%' a newline and "\%" a '%'.
struct CronCommand {
  std::string command;
  std::optional<std::string> input;  // none when there was no unescaped '%'
};

CronCommand SplitCronCommand(std::string_view command);

}  // namespace jobctl
