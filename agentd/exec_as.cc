#include "exec_as.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/fd_io.h"

namespace jobctl::agentd {
namespace {

constexpr int kSetupFailed = 126;
constexpr int kNotFound = 127;

int Fail(const std::string& what) {
  std::fprintf(stderr, "agentd: %s\n", what.c_str());
  return kSetupFailed;
}

std::string Errno(const char* call) { return std::string(call) + ": " + std::strerror(errno); }

// More than execve could ever take (ARG_MAX counts argv and environment together).
constexpr size_t kMaxInput = 8 << 20;

// The job's environment from descriptor 3: "K=V\0" entries. Nothing of it is applied before
// the user switch.
bool ReadJobEnv(std::vector<std::string>* env, std::string* error) {
  std::string data;
  if (int e = ReadToEnd(kInputFd, &data, kMaxInput); e != 0) {
    errno = e;
    *error = Errno("reading the job's environment from descriptor 3");
    return false;
  }
  if (data.size() > kMaxInput) {
    *error = "the job's environment is over 8 MiB";
    return false;
  }
  close(kInputFd);
  for (size_t start = 0; start < data.size();) {
    size_t end = data.find('\0', start);
    if (end == std::string::npos) end = data.size();
    std::string entry = data.substr(start, end - start);
    if (entry.find('=') == std::string::npos || entry[0] == '=') {
      *error = "malformed environment entry on descriptor 3";
      return false;
    }
    env->push_back(std::move(entry));
    start = end + 1;
  }
  return true;
}

}  // namespace

int ExecAsMain(int argc, char** argv) {
  if (argc < 5) return Fail("usage: agentd --exec-as USER [--cwd DIR] -- PROGRAM [ARGS...]");
  std::string user = argv[2];
  std::string cwd;
  int i = 3;
  if (std::string(argv[i]) == "--cwd" && i + 1 < argc) {
    cwd = argv[i + 1];
    i += 2;
  }
  if (i >= argc || std::string(argv[i]) != "--" || i + 1 >= argc) {
    return Fail("usage: agentd --exec-as USER [--cwd DIR] -- PROGRAM [ARGS...]");
  }
  char** program = argv + i + 1;

  std::vector<std::string> job_env;
  std::string error;
  if (!ReadJobEnv(&job_env, &error)) return Fail("run_as " + user + ": " + error);

  errno = 0;
  passwd* pw = getpwnam(user.c_str());
  if (pw == nullptr) return Fail("run_as " + user + ": no such user");
  uid_t uid = pw->pw_uid;
  gid_t gid = pw->pw_gid;
  if (initgroups(user.c_str(), gid) != 0)
    return Fail("run_as " + user + ": " + Errno("initgroups"));
  if (setgid(gid) != 0) return Fail("run_as " + user + ": " + Errno("setgid"));
  if (setuid(uid) != 0) return Fail("run_as " + user + ": " + Errno("setuid"));
  // Paranoia, as su and cron do: a non-root user must not be able to get root back.
  if (uid != 0 && (setuid(0) == 0 || getuid() != uid || geteuid() != uid)) {
    return Fail("run_as " + user + ": privileges were not dropped");
  }
  if (!cwd.empty() && chdir(cwd.c_str()) != 0) {
    return Fail("run_as " + user + ": cannot enter " + cwd + ": " + std::strerror(errno));
  }
  // Only now, as the user, the job's environment: execvp looks the program up in its PATH.
  std::vector<char*> envp;
  for (std::string& e : job_env) envp.push_back(e.data());
  envp.push_back(nullptr);
  environ = envp.data();
  execvp(program[0], program);
  int err = errno;
  std::fprintf(stderr, "agentd: cannot run %s: %s\n", program[0], std::strerror(err));
  return err == ENOENT ? kNotFound : kSetupFailed;
}

}  // namespace jobctl::agentd
