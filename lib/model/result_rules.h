// The result rule: what the coordinator does with an agent's report that an attempt of a
// shard ended. Two steps, both pure:
//
// JudgeResult: whether the report is taken at all, from a few facts about the shard and its
// lease, by the table kResultRules (first matching row wins). A report is taken only from
// the agent holding the shard's live lease under the reported token, for the attempt that is
// running; a repeat of a result already taken gets the answer it got the first time, so an
// agent that lost the reply can send it again; anything else is refused, and a report from
// no live lease is counted as a stale token.
//
// DisposeResult: what a taken result does to the shard: re-run it after a lost lease
// (on_lost = rerun, at most kMaxLostReruns times), retry it after a retryable failure while
// the job's retry.max allows, or end it in the state the outcome maps to.
//
// RunBook::OnResult gathers the facts, applies the verdict and the disposition. Any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "model/job.h"
#include "model/run.h"

namespace jobctl {

// A shard whose holder keeps vanishing is not re-run forever.
inline constexpr int kMaxLostReruns = 5;

// The state an attempt's outcome ends a shard in: exited 0 succeeded, another exit code (or
// none) failed, timed_out, canceled and lease_lost their own states, the rest failed.
RunState ResultState(Outcome outcome, std::optional<int64_t> exit_code);
// Whether a failure with this outcome may be retried (retry.max): a run that exited, was
// signaled, timed out or could not be spawned; not a refusal by the agent's policy, nor a
// cancel or a lost lease (on_lost says what those do).
bool Retryable(Outcome outcome);
// The shard ended with the result this token's holder reported (or the coordinator's
// timeout backstop stood in for it), so a repeat of that result gets the same answer. An
// expired lease leaves the outcome "lease_lost", and a canceled shard never reported has
// none: neither is a result, and a late report for them is refused as stale.
bool EndedByResultOf(const ShardRecord& shard, int64_t token);

// What is known when a report comes in; every field is about this report's shard, token
// and agent.
struct ResultFacts {
  bool run_open = false;  // the run is open (else it has finished)
  // The shard is in a terminal state with this token and this agent as its last holder.
  bool holder_ended = false;
  bool lease_held = false;       // this agent holds a live lease on the shard under this token
  bool ended_by_result = false;  // EndedByResultOf(shard, token)
  // Open run only: the shard's last taken result came with this token from this agent (the
  // attempt may have been retried since).
  bool answered = false;
  bool current_attempt = false;  // the report's attempt is the shard's and the shard is running
};

enum class ResultVerdict {
  kReleaseAndAnswerEnded,  // the holder of an ended shard: its lease ends; answer the state
  kAnswerEnded,            // a repeat of the result that ended the shard: its state again
  kAnswerAgain,            // a repeat of a taken result: the answer it got
  kRefuseStale,            // no live lease under this token for this agent (counted stale)
  kRefuseRunEnded,         // a live lease, but the run has ended
  kRefuseWrongAttempt,     // a live lease, but another attempt runs or the shard is not running
  kAccept,                 // take it: DisposeResult says what it does
};
std::string_view ResultVerdictName(ResultVerdict v);

// One row of the table: kAny matches either value of a fact.
enum class Fact : uint8_t { kAny, kYes, kNo };
struct ResultRule {
  Fact run_open, holder_ended, lease_held, ended_by_result, answered, current_attempt;
  ResultVerdict verdict;
};
std::span<const ResultRule> ResultRules();
// The first row matching `facts` (the table covers every combination).
ResultVerdict JudgeResult(const ResultFacts& facts);

enum class ResultAction {
  kRerunLost,  // the lease was lost: pending again at once, lost_count + 1
  kRetry,      // a retryable failure within retry.max: pending again after the retry delay
  kEnd,        // the shard ends in `state`
};
struct ResultDisposition {
  ResultAction action = ResultAction::kEnd;
  RunState state = RunState::kFailed;  // the outcome's state: the answer, and the end state
};
// `shard` is the shard before the result is applied (its attempt and lost_count).
ResultDisposition DisposeResult(Outcome outcome, std::optional<int64_t> exit_code,
                                const ShardRecord& shard, const Job& spec);

}  // namespace jobctl
