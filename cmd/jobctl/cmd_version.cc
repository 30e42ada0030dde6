// jobctl version: the version of this binary (and, once connected, of the coordinator).
#include <iostream>

#include "base/version.h"
#include "cli.h"
#include "exit_codes.h"

namespace jobctl::cli {

void RegisterVersion(CLI::App& app, GlobalOptions& /*g*/, int* rc) {
  auto* sub = app.add_subcommand("version", "Print the version of jobctl");
  sub->callback([rc] {
    std::cout << "jobctl " << kVersion << '\n';
    *rc = kExitOk;
  });
}

}  // namespace jobctl::cli
