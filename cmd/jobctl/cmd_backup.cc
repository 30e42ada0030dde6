// jobctl backup: a consistent copy of the coordinator's embedded store, taken on its host
// while `jobctl serve` runs (or not), into a directory that becomes a data directory again
// by copying the files back. It reads the data directory directly, not through the API, and
// never takes serve's lock: the copy is one read snapshot of each database
// (store/sqlite_backup.h), and the coordinator keeps committing meanwhile.
//
// logs.db (with --logs) is copied before jobctl.db: the coordinator commits a run before any
// of its output, so every run whose output is in the copy of logs.db is in the later copy of
// jobctl.db too, and a restored coordinator never numbers a new run after one whose output is
// already stored.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli.h"
#include "config/coordinator_config.h"
#include "exit_codes.h"
#include "output.h"
#include "store/sqlite_backup.h"

namespace jobctl::cli {
namespace {

struct BackupOptions {
  std::string dest;
  std::string config;
  std::string data;
  bool logs = false;
  bool force = false;
};

// Copies at least this large show their progress on a terminal.
constexpr int64_t kProgressFromBytes = 64 << 20;

// What each failure means to a script: the store is missing (66), a destination file exists
// or cannot be written (73), the store is locked for now (75), it is damaged (65), it may not
// be read by this user (77).
int BackupExitCode(const Status& s) {
  switch (s.code()) {
    case Status::Code::kNotFound: return kExitNoInput;
    case Status::Code::kConflict:
    case Status::Code::kIo:
    case Status::Code::kResourceExhausted: return kExitCantCreate;
    case Status::Code::kInvalidArgument: return kExitUsage;
    case Status::Code::kUnavailable: return kExitTempFail;
    default: return ExitCodeFor(s);
  }
}

// --data, else JOBCTL_DATA_DIR, else data_dir in the coordinator's config file, else its
// default: the directory `jobctl serve` would use with the same settings.
Result<std::string> DataDir(const BackupOptions& opt) {
  if (!opt.data.empty()) return opt.data;
  if (const char* v = std::getenv("JOBCTL_DATA_DIR"); v != nullptr && *v != '\0') {
    return std::string(v);
  }
  bool explicit_config = !opt.config.empty();
  Result<CoordinatorConfig> config = LoadCoordinatorConfig(
      explicit_config ? opt.config : "/etc/jobctl/coordinator.toml", explicit_config);
  if (!config.ok()) return config.status();
  return config->data_dir;
}

bool SameDirectory(const std::string& a, const std::string& b) {
  struct stat sa {};
  struct stat sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

// Creates DEST_DIR (mode 0700: the copies hold token hashes and every job's command) if it
// is missing; an existing directory is used as it is.
Status MakeDestDir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) == 0 || errno == EEXIST) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return Status::Io(dir + " is not a directory");
    }
    return Status::Ok();
  }
  if (errno != ENOENT) return Status::Io("cannot create " + dir + ": " + std::strerror(errno));
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(dir).parent_path(), ec);
  if (ec) return Status::Io("cannot create " + dir + ": " + ec.message());
  if (::mkdir(dir.c_str(), 0700) != 0) {
    return Status::Io("cannot create " + dir + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

// Every source exists, and without --force no destination does.
Status Preflight(const std::string& data, const BackupOptions& opt,
                 const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    std::string source = data + "/" + name;
    if (::access(source.c_str(), R_OK) != 0) {
      if (errno == ENOENT) {
        return Status::NotFound("no " + name + " here: is it the coordinator's data directory?");
      }
      return Status::PermissionDenied("cannot read " + source + ": " + std::strerror(errno) +
                                      "; run jobctl backup as the coordinator's user");
    }
    std::string dest = opt.dest + "/" + name;
    if (!opt.force && ::access(dest.c_str(), F_OK) == 0) {
      return Status::Conflict(dest + " already exists; --force replaces it");
    }
  }
  return Status::Ok();
}

// "jobctl: backup jobctl.db: 42% of 812 MiB" on stderr, rewritten in place, when stderr is a
// terminal and the copy is large; the line is ended by Done().
class ProgressLine {
 public:
  explicit ProgressLine(std::string name) : name_(std::move(name)) {}
  void Report(const store::BackupProgress& p) {
    int64_t bytes = p.pages_total * p.page_size;
    if (!IsTerminal(STDERR_FILENO) || bytes < kProgressFromBytes || p.pages_total == 0) return;
    int percent = static_cast<int>(100 * p.pages_done / p.pages_total);
    if (percent == shown_) return;
    shown_ = percent;
    std::cerr << "\rjobctl: backup " << name_ << ": " << percent << "% of " << (bytes >> 20)
              << " MiB" << std::flush;
  }
  void Done() {
    if (shown_ >= 0) std::cerr << '\n';
  }

 private:
  std::string name_;
  int shown_ = -1;
};

int RunBackup(const BackupOptions& opt, const GlobalOptions& g) {
  Result<std::string> data = DataDir(opt);
  if (!data.ok()) return Fail("backup", "--config", data.status(), kExitConfig);
  if (SameDirectory(*data, opt.dest)) {
    return Fail("backup", opt.dest,
                Status::InvalidArgument("is the data directory itself; name another directory"),
                kExitUsage);
  }
  std::vector<std::string> names;
  if (opt.logs) names.push_back("logs.db");
  names.push_back("jobctl.db");
  // Checked for every file before the first is written, so a refusal leaves DEST as it was.
  if (Status s = Preflight(*data, opt, names); !s.ok()) {
    return Fail("backup", s.code() == Status::Code::kConflict ? opt.dest : *data, s,
                BackupExitCode(s));
  }
  if (Status s = MakeDestDir(opt.dest); !s.ok()) {
    return Fail("backup", opt.dest, s, kExitCantCreate);
  }
  nlohmann::json files = nlohmann::json::array();
  Table table({"FILE", "BYTES", "WRITTEN TO"});
  for (const std::string& name : names) {
    std::string dest = opt.dest + "/" + name;
    ProgressLine progress(name);
    Result<store::BackupStats> stats = store::BackupSqlite(
        {.source = *data + "/" + name,
         .dest = dest,
         .overwrite = opt.force ? store::Overwrite::kReplace : store::Overwrite::kRefuse,
         .on_progress = [&progress](const store::BackupProgress& p) { progress.Report(p); }});
    progress.Done();
    if (!stats.ok()) {
      Status s = stats.status();
      if (s.code() == Status::Code::kConflict)
        s = Status::Conflict(s.message() + "; --force replaces it");
      return Fail("backup", name, s, BackupExitCode(s));
    }
    files.push_back({{"name", name}, {"path", dest}, {"bytes", stats->bytes}});
    table.Add({name, std::to_string(stats->bytes), dest});
  }
  if (g.format() == OutputFormat::kJson) {
    PrintJson({{"data_dir", *data}, {"files", files}});
  } else {
    table.Print(std::cout);
  }
  return kExitOk;
}

}  // namespace

void RegisterBackup(CLI::App& app, GlobalOptions& g, int* rc) {
  auto opt = std::make_shared<BackupOptions>();
  auto* sub = app.add_subcommand(
      "backup", "Copy the coordinator's store to a directory, consistently, while it runs");
  sub->add_option("dest", opt->dest, "Directory to write the copies to (created if missing)")
      ->required();
  sub->add_option("--data", opt->data,
                  "The coordinator's data directory (env JOBCTL_DATA_DIR, else data_dir in "
                  "--config, default /var/lib/jobctl)");
  sub->add_option("--config", opt->config,
                  "The coordinator's config file, for its data_dir (default "
                  "/etc/jobctl/coordinator.toml, if it exists)");
  sub->add_flag("--logs", opt->logs, "Copy the output of runs (logs.db) too");
  sub->add_flag("--force", opt->force, "Replace copies already in DEST");
  sub->footer(
      "Writes DEST/jobctl.db (and DEST/logs.db with --logs), each a snapshot of one instant,\n"
      "without stopping the coordinator. Each file is written under a temporary name, flushed\n"
      "and renamed: a file named jobctl.db in DEST is always a whole copy. Run it on the\n"
      "coordinator's host as the coordinator's user. To restore, stop serve and copy the files\n"
      "into an empty data directory (see jobctl(1), BACKUP AND RESTORE).\n"
      "Examples:\n"
      "  sudo -u jobctl jobctl backup /var/backups/jobctl/$(date +%F)\n"
      "  jobctl backup --data /tmp/jc --logs --force -o json ./jc-backup\n"
      "Exit status: 0 copied, 66 no store in the data directory, 73 a copy exists (without\n"
      "--force) or cannot be written, 75 the store is locked; try again, 77 the store cannot\n"
      "be read by this user.");
  sub->callback([opt, &g, rc] { *rc = RunBackup(*opt, g); });
}

}  // namespace jobctl::cli
