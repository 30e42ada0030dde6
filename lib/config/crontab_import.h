// ImportCrontab turns a crontab into jobs.toml text, for `jobctl import-crontab`: a user
// crontab (`crontab -l`) or a system crontab (/etc/crontab, /etc/cron.d/*: a user column
// after the schedule). It reads the file the way cronie does and writes what cron would
// have done as jobs, keeping the schedule text as written (5 fields stay 5 fields).
//
//   - NAME=value lines apply to the job lines below them. CRON_TZ becomes `timezone`;
//     SHELL (other than /bin/sh) becomes command = [SHELL, "-c", ...]; MAILTO, MAILFROM,
//     CONTENT_TYPE, CONTENT_TRANSFER_ENCODING and RANDOM_DELAY have no equivalent and are
//     kept as comments saying so; every other variable (PATH, TZ, HOME, ...) goes to `env`.
//     A setting every job shares is written once in [defaults].
//   - '%' as in cron: the first unescaped '%' ends the command, the rest is its stdin with
//     each further unescaped '%' read as a newline, and "\%" is a literal '%'. Stdin
//     becomes shell = "printf '%s' 'DATA' | CMD" (CMD in { } when it is a list).
//   - @reboot (and unknown @words, lines that are not cron lines, schedules the engine
//     rejects) are skipped with a warning naming the line, and kept as a comment.
//   - Comments are kept as TOML comments, above the job they precede.
//   - Job names come from the command (JobNameForCommand), prefixed by the file's name for
//     a file in a cron.d directory ("php-sessionclean" from /etc/cron.d/php) unless they
//     already start with it, and made unique in file order with -2, -3, ...
//   - TZ and the other variables are the command's environment, as in cron; only CRON_TZ
//     moves the schedule (cronie reads no other).
//   - System format: the user column becomes run_as; a line whose user column is not a
//     user name (IsValidUserName) is skipped with a warning. Auto-detection reads a file as a
//     system crontab when its name is /etc/crontab or under /etc/cron.d/, or when every
//     job line has, after its schedule, a word that names a user on this host followed by
//     a command; otherwise as a user crontab.
// Pure function of its input (user names come through `is_user`), any thread.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace jobctl {

enum class CrontabFormat { kAuto, kUser, kSystem };

// Where settings that every job shares go: one [defaults] table (a file of its own), or
// each job (appending to a file that may already have a [defaults] table; the time zone
// is then always written, even UTC, so the file's default cannot move the schedule).
enum class SharedSettings { kDefaultsTable, kEachJob };

struct CrontabImportOptions {
  std::string source = "crontab";  // the file name, for the header comment and warnings
  CrontabFormat format = CrontabFormat::kAuto;
  std::string user;      // user format: run_as of every job ("" = the agent's user)
  std::string timezone;  // the cron host's zone, for lines without CRON_TZ; "" = UTC
  std::function<bool(std::string_view)> is_user;  // auto-detection; none = never system
  SharedSettings shared = SharedSettings::kDefaultsTable;
  std::vector<std::string> taken_names;  // names already in the file being appended to
};

struct CrontabWarning {
  int line = 0;  // 1-based
  std::string message;
};

struct CrontabImport {
  std::string toml;  // "" when nothing could be imported
  int jobs = 0;
  CrontabFormat format = CrontabFormat::kUser;  // as read: kUser or kSystem
  std::string detected_because;                 // with kAuto, why this format ("" = plain default)
  std::vector<CrontabWarning> warnings;
};

CrontabImport ImportCrontab(std::string_view text, const CrontabImportOptions& options);

// The basename of the first program a cron command runs that is not a test or a shell
// keyword, as a job name (JobNameFromWord). To find it, it skips:
//   - VAR=value words, redirections, and the keywords if then else elif do while until ! { (;
//   - whole clauses up to their && || or ; that test or prepare: "test ...", "[ ... ]",
//     "[[ ... ]]", "command -v X", "cd DIR", "for ...", "sleep N", "exit N", "true", ":";
//   - the wrappers nice, ionice, nohup, exec, env, time, chronic, sudo, setsid, timeout,
//     flock and command with their options;
//   - inline code (sh -c, perl -e, ...) when more of the list follows; a shell's inline code
//     is read as a command itself.
// For run-parts, interpreters (sh, bash, python3, perl, php, node, ...) and services
// (service, invoke-rc.d, systemctl VERB) it takes their operand instead. So
// "cd /srv && nice -n 10 /usr/local/bin/backup.sh --full" gives "backup.sh",
// "[ -x /usr/lib/php/sessionclean ] && if [ ! -d /run/systemd/system ]; then
// /usr/lib/php/sessionclean; fi" gives "sessionclean" and
// "run-parts --report /etc/cron.daily" gives "cron.daily".
std::string JobNameForCommand(std::string_view command);

// A word as a job name: lowercased, other characters than [a-z0-9._-] turned into '-',
// starting with a letter or digit, at most 100 characters ("job" when nothing is left).
std::string JobNameFromWord(std::string_view word);

}  // namespace jobctl
