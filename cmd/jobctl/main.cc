// jobctl: the command line of the distributed crontab. main() builds the command tree
// (one Register<Verb> per subcommand file), resolves the global options and maps errors to
// exit codes; the subcommands do the work.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <exception>
#include <iostream>

#include "base/version.h"
#include "cli.h"
#include "exit_codes.h"

namespace jobctl::cli {
namespace {

std::string EnvOr(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? std::string(v) : std::move(fallback);
}

int Main(int argc, char** argv) {
  CLI::App app{
      "jobctl: a distributed crontab. Keep jobs in jobs.toml, sync them to the "
      "coordinator, and see every run and every line it printed, on any host."};
  app.name("jobctl");
  app.set_version_flag("-V,--version", std::string("jobctl ") + kVersion);
  app.require_subcommand(1);
  app.fallthrough();
  GlobalOptions g;
  g.file = EnvOr("JOBCTL_FILE", "jobs.toml");
  app.add_option("--file", g.file, "Job file (env JOBCTL_FILE, default ./jobs.toml)");
  app.add_option("--coordinator", g.coordinator,
                 "Coordinator URL, or several separated by commas for coordinators sharing a "
                 "PostgreSQL store (env JOBCTL_COORDINATOR, default http://127.0.0.1:7070)");
  // A secret on the command line is in every user's `ps`: say so, once, and go on.
  app.add_option("--token", g.token,
                 "API token; visible to other users in ps: prefer --token-file or JOBCTL_TOKEN")
      ->each([](const std::string&) {
        Warn(
            "--token is visible to every user of this host (ps, /proc); use --token-file FILE "
            "or JOBCTL_TOKEN instead");
      });
  app.add_option("--token-file", g.token_file, "Read the API token from this file (first line)");
  app.add_option("--ca-file", g.ca_file,
                 "Trust this CA (PEM) for an https:// coordinator instead of the system's CAs "
                 "(env JOBCTL_CA_FILE)");
  app.add_option("--client-cert", g.client_cert,
                 "Client certificate (PEM) for a coordinator that requires one "
                 "(env JOBCTL_CLIENT_CERT)");
  app.add_option("--client-key", g.client_key,
                 "Key of --client-cert (PEM) (env JOBCTL_CLIENT_KEY)");
  app.add_option("-o,--output", g.output, "Output format: table or json")
      ->check(CLI::IsMember({"table", "json"}));
  app.add_flag("--no-color", g.no_color, "Never colour the output (also NO_COLOR=1)");
  app.footer(
      "Examples:\n"
      "  jobctl apply jobs.toml && jobctl list\n"
      "  jobctl trigger nightly-backup --wait --follow\n"
      "  jobctl validate jobs.toml\n"
      "  jobctl schedule next --tz Europe/Berlin -- '15 2 * * *'\n"
      "Run 'jobctl <command> --help' for the options of a command.");

  int rc = kExitOk;
  RegisterSchedule(app, g, &rc);
  RegisterValidate(app, g, &rc);
  RegisterVersion(app, g, &rc);
  RegisterSync(app, g, &rc);
  RegisterJobs(app, g, &rc);
  RegisterRuns(app, g, &rc);
  RegisterAdmin(app, g, &rc);
  RegisterAudit(app, g, &rc);
  RegisterNotify(app, g, &rc);
  RegisterServe(app, g, &rc);
  RegisterBackup(app, g, &rc);
  RegisterStore(app, g, &rc);
  RegisterEdit(app, g, &rc);
  RegisterImport(app, g, &rc);
  RegisterCompletion(app, g, &rc);
  // A bare `jobctl` shows the whole help, and an unknown command says so by name (CLI11 would
  // only say that a subcommand is required).
  if (argc < 2) {
    std::cerr << app.help();
    return kExitUsage;
  }
  auto known = [&app](std::string_view name) {
    for (const CLI::App* sub : app.get_subcommands({})) {
      if (sub->get_name() == name) return true;
    }
    return false;
  };
  if (argv[1][0] != '-' && !known(argv[1])) {
    std::cerr << "jobctl: unknown command \"" << argv[1] << "\" (see 'jobctl --help')\n";
    return kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  return rc;
}

}  // namespace
}  // namespace jobctl::cli

int main(int argc, char** argv) {
  try {
    return jobctl::cli::Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "jobctl: internal error: " << e.what() << '\n';
    return jobctl::cli::kExitSoftware;
  }
}
