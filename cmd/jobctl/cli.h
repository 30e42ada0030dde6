// What every jobctl subcommand shares: the global options (resolved flags > env > config
// file), printing of errors in the one "jobctl: verb object: message" form, and the
// Register<Verb> functions main() calls once each. Subcommands live in cmd_<topic>.cc, one
// file per group of related verbs (cmd_runs.cc: trigger, runs, logs, cancel and retry).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>

#include "base/status.h"

namespace jobctl::cli {

enum class OutputFormat { kTable, kJson };

struct GlobalOptions {
  std::string coordinator;  // --coordinator / JOBCTL_COORDINATOR
  std::string token;        // --token / JOBCTL_TOKEN
  std::string token_file;   // --token-file
  std::string file;         // --file / JOBCTL_FILE, default ./jobs.toml
  std::string ca_file;      // --ca-file / JOBCTL_CA_FILE: CA of an https:// coordinator
  std::string client_cert;  // --client-cert / JOBCTL_CLIENT_CERT: for a coordinator with mTLS
  std::string client_key;   // --client-key / JOBCTL_CLIENT_KEY
  std::string output = "table";
  bool no_color = false;
  OutputFormat format() const {
    return output == "json" ? OutputFormat::kJson : OutputFormat::kTable;
  }
};

// Prints "jobctl: <verb> <object>: <message>" on stderr and returns the exit code for it.
int Fail(std::string_view verb, std::string_view object, const Status& status);
int Fail(std::string_view verb, std::string_view object, const Status& status, int exit_code);

// Prints "jobctl: warning: <message>" on stderr.
void Warn(std::string_view message);

// Reads a whole file ("-" = stdin). kIo with the OS reason when it cannot.
Result<std::string> ReadFileText(const std::string& path);

void RegisterSchedule(CLI::App& app, GlobalOptions& g, int* rc);
void RegisterValidate(CLI::App& app, GlobalOptions& g, int* rc);
void RegisterVersion(CLI::App& app, GlobalOptions& g, int* rc);
void RegisterServe(CLI::App& app, GlobalOptions& g, int* rc);
void RegisterBackup(CLI::App& app, GlobalOptions& g, int* rc);
void RegisterStore(CLI::App& app, GlobalOptions& g, int* rc);  // store copy, store stats
void RegisterSync(CLI::App& app, GlobalOptions& g, int* rc);
void RegisterJobs(CLI::App& app, GlobalOptions& g, int* rc);
void RegisterRuns(CLI::App& app, GlobalOptions& g, int* rc);
void RegisterAdmin(CLI::App& app, GlobalOptions& g, int* rc);
void RegisterAudit(CLI::App& app, GlobalOptions& g, int* rc);       // audit
void RegisterNotify(CLI::App& app, GlobalOptions& g, int* rc);      // notifications, notify test
void RegisterEdit(CLI::App& app, GlobalOptions& g, int* rc);        // add, rm, edit
void RegisterImport(CLI::App& app, GlobalOptions& g, int* rc);      // import-crontab
void RegisterCompletion(CLI::App& app, GlobalOptions& g, int* rc);  // completion bash|zsh|fish

// What `jobctl apply` does (validate locally, send with the recorded base revision, print
// the changes); add, rm and edit call it after writing the file. Returns the exit code.
int ApplyFile(const std::string& path, const GlobalOptions& g, bool force);

}  // namespace jobctl::cli
