// The result rule: which reports the coordinator takes, and what a taken result does. The
// rows name the situations the integration tests reach with real agents (a stale token, a
// repeat after a lost reply, a result crossing a lease expiry, a cancel, a retry).
#include "model/result_rules.h"

#include <gtest/gtest.h>

#include <ostream>
#include <string>

namespace jobctl {
namespace {

struct JudgeCase {
  const char* name;
  ResultFacts facts;
  ResultVerdict verdict;
};

// ctest lists each row by its name.
void PrintTo(const JudgeCase& c, std::ostream* os) { *os << c.name; }

// Field order: run_open, holder_ended, lease_held, ended_by_result, answered, current_attempt.
const JudgeCase kJudgements[] = {
    // StaleTokensAreRefused, ResultBatchAnswersEachResultAsIfItCameAlone.
    {"TheHoldersResultForTheRunningAttemptIsTaken",
     {true, false, true, false, false, true},
     ResultVerdict::kAccept},
    {"ATokenThatWasNeverGrantedIsStale",
     {true, false, false, false, false, false},
     ResultVerdict::kRefuseStale},
    {"ARepeatAfterTheRunFinishedGetsTheSameState",
     {false, true, false, true, false, false},
     ResultVerdict::kAnswerEnded},
    {"ARepeatWhileOtherShardsStillRunGetsTheSameState",
     {true, true, false, true, true, false},
     ResultVerdict::kAnswerEnded},
    // HeartbeatCrossingAResultIsFinishedNotStale: a failed attempt waiting for its retry.
    {"ARepeatOfAFailureBeingRetriedGetsTheSameAnswer",
     {true, false, false, false, true, false},
     ResultVerdict::kAnswerAgain},
    {"ARepeatOfAFailureWhoseRetryRunsElsewhereGetsTheSameAnswer",
     {true, false, false, false, true, false},
     ResultVerdict::kAnswerAgain},
    // A lost lease reported by its holder, then re-run or ended lost (on_lost).
    {"ARepeatOfAReportedLostLeaseGetsTheSameAnswer",
     {true, true, false, false, true, false},
     ResultVerdict::kAnswerAgain},
    // ExpiredLeaseGoesToTheOtherAgent...: the old holder's late result.
    {"AResultAfterTheLeaseExpiredAndTheShardRunsElsewhereIsStale",
     {true, false, false, false, false, false},
     ResultVerdict::kRefuseStale},
    // OnLostFailEndsTheRunLostInsteadOfRerunningIt: the run ended lost.
    {"ALateSuccessAfterTheLeaseExpiredAndTheRunEndedLostIsStale",
     {false, true, false, false, false, false},
     ResultVerdict::kRefuseStale},
    {"ALateResultAfterTheLeaseExpiredWhileTheRunIsOpenIsStale",
     {true, true, false, false, false, false},
     ResultVerdict::kRefuseStale},
    // ForgedResultRenewalAndOutputForAnotherAgentsShardAreRefused...
    {"AResultFromAnAgentNotHoldingTheShardIsStale",
     {true, false, false, false, false, true},
     ResultVerdict::kRefuseStale},
    {"AResultFromAnotherAgentForAFinishedRunIsStale",
     {false, false, false, false, false, false},
     ResultVerdict::kRefuseStale},
    // CancelRevokesTheLeaseAtTheNextHeartbeatAndTheRunIsNotRetried.
    {"TheHolderOfACanceledShardIsAnsweredCanceledAndItsLeaseEnds",
     {true, true, true, false, false, false},
     ResultVerdict::kReleaseAndAnswerEnded},
    {"TheHolderOfACanceledShardOfAFinishedRunIsAnsweredAndItsLeaseEnds",
     {false, true, true, false, false, false},
     ResultVerdict::kReleaseAndAnswerEnded},
    {"ACanceledShardsHolderWhoseLeaseExpiredIsStale",
     {false, true, false, false, false, false},
     ResultVerdict::kRefuseStale},
    {"ALiveLeaseOnARunThatEndedOtherwiseIsRefused",
     {false, false, true, false, false, false},
     ResultVerdict::kRefuseRunEnded},
    {"AResultForAnotherAttemptUnderALiveLeaseIsRefused",
     {true, false, true, false, false, false},
     ResultVerdict::kRefuseWrongAttempt},
    // The coordinator's timeout backstop reports for the holder.
    {"TheTimeoutBackstopsResultForTheRunningAttemptIsTaken",
     {true, false, true, false, false, true},
     ResultVerdict::kAccept},
};

class ResultJudgeTest : public ::testing::TestWithParam<JudgeCase> {};

TEST_P(ResultJudgeTest, Verdict) {
  const JudgeCase& c = GetParam();
  EXPECT_EQ(ResultVerdictName(JudgeResult(c.facts)), ResultVerdictName(c.verdict));
}

INSTANTIATE_TEST_SUITE_P(Rows, ResultJudgeTest, ::testing::ValuesIn(kJudgements),
                         [](const ::testing::TestParamInfo<JudgeCase>& i) { return i.param.name; });

bool Covers(const ResultRule& r, const ResultFacts& f) {
  auto m = [](Fact x, bool v) { return x == Fact::kAny || (x == Fact::kYes) == v; };
  return m(r.run_open, f.run_open) && m(r.holder_ended, f.holder_ended) &&
         m(r.lease_held, f.lease_held) && m(r.ended_by_result, f.ended_by_result) &&
         m(r.answered, f.answered) && m(r.current_attempt, f.current_attempt);
}

// The table decides every combination of facts, and only a live lease of this agent for the
// running attempt of an open run, not yet answered, is ever taken.
TEST(ResultRulesTest, EveryCombinationOfFactsHasARowAndOnlyALiveCurrentAttemptIsTaken) {
  for (int bits = 0; bits < 64; ++bits) {
    ResultFacts f{bool(bits & 1), bool(bits & 2),  bool(bits & 4),
                  bool(bits & 8), bool(bits & 16), bool(bits & 32)};
    bool covered = false;
    for (const ResultRule& r : ResultRules()) covered = covered || Covers(r, f);
    EXPECT_TRUE(covered) << "facts " << bits;
    bool taken = JudgeResult(f) == ResultVerdict::kAccept;
    bool may = f.run_open && f.lease_held && f.current_attempt && !f.answered && !f.holder_ended;
    EXPECT_EQ(taken, may) << "facts " << bits;
    if (!f.lease_held) {
      ResultVerdict v = JudgeResult(f);
      EXPECT_TRUE(v == ResultVerdict::kRefuseStale || v == ResultVerdict::kAnswerEnded ||
                  v == ResultVerdict::kAnswerAgain)
          << "facts " << bits << ": " << ResultVerdictName(v);
    }
  }
}

struct DisposeCase {
  const char* name;
  Outcome outcome;
  std::optional<int64_t> exit_code;
  int attempt;
  int lost_count;
  OnLost on_lost;
  int retry_max;
  ResultAction action;
  RunState state;
};

// ctest lists each row by its name.
void PrintTo(const DisposeCase& c, std::ostream* os) { *os << c.name; }

const DisposeCase kDispositions[] = {
    {"ExitZeroSucceeds", Outcome::kExited, 0, 1, 0, OnLost::kRerun, 2, ResultAction::kEnd,
     RunState::kSucceeded},
    {"ExitZeroOnARetrySucceeds", Outcome::kExited, 0, 2, 0, OnLost::kRerun, 2, ResultAction::kEnd,
     RunState::kSucceeded},
    // FailedShardIsRetriedWithBackoffThenTheRunFails: max = 2, three attempts.
    {"AFailedFirstAttemptIsRetried", Outcome::kExited, 1, 1, 0, OnLost::kRerun, 2,
     ResultAction::kRetry, RunState::kFailed},
    {"AFailedSecondAttemptIsRetried", Outcome::kExited, 1, 2, 0, OnLost::kRerun, 2,
     ResultAction::kRetry, RunState::kFailed},
    {"AFailedLastAttemptFailsTheShard", Outcome::kExited, 1, 3, 0, OnLost::kRerun, 2,
     ResultAction::kEnd, RunState::kFailed},
    {"AFailureWithoutRetriesFailsTheShard", Outcome::kExited, 3, 1, 0, OnLost::kRerun, 0,
     ResultAction::kEnd, RunState::kFailed},
    {"AnExitWithoutACodeIsAFailure", Outcome::kExited, std::nullopt, 1, 0, OnLost::kRerun, 0,
     ResultAction::kEnd, RunState::kFailed},
    {"ASignaledAttemptIsRetried", Outcome::kSignaled, std::nullopt, 1, 0, OnLost::kRerun, 1,
     ResultAction::kRetry, RunState::kFailed},
    {"ATimedOutAttemptIsRetried", Outcome::kTimedOut, std::nullopt, 1, 0, OnLost::kRerun, 1,
     ResultAction::kRetry, RunState::kTimedOut},
    {"ATimedOutLastAttemptEndsTimedOut", Outcome::kTimedOut, std::nullopt, 2, 0, OnLost::kRerun, 1,
     ResultAction::kEnd, RunState::kTimedOut},
    {"AShardThatCouldNotBeSpawnedIsRetried", Outcome::kSpawnFailed, std::nullopt, 1, 0,
     OnLost::kRerun, 1, ResultAction::kRetry, RunState::kFailed},
    {"ARefusalByTheAgentsPolicyIsNotRetried", Outcome::kPolicy, std::nullopt, 1, 0, OnLost::kRerun,
     3, ResultAction::kEnd, RunState::kFailed},
    {"ACanceledAttemptIsNotRetried", Outcome::kCanceled, std::nullopt, 1, 0, OnLost::kRerun, 3,
     ResultAction::kEnd, RunState::kCanceled},
    // A step's output that does not read would not read the next time either.
    {"ABadStepOutputFailsTheShardWithoutRetries", Outcome::kBadOutput, 0, 1, 0, OnLost::kRerun, 3,
     ResultAction::kEnd, RunState::kFailed},
    // KillNineOfAnAgentMidShardRerunsItElsewhere..., OnLostFailEndsTheRunLost...
    {"ALostLeaseIsRerunAtOnce", Outcome::kLeaseLost, std::nullopt, 1, 0, OnLost::kRerun, 0,
     ResultAction::kRerunLost, RunState::kLost},
    {"ALostLeaseIsRerunAFifthTime", Outcome::kLeaseLost, std::nullopt, 5, 4, OnLost::kRerun, 0,
     ResultAction::kRerunLost, RunState::kLost},
    {"ALostLeaseIsNotRerunASixthTime", Outcome::kLeaseLost, std::nullopt, 6, 5, OnLost::kRerun, 0,
     ResultAction::kEnd, RunState::kLost},
    {"ALostLeaseWithOnLostFailEndsTheShardLost", Outcome::kLeaseLost, std::nullopt, 1, 0,
     OnLost::kFail, 2, ResultAction::kEnd, RunState::kLost},
    {"ALostLeaseIsNotARetryEvenWithRetriesLeft", Outcome::kLeaseLost, std::nullopt, 1, 5,
     OnLost::kRerun, 3, ResultAction::kEnd, RunState::kLost},
};

class ResultDisposeTest : public ::testing::TestWithParam<DisposeCase> {};

TEST_P(ResultDisposeTest, Does) {
  const DisposeCase& c = GetParam();
  ShardRecord shard;
  shard.attempt = c.attempt;
  shard.lost_count = c.lost_count;
  Job spec;
  spec.on_lost = c.on_lost;
  spec.retry.max = c.retry_max;
  ResultDisposition d = DisposeResult(c.outcome, c.exit_code, shard, spec);
  EXPECT_EQ(static_cast<int>(d.action), static_cast<int>(c.action));
  EXPECT_EQ(RunStateName(d.state), RunStateName(c.state));
}

INSTANTIATE_TEST_SUITE_P(Rows, ResultDisposeTest, ::testing::ValuesIn(kDispositions),
                         [](const ::testing::TestParamInfo<DisposeCase>& i) {
                           return i.param.name;
                         });

struct EndedCase {
  const char* name;
  RunState state;
  int64_t shard_token;
  std::string outcome;
  int64_t token;
  bool ended;
};

// ctest lists each row by its name.
void PrintTo(const EndedCase& c, std::ostream* os) { *os << c.name; }

const EndedCase kEnded[] = {
    {"ASucceededShardEndedByThisTokensResult", RunState::kSucceeded, 7, "exited", 7, true},
    {"AFailedShardEndedByThisTokensResult", RunState::kFailed, 7, "signaled", 7, true},
    {"AShardOfAnotherTokenWasNotEndedByThisOne", RunState::kSucceeded, 8, "exited", 7, false},
    {"ARunningShardHasNotEnded", RunState::kRunning, 7, "", 7, false},
    {"AnExpiredLeaseIsNotAResult", RunState::kLost, 7, "lease_lost", 7, false},
    {"ACanceledShardNeverReportedHasNoResult", RunState::kCanceled, 7, "", 7, false},
    {"TheTimeoutBackstopStandsInForAResult", RunState::kTimedOut, 7, "timed_out", 7, true},
};

class EndedByResultTest : public ::testing::TestWithParam<EndedCase> {};

TEST_P(EndedByResultTest, Is) {
  const EndedCase& c = GetParam();
  ShardRecord s;
  s.state = c.state;
  s.token = c.shard_token;
  s.outcome = c.outcome;
  EXPECT_EQ(EndedByResultOf(s, c.token), c.ended);
}

INSTANTIATE_TEST_SUITE_P(Rows, EndedByResultTest, ::testing::ValuesIn(kEnded),
                         [](const ::testing::TestParamInfo<EndedCase>& i) { return i.param.name; });

}  // namespace
}  // namespace jobctl
