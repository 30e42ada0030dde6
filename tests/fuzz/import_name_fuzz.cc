// libFuzzer target: the job names `jobctl import-crontab` picks. Any bytes through
// JobNameForCommand (the scanner that finds the program a cron command runs) and
// JobNameFromWord must give a valid job name (IsValidJobName) of at most 100 characters,
// the same one each time. The bytes are also imported whole as a system crontab of a cron.d
// file (named by a first line "# /etc/cron.d/NAME: ...", as Debian's files start, else
// "fuzz"), so that the file-name prefix and the -2, -3 suffixes are covered too: every job
// written gets a valid name of at most 128 characters, no two the same.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "config/crontab_import.h"
#include "model/job.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

// "# /etc/cron.d/certbot: crontab entries..." -> "/etc/cron.d/certbot".
std::string SourceOf(std::string_view text) {
  constexpr std::string_view kHead = "# /etc/cron.d/";
  if (!text.starts_with(kHead)) return "/etc/cron.d/fuzz";
  std::string_view rest = text.substr(2);
  return std::string(rest.substr(0, rest.find_first_of(": \t\n")));
}

// The names of the jobs in ImportCrontab's output: its `name = "..."` lines.
void CheckImportedNames(const jobctl::CrontabImport& r) {
  constexpr std::string_view kKey = "name = \"";
  std::set<std::string, std::less<>> seen;
  std::string_view toml = r.toml;
  for (size_t at = 0; at < toml.size();) {
    size_t eol = toml.find('\n', at);
    std::string_view line = toml.substr(at, eol == std::string_view::npos ? eol : eol - at);
    at = eol == std::string_view::npos ? toml.size() : eol + 1;
    if (!line.starts_with(kKey)) continue;
    line.remove_prefix(kKey.size());
    Check(line.ends_with('"'));
    std::string_view name = line.substr(0, line.size() - 1);
    Check(jobctl::IsValidJobName(name));  // so also no quote or escape inside
    Check(seen.insert(std::string(name)).second);
  }
  Check(seen.size() == static_cast<size_t>(r.jobs));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);

  std::string name = jobctl::JobNameForCommand(text);
  Check(jobctl::IsValidJobName(name) && name.size() <= 100);
  Check(jobctl::JobNameForCommand(text) == name);  // stable: the same line, the same name

  std::string word = jobctl::JobNameFromWord(text);
  Check(jobctl::IsValidJobName(word) && word.size() <= 100);
  Check(jobctl::JobNameFromWord(word) == word);  // a valid name is kept as it is

  jobctl::CrontabImportOptions options;
  options.source = SourceOf(text);
  options.format = jobctl::CrontabFormat::kSystem;
  CheckImportedNames(jobctl::ImportCrontab(text, options));
  return 0;
}
