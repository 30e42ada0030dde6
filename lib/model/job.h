// Job is one [[job]] of jobs.toml after defaults are applied and every value is checked:
// what runs, when, where and how. A plain value type; the rules that use it live beside it
// (schedule.h for fires). Names are the same words as in the job file, the API and the man
// pages.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/duration.h"
#include "model/cron.h"
#include "model/env_rules.h"
#include "model/notify.h"
#include "model/schedule.h"

namespace jobctl {

// Which eligible agents get a run's shards.
enum class Route { kSpread, kRoundRobin, kRandom, kHash, kFailover, kBroadcast };
// What a fire does while the job's previous run is still active.
enum class Overlap { kForbid, kAllow, kReplace };
// What happens to instants missed while the coordinator was down or behind.
enum class Misfire { kFireOnce, kSkip, kFireAll };
// What happens to a shard whose agent lost its lease.
enum class OnLost { kRerun, kFail };
enum class Backoff { kExponential, kFixed };

std::string_view RouteName(Route r);
std::string_view OverlapName(Overlap o);
std::string_view MisfireName(Misfire m);
std::string_view OnLostName(OnLost o);
std::string_view BackoffName(Backoff b);
std::optional<Route> ParseRoute(std::string_view s);
std::optional<Overlap> ParseOverlap(std::string_view s);
std::optional<Misfire> ParseMisfire(std::string_view s);
std::optional<OnLost> ParseOnLost(std::string_view s);
std::optional<Backoff> ParseBackoff(std::string_view s);

struct RetryPolicy {
  int max = 0;  // retries after the first attempt
  Backoff backoff = Backoff::kExponential;
  Millis initial = std::chrono::seconds(10);
  Millis max_delay = std::chrono::minutes(5);
  bool operator==(const RetryPolicy&) const = default;
};

// One label requirement: key=value, or key!=value when `negated`.
struct LabelSelector {
  std::string key;
  std::string value;
  bool negated = false;
  bool operator==(const LabelSelector&) const = default;
};

// A shard's resource limits, enforced by agentd in the attempt's cgroup v2 (agentd(8),
// CGROUPS). Unset: no limit. Ranges: kMinMemoryMax..kMaxMemoryMax bytes, 1..kMaxCpuPercent
// percent of one CPU, 1..kMaxPids processes, io weight 1..10000.
struct ResourceLimits {
  std::optional<int64_t> memory_max_bytes;  // memory.max
  std::optional<int64_t> cpu_max_percent;   // cpu.max: 150 = one and a half CPUs
  std::optional<int64_t> pids_max;          // pids.max
  std::optional<int64_t> io_weight;         // io.weight
  bool empty() const { return !memory_max_bytes && !cpu_max_percent && !pids_max && !io_weight; }
  bool operator==(const ResourceLimits&) const = default;
};

inline constexpr int64_t kMinMemoryMax = int64_t{1} << 20;
inline constexpr int64_t kMaxMemoryMax = int64_t{1} << 40;
inline constexpr int64_t kMaxCpuPercent = 100'000;
inline constexpr int64_t kMaxPids = 4'194'304;
inline constexpr int64_t kMaxIoWeight = 10'000;

struct Job {
  std::string name;       // [a-z0-9][a-z0-9._-]*, unique in the file
  std::string schedule;   // as written; parsed by Schedule
  int64_t anchor_ms = 0;  // @every fires at anchor + k * period (Unix ms; 0 = the epoch)
  Dialect dialect = Dialect::kCron;
  std::string timezone;              // IANA; "" = UTC
  std::vector<std::string> command;  // argv; exactly one of command and shell is set
  std::string shell;                 // run with /bin/sh -c
  std::vector<LabelSelector> on;     // all must match an agent's labels
  int shards = 1;
  Route route = Route::kSpread;
  Overlap overlap = Overlap::kForbid;
  Misfire misfire = Misfire::kFireOnce;
  int misfire_cap = 100;  // fire-all: at most this many catch-up runs, the rest skipped
  OnLost on_lost = OnLost::kRerun;
  RetryPolicy retry;
  // Each scheduled fire's shards start after a random delay up to this (0 = none); the run
  // is created at the instant and records the delay. At most kMaxJitter.
  Millis jitter{0};
  std::optional<Millis> timeout;  // none = no limit
  // A dead-man's switch: the job is overdue once it has gone this long without a successful
  // run (model/health.h). None = no expectation. kMinExpectSuccessWithin to
  // kMaxExpectSuccessWithin.
  std::optional<Millis> expect_success_within;
  Millis kill_grace = std::chrono::seconds(10);
  // Output kept per run, in bytes (0: only the coordinator's log_cap, which applies too).
  int64_t log_cap_bytes = 0;
  std::string run_as;  // "" = the agent's own user
  std::string cwd;     // "" = run_as user's home (or the agent's state dir)
  ResourceLimits limits;
  std::map<std::string, std::string> env;
  std::map<std::string, Param> params;  // what a trigger may set (env_rules.h)
  // Variable -> file name in agentd's secrets_dir: values read on the host, never stored here.
  std::map<std::string, std::string> secrets;
  bool enabled = true;
  std::string description;
  NotifyPolicy notify;  // notify, notify_on, repeat_after

  bool operator==(const Job&) const = default;
};

constexpr Millis kMaxJitter = std::chrono::hours(24);
constexpr Millis kMinExpectSuccessWithin = std::chrono::minutes(1);
constexpr Millis kMaxExpectSuccessWithin = std::chrono::hours(24 * 366);

// A size as jobs.toml writes it: "10MiB", "512KiB", "1GiB", else bytes ("1000B").
std::string FormatSize(int64_t bytes);

// Job names: [a-z0-9][a-z0-9._-]*, at most 128 characters.
bool IsValidJobName(std::string_view name);

// run_as user names as Debian's useradd and adduser accept them, within POSIX's portable
// characters: [A-Za-z_][A-Za-z0-9._-]*, optionally ending in '$' (Samba machine accounts),
// at most 32 characters. So "www-data", "_apt" and "Debian-exim", not "/usr/bin/x" or "1000".
constexpr size_t kMaxUserNameLength = 32;
bool IsValidUserName(std::string_view name);

// What Schedule::Parse needs from a job; views into `job`, which must outlive the spec.
inline ScheduleSpec ScheduleSpecOf(const Job& job) {
  return {.expr = job.schedule,
          .dialect = job.dialect,
          .timezone = job.timezone,
          .hash_key = job.name,
          .anchor = FromUnixMs(job.anchor_ms)};
}

// A shard's environment beyond what agentd adds: the job's env, then each declared parameter's
// value for this run (`run_params`, a manual run's resolved values) or its default. Only names
// the job declares now and that env_rules.h allows pass: a run or job stored by an older
// version, or a run from before the job file dropped a parameter, brings nothing else.
std::map<std::string, std::string> ShardEnv(const Job& job,
                                            const std::map<std::string, std::string>& run_params);

}  // namespace jobctl
