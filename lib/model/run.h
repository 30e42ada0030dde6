// Runs and shards: one firing of a job (a run) split into N parts (shards), each run by one
// agent as one subprocess, attempt after attempt. Value types and the pure rules that
// derive a run's state from its shards. Names match the API, SQL and CLI.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jobctl {

// kFlow: a step of a flow run (model/flow.h), started when its needs were met.
enum class RunReason { kSchedule, kManual, kRetry, kFlow };
enum class RunState {
  kPending,
  kRunning,
  kSucceeded,
  kFailed,
  kTimedOut,
  kCanceled,
  kSkipped,
  kLost
};
// A shard's state; its terminal states mirror the run's.
using ShardState = RunState;

std::string_view RunReasonName(RunReason r);
std::optional<RunReason> ParseRunReason(std::string_view s);
std::string_view RunStateName(RunState s);
std::optional<RunState> ParseRunState(std::string_view s);
bool IsTerminal(RunState s);

// The outcome of a shard a retry of failed shards copied from the retried run, where it had
// succeeded: it did not run in this run, so its times count for neither its start nor its
// duration.
inline constexpr std::string_view kKeptOutcome = "kept";

// How an attempt ended, as the agent reports it.
// kBadOutput: a flow step's process exited 0 but what it wrote to $JOB_OUTPUT does not read
// (model/step_output.h); the step failed, and running it again would not change that.
enum class Outcome {
  kExited,
  kSignaled,
  kTimedOut,
  kLeaseLost,
  kCanceled,
  kPolicy,
  kSpawnFailed,
  kBadOutput,
  // Killed by the kernel for going over the job's memory_max (the cgroup's oom_kill count).
  kOutOfMemory
};
std::string_view OutcomeName(Outcome o);
std::optional<Outcome> ParseOutcome(std::string_view s);

struct ShardRecord {
  int64_t run_id = 0;
  int index = 0;
  RunState state = RunState::kPending;
  int attempt = 1;
  std::string agent;  // holder of the current attempt, "" when pending
  int64_t token = 0;  // fencing token of the current attempt, 0 when pending
  std::optional<int64_t> exit_code;
  std::string outcome;  // last attempt's outcome name, "" while running
  std::string message;
  std::optional<int64_t> started_ms;
  std::optional<int64_t> finished_ms;
  int64_t not_before_ms = 0;  // retry backoff: not handed out before this (coordinator clock)
  int lost_count = 0;
  // A flow step's shard: what its last attempt wrote to $JOB_OUTPUT, as a JSON object of
  // strings (model/step_output.h); "" for none.
  std::string outputs_json;
  // What the last attempt's processes used, where its agent reported it: the largest
  // resident set one of them reached (bytes) and their CPU time, user and system (ms).
  std::optional<int64_t> peak_rss_bytes;
  std::optional<int64_t> cpu_ms;
};

struct RunRecord {
  int64_t id = 0;
  int64_t job_id = 0;
  std::string job;  // name
  RunReason reason = RunReason::kSchedule;
  int64_t scheduled_ms = 0;
  int64_t created_ms = 0;
  RunState state = RunState::kPending;
  std::string trace_id;  // 32 hex digits (W3C trace-context)
  std::string idempotency_key;
  std::string env_json;  // manual env overrides, a JSON object ("" = none)
  std::string note;      // why it was skipped, canceled, ...
  std::optional<int64_t> finished_ms;
  int shard_total = 1;
  // Its shards start no earlier (coordinator clock): the instant plus a jitter delay, or a
  // deferred manual run's time. 0 = at once.
  int64_t not_before_ms = 0;
  // Flows (model/flow.h). A step run names its flow run and its step's index in that flow
  // run's graph; no other run of that step of that flow run may exist. A flow run has no
  // shards: flow_json holds its graph, a step run's holds what it was started with.
  int64_t flow_run_id = 0;  // 0: not a step
  int flow_step = -1;       // -1: not a step
  std::string flow_json;    // "" for a plain run
  std::vector<ShardRecord> shards;
};

// The run's state from its shards: running while any shard is pending or running (and at
// least one started; a kept shard did not, in this run), else the worst terminal state (lost <
// canceled < timed_out < failed), succeeded only when every shard succeeded.
RunState DeriveRunState(const std::vector<ShardRecord>& shards);

// How long a finished run took: from its first shard's start to the run's end (ms); 0 when
// no shard started or it has not ended. As the store's LastResult reads it.
int64_t RunDurationMs(const RunRecord& run);

}  // namespace jobctl
