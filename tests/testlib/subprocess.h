// Subprocess runs a real binary the way a user's shell would: argv, environment additions,
// stdin text, and captures stdout and stderr separately. For integration tests only.
// Run() blocks until the child exits or the timeout kills it (then exit_code is -9).
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace jobctl::testing {

struct ProcessResult {
  int exit_code = -1;  // the exit status, or -signal when killed by a signal
  std::string out;
  std::string err;
};

struct RunOptions {
  std::map<std::string, std::string> env = {};  // added to (or replacing in) the environment
  std::vector<std::string> unset_env = {};
  std::string stdin_text = {};
  std::string cwd = {};
  std::chrono::milliseconds timeout = std::chrono::seconds(60);
};

ProcessResult Run(const std::vector<std::string>& argv, const RunOptions& options = {});

// The whole file ("" when it cannot be read).
std::string ReadFile(const std::string& path);

// A fresh directory under $TMPDIR removed (recursively) when the object goes away.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string Write(const std::string& name, const std::string& text) const;  // returns path
  std::string Read(const std::string& name) const;

 private:
  std::string path_;
};

}  // namespace jobctl::testing
