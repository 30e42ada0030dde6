#include "exec_as.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace jobctl::agentd {
namespace {

constexpr int kSetupFailed = 126;
constexpr int kNotFound = 127;

int Fail(const std::string& what) {
  std::fprintf(stderr, "agentd: %s\n", what.c_str());
  return kSetupFailed;
}

std::string Errno(const char* call) { return std::string(call) + ": " + std::strerror(errno); }

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

  errno = 0;
  passwd* pw = getpwnam(user.c_str());
  if (pw == nullptr) return Fail("run_as " + user + ": no such user");
  uid_t uid = pw->pw_uid;
  gid_t gid = pw->pw_gid;
  if (initgroups(user.c_str(), gid) != 0) return Fail("run_as " + user + ": " + Errno("initgroups"));
  if (setgid(gid) != 0) return Fail("run_as " + user + ": " + Errno("setgid"));
  if (setuid(uid) != 0) return Fail("run_as " + user + ": " + Errno("setuid"));
  // Paranoia, as su and cron do: a non-root user must not be able to get root back.
  if (uid != 0 && (setuid(0) == 0 || getuid() != uid || geteuid() != uid)) {
    return Fail("run_as " + user + ": privileges were not dropped");
  }
  if (!cwd.empty() && chdir(cwd.c_str()) != 0) {
    return Fail("run_as " + user + ": cannot enter " + cwd + ": " + std::strerror(errno));
  }
  execvp(program[0], program);
  int err = errno;
  std::fprintf(stderr, "agentd: cannot run %s: %s\n", program[0], std::strerror(err));
  return err == ENOENT ? kNotFound : kSetupFailed;
}

}  // namespace jobctl::agentd
