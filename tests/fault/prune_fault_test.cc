// Retention under kill -9: the coordinator starts on a store holding a week of a job's runs and
// output (written through the store API before it starts) and is killed with SIGKILL at
// random instants while it prunes them, and started again each time, while probe jobs fire
// every second. Pruning must end where the bounds say, as if nothing happened: every run and
// output inside them kept, nothing past them left, no output without its run and no run
// without its shards (a slice is one commit per store, and the output of the runs a slice
// deleted goes in later slices), and the checker's invariants hold for the jobs that ran.
#include <gtest/gtest.h>

#include <iostream>
#include <random>
#include <thread>

#include "base/clock.h"
#include "base/event_log.h"
#include "fault/fault_cluster.h"
#include "fault/store_view.h"
#include "model/time_format.h"
#include "testlib/store_fill.h"

namespace jobctl::fault {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int64_t kMinute = 60'000, kHour = 60 * kMinute, kDay = 24 * kHour;
constexpr int64_t kRunsFor = 3 * kDay, kLogsFor = 1 * kDay, kMargin = kHour;
constexpr const char* kConfig =
    "lease_ttl = \"3s\"\nheartbeat = \"1s\"\nmisfire_grace = \"1s\"\n"
    "runs_for = \"3d\"\nkeep_last = 20\nlogs_for = \"1d\"\nprune_every = \"100ms\"\n";

int64_t NowMs() { return ToUnixMs(SystemClock().Now()); }

class PruneFaultTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (HasFailure() && cluster_) std::cerr << cluster_->Logs();
  }
  // Pruning is done: no archive run past runs_for, no archive output past logs_for (as of
  // now, with a margin), and the space given back.
  bool Done() {
    nlohmann::json st = cluster_->coord().GetJson("/v1/store/stats");
    int64_t now = NowMs(), output_max = 0;
    for (const testing::FilledRun& g : filled_) {
      if (g.finished_ms >= now - kLogsFor - kMargin) output_max += g.output_bytes;
    }
    int64_t archive = 0;
    for (const nlohmann::json& j : st["top_jobs"]) {
      if (j["job"] == "archive") archive = j["bytes"].get<int64_t>();
    }
    Result<WallTime> oldest = ParseInstant(st["oldest_run"].get<std::string>());
    return oldest.ok() && ToUnixMs(*oldest) >= now - kRunsFor - kMargin && archive <= output_max &&
           st["logs_free_bytes"].get<int64_t>() == 0 && st["store_free_bytes"].get<int64_t>() == 0;
  }
  std::unique_ptr<FaultCluster> cluster_;
  std::vector<testing::FilledRun> filled_;
};

TEST_F(PruneFaultTest, CoordinatorKilledWhilePruningKeepsAllInsideTheBoundsAndFinishes) {
  cluster_ = std::make_unique<FaultCluster>(kConfig);
  FaultCluster& c = *cluster_;
  for (const char* name : {"a", "b"}) c.StartAgent(name, 6);
  c.WaitForAgents(2);
  // Only the archive job before the fill: its runs are filled with the lowest ids, as the
  // oldest runs of a store have (Store::PruneRuns relies on ids growing with creation time).
  const std::string archive =
      "[[job]]\nname = \"archive\"\nschedule = \"@yearly\"\nshell = \"true\"\n";
  c.coord().Apply(archive);
  c.coord().Stop();
  // A week of the archive job: a run every 100 s, 8 KiB of output each (48 MiB).
  int64_t filled_at = NowMs();
  std::vector<testing::RunToFill> plan;
  for (int64_t t = filled_at - 7 * kDay; t < filled_at - kMinute; t += 100'000) {
    plan.push_back({"archive", t, 2, 4096});
  }
  Result<std::vector<testing::FilledRun>> filled = testing::FillStores(c.coord().data_dir(), plan);
  ASSERT_TRUE(filled.ok()) << filled.status().ToString();
  filled_ = std::move(*filled);
  c.coord().Start();
  const std::string every = "schedule = \"* * * * * *\"\noverlap = \"allow\"\n";
  c.coord().Apply("[[job]]\nname = \"once\"\n" + every + "shards = 2\n" + c.ProbeJob({3, 300, 0}) +
                  "[[job]]\nname = \"skip\"\n" + every + "misfire = \"skip\"\n" +
                  c.ProbeJob({2, 100, 0}) + archive);

  std::mt19937_64 rng(std::random_device{}());
  int kills = 0, kills_while_pruning = 0;
  for (int cycle = 0; cycle < 15 && !Done(); ++cycle) {
    std::this_thread::sleep_for(milliseconds(300 + rng() % 1000));  // the fault's instant
    kills_while_pruning += !Done();
    c.coord().Kill9();
    ++kills;
    std::this_thread::sleep_for(milliseconds(rng() % 500));  // the outage
    c.coord().Start();
  }
  std::cout << "coordinator killed " << kills << " times, " << kills_while_pruning
            << " of them while it pruned\n";
  EXPECT_GE(kills_while_pruning, 3) << "pruning ended before the faults";
  ASSERT_TRUE(testing::Coordinator::Eventually([&] { return Done(); }, seconds(90)))
      << c.coord().GetJson("/v1/store/stats").dump();
  ASSERT_TRUE(c.Quiesce({"once", "skip"}, seconds(60)));
  c.StopAll();
  int64_t checked_at = NowMs();
  Report r = c.Check({});
  std::cout << r.ToString();
  EXPECT_TRUE(r.ok()) << r.ToString();

  Result<StoreView> s = ReadStores(c.coord().data_dir());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  int inside_runs = 0, inside_output = 0;
  for (const testing::FilledRun& g : filled_) {
    const RunRecord* run = s->FindRun(g.run_id);
    std::string out = s->Output({g.run_id, 0, 1}, store::LogStream::kStdout);
    if (g.finished_ms > filled_at - kRunsFor + kMargin) {
      EXPECT_NE(run, nullptr) << "run " << g.run_id << " inside runs_for was deleted";
      ++inside_runs;
    } else if (g.finished_ms < checked_at - kRunsFor - kMargin) {
      EXPECT_EQ(run, nullptr) << "run " << g.run_id << " past runs_for is still there";
    }
    if (g.finished_ms > filled_at - kLogsFor + kMargin) {
      EXPECT_EQ(static_cast<int64_t>(out.size()), g.output_bytes)
          << "output of run " << g.run_id << " inside logs_for was deleted";
      ++inside_output;
    } else if (g.finished_ms < checked_at - kLogsFor - kMargin) {
      EXPECT_EQ(out, "") << "output of run " << g.run_id << " past logs_for is still there";
    }
  }
  EXPECT_GT(inside_runs, 2000);
  EXPECT_GT(inside_output, 700);
  // Consistency: no output without its run, no run without its shards.
  for (const auto& [attempt, chunks] : s->chunks) {
    EXPECT_NE(s->FindRun(std::get<0>(attempt)), nullptr)
        << "output of run " << std::get<0>(attempt) << ", which is gone";
  }
  for (const RunRecord& run : s->runs) {
    EXPECT_EQ(static_cast<int>(run.shards.size()), run.shard_total) << "run " << run.id;
  }
}

}  // namespace
}  // namespace jobctl::fault
