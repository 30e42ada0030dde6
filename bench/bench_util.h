// What the drivers of the real binaries (coordinator_bench, agent_bench) share: /proc
// samples of a process, percentiles, flags, and an exit that names the error.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace jobctl::bench {

using Clock = std::chrono::steady_clock;

inline double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

inline int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Resident memory and CPU of one process, from /proc.
struct ProcSample {
  double rss_mib = 0;
  double hwm_mib = 0;  // peak RSS
  double cpu_s = 0;    // user + system
};

inline ProcSample Sample(pid_t pid) {
  ProcSample s;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("VmRSS:")) s.rss_mib = std::stod(line.substr(6)) / 1024;
    if (line.starts_with("VmHWM:")) s.hwm_mib = std::stod(line.substr(6)) / 1024;
  }
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::istringstream rest(text.substr(text.rfind(')') + 2));
  std::vector<std::string> fields{std::istream_iterator<std::string>(rest), {}};
  // After "pid (comm) ": state is field 0, utime 11, stime 12.
  s.cpu_s =
      (std::stod(fields[11]) + std::stod(fields[12])) / static_cast<double>(sysconf(_SC_CLK_TCK));
  return s;
}

// Nearest rank; 0 for no values.
inline double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

// "10,100,500" -> {10, 100, 500}
inline std::vector<int> ParseList(const std::string& s) {
  std::vector<int> out;
  std::istringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::stoi(item));
  return out;
}

// Reads "--flag value" pairs into `set`, which returns false for a flag it does not know.
// A flag without a value (--help), or an unknown one, prints the usage: false, exit 64.
inline bool ParseFlags(int argc, char** argv, const char* usage,
                       const std::function<bool(const std::string&, const std::string&)>& set) {
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc || !set(argv[i], argv[i + 1])) {
      std::fprintf(stderr, "usage: %s %s\n", argv[0], usage);
      return false;
    }
  }
  return true;
}

// Call first in main(): the benchmark leads its own process group, and an uncaught exception
// prints its message and kills the group, so the servers it started do not outlive it.
inline void ExitOnUncaught() {
  setpgid(0, 0);
  std::set_terminate([] {
    try {
      if (auto e = std::current_exception()) std::rethrow_exception(e);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "benchmark stopped: %s\n", e.what());
    }
    std::fflush(nullptr);
    kill(0, SIGKILL);
    std::_Exit(1);
  });
}

}  // namespace jobctl::bench
