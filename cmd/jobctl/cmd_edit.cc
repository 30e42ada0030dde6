// jobctl add, rm and edit: change the job file on disk, then apply it. add and rm edit the
// TOML in place (config/job_file_edit.h), so every comment and every other job stays as
// it was; edit opens the file in the user's editor the way `crontab -e` does. All three
// refuse to write a file that ParseJobFile rejects, and write it atomically.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>

#include "base/duration.h"
#include "cli.h"
#include "config/job_file.h"
#include "config/job_file_edit.h"
#include "exit_codes.h"
#include "file_write.h"
#include "model/schedule.h"
#include "output.h"

namespace jobctl::cli {
namespace {

enum class AfterWrite { kApply, kNoApply };

// Messages for people go to stdout, unless stdout carries JSON (apply's answer).
std::ostream& Say(const GlobalOptions& g) {
  return g.format() == OutputFormat::kJson ? std::cerr : std::cout;
}

// The job file's text, or "" when it does not exist yet (add and edit create it).
Result<std::string> ReadJobFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec) && !ec) return std::string();
  return ReadFileText(path);
}

// "job "x" already exists in jobs.toml", "jobs.toml: line 3, column 7: ...".
Status InFile(const Status& s, const std::string& path) {
  if (s.code() == Status::Code::kInvalidArgument) return s.WithContext(path);
  return Status::InvalidArgument(s.message() + " in " + path);
}

// The last steps of add, rm and edit: check the whole new file, write it, apply it.
int Commit(std::string_view verb, std::string_view object, const std::string& path,
           const std::string& text, const std::string& done, AfterWrite after,
           const GlobalOptions& g) {
  JobFileResult parsed = ParseJobFile(text, path);
  if (!parsed.ok()) {
    for (const Diagnostic& d : parsed.errors)
      std::cerr << Shown(d.ToString(), STDERR_FILENO) << '\n';
    return Fail(verb, object,
                Status::InvalidArgument(path + " would not be valid (" +
                                        std::to_string(parsed.errors.size()) +
                                        " error(s)); nothing was changed"),
                kExitDataErr);
  }
  if (Status s = WriteFileAtomically(path, text); !s.ok()) {
    return Fail(verb, object, s, kExitCantCreate);
  }
  Say(g) << done << '\n';
  if (after == AfterWrite::kNoApply) return kExitOk;
  int rc = ApplyFile(path, g, /*force=*/false);
  if (rc != kExitOk) {
    std::cerr << "jobctl: " << verb << ' ' << object << ": " << path
              << " was written but not applied; run 'jobctl apply " << path << "' to retry\n";
  }
  return rc;
}

// ---- add ---------------------------------------------------------------------------------

struct AddOptions {
  std::string name;
  std::string schedule;
  int shards = 1;
  std::vector<std::string> on;
  std::string timeout;
  std::string run_as;
  std::string timezone;
  std::string dialect = "cron";
  std::string description;
  std::vector<std::string> env;
  std::string shell;
  std::vector<std::string> command;
  bool no_apply = false;
};

// "role=web" or "role!=db" (ParseJobFile checks the words themselves).
Result<LabelSelector> ParseOn(const std::string& text) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    return Status::InvalidArgument("--on " + text + ": expected key=value or key!=value");
  }
  bool negated = text[eq - 1] == '!';
  return LabelSelector{text.substr(0, negated ? eq - 1 : eq), text.substr(eq + 1), negated};
}

// The job the options describe, or why not (exit code in *rc).
Result<Job> JobFromOptions(const AddOptions& opt, int* rc) {
  *rc = kExitDataErr;
  Job job;
  job.name = opt.name;
  if (!IsValidJobName(job.name)) {
    return Status::InvalidArgument(
        "invalid job name (expected [a-z0-9][a-z0-9._-]*, at most "
        "128 characters)");
  }
  if (opt.shell.empty() == opt.command.empty()) {
    *rc = kExitUsage;
    return Status::InvalidArgument(opt.shell.empty()
                                       ? "give the command after -- or as --shell \"CMD\""
                                       : "give either a command after -- or --shell, not both");
  }
  job.schedule = opt.schedule;
  job.dialect = *ParseDialect(opt.dialect);
  job.timezone = opt.timezone;
  Result<Schedule> schedule = Schedule::Parse(ScheduleSpecOf(job));
  if (!schedule.ok()) return schedule.status();
  job.command = opt.command;
  job.shell = opt.shell;
  job.shards = opt.shards;
  for (const std::string& s : opt.on) {
    Result<LabelSelector> sel = ParseOn(s);
    if (!sel.ok()) return sel.status();
    job.on.push_back(*sel);
  }
  if (!opt.timeout.empty()) {
    Result<Millis> d = ParseDuration(opt.timeout);
    if (!d.ok()) return Status::InvalidArgument("--timeout: " + d.status().message());
    job.timeout = *d;
  }
  job.run_as = opt.run_as;
  job.description = opt.description;
  for (const std::string& kv : opt.env) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::InvalidArgument("--env " + kv + ": expected NAME=value");
    }
    job.env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  *rc = kExitOk;
  return job;
}

int RunAdd(const AddOptions& opt, const GlobalOptions& g) {
  const std::string& path = g.file;
  int rc = kExitOk;
  Result<Job> job = JobFromOptions(opt, &rc);
  if (!job.ok()) return Fail("add", opt.name, job.status(), rc);
  Result<std::string> text = ReadJobFile(path);
  if (!text.ok()) return Fail("add", opt.name, text.status(), kExitNoInput);
  Result<std::string> edited = AddJob(*text, *job);
  if (!edited.ok()) {
    return Fail("add", opt.name, InFile(edited.status(), path), kExitDataErr);
  }
  return Commit("add", opt.name, path, *edited, "added job \"" + opt.name + "\" to " + path,
                opt.no_apply ? AfterWrite::kNoApply : AfterWrite::kApply, g);
}

// ---- rm ----------------------------------------------------------------------------------

struct RmOptions {
  std::string name;
  bool no_apply = false;
};

int RunRm(const RmOptions& opt, const GlobalOptions& g) {
  const std::string& path = g.file;
  Result<std::string> text = ReadFileText(path);
  if (!text.ok()) return Fail("rm", opt.name, text.status(), kExitNoInput);
  // NAME is a job or a flow (they share one namespace).
  std::string kind = "job";
  Result<std::string> edited = RemoveJob(*text, opt.name);
  if (edited.status().code() == Status::Code::kNotFound) {
    Result<std::string> flow = RemoveFlow(*text, opt.name);
    if (flow.status().code() == Status::Code::kNotFound) {
      edited = Status::NotFound("no job or flow \"" + opt.name + "\"");
    } else {
      kind = "flow";
      edited = std::move(flow);
    }
  }
  if (!edited.ok()) {
    return Fail("rm", opt.name, InFile(edited.status(), path), kExitDataErr);
  }
  return Commit("rm", opt.name, path, *edited,
                "removed " + kind + " \"" + opt.name + "\" from " + path,
                opt.no_apply ? AfterWrite::kNoApply : AfterWrite::kApply, g);
}

// ---- edit --------------------------------------------------------------------------------

struct EditOptions {
  std::string file;
  bool no_apply = false;
};

// $VISUAL, else $EDITOR, else vi; may hold arguments ("code --wait").
std::string EditorCommand() {
  for (const char* name : {"VISUAL", "EDITOR"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return v;
  }
  return "vi";
}

// Runs the editor on `file` through the shell, as git does, so that EDITOR may carry
// arguments. Ctrl-C belongs to the editor meanwhile, as with system(3).
Status RunEditor(const std::string& editor, const std::string& file) {
  struct sigaction ignore {
  }, old_int{}, old_quit{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);
  pid_t pid = fork();
  if (pid == 0) {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    std::string script = editor + " \"$@\"";
    execl("/bin/sh", "sh", "-c", script.c_str(), editor.c_str(), file.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  if (pid < 0) return Status::Io(std::string("cannot start the editor: ") + std::strerror(errno));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Status::Ok();
  std::string how = WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                      : "was killed by signal " + std::to_string(WTERMSIG(status));
  return Status::Internal("editor \"" + editor + "\" " + how);
}

// Asks on stderr and reads the answer from stdin, as crontab -e does. Enter means yes;
// end of input (no terminal, or Ctrl-D) means no.
bool AskEditAgain() {
  for (;;) {
    std::cerr << "edit again? [Y/n] " << std::flush;
    std::string answer;
    if (!std::getline(std::cin, answer)) {
      std::cerr << '\n';
      return false;
    }
    std::transform(answer.begin(), answer.end(), answer.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    answer.erase(std::remove_if(answer.begin(), answer.end(),
                                [](unsigned char c) { return std::isspace(c) != 0; }),
                 answer.end());
    if (answer.empty() || answer == "y" || answer == "yes") return true;
    if (answer == "n" || answer == "no") return false;
  }
}

// A temporary copy of the file, ending in .toml so editors colour it; removed on scope
// exit unless kept (it then holds the user's edits).
class TempCopy {
 public:
  ~TempCopy() {
    if (!path_.empty() && !keep_) unlink(path_.c_str());
  }
  Status Create(const std::string& text) {
    const char* dir = std::getenv("TMPDIR");
    path_ = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/jobctl-edit-XXXXXX.toml";
    int fd = mkstemps(path_.data(), 5);
    if (fd < 0) {
      std::string reason = std::strerror(errno);
      path_.clear();
      return Status::Io("cannot create a temporary file: " + reason);
    }
    close(fd);
    return WriteFileAtomically(path_, text);
  }
  const std::string& path() const { return path_; }
  void Keep() { keep_ = true; }

 private:
  std::string path_;
  bool keep_ = false;
};

int RunEdit(const EditOptions& opt, const GlobalOptions& g) {
  const std::string path = opt.file.empty() ? g.file : opt.file;
  Result<std::string> original = ReadJobFile(path);
  if (!original.ok()) return Fail("edit", path, original.status(), kExitNoInput);
  TempCopy copy;
  if (Status s = copy.Create(*original); !s.ok()) return Fail("edit", path, s, kExitCantCreate);
  const std::string editor = EditorCommand();
  std::string edited;
  for (;;) {
    if (Status s = RunEditor(editor, copy.path()); !s.ok()) {
      return Fail("edit", path, Status::Internal(s.message() + "; nothing was changed"),
                  kExitFailed);
    }
    Result<std::string> text = ReadFileText(copy.path());
    if (!text.ok()) return Fail("edit", path, text.status(), kExitNoInput);
    edited = std::move(*text);
    if (edited == *original) {
      std::cerr << "jobctl: edit " << path << ": no changes\n";
      return kExitOk;
    }
    JobFileResult parsed = ParseJobFile(edited, path);
    if (parsed.ok()) break;
    for (const Diagnostic& d : parsed.errors)
      std::cerr << Shown(d.ToString(), STDERR_FILENO) << '\n';
    std::cerr << "jobctl: edit " << path << ": " << parsed.errors.size()
              << (parsed.errors.size() == 1 ? " error" : " errors") << '\n';
    if (!AskEditAgain()) {
      return Fail("edit", path, Status::InvalidArgument("nothing was changed"), kExitDataErr);
    }
  }
  // Someone (a pull, another edit) may have written the file meanwhile: do not lose either.
  Result<std::string> now = ReadJobFile(path);
  if (!now.ok() || *now != *original) {
    copy.Keep();
    return Fail("edit", path,
                Status::Conflict("the file changed while you were editing it; your version is "
                                 "in " +
                                 copy.path() + " (nothing was written)"),
                kExitTempFail);
  }
  return Commit("edit", path, path, edited, "wrote " + path,
                opt.no_apply ? AfterWrite::kNoApply : AfterWrite::kApply, g);
}

}  // namespace

void RegisterEdit(CLI::App& app, GlobalOptions& g, int* rc) {
  auto add = std::make_shared<AddOptions>();
  auto* a = app.add_subcommand("add", "Add a job to the job file and apply it");
  a->add_option("name", add->name, "Job name: [a-z0-9][a-z0-9._-]*")->required();
  a->add_option("--schedule", add->schedule, "When it runs: '15 2 * * *', '@daily', '@every 5m'")
      ->required();
  a->add_option("--shards", add->shards, "Split each run into N shards (default 1)")
      ->check(CLI::Range(1, 10000));
  // One value per occurrence, so that `--on role=web /bin/true` leaves the command alone.
  a->add_option("--on", add->on, "Only agents with this label, k=v or k!=v (repeatable)")
      ->allow_extra_args(false);
  a->add_option("--timeout", add->timeout, "Kill a shard that runs longer, e.g. 30m");
  a->add_option("--run-as", add->run_as, "Run as this user (default: the agent's user)");
  a->add_option("--timezone", add->timezone, "IANA time zone of the schedule (default UTC)");
  a->add_option("--dialect", add->dialect, "Schedule dialect: cron (default) or quartz")
      ->check(CLI::IsMember({"cron", "quartz"}));
  a->add_option("--description", add->description, "Shown in jobctl show");
  a->add_option("--env", add->env, "Environment variable NAME=value (repeatable)")
      ->allow_extra_args(false);
  a->add_option("--shell", add->shell, "Run this with /bin/sh -c instead of a command after --");
  a->add_flag("--no-apply", add->no_apply, "Only change the file");
  a->add_option("command", add->command, "The command and its arguments, after --");
  a->footer(
      "Examples:\n"
      "  jobctl add nightly-backup --schedule '15 2 * * *' --timeout 2h -- /usr/local/bin/backup "
      "--full\n"
      "  jobctl add rotate --schedule @hourly --on role=web --shell 'logrotate /etc/app.conf'\n"
      "The job is appended to the job file (--file, default ./jobs.toml); everything else in\n"
      "the file stays as it was. Exit status: 0 added (and applied), 64 usage, 65 invalid job\n"
      "or a job of that name exists, 69 coordinator unreachable (the file was written).");
  a->callback([add, &g, rc] { *rc = RunAdd(*add, g); });

  auto rm = std::make_shared<RmOptions>();
  auto* r = app.add_subcommand("rm", "Remove a job or flow from the job file and apply it");
  r->add_option("name", rm->name, "Job or flow name")->required();
  r->add_flag("--no-apply", rm->no_apply, "Only change the file");
  r->footer(
      "Example:\n"
      "  jobctl rm nightly-backup\n"
      "Removes the job's [[job]] table (or the flow's [[flow]] with its [[flow.step]]s) and\n"
      "the comments just above it; everything else in the file stays as it was. A job a\n"
      "step names is not removed: the file would no longer be valid.\n"
      "Exit status: 0 removed (and applied), 65 no such job or flow, or the file would be\n"
      "invalid.");
  r->callback([rm, &g, rc] { *rc = RunRm(*rm, g); });

  auto edit = std::make_shared<EditOptions>();
  auto* e =
      app.add_subcommand("edit", "Edit the job file in $VISUAL or $EDITOR, check it, apply it");
  e->add_option("file", edit->file, "Job file (default --file / JOBCTL_FILE / ./jobs.toml)");
  e->add_flag("--no-apply", edit->no_apply, "Only change the file");
  e->footer(
      "Example:\n"
      "  EDITOR=nano jobctl edit\n"
      "Like crontab -e: a copy is opened in $VISUAL, else $EDITOR, else vi; when the saved copy\n"
      "has errors they are listed and you are asked whether to edit again. Exit status: 0\n"
      "written (or no changes), 65 errors left and not edited again, 75 the file changed\n"
      "meanwhile (your copy is kept), 1 the editor failed.");
  e->callback([edit, &g, rc] { *rc = RunEdit(*edit, g); });
}

}  // namespace jobctl::cli
