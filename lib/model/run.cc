#include "model/run.h"

#include <algorithm>

#include "base/enum_names.h"

namespace jobctl {
namespace {

constexpr EnumNames<RunReason, 4> kReasons{{{RunReason::kSchedule, "schedule"},
                                            {RunReason::kManual, "manual"},
                                            {RunReason::kRetry, "retry"},
                                            {RunReason::kFlow, "flow"}}};
constexpr EnumNames<RunState, 8> kStates{{
    {RunState::kPending, "pending"},
    {RunState::kRunning, "running"},
    {RunState::kSucceeded, "succeeded"},
    {RunState::kFailed, "failed"},
    {RunState::kTimedOut, "timed_out"},
    {RunState::kCanceled, "canceled"},
    {RunState::kSkipped, "skipped"},
    {RunState::kLost, "lost"},
}};
constexpr EnumNames<Outcome, 9> kOutcomes{{
    {Outcome::kExited, "exited"},
    {Outcome::kSignaled, "signaled"},
    {Outcome::kTimedOut, "timeout"},
    {Outcome::kLeaseLost, "lease_lost"},
    {Outcome::kCanceled, "canceled"},
    {Outcome::kPolicy, "policy"},
    {Outcome::kSpawnFailed, "spawn_failed"},
    {Outcome::kBadOutput, "bad_output"},
    {Outcome::kOutOfMemory, "out_of_memory"},
}};

// Higher is worse; decides a finished run's state from its shards.
int Severity(RunState s) {
  switch (s) {
    case RunState::kFailed: return 4;
    case RunState::kTimedOut: return 3;
    case RunState::kCanceled: return 2;
    case RunState::kLost: return 1;
    default: return 0;
  }
}

}  // namespace

std::string_view RunReasonName(RunReason r) { return NameOf(kReasons, r); }
std::optional<RunReason> ParseRunReason(std::string_view s) { return ValueOf(kReasons, s); }
std::string_view RunStateName(RunState s) { return NameOf(kStates, s); }
std::optional<RunState> ParseRunState(std::string_view s) { return ValueOf(kStates, s); }
std::string_view OutcomeName(Outcome o) { return NameOf(kOutcomes, o); }
std::optional<Outcome> ParseOutcome(std::string_view s) { return ValueOf(kOutcomes, s); }

bool IsTerminal(RunState s) { return s != RunState::kPending && s != RunState::kRunning; }

RunState DeriveRunState(const std::vector<ShardRecord>& shards) {
  bool any_open = false, any_started = false;
  RunState worst = RunState::kSucceeded;
  for (const ShardRecord& s : shards) {
    if (!IsTerminal(s.state)) {
      any_open = true;
      if (s.state == RunState::kRunning || s.attempt > 1) any_started = true;
      continue;
    }
    // A kept shard ran in the retried run: alone, it does not make this one running.
    if (s.outcome != kKeptOutcome) any_started = true;
    if (Severity(s.state) > Severity(worst)) worst = s.state;
  }
  if (any_open) return any_started ? RunState::kRunning : RunState::kPending;
  return worst;
}

int64_t RunDurationMs(const RunRecord& run) {
  std::optional<int64_t> first;
  for (const ShardRecord& s : run.shards) {
    if (s.outcome == kKeptOutcome) continue;
    if (s.started_ms && (!first || *s.started_ms < *first)) first = s.started_ms;
  }
  if (!first || !run.finished_ms) return 0;
  return std::max<int64_t>(*run.finished_ms - *first, 0);
}

}  // namespace jobctl
