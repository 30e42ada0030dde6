// A run's state and duration from its shards, with shards a retry of failed shards kept.
#include "model/run.h"

#include <gtest/gtest.h>

namespace jobctl {
namespace {

ShardRecord Shard(int index, RunState state, std::optional<int64_t> started,
                  std::optional<int64_t> finished, std::string outcome = "exited") {
  ShardRecord s;
  s.index = index;
  s.state = state;
  s.started_ms = started;
  s.finished_ms = finished;
  s.outcome = std::move(outcome);
  return s;
}

TEST(RunDurationTest, RunsFromTheFirstShardsStartToTheRunsEnd) {
  RunRecord run;
  run.finished_ms = 10'000;
  run.shards = {Shard(0, RunState::kSucceeded, 4'000, 9'000),
                Shard(1, RunState::kSucceeded, 3'000, 10'000)};
  EXPECT_EQ(RunDurationMs(run), 7'000);
  run.finished_ms.reset();
  EXPECT_EQ(RunDurationMs(run), 0);
}

TEST(RunDurationTest, AKeptShardRanInTheRetriedRunAndDoesNotCount) {
  // Shard 0 succeeded hours before, in the run that was retried; shard 1 ran now.
  RunRecord run;
  run.finished_ms = 7'205'000;
  run.shards = {Shard(0, RunState::kSucceeded, 1'000, 2'000, std::string(kKeptOutcome)),
                Shard(1, RunState::kSucceeded, 7'200'000, 7'205'000)};
  EXPECT_EQ(RunDurationMs(run), 5'000);
  EXPECT_EQ(DeriveRunState(run.shards), RunState::kSucceeded);
}

TEST(RunStateTest, AKeptShardAndAPendingOneArePendingUntilOneStarts) {
  std::vector<ShardRecord> shards = {
      Shard(0, RunState::kSucceeded, 1'000, 2'000, std::string(kKeptOutcome)),
      Shard(1, RunState::kPending, std::nullopt, std::nullopt, "")};
  EXPECT_EQ(DeriveRunState(shards), RunState::kPending);
  shards[1].state = RunState::kRunning;
  EXPECT_EQ(DeriveRunState(shards), RunState::kRunning);
  shards[1] = Shard(1, RunState::kFailed, 3'000, 4'000);
  EXPECT_EQ(DeriveRunState(shards), RunState::kFailed);
}

}  // namespace
}  // namespace jobctl
