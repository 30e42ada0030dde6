// For agentd's tests: whether a process that is not the caller's child has ended.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cstdio>
#include <string>

namespace jobctl::agentd::testing {

// Gone, or a zombie nobody has reaped yet (its parent was killed).
inline bool ProcessGone(pid_t pid) {
  if (kill(pid, 0) != 0) return true;
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (f == nullptr) return true;
  char buf[512] = {};
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  std::string stat(buf, n);
  size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
}

}  // namespace jobctl::agentd::testing
