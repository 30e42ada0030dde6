// jobctl import-crontab: moves a crontab over. The translation rules live in
// config/crontab_import.h; this file reads the input, looks up users and the host's time
// zone for it, prints the TOML or appends it to a job file, and reports what it skipped.
#include <pwd.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <vector>

#include "cli.h"
#include "config/crontab_import.h"
#include "config/job_file.h"
#include "config/job_file_edit.h"
#include "exit_codes.h"
#include "file_write.h"
#include "model/zone.h"
#include "output.h"

namespace jobctl::cli {
namespace {

struct ImportOptions {
  std::string file = "-";
  std::string user;
  bool system = false;
  std::string append;
  std::string timezone;
};

bool IsUserOnThisHost(std::string_view name) {
  std::string n(name);
  passwd pw{};
  passwd* found = nullptr;
  std::vector<char> buf(16384);
  return getpwnam_r(n.c_str(), &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr;
}

// The zone the crontab's times are in: --timezone, else this host's ("" for UTC).
Result<std::string> CrontabZone(const ImportOptions& opt) {
  if (!opt.timezone.empty()) {
    Result<const Zone*> zone = LookupZone(opt.timezone);
    if (!zone.ok()) return zone.status();
    return (*zone)->is_utc() ? std::string() : opt.timezone;
  }
  Result<const Zone*> local = LocalZone();
  if (!local.ok() || (*local)->is_utc()) return std::string();
  return (*local)->name();
}

// Names of the jobs already in the file appended to, after checking it is valid.
Result<std::vector<std::string>> ExistingNames(const std::string& text, const std::string& path) {
  JobFileResult parsed = ParseJobFile(text, path);
  if (!parsed.ok()) {
    for (const Diagnostic& d : parsed.errors)
      std::cerr << Shown(d.ToString(), STDERR_FILENO) << '\n';
    return Status::InvalidArgument(path + " has errors; fix them before appending to it");
  }
  std::vector<std::string> names;
  for (const Job& j : parsed.file.jobs) names.push_back(j.name);
  for (const Flow& f : parsed.file.flows) names.push_back(f.name);  // one namespace
  return names;
}

int Append(const ImportOptions& opt, const CrontabImport& imported, const std::string& source,
           const std::string& existing, const GlobalOptions& g) {
  std::string combined = AppendBlock(existing, imported.toml);
  JobFileResult parsed = ParseJobFile(combined, opt.append);
  if (!parsed.ok()) {
    for (const Diagnostic& d : parsed.errors)
      std::cerr << Shown(d.ToString(), STDERR_FILENO) << '\n';
    return Fail("import-crontab", source,
                Status::InvalidArgument(opt.append + " would not be valid; nothing was changed"),
                kExitDataErr);
  }
  if (Status s = WriteFileAtomically(opt.append, combined); !s.ok()) {
    return Fail("import-crontab", source, s, kExitCantCreate);
  }
  std::ostream& out = g.format() == OutputFormat::kJson ? std::cerr : std::cout;
  out << "added " << imported.jobs << (imported.jobs == 1 ? " job" : " jobs") << " to "
      << opt.append << " (not applied yet: jobctl apply " << opt.append << ")\n";
  return kExitOk;
}

int RunImport(const ImportOptions& opt, const GlobalOptions& g) {
  const std::string source = opt.file == "-" ? "<stdin>" : opt.file;
  Result<std::string> text = ReadFileText(opt.file);
  if (!text.ok()) return Fail("import-crontab", source, text.status(), kExitNoInput);
  Result<std::string> zone = CrontabZone(opt);
  if (!zone.ok()) return Fail("import-crontab", source, zone.status(), kExitUsage);

  CrontabImportOptions options;
  std::error_code ec;
  // The absolute path, so that /etc/crontab is recognised however it was named.
  options.source = opt.file == "-"
                       ? source
                       : std::filesystem::absolute(opt.file, ec).lexically_normal().string();
  options.format = opt.system         ? CrontabFormat::kSystem
                   : opt.user.empty() ? CrontabFormat::kAuto
                                      : CrontabFormat::kUser;
  options.user = opt.user;
  options.timezone = *zone;
  options.is_user = IsUserOnThisHost;
  std::string existing;
  if (!opt.append.empty()) {
    options.shared = SharedSettings::kEachJob;
    if (std::filesystem::exists(opt.append, ec)) {
      Result<std::string> current = ReadFileText(opt.append);
      if (!current.ok()) return Fail("import-crontab", source, current.status(), kExitNoInput);
      existing = std::move(*current);
      Result<std::vector<std::string>> names = ExistingNames(existing, opt.append);
      if (!names.ok()) return Fail("import-crontab", source, names.status(), kExitDataErr);
      options.taken_names = std::move(*names);
    }
  }

  CrontabImport imported = ImportCrontab(*text, options);
  for (const CrontabWarning& w : imported.warnings) {
    std::cerr << "jobctl: import-crontab: " << source << ':' << w.line << ": " << w.message << '\n';
  }
  if (!imported.detected_because.empty()) {
    std::cerr << "jobctl: import-crontab: " << source << ": read as a system crontab ("
              << imported.detected_because << "); --user U reads it as a user crontab\n";
  }
  if (imported.jobs == 0) {
    return Fail("import-crontab", source, Status::InvalidArgument("no job to import"),
                kExitDataErr);
  }
  if (imported.format == CrontabFormat::kUser && opt.user.empty()) {
    std::cerr << "jobctl: import-crontab: " << source
              << ": no --user given, so the jobs run as the agent's user\n";
  }
  if (opt.append.empty()) {
    std::cout << imported.toml;
    return kExitOk;
  }
  return Append(opt, imported, source, existing, g);
}

}  // namespace

void RegisterImport(CLI::App& app, GlobalOptions& g, int* rc) {
  auto opt = std::make_shared<ImportOptions>();
  auto* sub = app.add_subcommand("import-crontab", "Turn a crontab into jobs.toml entries");
  sub->add_option("file", opt->file, "Crontab file; - or nothing reads stdin");
  auto* user =
      sub->add_option("--user", opt->user, "Read it as a user crontab; the jobs run as this user");
  sub->add_flag("--system", opt->system,
                "Read it as a system crontab: a user column after the schedule")
      ->excludes(user);
  sub->add_option("--append", opt->append,
                  "Add the jobs to this job file (checked first) instead of printing them");
  sub->add_option("--timezone", opt->timezone,
                  "Zone of the crontab's times where it sets no CRON_TZ (default: this host's)");
  sub->footer(
      "Examples:\n"
      "  crontab -l | jobctl import-crontab --user \"$USER\" > jobs.toml\n"
      "  jobctl import-crontab /etc/crontab --append jobs.toml\n"
      "  jobctl import-crontab /etc/cron.d/certbot --timezone Europe/Berlin\n"
      "Without --user or --system, /etc/crontab and /etc/cron.d/* are system crontabs, and so\n"
      "is any file whose every job line has a user of this host after its schedule. CRON_TZ\n"
      "becomes timezone, SHELL the interpreter, other variables env; MAILTO is kept as a\n"
      "comment; text after '%' becomes the command's stdin; @reboot lines are skipped with a\n"
      "warning. Exit status: 0 imported, 65 nothing importable or the result is invalid, 66\n"
      "cannot read the file.");
  sub->callback([opt, &g, rc] { *rc = RunImport(*opt, g); });
}

}  // namespace jobctl::cli
