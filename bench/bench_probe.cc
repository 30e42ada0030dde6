// bench_probe is the job the agent benchmark runs.
//   bench_probe stamp FILE        appends "JOB_NAME JOB_SCHEDULED_AT now_us\n" to FILE (one
//                                 write, O_APPEND): when the child started, by the wall clock
//   bench_probe write BYTES SEED  writes BYTES of a seeded pseudo-random stream to stdout
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/probe_stream.h"

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "stamp" && argc == 3) {
    int64_t now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    const char* job = std::getenv("JOB_NAME");
    const char* at = std::getenv("JOB_SCHEDULED_AT");
    std::string line = std::string(job ? job : "?") + " " + (at ? at : "?") + " " +
                       std::to_string(now_us) + "\n";
    int fd = ::open(argv[2], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || ::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) return 1;
    return ::close(fd) == 0 ? 0 : 1;
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
  std::fprintf(stderr, "usage: bench_probe stamp FILE | bench_probe write BYTES SEED\n");
  return 64;
}
