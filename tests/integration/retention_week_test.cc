// Retention on a store as a busy fleet leaves it after a week: the real coordinator starts on
// a store filled (through the store API, before it starts) with 7 days of runs and output, and
// prunes it to coordinator.toml's bounds while it serves. Checked afterwards, from the files:
// the log store is smaller on disk (incremental vacuum gave the space back), every run and
// output inside the bounds is still there, what is past them is gone, and keep_last kept the
// newest runs of a job whose runs are all old. About 120 MiB of output; the fill and the
// pruning take a few seconds each. Every wait polls against a deadline.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/clock.h"
#include "store/log_store.h"
#include "store/store.h"
#include "testlib/coordinator_fixture.h"
#include "testlib/store_fill.h"

namespace jobctl::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

constexpr int64_t kMinute = 60'000, kHour = 60 * kMinute, kDay = 24 * kHour;
constexpr int kBusyJobs = 20;
constexpr int64_t kBusyEvery = 15 * kMinute;  // a week of runs: 672 per busy job
constexpr int kBusyChunk = 4096;              // two chunks per run
constexpr int kChattyRuns = 48;               // every 30 min over the last day
constexpr int kChattyChunk = 64 << 10;        // four chunks per run: 256 KiB
constexpr int kRareRuns = 30;                 // all 6 to 7 days old
// The bounds, and a margin either side of them that the checks leave out: a run that ended
// right at a bound may go or stay depending on when the slice ran.
constexpr int64_t kRunsFor = 5 * kDay, kLogsFor = 2 * kDay, kMargin = kHour;
constexpr int kKeepLast = 20;
constexpr int64_t kLogsMax = 4 << 20;
const char* kBounds =
    "runs_for = \"5d\"\nkeep_last = 20\nlogs_for = \"2d\"\nlogs_max = \"4MiB\"\n"
    "prune_every = \"100ms\"\n";

int64_t FileBytes(const std::string& path) {
  std::error_code ec;
  auto n = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<int64_t>(n);
}

class RetentionWeekTest : public CoordinatorFixture {
 protected:
  // The jobs, applied through a coordinator without retention that is then stopped.
  void ApplyJobs() {
    Start("runs_for = \"0s\"\nlogs_for = \"0s\"\nlogs_max = 0\n");
    std::string toml;
    for (const std::string& name : JobNames()) {
      toml += "[[job]]\nname = \"" + name + "\"\nschedule = \"@yearly\"\nshell = \"true\"\n";
    }
    coord_->Apply(toml);
    coord_->Stop();
  }
  static std::vector<std::string> JobNames() {
    std::vector<std::string> names;
    for (int i = 0; i < kBusyJobs; ++i) names.push_back("busy-" + std::to_string(i));
    names.push_back("chatty");
    names.push_back("rare");
    return names;
  }

  // A week of ended runs and their output, oldest first, written as the coordinator would.
  void Fill(int64_t now) {
    std::vector<RunToFill> plan;
    for (int64_t t = now - 7 * kDay; t < now - kMinute; t += kBusyEvery) {
      for (int j = 0; j < kBusyJobs; ++j) {
        plan.push_back({"busy-" + std::to_string(j), t, 2, kBusyChunk});
      }
    }
    for (int i = 0; i < kRareRuns; ++i) {
      plan.push_back({"rare", now - 7 * kDay + i * kHour, 1, 1024});
    }
    for (int i = kChattyRuns; i > 0; --i) {
      plan.push_back({"chatty", now - i * 30 * kMinute, 4, kChattyChunk});
    }
    std::stable_sort(plan.begin(), plan.end(), [](const RunToFill& a, const RunToFill& b) {
      return a.finished_ms < b.finished_ms;
    });
    Result<std::vector<FilledRun>> filled = FillStores(coord_->data_dir(), plan);
    ASSERT_TRUE(filled.ok()) << filled.status().ToString();
    generated_ = std::move(*filled);
  }

  json Stats() { return coord_->GetJson("/v1/store/stats"); }

  std::vector<FilledRun> generated_;
};

// A week of 22 jobs' runs (13,500 runs, 120 MiB of output) shrinks to runs_for 5d (keep_last
// 20), logs_for 2d and logs_max 4MiB: on disk too.
TEST_F(RetentionWeekTest, AWeekOfABusyFleetsOutputShrinksToTheBoundsOnDisk) {
  ApplyJobs();
  int64_t filled_at = ToUnixMs(SystemClock().Now());
  Fill(filled_at);
  if (HasFatalFailure()) return;
  std::string logs_db = coord_->data_dir() + "/logs.db";
  int64_t logs_before = FileBytes(logs_db);
  int64_t store_before = FileBytes(coord_->data_dir() + "/jobctl.db");
  int64_t output_total = 0;
  for (const FilledRun& g : generated_) output_total += g.output_bytes;
  ASSERT_GE(logs_before, output_total);

  coord_ = std::make_unique<Coordinator>(dir_, kBounds);
  coord_->Start();
  // Done: nothing left past the bounds (as of each poll), and the freed space given back.
  auto done = [&] {
    int64_t now = ToUnixMs(SystemClock().Now());
    int64_t runs_max = kKeepLast, output_max = kLogsMax;
    for (const FilledRun& g : generated_) {
      if (g.job == "rare") continue;
      if (g.finished_ms >= now - kRunsFor - kMargin) ++runs_max;
      if (g.job != "chatty" && g.finished_ms >= now - kLogsFor - kMargin) {
        output_max += g.output_bytes;
      }
    }
    json st = Stats();
    return st["runs"].get<int64_t>() <= runs_max &&
           st["output_bytes"].get<int64_t>() <= output_max &&
           st["logs_free_bytes"].get<int64_t>() == 0 && st["store_free_bytes"].get<int64_t>() == 0;
  };
  ASSERT_TRUE(Coordinator::Eventually(done, seconds(45))) << Stats().dump();
  coord_->Stop();
  int64_t checked_at = ToUnixMs(SystemClock().Now());

  // On disk: the log store holds what is kept, not what was written.
  int64_t kept_output = 0;
  auto logs = store::OpenLogStore({.path = logs_db, .run_cap_bytes = int64_t{64} << 20});
  ASSERT_TRUE(logs.ok());
  auto st = store::OpenStore({.path = coord_->data_dir() + "/jobctl.db"});
  ASSERT_TRUE(st.ok());
  std::map<int64_t, RunRecord> left;
  ASSERT_TRUE((*st)->ForEachRun([&](RunRecord&& r) { left[r.id] = std::move(r); }).ok());
  std::vector<int64_t> rare;
  int checked_runs = 0, checked_output = 0;
  for (const FilledRun& g : generated_) {
    bool kept = left.contains(g.run_id);
    if (g.job == "rare") {
      if (kept) rare.push_back(g.run_id);
      continue;
    }
    // Runs: inside runs_for (as of the fill) they stay; past it (as of the check) they go.
    if (g.finished_ms > filled_at - kRunsFor + kMargin) {
      EXPECT_TRUE(kept) << "run " << g.run_id << " of " << g.job << " ended "
                        << (filled_at - g.finished_ms) / kHour << " h before the fill";
      ++checked_runs;
    } else if (g.finished_ms < checked_at - kRunsFor - kMargin) {
      EXPECT_FALSE(kept) << "run " << g.run_id << " past runs_for is still there";
    }
    Result<std::optional<store::RunOutput>> out = (*logs)->OutputOf(g.run_id);
    ASSERT_TRUE(out.ok());
    bool has_output = *out && !(*out)->pruned_ms && (*out)->stored_bytes == g.output_bytes;
    if (has_output) kept_output += g.output_bytes;
    if (g.job == "chatty") continue;
    if (g.finished_ms > filled_at - kLogsFor + kMargin) {
      EXPECT_TRUE(has_output) << "output of run " << g.run_id << " inside logs_for was deleted";
      ++checked_output;
    } else if (g.finished_ms < checked_at - kLogsFor - kMargin) {
      EXPECT_FALSE(has_output) << "output of run " << g.run_id << " past logs_for is still there";
      // A run that stays says why its output went.
      if (kept) {
        EXPECT_TRUE(*out && (*out)->pruned_ms) << "run " << g.run_id;
      }
    }
  }
  EXPECT_GT(checked_runs, kBusyJobs * 400);
  EXPECT_GT(checked_output, kBusyJobs * 150);
  // keep_last: the rare job's runs are all past runs_for; its 20 newest stay.
  std::vector<int64_t> rare_all;
  for (const FilledRun& g : generated_) {
    if (g.job == "rare") rare_all.push_back(g.run_id);
  }
  EXPECT_EQ(rare, std::vector<int64_t>(rare_all.end() - kKeepLast, rare_all.end()));
  // logs_max: the chatty job keeps its newest output, 4 MiB of it.
  int64_t chatty_kept = 0;
  for (auto it = generated_.rbegin(); it != generated_.rend(); ++it) {
    if (it->job != "chatty") continue;
    auto out = (*logs)->OutputOf(it->run_id);
    ASSERT_TRUE(out.ok());
    bool has = *out && !(*out)->pruned_ms;
    if (chatty_kept + it->output_bytes <= kLogsMax) {
      EXPECT_TRUE(has) << "chatty run " << it->run_id << " within logs_max lost its output";
      chatty_kept += it->output_bytes;
    } else {
      EXPECT_FALSE(has) << "chatty run " << it->run_id << " past logs_max kept its output";
      EXPECT_EQ((*out)->pruned_reason, "logs_max 4MiB");
    }
  }
  // Consistency: no shard without its run, no output kept for a run that is gone.
  for (const auto& [id, run] : left) EXPECT_EQ(run.shards.size(), 1u) << "run " << id;
  Result<std::vector<store::RunOutput>> outputs = (*logs)->ListOutput({.limit = 100000});
  ASSERT_TRUE(outputs.ok());
  for (const store::RunOutput& o : *outputs) {
    EXPECT_TRUE(left.contains(o.run_id)) << "output kept for deleted run " << o.run_id;
  }

  // On disk: the files shrank to about what is kept (incremental vacuum, not only free pages).
  int64_t logs_after = FileBytes(logs_db);
  int64_t store_after = FileBytes(coord_->data_dir() + "/jobctl.db");
  std::cout << "logs.db " << (logs_before >> 20) << " MiB -> " << (logs_after >> 20)
            << " MiB (output kept " << (kept_output >> 20) << " of " << (output_total >> 20)
            << " MiB); jobctl.db " << (store_before >> 10) << " KiB -> " << (store_after >> 10)
            << " KiB\n";
  EXPECT_LT(logs_after, kept_output + kept_output / 2 + (4 << 20));
  EXPECT_LT(logs_after, logs_before / 2);
  EXPECT_LT(store_after, store_before);
}

// A coordinator killed between a slice's two commits (the store's, then the log store's) leaves
// the output of the runs it deleted in the log store. After the next start a sweep deletes it
// whatever the bounds say: here there are none (runs_for and logs_for 0, logs_max 0), so only
// the sweep can. The output of the runs that stay is untouched.
TEST_F(RetentionWeekTest, OutputLeftByRunsDeletedBeforeAStartIsDeletedAfterIt) {
  ApplyJobs();
  int64_t now = ToUnixMs(SystemClock().Now());
  std::vector<RunToFill> plan;
  for (int i = 0; i < 600; ++i) {
    plan.push_back({"busy-" + std::to_string(i % 3), now - kDay + i * kMinute, 2, kBusyChunk});
  }
  Result<std::vector<FilledRun>> filled = FillStores(coord_->data_dir(), plan);
  ASSERT_TRUE(filled.ok()) << filled.status().ToString();
  // What the kill leaves: the 300 oldest runs deleted from the store, their output still in the
  // log store; one of them with its output already gone and only its mark left.
  std::string logs_db = coord_->data_dir() + "/logs.db";
  std::vector<int64_t> deleted;
  {
    auto st = store::OpenStore({.path = coord_->data_dir() + "/jobctl.db"});
    ASSERT_TRUE(st.ok());
    ASSERT_TRUE((*st)->Begin().ok());
    Result<store::PrunedRuns> pruned = (*st)->PruneRuns(
        {.ended_before_ms = now - kDay + 300 * kMinute, .keep_last = 0, .limit = 1000});
    ASSERT_TRUE(pruned.ok()) << pruned.status().ToString();
    ASSERT_TRUE((*st)->Commit().ok());
    deleted = pruned->run_ids;
    ASSERT_EQ(deleted.size(), 300u);
    auto logs = store::OpenLogStore({.path = logs_db, .run_cap_bytes = int64_t{64} << 20});
    ASSERT_TRUE(logs.ok());
    ASSERT_TRUE((*logs)->Begin().ok());
    ASSERT_TRUE((*logs)->PruneOutput(deleted[7], now, "logs_for 1d", 100).ok());
    ASSERT_TRUE((*logs)->Commit().ok());
  }
  int64_t kept_bytes = 0;
  for (const FilledRun& g : *filled) {
    if (!std::count(deleted.begin(), deleted.end(), g.run_id)) kept_bytes += g.output_bytes;
  }
  ASSERT_GT(kept_bytes, 0);

  coord_ = std::make_unique<Coordinator>(
      dir_, "runs_for = \"0s\"\nlogs_for = \"0s\"\nlogs_max = 0\nprune_every = \"100ms\"\n");
  coord_->Start();
  // Done: the output of the deleted runs is gone and the sweep, at the end of the log store,
  // said what it found.
  const std::string said = "output left by runs deleted before this start was found";
  ASSERT_TRUE(Coordinator::Eventually(
      [&] {
        return Stats()["output_bytes"].get<int64_t>() == kept_bytes &&
               coord_->Logs().find(said) != std::string::npos;
      },
      seconds(30)))
      << Stats().dump() << " kept " << kept_bytes;
  EXPECT_NE(coord_->Logs().find("runs=300"), std::string::npos);
  coord_->Stop();

  auto logs = store::OpenLogStore({.path = logs_db, .run_cap_bytes = int64_t{64} << 20});
  ASSERT_TRUE(logs.ok());
  for (const FilledRun& g : *filled) {
    Result<std::optional<store::RunOutput>> out = (*logs)->OutputOf(g.run_id);
    ASSERT_TRUE(out.ok());
    if (std::count(deleted.begin(), deleted.end(), g.run_id)) {
      EXPECT_FALSE(out->has_value()) << "output or mark of deleted run " << g.run_id << " stayed";
    } else {
      ASSERT_TRUE(out->has_value()) << "run " << g.run_id;
      EXPECT_EQ((*out)->stored_bytes, g.output_bytes) << "run " << g.run_id;
      EXPECT_FALSE((*out)->pruned_ms) << "run " << g.run_id;
    }
  }
}

}  // namespace
}  // namespace jobctl::testing
