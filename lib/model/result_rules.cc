#include "model/result_rules.h"

namespace jobctl {
namespace {

constexpr Fact Y = Fact::kYes, N = Fact::kNo, _ = Fact::kAny;

// First match wins. Columns: run_open, holder_ended, lease_held, ended_by_result, answered,
// current_attempt.
constexpr ResultRule kResultRules[] = {
    // The holder of a shard that ended (a repeat, or a report after a cancel): its lease ends.
    {_, Y, Y, _, _, _, ResultVerdict::kReleaseAndAnswerEnded},
    // A repeat of the result that ended the shard, its lease already released.
    {_, Y, N, Y, _, _, ResultVerdict::kAnswerEnded},
    // A repeat of a result taken for an attempt that was retried (or re-run) since.
    {Y, _, _, _, Y, _, ResultVerdict::kAnswerAgain},
    // From no live lease: expired, ended, another agent's, or a token never granted.
    {_, _, N, _, _, _, ResultVerdict::kRefuseStale},
    {N, _, Y, _, _, _, ResultVerdict::kRefuseRunEnded},
    {Y, _, Y, _, N, N, ResultVerdict::kRefuseWrongAttempt},
    {Y, _, Y, _, N, Y, ResultVerdict::kAccept},
};

bool Matches(Fact f, bool value) { return f == Fact::kAny || (f == Fact::kYes) == value; }

bool Matches(const ResultRule& r, const ResultFacts& f) {
  return Matches(r.run_open, f.run_open) && Matches(r.holder_ended, f.holder_ended) &&
         Matches(r.lease_held, f.lease_held) && Matches(r.ended_by_result, f.ended_by_result) &&
         Matches(r.answered, f.answered) && Matches(r.current_attempt, f.current_attempt);
}

}  // namespace

RunState ResultState(Outcome outcome, std::optional<int64_t> exit_code) {
  switch (outcome) {
    case Outcome::kExited:
      return exit_code.value_or(1) == 0 ? RunState::kSucceeded : RunState::kFailed;
    case Outcome::kTimedOut: return RunState::kTimedOut;
    case Outcome::kCanceled: return RunState::kCanceled;
    case Outcome::kLeaseLost: return RunState::kLost;
    case Outcome::kSignaled:
    case Outcome::kOutOfMemory:
    case Outcome::kPolicy:
    case Outcome::kSpawnFailed:
    case Outcome::kBadOutput: return RunState::kFailed;
  }
  return RunState::kFailed;
}

bool Retryable(Outcome o) {
  return o == Outcome::kExited || o == Outcome::kSignaled || o == Outcome::kTimedOut ||
         o == Outcome::kSpawnFailed || o == Outcome::kOutOfMemory;
}

bool EndedByResultOf(const ShardRecord& s, int64_t token) {
  return s.token == token && IsTerminal(s.state) && !s.outcome.empty() &&
         s.outcome != OutcomeName(Outcome::kLeaseLost);
}

std::string_view ResultVerdictName(ResultVerdict v) {
  switch (v) {
    case ResultVerdict::kReleaseAndAnswerEnded: return "release-and-answer-ended";
    case ResultVerdict::kAnswerEnded: return "answer-ended";
    case ResultVerdict::kAnswerAgain: return "answer-again";
    case ResultVerdict::kRefuseStale: return "refuse-stale";
    case ResultVerdict::kRefuseRunEnded: return "refuse-run-ended";
    case ResultVerdict::kRefuseWrongAttempt: return "refuse-wrong-attempt";
    case ResultVerdict::kAccept: return "accept";
  }
  return "?";
}

std::span<const ResultRule> ResultRules() { return kResultRules; }

ResultVerdict JudgeResult(const ResultFacts& facts) {
  for (const ResultRule& r : kResultRules) {
    if (Matches(r, facts)) return r.verdict;
  }
  return ResultVerdict::kRefuseStale;  // unreachable: the last rows cover every combination
}

ResultDisposition DisposeResult(Outcome outcome, std::optional<int64_t> exit_code,
                                const ShardRecord& shard, const Job& spec) {
  RunState state = ResultState(outcome, exit_code);
  if (outcome == Outcome::kLeaseLost) {
    bool rerun = spec.on_lost == OnLost::kRerun && shard.lost_count < kMaxLostReruns;
    return {rerun ? ResultAction::kRerunLost : ResultAction::kEnd, RunState::kLost};
  }
  if (state != RunState::kSucceeded && Retryable(outcome) && shard.attempt <= spec.retry.max) {
    return {ResultAction::kRetry, state};
  }
  return {ResultAction::kEnd, state};
}

}  // namespace jobctl
