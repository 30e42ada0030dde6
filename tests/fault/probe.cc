// probe: the job the fault tests schedule. Run by agentd as a shard's command, it records its
// start and its end (with the shard's identity from the JOB_* environment) to the event log
// named by PROBE_EVENT_LOG, prints ProbeOutput() line by line on stdout, and exits.
//
//   probe [--lines N] [--sleep-ms MS] [--exit CODE]
//
// The lines are spread over MS milliseconds. SIGTERM (agentd stopping the shard) is awaited,
// not handled: the sleeps are sigtimedwait() calls, so a SIGTERM is recorded as an "end"
// with signal 15 before the probe exits 143. Every line is one write(2), so what agentd
// reads is exactly what ProbeOutput() says, cut at a line boundary.
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/event_log.h"
#include "fault/probe_output.h"

namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

int64_t EnvInt(const char* name) { return std::strtoll(Env(name).c_str(), nullptr, 10); }

// Waits up to `ms` for SIGTERM; true when it came.
bool SleepUnlessTerminated(int64_t ms) {
  if (ms <= 0) return false;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  struct timespec left {
    ms / 1000, (ms % 1000) * 1'000'000
  };
  int64_t until = jobctl::MonotonicNs() + ms * 1'000'000;
  while (true) {
    if (sigtimedwait(&set, nullptr, &left) == SIGTERM) return true;
    int64_t rest = until - jobctl::MonotonicNs();
    if (rest <= 0) return false;
    left = {rest / 1'000'000'000, rest % 1'000'000'000};
  }
}

bool WriteAll(const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = ::write(1, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int lines = 20, exit_code = 0;
  int64_t sleep_ms = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    long v = std::strtol(argv[i + 1], nullptr, 10);
    if (flag == "--lines")
      lines = static_cast<int>(v);
    else if (flag == "--sleep-ms")
      sleep_ms = v;
    else if (flag == "--exit")
      exit_code = static_cast<int>(v);
    else
      return 64;
  }
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigprocmask(SIG_BLOCK, &term, nullptr);

  jobctl::EventLog events;
  if (!events.Open(Env("PROBE_EVENT_LOG"), "probe").ok()) return 70;
  const int64_t run = EnvInt("JOB_RUN_ID");
  const int shard = static_cast<int>(EnvInt("JOB_SHARD_INDEX"));
  const int attempt = static_cast<int>(EnvInt("JOB_ATTEMPT"));
  const int64_t token = EnvInt("JOB_FENCING_TOKEN");
  events.Write("start", {{"job", Env("JOB_NAME")},
                         {"run", run},
                         {"shard", shard},
                         {"attempt", attempt},
                         {"token", token},
                         {"scheduled_at", Env("JOB_SCHEDULED_AT")},
                         {"lines", lines},
                         {"sleep_ms", sleep_ms}});
  int64_t bytes = 0;
  for (int i = 0; i < lines; ++i) {
    std::string line = jobctl::fault::ProbeLine(run, shard, attempt, i, lines);
    if (!WriteAll(line)) break;
    bytes += static_cast<int64_t>(line.size());
    if (SleepUnlessTerminated(sleep_ms / std::max(lines, 1))) {
      events.Write("end", {{"run", run},
                           {"shard", shard},
                           {"attempt", attempt},
                           {"token", token},
                           {"bytes", bytes},
                           {"signal", SIGTERM}});
      return 128 + SIGTERM;
    }
  }
  events.Write("end", {{"run", run},
                       {"shard", shard},
                       {"attempt", attempt},
                       {"token", token},
                       {"bytes", bytes},
                       {"exit", exit_code}});
  return exit_code;
}
