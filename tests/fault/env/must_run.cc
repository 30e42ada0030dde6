#include "fault/env/must_run.h"

#include <stdexcept>

#include "testlib/subprocess.h"

namespace jobctl::testing {

void MustRun(const std::vector<std::string>& argv) {
  ProcessResult r = Run(argv);
  if (r.exit_code != 0) {
    std::string cmd;
    for (const std::string& a : argv) cmd += a + " ";
    throw std::runtime_error(cmd + "exited " + std::to_string(r.exit_code) + ": " + r.out + r.err);
  }
}

}  // namespace jobctl::testing
