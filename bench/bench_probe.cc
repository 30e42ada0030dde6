// bench_probe is the job the agent benchmark runs.
//   bench_probe stamp FILE        appends "JOB_NAME JOB_SCHEDULED_AT now_us\n" to FILE (one
//                                 write, O_APPEND): when the child started, by the wall clock
//   bench_probe write BYTES SEED  writes BYTES of a seeded pseudo-random stream to stdout
//   bench_probe peer FILE         appends "i scheduled_ms now_us\n" for a job named s<i>: the
//                                 record format of the peer scheduler benchmark
//   bench_probe step FILE         appends "JOB_FLOW_RUN_ID JOB_STEP now_us\n": when a flow's
//                                 step started (flow_bench)
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "bench/probe_stream.h"

namespace {

int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// One write with O_APPEND: lines from concurrent children never interleave. The exit code.
int AppendLine(const char* path, const std::string& line) {
  int fd = ::open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0 || ::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
    return 1;
  return ::close(fd) == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "stamp" && argc == 3) {
    int64_t now_us = NowUs();
    const char* job = std::getenv("JOB_NAME");
    const char* at = std::getenv("JOB_SCHEDULED_AT");
    std::string line =
        std::string(job ? job : "?") + " " + (at ? at : "?") + " " + std::to_string(now_us) + "\n";
    return AppendLine(argv[2], line);
  }
  if (mode == "step" && argc == 3) {
    int64_t now_us = NowUs();
    const char* run = std::getenv("JOB_FLOW_RUN_ID");
    const char* step = std::getenv("JOB_STEP");
    return AppendLine(argv[2], std::string(run ? run : "?") + " " + (step ? step : "?") + " " +
                                   std::to_string(now_us) + "\n");
  }
  if (mode == "peer" && argc == 3) {
    int64_t now_us = NowUs();
    const char* job = std::getenv("JOB_NAME");
    const char* at = std::getenv("JOB_SCHEDULED_AT");  // 2026-11-22T10:00:07.250Z (UTC)
    std::tm tm{};
    int ms = 0;
    if (job == nullptr || job[0] != 's' || at == nullptr ||
        std::sscanf(at, "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                    &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6) {
      return 65;
    }
    if (std::strlen(at) > 20 && at[19] == '.') ms = std::atoi(at + 20);
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    int64_t scheduled_ms = static_cast<int64_t>(timegm(&tm)) * 1000 + ms;
    std::string line = std::string(job + 1) + " " + std::to_string(scheduled_ms) + " " +
                       std::to_string(now_us) + "\n";
    return AppendLine(argv[2], line);
  }
  if (mode == "write" && argc == 4) {
    int64_t left = std::atoll(argv[2]);
    jobctl::bench::ProbeStream stream(std::strtoull(argv[3], nullptr, 10));
    std::vector<char> buf(64 << 10);
    while (left > 0) {
      size_t n = static_cast<size_t>(std::min<int64_t>(left, static_cast<int64_t>(buf.size())));
      stream.Fill(buf.data(), n);
      for (size_t off = 0; off < n;) {
        ssize_t w = ::write(1, buf.data() + off, n - off);
        if (w <= 0) return 1;
        off += static_cast<size_t>(w);
      }
      left -= static_cast<int64_t>(n);
    }
    return 0;
  }
  std::fprintf(
      stderr,
      "usage: bench_probe stamp FILE | bench_probe write BYTES SEED | bench_probe peer FILE\n");
  return 64;
}
