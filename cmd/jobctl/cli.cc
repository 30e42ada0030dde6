#include "cli.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "exit_codes.h"
#include "output.h"

namespace jobctl::cli {

int Fail(std::string_view verb, std::string_view object, const Status& status) {
  return Fail(verb, object, status, ExitCodeFor(status));
}

int Fail(std::string_view verb, std::string_view object, const Status& status, int exit_code) {
  // The message may quote the coordinator, and through it what agents and other users sent.
  std::string line(verb);
  if (!object.empty()) line += " " + std::string(object);
  std::cerr << "jobctl: " << Shown(line + ": " + status.message(), STDERR_FILENO) << '\n';
  return exit_code;
}

void Warn(std::string_view message) {
  std::cerr << "jobctl: warning: " << Shown(message, STDERR_FILENO) << '\n';
}

Result<std::string> ReadFileText(const std::string& path) {
  if (path == "-") {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    return ss.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Io("cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::Io("cannot read " + path + ": " + std::strerror(errno));
  return ss.str();
}

}  // namespace jobctl::cli
