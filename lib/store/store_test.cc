// The contract of Store and LogStore: every test here runs once per backend in kBackends. A
// new backend (PostgreSQL) is added to that list and must pass all of them unchanged. What
// only the embedded backend has (a file on disk and its mode, SQLite's schema version,
// migrating an old file) is tested in sqlite_store_test.cc.
#include "store/store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "store/log_store.h"
#include "testlib/postgres.h"

namespace jobctl::store {
namespace {

// One backend under test. `open` opens the store that belongs to one test's scratch directory
// (a fresh one the first time; the same one again when called again, as after a restart); a
// server backend maps the directory to a database of its own.
struct Backend {
  std::string name;
  std::function<Result<std::unique_ptr<Store>>(const std::string& dir)> open;
  std::function<Result<std::unique_ptr<LogStore>>(const std::string& dir, int64_t run_cap_bytes)>
      open_logs;
  // Why the backend cannot run here ("" when it can).
  std::function<std::string()> unavailable = [] { return std::string(); };
  // ReclaimSpace gives freed space back to the file system (SQLite's incremental vacuum);
  // PostgreSQL leaves it to autovacuum, to be reused, and reports no free space.
  bool gives_space_back = true;
};

// gtest prints the parameter of a failing test by this, instead of its bytes.
void PrintTo(const Backend& b, std::ostream* os) { *os << b.name; }

const Backend kSqlite{
    "sqlite",
    [](const std::string& dir) { return OpenStore({.path = dir + "/jobctl.db"}); },
    [](const std::string& dir, int64_t cap) {
      return OpenLogStore({.path = dir + "/logs.db", .run_cap_bytes = cap});
    },
};

// One PostgreSQL server for the whole test binary, started on first use; each test's
// scratch directory maps to a database of its own, created the first time it is opened.
struct PostgresForTests {
  std::unique_ptr<jobctl::testing::PostgresServer> server;
  std::string why_not;
  std::map<std::string, std::string> databases;  // scratch dir -> URL

  static PostgresForTests& Get() {
    static PostgresForTests* pg = [] {
      auto* p = new PostgresForTests();
      Result<std::unique_ptr<jobctl::testing::PostgresServer>> s = testing::PostgresServer::Start();
      if (s.ok()) {
        p->server = std::move(*s);
      } else {
        p->why_not = s.status().ToString();
      }
      // Stopped at exit, so the server never outlives the tests.
      std::atexit([] { Get().server.reset(); });
      return p;
    }();
    return *pg;
  }
  Result<std::string> Url(const std::string& dir) {
    if (server == nullptr) return Status::Unavailable(why_not);
    auto it = databases.find(dir);
    if (it != databases.end()) return it->second;
    std::string name = std::filesystem::path(dir).filename().string();
    if (Status s = server->CreateDatabase(name); !s.ok()) return s;
    return databases[dir] = server->Url(name);
  }
};

const Backend kPostgres{
    "postgresql",
    [](const std::string& dir) -> Result<std::unique_ptr<Store>> {
      Result<std::string> url = PostgresForTests::Get().Url(dir);
      if (!url.ok()) return url.status();
      return OpenStore({.url = *url});
    },
    [](const std::string& dir, int64_t cap) -> Result<std::unique_ptr<LogStore>> {
      Result<std::string> url = PostgresForTests::Get().Url(dir);
      if (!url.ok()) return url.status();
      return OpenLogStore({.url = *url, .run_cap_bytes = cap});
    },
    [] { return PostgresForTests::Get().why_not; },
    /*gives_space_back=*/false,
};

class StoreTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/jobctl-store-test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    if (std::string why = GetParam().unavailable(); !why.empty()) {
      // CI installs every backend's server: there, a missing one is a failure.
      if (jobctl::testing::RunningInCi()) FAIL() << GetParam().name << ": " << why;
      GTEST_SKIP() << GetParam().name << " not available: " << why;
    }
    Reopen();
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Reopen() {
    store_.reset();
    auto s = GetParam().open(dir_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }
  std::unique_ptr<LogStore> OpenLogs(int64_t run_cap_bytes) {
    auto logs = GetParam().open_logs(dir_, run_cap_bytes);
    EXPECT_TRUE(logs.ok()) << logs.status().ToString();
    return logs.ok() ? std::move(*logs) : nullptr;
  }
  int64_t AddJob(const std::string& name) {
    EXPECT_TRUE(store_->Begin().ok());
    Result<int64_t> id = store_->InsertJob({0, name, "{}", true, false, 1000, 1}, 1);
    EXPECT_TRUE(store_->Commit().ok());
    return *id;
  }
  RunRecord NewRun(int64_t job, int64_t scheduled_ms, int shards = 2) {
    RunRecord run;
    run.job_id = job;
    run.scheduled_ms = scheduled_ms;
    run.created_ms = scheduled_ms;
    run.trace_id = "0123456789abcdef0123456789abcdef";
    run.shard_total = shards;
    for (int i = 0; i < shards; ++i) run.shards.push_back({.index = i});
    return run;
  }
  // Inserts and commits a run; its id.
  int64_t AddRun(RunRecord run) {
    EXPECT_TRUE(store_->Begin().ok());
    EXPECT_TRUE(store_->InsertRun(run).ok());
    EXPECT_TRUE(store_->Commit().ok());
    return run.id;
  }
  std::vector<int64_t> RunIds(const RunFilter& f) {
    std::vector<int64_t> out;
    Result<std::vector<RunRecord>> runs = store_->ListRuns(f);
    EXPECT_TRUE(runs.ok()) << runs.status().ToString();
    for (const RunRecord& r : *runs) out.push_back(r.id);
    return out;
  }

  std::string dir_;
  std::unique_ptr<Store> store_;
};

using LogStoreTest = StoreTest;

// Every backend the tests run against.
const auto kBackends = ::testing::Values(kSqlite, kPostgres);
std::string BackendName(const ::testing::TestParamInfo<Backend>& p) { return p.param.name; }
INSTANTIATE_TEST_SUITE_P(Backends, StoreTest, kBackends, BackendName);
INSTANTIATE_TEST_SUITE_P(Backends, LogStoreTest, kBackends, BackendName);

TEST_P(StoreTest, ScheduledInstantCanBeInsertedOnlyOnce) {
  int64_t job = AddJob("backup");
  ASSERT_TRUE(store_->Begin().ok());
  RunRecord first = NewRun(job, 60'000);
  ASSERT_TRUE(store_->InsertRun(first).ok());
  RunRecord again = NewRun(job, 60'000);
  EXPECT_EQ(store_->InsertRun(again).code(), Status::Code::kConflict);
  store_->Rollback();
}

TEST_P(StoreTest, RunsInsertedTogetherAreEachAsInsertedAloneAndATakenInstantIsSkipped) {
  int64_t a = AddJob("a");
  int64_t b = AddJob("b");
  AddRun(NewRun(b, 60'000));
  ASSERT_TRUE(store_->Begin().ok());
  std::vector<RunRecord> runs = {NewRun(a, 60'000, 3), NewRun(b, 60'000), NewRun(b, 70'000, 0),
                                 NewRun(a, 70'000, 1)};
  // Text that an array literal must quote: quotes, backslashes, braces, commas, NULL.
  runs[0].note = "say \"hi\", {a,b} \\ NULL";
  runs[0].env_json = R"({"K":"v \"w\""})";
  runs[0].shards[2].not_before_ms = 61'000;
  runs[3].idempotency_key = "key,{1}";
  runs[3].reason = RunReason::kManual;
  runs[2].state = RunState::kFailed;
  runs[2].finished_ms = 70'001;
  std::vector<bool> inserted;
  ASSERT_TRUE(store_->InsertRuns(runs, inserted).ok());
  EXPECT_EQ(inserted, (std::vector<bool>{true, false, true, true}));
  // A conflict leaves the transaction usable.
  ASSERT_TRUE(store_->SetNextFire(a, 80'000).ok());
  ASSERT_TRUE(store_->Commit().ok());
  EXPECT_EQ(runs[0].shards[2].run_id, runs[0].id);
  EXPECT_NE(runs[0].id, runs[2].id);
  auto first = store_->GetRun(runs[0].id);
  ASSERT_TRUE(first.ok() && first->has_value());
  EXPECT_EQ((*first)->job, "a");
  EXPECT_EQ((*first)->note, runs[0].note);
  EXPECT_EQ((*first)->env_json, runs[0].env_json);
  ASSERT_EQ((*first)->shards.size(), 3u);
  EXPECT_EQ((*first)->shards[2].not_before_ms, 61'000);
  EXPECT_EQ((*first)->shards[2].state, RunState::kPending);
  auto failed = store_->GetRun(runs[2].id);
  ASSERT_TRUE(failed.ok() && failed->has_value());
  EXPECT_EQ((*failed)->state, RunState::kFailed);
  EXPECT_EQ((*failed)->finished_ms, 70'001);
  EXPECT_TRUE((*failed)->shards.empty());
  auto keyed = store_->FindRunByKey(a, "key,{1}");
  ASSERT_TRUE(keyed.ok());
  EXPECT_EQ(*keyed, runs[3].id);
  // The run already there, and no second one for its instant.
  EXPECT_EQ(RunIds({.job_id = b}).size(), 2u);
  EXPECT_EQ(store_->GetJob(a)->next_fire_ms, 80'000);
}

TEST_P(StoreTest, PipelinedWritesAreReadBackAndKeptByTheCommitAndAFailedOneFailsIt) {
  store_->PipelineWrites(true);
  int64_t job = AddJob("a");
  int64_t run = AddRun(NewRun(job, 60'000));
  ASSERT_TRUE(store_->Begin().ok());
  ShardRecord shard = NewRun(job, 0).shards[0];
  shard.run_id = run;
  shard.state = RunState::kRunning;
  shard.agent = "host-a";
  ASSERT_TRUE(store_->UpdateShard(shard).ok());
  ASSERT_TRUE(store_->UpdateRunState(run, RunState::kRunning, std::nullopt, "").ok());
  ASSERT_TRUE(store_->SetNextFire(job, 70'000).ok());
  // More writes than are ever sent without reading their outcomes.
  for (int i = 0; i < 1200; ++i) {
    ASSERT_TRUE(store_->PutLease({"lease-" + std::to_string(i), "host-a", i, 1}).ok());
  }
  ASSERT_TRUE(store_->InsertEvent(2, "claim", "host-a", "run", "").ok());
  // A read in the transaction sees what was sent before it.
  EXPECT_EQ((*store_->GetRun(run))->shards[0].agent, "host-a");
  // Several writes of one row: the last one is kept (a note left empty keeps the last one
  // given), whether they are sent one by one or together.
  shard.agent = "host-b";
  ASSERT_TRUE(store_->UpdateShard(shard).ok());
  shard.agent = "host-c";
  shard.exit_code = 3;
  shard.peak_rss_bytes = 7 << 20;
  shard.cpu_ms = 250;
  ASSERT_TRUE(store_->UpdateShard(shard).ok());
  ASSERT_TRUE(store_->UpdateRunState(run, RunState::kRunning, std::nullopt, "first").ok());
  ASSERT_TRUE(store_->UpdateRunState(run, RunState::kFailed, 4'000, "").ok());
  ASSERT_TRUE(store_->DeleteLease("lease-1").ok());
  ASSERT_TRUE(store_->PutLease({"lease-2", "host-b", 99, 2}).ok());
  ASSERT_TRUE(store_->DeleteLease("lease-2").ok());
  ASSERT_TRUE(store_->DeleteLease("lease-3").ok());
  ASSERT_TRUE(store_->PutLease({"lease-3", "host-c", 98, 3}).ok());
  ASSERT_TRUE(store_->Commit().ok());
  auto after = store_->GetRun(run);
  ASSERT_TRUE(after.ok() && after->has_value());
  EXPECT_EQ((*after)->shards[0].agent, "host-c");
  EXPECT_EQ((*after)->shards[0].exit_code, 3);
  EXPECT_EQ((*after)->shards[0].peak_rss_bytes, 7 << 20);
  EXPECT_EQ((*after)->shards[0].cpu_ms, 250);
  EXPECT_EQ((*after)->state, RunState::kFailed);
  EXPECT_EQ((*after)->finished_ms, 4'000);
  EXPECT_EQ((*after)->note, "first");
  std::map<std::string, std::string> kept;
  ASSERT_TRUE(store_->ForEachLease([&](LeaseRow&& l) { kept[l.key] = l.holder; }).ok());
  EXPECT_EQ(kept.count("lease-1"), 0u);
  EXPECT_EQ(kept.count("lease-2"), 0u);
  EXPECT_EQ(kept["lease-3"], "host-c");
  EXPECT_EQ(kept["lease-4"], "host-a");
  EXPECT_EQ(store_->GetJob(job)->next_fire_ms, 70'000);
  EXPECT_EQ(kept.size(), 1198u);  // 1,200 put, two of them deleted
  // A write that fails (no such shard) fails the transaction: at once or at its commit.
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->SetNextFire(job, 80'000).ok());
  ShardRecord ghost = shard;
  ghost.run_id = run + 1000;
  Status wrote = store_->UpdateShard(ghost);
  ASSERT_TRUE(store_->SetNextFire(job, 90'000).ok() || !wrote.ok());
  Status outcome = wrote;
  if (wrote.ok()) {
    outcome = store_->Commit();
  } else {
    store_->Rollback();
  }
  EXPECT_EQ(outcome.code(), Status::Code::kNotFound) << outcome.ToString();
  EXPECT_FALSE(store_->in_transaction());
  EXPECT_EQ(store_->GetJob(job)->next_fire_ms, 70'000);
  // The next transaction starts clean.
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->SetNextFire(job, 100'000).ok());
  ASSERT_TRUE(store_->Commit().ok());
  EXPECT_EQ(store_->GetJob(job)->next_fire_ms, 100'000);
}

TEST_P(StoreTest, JobsAreReadByIdsTogetherAndTheirNextFiresSetTogether) {
  int64_t a = AddJob("a");
  int64_t b = AddJob("b");
  int64_t c = AddJob("c");
  std::vector<std::string> names;
  ASSERT_TRUE(
      store_->GetJobs({c, a, 999'999}, [&](JobRow&& row) { names.push_back(row.name); }).ok());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"a", "c"}));
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->SetNextFires({{a, 5'000}, {b, std::nullopt}, {c, 7'000}}).ok());
  ASSERT_TRUE(store_->Commit().ok());
  EXPECT_EQ(store_->GetJob(a)->next_fire_ms, 5'000);
  EXPECT_EQ(store_->GetJob(b)->next_fire_ms, std::nullopt);
  EXPECT_EQ(store_->GetJob(c)->next_fire_ms, 7'000);
}

TEST_P(StoreTest, EveryRunIsReadOldestFirstWithItsShardsWhateverItsState) {
  int64_t job = AddJob("backup");
  ASSERT_TRUE(store_->Begin().ok());
  RunRecord done = NewRun(job, 60'000, 3);
  ASSERT_TRUE(store_->InsertRun(done).ok());
  ASSERT_TRUE(store_->UpdateRunState(done.id, RunState::kSucceeded, 61'000, "").ok());
  RunRecord open = NewRun(job, 120'000, 1);
  ASSERT_TRUE(store_->InsertRun(open).ok());
  ASSERT_TRUE(store_->Commit().ok());
  std::vector<RunRecord> all;
  ASSERT_TRUE(store_->ForEachRun([&](RunRecord&& r) { all.push_back(std::move(r)); }).ok());
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].id, done.id);
  EXPECT_EQ(all[0].state, RunState::kSucceeded);
  EXPECT_EQ(all[0].shards.size(), 3u);
  EXPECT_EQ(all[1].id, open.id);
  EXPECT_EQ(all[1].shards.size(), 1u);
}

TEST_P(StoreTest, ManualRunsDoNotTakeTheScheduledSlotButKeysAreUnique) {
  int64_t job = AddJob("backup");
  ASSERT_TRUE(store_->Begin().ok());
  RunRecord scheduled = NewRun(job, 60'000);
  ASSERT_TRUE(store_->InsertRun(scheduled).ok());
  RunRecord manual = NewRun(job, 60'000);
  manual.reason = RunReason::kManual;
  manual.idempotency_key = "deploy-42";
  ASSERT_TRUE(store_->InsertRun(manual).ok());
  RunRecord dup = NewRun(job, 61'000);
  dup.reason = RunReason::kManual;
  dup.idempotency_key = "deploy-42";
  EXPECT_EQ(store_->InsertRun(dup).code(), Status::Code::kConflict);
  ASSERT_TRUE(store_->Commit().ok());
  Result<std::optional<int64_t>> found = store_->FindRunByKey(job, "deploy-42");
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(**found, manual.id);
  Result<std::optional<int64_t>> missing = store_->FindRunByKey(job, "deploy-43");
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(*missing, std::nullopt);
}

TEST_P(StoreTest, RunRoundTripsWithShards) {
  int64_t job = AddJob("report");
  ASSERT_TRUE(store_->Begin().ok());
  RunRecord run = NewRun(job, 120'000, 3);
  run.shards[2].not_before_ms = 125'000;
  run.not_before_ms = 121'500;
  ASSERT_TRUE(store_->InsertRun(run).ok());
  EXPECT_EQ(run.shards[0].run_id, run.id);
  ShardRecord s = run.shards[1];
  s.state = RunState::kRunning;
  s.attempt = 2;
  s.agent = "host-a";
  s.token = 17;
  s.started_ms = 120'010;
  s.lost_count = 1;
  s.peak_rss_bytes = int64_t{5} << 32;  // over 32 bits
  s.cpu_ms = 1'234;
  ASSERT_TRUE(store_->UpdateShard(s).ok());
  ASSERT_TRUE(store_->Commit().ok());
  auto got = store_->GetRun(run.id);
  ASSERT_TRUE(got.ok() && got->has_value());
  const RunRecord& r = **got;
  EXPECT_EQ(r.job, "report");
  EXPECT_EQ(r.job_id, job);
  EXPECT_EQ(r.scheduled_ms, 120'000);
  EXPECT_EQ(r.not_before_ms, 121'500);
  EXPECT_EQ(r.trace_id, run.trace_id);
  EXPECT_EQ(r.shard_total, 3);
  ASSERT_EQ(r.shards.size(), 3u);
  EXPECT_EQ(r.shards[1].agent, "host-a");
  EXPECT_EQ(r.shards[1].token, 17);
  EXPECT_EQ(r.shards[1].attempt, 2);
  EXPECT_EQ(r.shards[1].lost_count, 1);
  EXPECT_EQ(r.shards[1].started_ms, 120'010);
  EXPECT_EQ(r.shards[1].finished_ms, std::nullopt);
  EXPECT_EQ(r.shards[1].state, RunState::kRunning);
  EXPECT_EQ(r.shards[1].peak_rss_bytes, int64_t{5} << 32);
  EXPECT_EQ(r.shards[1].cpu_ms, 1'234);
  EXPECT_EQ(r.shards[0].peak_rss_bytes, std::nullopt);  // not reported
  EXPECT_EQ(r.shards[0].cpu_ms, std::nullopt);
  EXPECT_EQ(r.shards[2].not_before_ms, 125'000);
  EXPECT_EQ(r.shards[2].attempt, 1);
  int open = 0;
  ASSERT_TRUE(store_->ForEachOpenRun([&](RunRecord&&) { ++open; }).ok());
  EXPECT_EQ(open, 1);
  Result<std::optional<ShardRecord>> shard = store_->GetShard(run.id, 1);
  ASSERT_TRUE(shard.ok() && shard->has_value());
  EXPECT_EQ((*shard)->agent, "host-a");
  Result<std::optional<ShardRecord>> none = store_->GetShard(run.id, 3);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  Result<std::optional<RunRecord>> no_run = store_->GetRun(run.id + 1);
  ASSERT_TRUE(no_run.ok());
  EXPECT_FALSE(no_run->has_value());
}

TEST_P(StoreTest, FinishedRunsKeepTheirNoteUnlessANewOneIsGivenAndLeaveTheOpenSet) {
  int64_t job = AddJob("report");
  RunRecord run = NewRun(job, 1000, 1);
  run.note = "first";
  int64_t id = AddRun(run);
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->UpdateRunState(id, RunState::kRunning, std::nullopt, "").ok());
  ASSERT_TRUE(store_->Commit().ok());
  EXPECT_EQ((*store_->GetRun(id))->note, "first");
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->UpdateRunState(id, RunState::kCanceled, 2000, "canceled by alice").ok());
  EXPECT_EQ(store_->UpdateRunState(id + 1, RunState::kFailed, 2000, "").code(),
            Status::Code::kNotFound);
  ShardRecord ghost{.run_id = id, .index = 5};
  EXPECT_EQ(store_->UpdateShard(ghost).code(), Status::Code::kNotFound);
  ASSERT_TRUE(store_->Commit().ok());
  RunRecord got = **store_->GetRun(id);
  EXPECT_EQ(got.state, RunState::kCanceled);
  EXPECT_EQ(got.finished_ms, 2000);
  EXPECT_EQ(got.note, "canceled by alice");
  int open = 0;
  ASSERT_TRUE(store_->ForEachOpenRun([&](RunRecord&&) { ++open; }).ok());
  EXPECT_EQ(open, 0);
}

TEST_P(StoreTest, RunsAreListedNewestFirstByJobStateTimeAndPage) {
  int64_t a = AddJob("a");
  int64_t b = AddJob("b");
  int64_t a1 = AddRun(NewRun(a, 1000));
  int64_t b1 = AddRun(NewRun(b, 2000));
  int64_t a2 = AddRun(NewRun(a, 3000));
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->UpdateRunState(a2, RunState::kFailed, 3500, "").ok());
  ASSERT_TRUE(store_->Commit().ok());
  EXPECT_EQ(RunIds({}), (std::vector<int64_t>{a2, b1, a1}));
  EXPECT_EQ(RunIds({.job_id = a}), (std::vector<int64_t>{a2, a1}));
  EXPECT_EQ(RunIds({.state = RunState::kPending}), (std::vector<int64_t>{b1, a1}));
  EXPECT_EQ(RunIds({.since_ms = 2000}), (std::vector<int64_t>{a2, b1}));
  EXPECT_EQ(RunIds({.limit = 1}), (std::vector<int64_t>{a2}));
  EXPECT_EQ(RunIds({.limit = 1, .before_id = a2}), (std::vector<int64_t>{b1}));
  EXPECT_EQ(RunIds({.job_id = b, .state = RunState::kFailed}), (std::vector<int64_t>{}));
  Result<std::vector<RunRecord>> runs = store_->ListRuns({.job_id = b});
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].job, "b");
  EXPECT_EQ((*runs)[0].shards.size(), 2u);
}

TEST_P(StoreTest, TheRunsOfATraceAreListedNewestFirstWithTheOtherFilters) {
  int64_t a = AddJob("a");
  int64_t b = AddJob("b");
  const std::string kTrace = "4bf92f3577b34da6a3ce929d0e0e4736";
  auto traced = [&](int64_t job, int64_t at) {
    RunRecord run = NewRun(job, at);
    run.trace_id = kTrace;
    return AddRun(run);
  };
  int64_t a1 = traced(a, 1000);
  AddRun(NewRun(a, 1500));  // another trace
  int64_t b1 = traced(b, 2000);
  int64_t a2 = traced(a, 3000);
  EXPECT_EQ(RunIds({.trace_id = kTrace}), (std::vector<int64_t>{a2, b1, a1}));
  EXPECT_EQ(RunIds({.job_id = a, .trace_id = kTrace}), (std::vector<int64_t>{a2, a1}));
  EXPECT_EQ(RunIds({.since_ms = 2000, .trace_id = kTrace}), (std::vector<int64_t>{a2, b1}));
  EXPECT_EQ(RunIds({.limit = 1, .before_id = a2, .trace_id = kTrace}), (std::vector<int64_t>{b1}));
  EXPECT_EQ(RunIds({.trace_id = "11111111111111111111111111111111"}), (std::vector<int64_t>{}));
}

// A flow is a job row of kind flow; a step with its own command a row of kind step that names
// its flow. Both are kept through an update, which may change them.
TEST_P(StoreTest, JobKindAndFlowAreWrittenAndReadBack) {
  JobTiming flow_timing{"@daily",           Dialect::kCron,   "",  0, true,
                        Misfire::kFireOnce, Overlap::kForbid, 100, 0, JobKind::kFlow,
                        std::nullopt};
  ASSERT_TRUE(store_->Begin().ok());
  Result<int64_t> flow = store_->InsertJob({0, "etl", "{}", true, false, 1000, 1, flow_timing}, 1);
  ASSERT_TRUE(flow.ok()) << flow.status().ToString();
  JobTiming step_timing;
  step_timing.schedule = "";
  step_timing.kind = JobKind::kStep;
  step_timing.flow_id = *flow;
  Result<int64_t> step =
      store_->InsertJob({0, "etl:load", "{}", true, false, std::nullopt, 1, step_timing}, 1);
  ASSERT_TRUE(step.ok()) << step.status().ToString();
  ASSERT_TRUE(store_->Commit().ok());
  EXPECT_EQ(store_->GetJob(*flow)->timing, flow_timing);
  EXPECT_EQ(store_->GetJob(*step)->timing, step_timing);
  std::map<std::string, std::pair<JobKind, std::optional<int64_t>>> heads;
  ASSERT_TRUE(store_
                  ->ForEachJobHead(
                      [&](const JobHead& h) {
                        heads[std::string(h.name)] = {h.kind, h.flow_id};
                      },
                      nullptr)
                  .ok());
  EXPECT_EQ(heads["etl"], std::make_pair(JobKind::kFlow, std::optional<int64_t>()));
  EXPECT_EQ(heads["etl:load"], std::make_pair(JobKind::kStep, std::optional<int64_t>(*flow)));
  // A name that was a flow may become a job.
  JobTiming job_timing{"@hourly"};
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->UpdateJobSpec(*flow, "{}", job_timing, 2, 2).ok());
  ASSERT_TRUE(store_->Commit().ok());
  EXPECT_EQ(store_->GetJob(*flow)->timing.kind, JobKind::kJob);
}

// A flow run has no shards; each of its steps runs at most once per flow run, whether its run
// is inserted alone or with others, and the step runs are read back by step with their shards
// and what each shard's last attempt wrote to $JOB_OUTPUT.
TEST_P(StoreTest, AStepOfAFlowRunRunsOnceAndItsRunsAreReadBackByStep) {
  int64_t flow = AddJob("etl");
  int64_t extract = AddJob("etl:extract");
  int64_t load = AddJob("etl:load");
  RunRecord flow_run = NewRun(flow, 60'000, 0);
  flow_run.state = RunState::kRunning;
  flow_run.flow_json = R"({"steps":["extract","load"]})";
  int64_t flow_run_id = AddRun(flow_run);
  auto step_run = [&](int64_t job, int step) {
    RunRecord r = NewRun(job, 60'000, 2);
    r.reason = RunReason::kFlow;
    r.flow_run_id = flow_run_id;
    r.flow_step = step;
    r.flow_json = R"({"step":)" + std::to_string(step) + "}";
    return r;
  };
  int64_t load_run = AddRun(step_run(load, 1));
  ASSERT_TRUE(store_->Begin().ok());
  RunRecord again = step_run(load, 1);
  EXPECT_EQ(store_->InsertRun(again).code(), Status::Code::kConflict);
  store_->Rollback();
  ASSERT_TRUE(store_->Begin().ok());
  std::vector<RunRecord> runs = {step_run(load, 1), step_run(extract, 0)};
  std::vector<bool> inserted;
  ASSERT_TRUE(store_->InsertRuns(runs, inserted).ok());
  EXPECT_EQ(inserted, (std::vector<bool>{false, true}));
  ShardRecord done = runs[1].shards[1];
  done.state = RunState::kSucceeded;
  done.outputs_json = R"({"ROWS":"1200"})";
  ASSERT_TRUE(store_->UpdateShard(done).ok());
  ASSERT_TRUE(store_->Commit().ok());

  Result<std::vector<RunRecord>> steps = store_->StepRuns(flow_run_id);
  ASSERT_TRUE(steps.ok()) << steps.status().ToString();
  ASSERT_EQ(steps->size(), 2u);
  EXPECT_EQ((*steps)[0].id, runs[1].id);
  EXPECT_EQ((*steps)[0].flow_step, 0);
  EXPECT_EQ((*steps)[0].job, "etl:extract");
  EXPECT_EQ((*steps)[0].reason, RunReason::kFlow);
  EXPECT_EQ((*steps)[0].flow_run_id, flow_run_id);
  EXPECT_EQ((*steps)[0].flow_json, R"({"step":0})");
  ASSERT_EQ((*steps)[0].shards.size(), 2u);
  EXPECT_EQ((*steps)[0].shards[0].outputs_json, "");
  EXPECT_EQ((*steps)[0].shards[1].outputs_json, R"({"ROWS":"1200"})");
  EXPECT_EQ((*steps)[1].id, load_run);
  EXPECT_EQ((*steps)[1].flow_step, 1);
  Result<std::optional<RunRecord>> got = store_->GetRun(flow_run_id);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->flow_run_id, 0);
  EXPECT_EQ((*got)->flow_step, -1);
  EXPECT_EQ((*got)->flow_json, flow_run.flow_json);
  EXPECT_TRUE((*got)->shards.empty());
  EXPECT_TRUE(store_->StepRuns(load_run)->empty());
  // Run ids past 2^31 (the column is 64 bits wide on both backends).
  RunRecord far = step_run(load, 0);
  far.flow_run_id = 3'000'000'000;
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->InsertRun(far).ok());
  ASSERT_TRUE(store_->Commit().ok());
  EXPECT_EQ(store_->StepRuns(3'000'000'000)->size(), 1u);
  // Outputs written through pipelined writes too.
  store_->PipelineWrites(true);
  ASSERT_TRUE(store_->Begin().ok());
  done.outputs_json = R"({"ROWS":"1300"})";
  ASSERT_TRUE(store_->UpdateShard(done).ok());
  ASSERT_TRUE(store_->Commit().ok());
  EXPECT_EQ((*store_->GetShard(runs[1].id, 1))->outputs_json, R"({"ROWS":"1300"})");
}

TEST_P(StoreTest, NothingUncommittedSurvivesReopen) {
  int64_t job = AddJob("x");
  ASSERT_TRUE(store_->Begin().ok());
  RunRecord run = NewRun(job, 1000);
  ASSERT_TRUE(store_->InsertRun(run).ok());
  Reopen();  // closes without COMMIT
  auto runs = store_->ListRuns({});
  ASSERT_TRUE(runs.ok());
  EXPECT_TRUE(runs->empty());
}

TEST_P(StoreTest, CommittedWritesSurviveReopenAndRolledBackOnesDoNot) {
  EXPECT_FALSE(store_->in_transaction());
  ASSERT_TRUE(store_->Begin().ok());
  EXPECT_TRUE(store_->in_transaction());
  ASSERT_TRUE(store_->SetCounter("token", 7).ok());
  ASSERT_TRUE(store_->Commit().ok());
  EXPECT_FALSE(store_->in_transaction());
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->SetCounter("token", 8).ok());
  store_->Rollback();
  EXPECT_FALSE(store_->in_transaction());
  store_->Rollback();  // outside a transaction: nothing to do
  EXPECT_EQ(*store_->GetCounter("token"), 7);
  Reopen();
  EXPECT_EQ(*store_->GetCounter("token"), 7);
}

TEST_P(StoreTest, CountersPersist) {
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->SetCounter("token", 41).ok());
  ASSERT_TRUE(store_->SetCounter("token", 42).ok());
  ASSERT_TRUE(store_->Commit().ok());
  EXPECT_EQ(*store_->GetCounter("token"), 42);
  EXPECT_EQ(*store_->GetCounter("missing"), 0);
}

TEST_P(StoreTest, TheCurrentRevisionIsTheNewestAndNoneBeforeTheFirstApply) {
  Result<RevisionRow> none = store_->CurrentRevision();
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->id, 0);
  ASSERT_TRUE(store_->Begin().ok());
  Result<int64_t> first = store_->InsertRevision("[jobs.a]\n", "alice", 1000, "+a");
  Result<int64_t> second = store_->InsertRevision("[jobs.b]\n", "bob", 2000, "-a +b");
  ASSERT_TRUE(first.ok() && second.ok());
  ASSERT_TRUE(store_->Commit().ok());
  EXPECT_GT(*second, *first);
  Result<RevisionRow> current = store_->CurrentRevision();
  ASSERT_TRUE(current.ok());
  EXPECT_EQ(current->id, *second);
  EXPECT_EQ(current->text, "[jobs.b]\n");
  EXPECT_EQ(current->author, "bob");
  EXPECT_EQ(current->at_ms, 2000);
}

TEST_P(StoreTest, JobTimingIsWrittenOnInsertAndUpdateAndReadBackWithoutTheSpec) {
  JobTiming timing{"*/5 * * * *", Dialect::kCron, "Europe/Berlin", 0,
                   true,          Misfire::kSkip, Overlap::kAllow, 3,
                   3'600'000};
  timing.on_labels = "role=web dc!=fra1";
  ASSERT_TRUE(store_->Begin().ok());
  Result<int64_t> id = store_->InsertJob({0, "five", "{}", true, false, 1000, 1, timing}, 1);
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(store_->Commit().ok());
  Result<JobRow> row = store_->GetJob(*id);
  ASSERT_TRUE(row.ok());
  EXPECT_EQ(row->timing, timing);
  EXPECT_EQ(row->spec_json, "{}");

  JobTiming changed{"@every 1h",       Dialect::kCron,    "", 42, false,
                    Misfire::kFireAll, Overlap::kReplace, 9,  0};
  changed.on_labels = "role=db";
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->DeactivateJob(*id, 2, 2).ok());
  ASSERT_TRUE(store_->UpdateJobSpec(*id, "{\"x\":1}", changed, 3, 3).ok());
  ASSERT_TRUE(store_->Commit().ok());
  std::vector<std::string> names;
  int64_t unreadable = 0;
  ASSERT_TRUE(store_
                  ->ForEachJobHead(
                      [&](const JobHead& h) {
                        names.push_back(std::string(h.name));
                        EXPECT_TRUE(h.active);  // an update brings a removed job back
                        EXPECT_EQ(h.schedule, "@every 1h");
                        EXPECT_EQ(h.anchor_ms, 42);
                        EXPECT_FALSE(h.enabled);
                        EXPECT_EQ(h.misfire, Misfire::kFireAll);
                        EXPECT_EQ(h.overlap, Overlap::kReplace);
                        EXPECT_EQ(h.misfire_cap, 9);
                        EXPECT_EQ(h.expect_success_within_ms, 0);
                        EXPECT_EQ(h.on_labels, "role=db");
                        EXPECT_EQ(h.updated_ms, 3);  // the update's time
                      },
                      &unreadable)
                  .ok());
  EXPECT_EQ(names, std::vector<std::string>{"five"});
  EXPECT_EQ(unreadable, 0);
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->DeactivateJob(*id, 4, 4).ok());
  ASSERT_TRUE(store_->Commit().ok());
  EXPECT_FALSE(store_->GetJob(*id)->active);
  EXPECT_EQ(store_->GetJob(*id)->revision, 4);
}

TEST_P(StoreTest, JobNamesAreUniqueAndUnknownJobsAreNotFound) {
  int64_t id = AddJob("backup");
  ASSERT_TRUE(store_->Begin().ok());
  EXPECT_EQ(store_->InsertJob({0, "backup", "{}", true, false, 1000, 1}, 1).status().code(),
            Status::Code::kConflict);
  int64_t other = id + 100;
  EXPECT_EQ(store_->UpdateJobSpec(other, "{}", {}, 2, 2).code(), Status::Code::kNotFound);
  EXPECT_EQ(store_->DeactivateJob(other, 2, 2).code(), Status::Code::kNotFound);
  EXPECT_EQ(store_->SetJobPaused(other, true).code(), Status::Code::kNotFound);
  store_->Rollback();
  EXPECT_EQ(store_->GetJob(other).status().code(), Status::Code::kNotFound);
}

TEST_P(StoreTest, JobsAreReadInIdOrderWithPauseAndNextFire) {
  int64_t a = AddJob("a");
  int64_t b = AddJob("b");
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->SetJobPaused(a, true).ok());
  ASSERT_TRUE(store_->SetNextFire(a, std::nullopt).ok());
  ASSERT_TRUE(store_->SetNextFire(b, 90'000).ok());
  ASSERT_TRUE(store_->Commit().ok());
  std::vector<JobRow> jobs;
  ASSERT_TRUE(store_->ForEachJob([&](JobRow&& j) { jobs.push_back(std::move(j)); }).ok());
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].id, a);
  EXPECT_EQ(jobs[0].name, "a");
  EXPECT_TRUE(jobs[0].paused);
  EXPECT_EQ(jobs[0].next_fire_ms, std::nullopt);
  EXPECT_EQ(jobs[1].id, b);
  EXPECT_FALSE(jobs[1].paused);
  EXPECT_EQ(jobs[1].next_fire_ms, 90'000);
  EXPECT_EQ(jobs[1].spec_json, "{}");
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->SetJobPaused(a, false).ok());
  ASSERT_TRUE(store_->Commit().ok());
  EXPECT_FALSE(store_->GetJob(a)->paused);
}

TEST_P(StoreTest, NextFireTimesSetInATransactionAreReadInItAndKeptOnlyByItsCommit) {
  int64_t a = AddJob("a");
  int64_t b = AddJob("b");
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->SetNextFire(a, 10'000).ok());
  ASSERT_TRUE(store_->SetNextFire(b, 20'000).ok());
  ASSERT_TRUE(store_->SetNextFire(a, 30'000).ok());  // the last one set wins
  EXPECT_EQ(store_->GetJob(a)->next_fire_ms, 30'000);
  ASSERT_TRUE(store_->SetNextFire(b, std::nullopt).ok());
  ASSERT_TRUE(store_->Commit().ok());
  EXPECT_EQ(store_->GetJob(a)->next_fire_ms, 30'000);
  EXPECT_EQ(store_->GetJob(b)->next_fire_ms, std::nullopt);
  // A rolled-back transaction's times are gone, also from the next transaction's commit.
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->SetNextFire(a, 40'000).ok());
  store_->Rollback();
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->SetNextFire(b, 50'000).ok());
  ASSERT_TRUE(store_->Commit().ok());
  std::vector<int64_t> seen;
  ASSERT_TRUE(
      store_
          ->ForEachJobHead([&](const JobHead& h) { seen.push_back(h.next_fire_ms.value_or(-1)); },
                           nullptr)
          .ok());
  EXPECT_EQ(seen, (std::vector<int64_t>{30'000, 50'000}));
}

TEST_P(StoreTest, MissesAreListedPerJobFromAGivenTimeInOrder) {
  int64_t a = AddJob("a");
  int64_t b = AddJob("b");
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->InsertMiss({a, 5000, 9000, 5, "coordinator down", 10'000}).ok());
  ASSERT_TRUE(store_->InsertMiss({a, 1000, 2000, 2, "coordinator down", 3000}).ok());
  ASSERT_TRUE(store_->InsertMiss({b, 1000, 2000, 2, "paused", 3000}).ok());
  ASSERT_TRUE(store_->Commit().ok());
  Result<std::vector<MissRow>> all = store_->ListMisses(a, 0);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].first_ms, 1000);
  EXPECT_EQ((*all)[1].first_ms, 5000);
  EXPECT_EQ((*all)[1].last_ms, 9000);
  EXPECT_EQ((*all)[1].count, 5);
  EXPECT_EQ((*all)[1].reason, "coordinator down");
  EXPECT_EQ((*all)[1].at_ms, 10'000);
  Result<std::vector<MissRow>> recent = store_->ListMisses(a, 2001);  // by their last instant
  ASSERT_TRUE(recent.ok());
  ASSERT_EQ(recent->size(), 1u);
  EXPECT_EQ((*recent)[0].first_ms, 5000);
}

TEST_P(StoreTest, NotificationsAreDueInOrderUpdatedListedAndPrunedOnceDone) {
  int64_t a = AddJob("a");
  auto row = [&](int64_t created, std::string target, std::string detail = "") {
    NotificationRow n;
    n.created_ms = created;
    n.job_id = a;
    n.job = "a";
    n.run_id = 7;
    n.event = "failed";
    n.reminder = created >= 2000;
    n.failures = 3;
    n.failing_since_ms = 500;
    n.detail = std::move(detail);
    n.target = std::move(target);
    n.next_ms = created;
    return n;
  };
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->InsertNotification(row(1000, "ops", "it's \"quoted\"\n")).ok());
  ASSERT_TRUE(store_->InsertNotification(row(3000, "mailto:x@example.com")).ok());
  ASSERT_TRUE(store_->InsertNotification(row(2000, "chat")).ok());
  ASSERT_TRUE(store_->Commit().ok());

  Result<std::vector<NotificationRow>> due = store_->DueNotifications(2000, 10);
  ASSERT_TRUE(due.ok()) << due.status().ToString();
  ASSERT_EQ(due->size(), 2u);
  EXPECT_EQ((*due)[0].target, "ops");
  EXPECT_EQ((*due)[0].detail, "it's \"quoted\"\n");
  EXPECT_EQ((*due)[0].state, "pending");
  EXPECT_FALSE((*due)[0].reminder);
  EXPECT_EQ((*due)[0].failures, 3);
  EXPECT_EQ((*due)[0].failing_since_ms, 500);
  EXPECT_EQ((*due)[0].run_id, 7);
  EXPECT_EQ((*due)[1].target, "chat");
  EXPECT_TRUE((*due)[1].reminder);

  // The first is delivered, the second retried later.
  NotificationRow sent = (*due)[0], retry = (*due)[1];
  sent.state = "sent";
  sent.attempts = 1;
  sent.done_ms = 2100;
  retry.attempts = 1;
  retry.next_ms = 9000;
  retry.last_error = "notify channel \"chat\": HTTP 500";
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->UpdateNotification(sent).ok());
  ASSERT_TRUE(store_->UpdateNotification(retry).ok());
  ASSERT_TRUE(store_->Commit().ok());
  due = store_->DueNotifications(5000, 10);
  ASSERT_TRUE(due.ok());
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ((*due)[0].target, "mailto:x@example.com");

  Result<std::vector<NotificationRow>> all = store_->ListNotifications({});
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_GT((*all)[0].id, (*all)[1].id);  // newest first
  Result<std::vector<NotificationRow>> pending =
      store_->ListNotifications({.job = "a", .state = "pending"});
  ASSERT_TRUE(pending.ok());
  ASSERT_EQ(pending->size(), 2u);
  EXPECT_EQ((*pending)[0].last_error, "notify channel \"chat\": HTTP 500");
  EXPECT_EQ((*pending)[0].next_ms, 9000);
  Result<std::vector<NotificationRow>> other = store_->ListNotifications({.job = "b"});
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(other->empty());
  Result<std::vector<NotificationRow>> page =
      store_->ListNotifications({.before_id = (*all)[0].id, .limit = 1});
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->size(), 1u);
  EXPECT_EQ((*page)[0].id, (*all)[1].id);

  // Only rows that are done, and done before the bound, are pruned.
  ASSERT_TRUE(store_->Begin().ok());
  Result<int64_t> pruned = store_->PruneNotifications(2100, 10);
  ASSERT_TRUE(store_->Commit().ok());
  ASSERT_TRUE(pruned.ok());
  EXPECT_EQ(*pruned, 0);
  ASSERT_TRUE(store_->Begin().ok());
  pruned = store_->PruneNotifications(1'000'000, 10);
  ASSERT_TRUE(store_->Commit().ok());
  ASSERT_TRUE(pruned.ok());
  EXPECT_EQ(*pruned, 1);
  all = store_->ListNotifications({});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 2u);
}

TEST_P(StoreTest, AlertStatesArePutPerJobAndReadBack) {
  AlertState x{.failing_since_ms = 1,
               .failures = 2,
               .last_sent_ms = 3,
               .overdue_sent_ms = 4,
               .missed_sent_ms = 5,
               .skipped_sent_ms = 6,
               .agent_lost_sent_ms = 7};
  AlertState y;
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->PutAlertState(9, AlertState{}).ok());
  ASSERT_TRUE(store_->PutAlertState(4, x).ok());
  ASSERT_TRUE(store_->PutAlertState(9, y).ok());  // replaces
  ASSERT_TRUE(store_->Commit().ok());
  Reopen();
  std::vector<std::pair<int64_t, AlertState>> got;
  ASSERT_TRUE(
      store_->ForEachAlertState([&](int64_t id, const AlertState& a) { got.emplace_back(id, a); })
          .ok());
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].first, 4);
  EXPECT_EQ(got[0].second, x);
  EXPECT_EQ(got[1].first, 9);
  EXPECT_EQ(got[1].second, y);
}

TEST_P(StoreTest, TheLastResultOfAJobIsItsNewestFinishedRunThatWasNotSkipped) {
  int64_t a = AddJob("a");
  int64_t b = AddJob("b");
  AddJob("never-ran");
  int64_t a1 = AddRun(NewRun(a, 1000));
  int64_t a2 = AddRun(NewRun(a, 2000));
  int64_t a3 = AddRun(NewRun(a, 3000));
  AddRun(NewRun(a, 4000));  // still pending: not a result
  int64_t b1 = AddRun(NewRun(b, 1000));
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->UpdateRunState(a1, RunState::kSucceeded, 1500, "").ok());
  ASSERT_TRUE(store_->UpdateRunState(a2, RunState::kFailed, 2500, "").ok());
  ASSERT_TRUE(store_->UpdateRunState(a3, RunState::kSkipped, 3000, "overlap").ok());
  ASSERT_TRUE(store_->UpdateRunState(b1, RunState::kTimedOut, 1700, "").ok());
  ASSERT_TRUE(store_->Commit().ok());
  std::map<int64_t, std::pair<RunState, int64_t>> last;
  ASSERT_TRUE(store_
                  ->ForEachLastResult([&](const LastResult& r) {
                    last[r.job_id] = {r.state, r.finished_ms};
                  })
                  .ok());
  EXPECT_EQ(last.size(), 2u);
  EXPECT_EQ(last[a], std::make_pair(RunState::kFailed, int64_t{2500}));
  EXPECT_EQ(last[b], std::make_pair(RunState::kTimedOut, int64_t{1700}));
}

TEST_P(StoreTest, TheLastResultKnowsTheNewestSuccessAndTheLastRunsDurationFromItsFirstStart) {
  int64_t a = AddJob("a");
  int64_t b = AddJob("b");
  int64_t c = AddJob("c");
  int64_t a1 = AddRun(NewRun(a, 1000));
  int64_t a2 = AddRun(NewRun(a, 2000));
  int64_t a3 = AddRun(NewRun(a, 3000));
  int64_t b1 = AddRun(NewRun(b, 1000));
  int64_t c1 = AddRun(NewRun(c, 1000));
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->UpdateRunState(a1, RunState::kSucceeded, 1500, "").ok());
  ASSERT_TRUE(store_->UpdateRunState(a2, RunState::kSucceeded, 2600, "").ok());
  // a's last run failed: its shards started at 3100 and 3200 and it ended at 3900.
  for (int i = 0; i < 2; ++i) {
    ShardRecord shard{.run_id = a3, .index = i, .state = RunState::kFailed};
    shard.started_ms = 3100 + 100 * i;
    shard.finished_ms = 3900;
    ASSERT_TRUE(store_->UpdateShard(shard).ok());
  }
  ASSERT_TRUE(store_->UpdateRunState(a3, RunState::kFailed, 3900, "").ok());
  ASSERT_TRUE(store_->UpdateRunState(b1, RunState::kCanceled, 1200, "").ok());  // none started
  ASSERT_TRUE(store_->UpdateRunState(c1, RunState::kSucceeded, 1800, "").ok());
  ASSERT_TRUE(store_->Commit().ok());
  std::map<int64_t, LastResult> last;
  ASSERT_TRUE(store_->ForEachLastResult([&](const LastResult& r) { last[r.job_id] = r; }).ok());
  ASSERT_EQ(last.size(), 3u);
  EXPECT_EQ(last[a].state, RunState::kFailed);
  EXPECT_EQ(last[a].finished_ms, 3900);
  EXPECT_EQ(last[a].duration_ms, 800);
  EXPECT_EQ(last[a].last_success_ms, 2600);
  EXPECT_EQ(last[b].duration_ms, 0);
  EXPECT_EQ(last[b].last_success_ms, std::nullopt);
  EXPECT_EQ(last[c].state, RunState::kSucceeded);
  EXPECT_EQ(last[c].last_success_ms, 1800);
}

TEST_P(StoreTest, PruningDeletesRunsEndedBeforeTheBoundButNotOpenOnesNorTheNewestPerJob) {
  int64_t a = AddJob("a");
  int64_t b = AddJob("b");
  std::vector<int64_t> a_runs;
  for (int i = 1; i <= 5; ++i) a_runs.push_back(AddRun(NewRun(a, i * 1000)));
  int64_t b_old = AddRun(NewRun(b, 500));  // b's only run: its newest, kept
  int64_t a_open = AddRun(NewRun(a, 6000));
  ASSERT_TRUE(store_->Begin().ok());
  for (int64_t id : a_runs) {
    ASSERT_TRUE(store_->UpdateRunState(id, RunState::kSucceeded, 9000, "").ok());
  }
  ASSERT_TRUE(store_->UpdateRunState(b_old, RunState::kFailed, 900, "").ok());
  ASSERT_TRUE(store_->PutOutputEnd({a_runs[0], 0, 1, 3, "host1", 7}).ok());
  ASSERT_TRUE(store_->InsertMiss({a, 100, 200, 2, "paused", 300}).ok());
  ASSERT_TRUE(store_->InsertMiss({a, 100, 20'000, 2, "paused", 300}).ok());
  ASSERT_TRUE(store_->Commit().ok());
  // Ended before 10 s, keeping the 3 newest of each job: a's open run and its two newest
  // ended runs are kept, so a's three oldest go.
  ASSERT_TRUE(store_->Begin().ok());
  Result<PrunedRuns> pruned = store_->PruneRuns({.ended_before_ms = 10'000, .keep_last = 3});
  ASSERT_TRUE(pruned.ok()) << pruned.status().ToString();
  ASSERT_TRUE(store_->Commit().ok());
  EXPECT_EQ(pruned->run_ids, (std::vector<int64_t>{a_runs[0], a_runs[1], a_runs[2]}));
  // 3 runs, 6 shards, 1 output end, 1 miss.
  EXPECT_EQ(pruned->rows, 11);
  EXPECT_EQ(pruned->next_after_id, 0);
  EXPECT_EQ(RunIds({}), (std::vector<int64_t>{a_open, b_old, a_runs[4], a_runs[3]}));
  EXPECT_TRUE(store_->OutputEnds(a_runs[0])->empty());
  EXPECT_EQ(store_->ListMisses(a, 0)->size(), 1u);
  // Nothing is left that the bound allows: a pass deletes nothing.
  ASSERT_TRUE(store_->Begin().ok());
  pruned = store_->PruneRuns({.ended_before_ms = 10'000, .keep_last = 3});
  ASSERT_TRUE(store_->Commit().ok());
  EXPECT_TRUE(pruned->run_ids.empty());
  // keep_last 0 keeps none for their count; the open run still stays, and so does a's newest
  // success.
  ASSERT_TRUE(store_->Begin().ok());
  pruned = store_->PruneRuns({.ended_before_ms = 10'000, .keep_last = 0});
  ASSERT_TRUE(store_->Commit().ok());
  EXPECT_EQ(pruned->run_ids, (std::vector<int64_t>{a_runs[3], b_old}));
  EXPECT_EQ(RunIds({}), (std::vector<int64_t>{a_open, a_runs[4]}));
}

// A step run goes only with its flow run, whose age and place among its job's runs decide;
// the ids of both are reported, so that their output goes too.
TEST_P(StoreTest, PruningDeletesAFlowRunWithItsStepRunsAndNeverAStepRunAlone) {
  int64_t flow = AddJob("etl");
  int64_t step = AddJob("etl:load");
  auto flow_run = [&](int64_t at) {
    int64_t id = AddRun(NewRun(flow, at, 0));
    RunRecord s = NewRun(step, at, 1);
    s.reason = RunReason::kFlow;
    s.flow_run_id = id;
    s.flow_step = 0;
    int64_t step_id = AddRun(s);
    EXPECT_TRUE(store_->Begin().ok());
    EXPECT_TRUE(store_->UpdateRunState(step_id, RunState::kFailed, at + 10, "").ok());
    EXPECT_TRUE(store_->UpdateRunState(id, RunState::kFailed, at + 20, "").ok());
    EXPECT_TRUE(store_->Commit().ok());
    return std::make_pair(id, step_id);
  };
  auto [old_flow, old_step] = flow_run(1000);
  auto [new_flow, new_step] = flow_run(2000);
  int64_t last = AddRun(NewRun(flow, 3000));  // the store's newest run is never deleted
  ASSERT_TRUE(store_->Begin().ok());
  Result<PrunedRuns> pruned = store_->PruneRuns({.ended_before_ms = 10'000, .keep_last = 2});
  ASSERT_TRUE(pruned.ok()) << pruned.status().ToString();
  ASSERT_TRUE(store_->Commit().ok());
  // The flow keeps its two newest runs; of the step's job ("etl:load") two runs were kept by
  // count, but a step run never goes alone either way.
  std::vector<int64_t> ids = pruned->run_ids;
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<int64_t>{old_flow, old_step}));
  EXPECT_EQ(pruned->rows, 3);  // two runs and the step's shard
  EXPECT_EQ(RunIds({}), (std::vector<int64_t>{last, new_step, new_flow}));
  EXPECT_TRUE(store_->StepRuns(old_flow)->empty());
  ASSERT_TRUE(store_->Begin().ok());
  pruned = store_->PruneRuns({.ended_before_ms = 10'000, .keep_last = 0});
  ASSERT_TRUE(pruned.ok());
  ASSERT_TRUE(store_->Commit().ok());
  ids = pruned->run_ids;
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<int64_t>{new_flow, new_step}));
  EXPECT_EQ(RunIds({}), (std::vector<int64_t>{last}));
}

// A flow run stays while one of its step runs must: its job's newest success, the store's
// newest run, or one not ended before the bound.
TEST_P(StoreTest, AFlowRunStaysWhileOneOfItsStepRunsMust) {
  int64_t flow = AddJob("etl");
  int64_t named = AddJob("extract");
  auto add = [&](int64_t job, int64_t at, RunState state, int64_t flow_run = 0) {
    RunRecord run = NewRun(job, at, flow_run == 0 ? 0 : 1);
    if (flow_run != 0) {
      run.reason = RunReason::kFlow;
      run.flow_run_id = flow_run;
      run.flow_step = 0;
    }
    int64_t id = AddRun(run);
    EXPECT_TRUE(store_->Begin().ok());
    EXPECT_TRUE(store_->UpdateRunState(id, state, at + 10, "").ok());
    EXPECT_TRUE(store_->Commit().ok());
    return id;
  };
  // The named job's only success is a step of an older flow run that failed.
  int64_t old_flow = add(flow, 1000, RunState::kFailed);
  int64_t success = add(named, 1001, RunState::kSucceeded, old_flow);
  add(flow, 2000, RunState::kSucceeded);
  add(flow, 3000, RunState::kSucceeded);
  add(named, 3500, RunState::kFailed);
  ASSERT_TRUE(store_->Begin().ok());
  Result<PrunedRuns> pruned = store_->PruneRuns({.ended_before_ms = 10'000, .keep_last = 0});
  ASSERT_TRUE(pruned.ok()) << pruned.status().ToString();
  ASSERT_TRUE(store_->Commit().ok());
  EXPECT_EQ(std::count(pruned->run_ids.begin(), pruned->run_ids.end(), old_flow), 0);
  EXPECT_EQ(std::count(pruned->run_ids.begin(), pruned->run_ids.end(), success), 0);
  EXPECT_TRUE(store_->GetRun(success)->has_value());

  // A flow run whose step is the store's newest run stays, so that no id is handed out twice.
  int64_t a = add(flow, 4000, RunState::kFailed);
  add(flow, 4001, RunState::kFailed);
  int64_t newest = add(named, 4002, RunState::kFailed, a);
  ASSERT_TRUE(store_->Begin().ok());
  pruned = store_->PruneRuns({.ended_before_ms = 10'000, .keep_last = 0});
  ASSERT_TRUE(pruned.ok());
  ASSERT_TRUE(store_->Commit().ok());
  EXPECT_EQ(std::count(pruned->run_ids.begin(), pruned->run_ids.end(), a), 0);
  EXPECT_TRUE(store_->GetRun(newest)->has_value());
}

// A flow run's step runs count against a call's limit: one call deletes the first flow run
// whole, and no more runs than the limit after it.
TEST_P(StoreTest, StepRunsCountAgainstAPruningCallsLimit) {
  int64_t flow = AddJob("etl");
  int64_t step = AddJob("etl:s");
  std::vector<int64_t> flows;
  for (int i = 0; i < 3; ++i) {
    int64_t id = AddRun(NewRun(flow, 1000 + i, 0));
    flows.push_back(id);
    for (int k = 0; k < 3; ++k) {
      RunRecord s = NewRun(step, 1000 + i, 1);
      s.reason = RunReason::kFlow;
      s.flow_run_id = id;
      s.flow_step = k;
      int64_t sid = AddRun(s);
      ASSERT_TRUE(store_->Begin().ok());
      ASSERT_TRUE(store_->UpdateRunState(sid, RunState::kFailed, 1100, "").ok());
      ASSERT_TRUE(store_->Commit().ok());
    }
    ASSERT_TRUE(store_->Begin().ok());
    ASSERT_TRUE(store_->UpdateRunState(id, RunState::kFailed, 1200, "").ok());
    ASSERT_TRUE(store_->Commit().ok());
  }
  AddRun(NewRun(flow, 5000));  // the newest
  ASSERT_TRUE(store_->Begin().ok());
  Result<PrunedRuns> pruned =
      store_->PruneRuns({.ended_before_ms = 10'000, .keep_last = 0, .limit = 2});
  ASSERT_TRUE(pruned.ok()) << pruned.status().ToString();
  ASSERT_TRUE(store_->Commit().ok());
  EXPECT_EQ(pruned->run_ids.size(), 4u);  // the first flow run and its three steps
  EXPECT_EQ(pruned->run_ids.back(), flows[0]);
  EXPECT_NE(pruned->next_after_id, 0);
  ASSERT_TRUE(store_->Begin().ok());
  pruned = store_->PruneRuns(
      {.ended_before_ms = 10'000, .keep_last = 0, .limit = 8, .after_id = pruned->next_after_id});
  ASSERT_TRUE(pruned.ok());
  ASSERT_TRUE(store_->Commit().ok());
  EXPECT_EQ(pruned->run_ids.size(), 8u);
}

// SQLite gives a new run the largest id plus one: were the newest run deleted, its id would be
// handed out again, and output left of the deleted run would become the new run's.
TEST_P(StoreTest, PruningNeverDeletesTheStoresNewestRunSoThatNoIdIsHandedOutTwice) {
  int64_t a = AddJob("a");
  std::vector<int64_t> runs;
  for (int i = 1; i <= 3; ++i) runs.push_back(AddRun(NewRun(a, i * 1000)));
  ASSERT_TRUE(store_->Begin().ok());
  for (int64_t id : runs) ASSERT_TRUE(store_->UpdateRunState(id, RunState::kFailed, 9000, "").ok());
  Result<PrunedRuns> pruned = store_->PruneRuns({.ended_before_ms = 10'000, .keep_last = 0});
  ASSERT_TRUE(pruned.ok()) << pruned.status().ToString();
  ASSERT_TRUE(store_->Commit().ok());
  EXPECT_EQ(pruned->run_ids, (std::vector<int64_t>{runs[0], runs[1]}));
  EXPECT_EQ(RunIds({}), (std::vector<int64_t>{runs[2]}));
  EXPECT_GT(AddRun(NewRun(a, 20'000)), runs[2]);
}

TEST_P(StoreTest, PruningKeepsAJobsNewestSuccessBehindAnyNumberOfFailures) {
  int64_t a = AddJob("a");
  int64_t ok1 = AddRun(NewRun(a, 1000));
  int64_t ok2 = AddRun(NewRun(a, 2000));
  std::vector<int64_t> failed;
  for (int i = 3; i <= 8; ++i) failed.push_back(AddRun(NewRun(a, i * 1000)));
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->UpdateRunState(ok1, RunState::kSucceeded, 8000, "").ok());
  ASSERT_TRUE(store_->UpdateRunState(ok2, RunState::kSucceeded, 8500, "").ok());
  for (int64_t id : failed)
    ASSERT_TRUE(store_->UpdateRunState(id, RunState::kFailed, 9000, "").ok());
  ASSERT_TRUE(store_->Commit().ok());
  ASSERT_TRUE(store_->Begin().ok());
  Result<PrunedRuns> pruned = store_->PruneRuns({.ended_before_ms = 10'000, .keep_last = 2});
  ASSERT_TRUE(pruned.ok()) << pruned.status().ToString();
  ASSERT_TRUE(store_->Commit().ok());
  // The older success and the four oldest failures go; the newest success stays behind the
  // two newest runs keep_last keeps.
  EXPECT_EQ(pruned->run_ids,
            (std::vector<int64_t>{ok1, failed[0], failed[1], failed[2], failed[3]}));
  EXPECT_EQ(RunIds({}), (std::vector<int64_t>{failed[5], failed[4], ok2}));
  std::optional<int64_t> last_success;
  ASSERT_TRUE(store_
                  ->ForEachLastResult([&](const LastResult& r) {
                    if (r.job_id == a) last_success = r.last_success_ms;
                  })
                  .ok());
  EXPECT_EQ(last_success, 8500);
}

TEST_P(StoreTest, PruningDeletesAtMostItsLimitAndResumesWhereItStopped) {
  int64_t a = AddJob("a");
  std::vector<int64_t> runs;
  for (int i = 1; i <= 5; ++i) runs.push_back(AddRun(NewRun(a, i * 1000)));
  int64_t newer = AddRun(NewRun(a, 50'000));  // created after the bound: ends the pass
  ASSERT_TRUE(store_->Begin().ok());
  for (int64_t id : runs) ASSERT_TRUE(store_->UpdateRunState(id, RunState::kFailed, 9000, "").ok());
  ASSERT_TRUE(store_->UpdateRunState(newer, RunState::kFailed, 51'000, "").ok());
  ASSERT_TRUE(store_->Commit().ok());
  RunRetention r{.ended_before_ms = 10'000, .keep_last = 0, .limit = 2};
  std::vector<int64_t> deleted;
  for (int call = 0; call < 10; ++call) {
    ASSERT_TRUE(store_->Begin().ok());
    Result<PrunedRuns> pruned = store_->PruneRuns(r);
    ASSERT_TRUE(pruned.ok()) << pruned.status().ToString();
    ASSERT_TRUE(store_->Commit().ok());
    EXPECT_LE(pruned->run_ids.size(), 2u);
    deleted.insert(deleted.end(), pruned->run_ids.begin(), pruned->run_ids.end());
    r.after_id = pruned->next_after_id;
    if (r.after_id == 0) break;
  }
  EXPECT_EQ(deleted, runs);
  EXPECT_EQ(r.after_id, 0);
  EXPECT_EQ(RunIds({}), (std::vector<int64_t>{newer}));
}

TEST_P(StoreTest, MissingRunsNamesTheIdsOfDeletedAndUnknownRunsInTheOrderGiven) {
  int64_t a = AddJob("a");
  std::vector<int64_t> runs;
  for (int i = 1; i <= 4; ++i) runs.push_back(AddRun(NewRun(a, i * 1000)));
  ASSERT_TRUE(store_->Begin().ok());
  for (int64_t id : {runs[0], runs[2]}) {
    ASSERT_TRUE(store_->UpdateRunState(id, RunState::kFailed, 9000, "").ok());
  }
  // keep_last 0: both ended runs go; the two pending ones stay.
  Result<PrunedRuns> pruned = store_->PruneRuns({.ended_before_ms = 10'000, .keep_last = 0});
  ASSERT_TRUE(pruned.ok()) << pruned.status().ToString();
  ASSERT_TRUE(store_->Commit().ok());
  ASSERT_EQ(pruned->run_ids, (std::vector<int64_t>{runs[0], runs[2]}));
  int64_t unknown = runs[3] + 100;
  Result<std::vector<int64_t>> missing =
      store_->MissingRuns({unknown, runs[3], runs[2], runs[1], runs[0]});
  ASSERT_TRUE(missing.ok()) << missing.status().ToString();
  EXPECT_EQ(*missing, (std::vector<int64_t>{unknown, runs[2], runs[0]}));
  EXPECT_TRUE(store_->MissingRuns({})->empty());
  EXPECT_TRUE(store_->MissingRuns({runs[1], runs[3]})->empty());
}

TEST_P(StoreTest, StatsCountRunsAndTheOldestAndFreedSpaceCanBeReclaimed) {
  Result<StoreStats> empty = store_->Stats();
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_EQ(empty->runs, 0);
  EXPECT_EQ(empty->oldest_run_ms, std::nullopt);
  EXPECT_GT(empty->file_bytes, 0);
  // A new embedded store gives freed space back.
  EXPECT_EQ(empty->reclaims_space, GetParam().gives_space_back);
  int64_t a = AddJob("a");
  std::vector<int64_t> runs;
  for (int i = 1; i <= 200; ++i) {
    RunRecord run = NewRun(a, i * 1000, 8);
    run.note = std::string(2000, 'n');
    runs.push_back(AddRun(std::move(run)));
  }
  Result<StoreStats> full = store_->Stats();
  EXPECT_EQ(full->runs, 200);
  EXPECT_EQ(full->oldest_run_ms, 1000);
  EXPECT_GT(full->file_bytes, empty->file_bytes);  // the size on disk, as it is
  ASSERT_TRUE(store_->Begin().ok());
  for (int64_t id : runs) ASSERT_TRUE(store_->UpdateRunState(id, RunState::kFailed, 1, "").ok());
  Result<PrunedRuns> pruned =
      store_->PruneRuns({.ended_before_ms = 1'000'000, .keep_last = 0, .limit = 500});
  ASSERT_TRUE(pruned.ok());
  ASSERT_TRUE(store_->Commit().ok());
  EXPECT_EQ(pruned->run_ids.size(), 199u);  // all but the store's newest
  Result<StoreStats> freed = store_->Stats();
  Result<int64_t> reclaimed = store_->ReclaimSpace(64 << 20);
  ASSERT_TRUE(reclaimed.ok()) << reclaimed.status().ToString();
  Result<StoreStats> after = store_->Stats();
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after->runs, 1);
  EXPECT_EQ(after->oldest_run_ms, 200'000);
  if (GetParam().gives_space_back) {
    EXPECT_GT(freed->free_bytes, 0);
    EXPECT_GT(*reclaimed, 0);
    EXPECT_LT(after->file_bytes, full->file_bytes);
  } else {
    // Nothing given back in the transaction: autovacuum makes the space reusable later.
    EXPECT_EQ(freed->free_bytes, 0);
    EXPECT_EQ(*reclaimed, 0);
    EXPECT_GT(after->file_bytes, 0);
  }
}

TEST_P(StoreTest, LeasesAreReplacedByKeyAndDeleted) {
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->PutLease({"shard/1/0", "host-a", 5, 1000}).ok());
  ASSERT_TRUE(store_->PutLease({"shard/1/1", "host-b", 6, 1000}).ok());
  ASSERT_TRUE(store_->PutLease({"shard/1/0", "host-c", 7, 2000}).ok());
  ASSERT_TRUE(store_->DeleteLease("shard/1/1").ok());
  ASSERT_TRUE(store_->DeleteLease("shard/9/9").ok());  // none: nothing to do
  ASSERT_TRUE(store_->Commit().ok());
  std::vector<LeaseRow> leases;
  ASSERT_TRUE(store_->ForEachLease([&](LeaseRow&& l) { leases.push_back(std::move(l)); }).ok());
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(leases[0].key, "shard/1/0");
  EXPECT_EQ(leases[0].holder, "host-c");
  EXPECT_EQ(leases[0].token, 7);
  EXPECT_EQ(leases[0].granted_ms, 2000);
}

TEST_P(StoreTest, OutputEndsAreKeptPerAttemptReplacedAndListedByShardAndAttempt) {
  int64_t run = AddRun(NewRun(AddJob("report"), 60'000, 2));
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->PutOutputEnd({run, 1, 1, 4, "host-a", 9}).ok());
  ASSERT_TRUE(store_->PutOutputEnd({run, 0, 2, 7, "host-b", 11}).ok());
  ASSERT_TRUE(store_->PutOutputEnd({run, 0, 1, 3, "host-a", 8}).ok());
  ASSERT_TRUE(store_->PutOutputEnd({run, 1, 1, 5, "host-a", 9}).ok());  // replaces
  ASSERT_TRUE(store_->Commit().ok());
  Reopen();
  Result<std::vector<OutputEndRow>> ends = store_->OutputEnds(run);
  ASSERT_TRUE(ends.ok()) << ends.status().ToString();
  ASSERT_EQ(ends->size(), 3u);
  EXPECT_EQ((*ends)[0].shard, 0);
  EXPECT_EQ((*ends)[0].attempt, 1);
  EXPECT_EQ((*ends)[0].last_seq, 3);
  EXPECT_EQ((*ends)[1].attempt, 2);
  EXPECT_EQ((*ends)[1].agent, "host-b");
  EXPECT_EQ((*ends)[1].token, 11);
  EXPECT_EQ((*ends)[2].last_seq, 5);
  Result<std::optional<OutputEndRow>> one = store_->GetOutputEnd(run, 0, 2);
  ASSERT_TRUE(one.ok() && one->has_value());
  EXPECT_EQ((*one)->last_seq, 7);
  EXPECT_FALSE(store_->GetOutputEnd(run, 1, 2)->has_value());
  EXPECT_TRUE(store_->OutputEnds(run + 1)->empty());
}

TEST_P(StoreTest, AgentsAreReplacedByNameListedByNameAndDeletedOnce) {
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->PutAgent({"web-2", "{}", 4, "1.0", 1000, false}).ok());
  ASSERT_TRUE(store_->PutAgent({"db-1", "{\"disk\":\"ssd\"}", 2, "1.0", 1000, false}).ok());
  ASSERT_TRUE(store_->PutAgent({"web-2", "{\"zone\":\"b\"}", 8, "1.1", 2000, true}).ok());
  ASSERT_TRUE(store_->Commit().ok());
  std::vector<AgentRow> agents;
  ASSERT_TRUE(store_->ForEachAgent([&](AgentRow&& a) { agents.push_back(std::move(a)); }).ok());
  ASSERT_EQ(agents.size(), 2u);
  EXPECT_EQ(agents[0].name, "db-1");
  EXPECT_EQ(agents[0].labels_json, "{\"disk\":\"ssd\"}");
  EXPECT_EQ(agents[1].name, "web-2");
  EXPECT_EQ(agents[1].labels_json, "{\"zone\":\"b\"}");
  EXPECT_EQ(agents[1].slots, 8);
  EXPECT_EQ(agents[1].version, "1.1");
  EXPECT_EQ(agents[1].last_seen_ms, 2000);
  EXPECT_TRUE(agents[1].draining);
  ASSERT_TRUE(store_->Begin().ok());
  EXPECT_TRUE(store_->DeleteAgent("db-1").ok());
  EXPECT_EQ(store_->DeleteAgent("db-1").code(), Status::Code::kNotFound);
  ASSERT_TRUE(store_->Commit().ok());
  agents.clear();
  ASSERT_TRUE(store_->ForEachAgent([&](AgentRow&& a) { agents.push_back(std::move(a)); }).ok());
  ASSERT_EQ(agents.size(), 1u);
}

TEST_P(StoreTest, TokensRoundTripAreUniqueByHashAndAreRevokedOnce) {
  TokenRow admin{.name = "alice", .role = "admin", .hash = "aa", .created_ms = 1000};
  TokenRow trigger{.name = "ci",
                   .role = "trigger",
                   .jobs = "deploy-*",
                   .hash = "bb",
                   .created_ms = 1001,
                   .expires_ms = 90'000};
  TokenRow agent{.name = "agent-web-1",
                 .role = "agent",
                 .hash = "cc",
                 .created_ms = 1002,
                 .agent = "web-1",
                 .labels_json = "{\"zone\":\"a*\"}"};
  TokenRow agent2{
      .name = "agent-web-1b", .role = "agent", .hash = "dd", .created_ms = 1003, .agent = "web-1"};
  TokenRow other{
      .name = "agent-web-2", .role = "agent", .hash = "ee", .created_ms = 1004, .agent = "web-2"};
  ASSERT_TRUE(store_->Begin().ok());
  std::vector<int64_t> ids;
  for (const TokenRow* t : {&admin, &trigger, &agent, &agent2, &other}) {
    Result<int64_t> id = store_->InsertToken(*t);
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    ids.push_back(*id);
  }
  TokenRow same_hash{.name = "mallory", .role = "admin", .hash = "aa", .created_ms = 1005};
  EXPECT_EQ(store_->InsertToken(same_hash).status().code(), Status::Code::kConflict);
  ASSERT_TRUE(store_->RevokeToken(ids[3], 2000).ok());
  EXPECT_EQ(store_->RevokeToken(ids[3], 2001).code(), Status::Code::kNotFound);
  EXPECT_EQ(store_->RevokeToken(ids.back() + 1, 2001).code(), Status::Code::kNotFound);
  Result<int64_t> revoked = store_->RevokeAgentTokens("web-1", 3000);
  ASSERT_TRUE(revoked.ok());
  EXPECT_EQ(*revoked, 1);  // the one still active
  ASSERT_TRUE(store_->Commit().ok());
  std::vector<TokenRow> tokens;
  ASSERT_TRUE(store_->ForEachToken([&](TokenRow&& t) { tokens.push_back(std::move(t)); }).ok());
  ASSERT_EQ(tokens.size(), 5u);
  EXPECT_EQ(tokens[0].id, ids[0]);
  EXPECT_EQ(tokens[0].revoked_ms, std::nullopt);
  EXPECT_EQ(tokens[0].expires_ms, std::nullopt);
  EXPECT_EQ(tokens[1].jobs, "deploy-*");
  EXPECT_EQ(tokens[1].hash, "bb");
  EXPECT_EQ(tokens[1].created_ms, 1001);
  EXPECT_EQ(tokens[1].expires_ms, 90'000);
  EXPECT_EQ(tokens[2].agent, "web-1");
  EXPECT_EQ(tokens[2].labels_json, "{\"zone\":\"a*\"}");
  EXPECT_EQ(tokens[2].revoked_ms, 3000);
  EXPECT_EQ(tokens[3].revoked_ms, 2000);  // revoked before, left as it was
  EXPECT_EQ(tokens[4].revoked_ms, std::nullopt);
}

TEST_P(StoreTest, EventsAreListedNewestFirstByActionActorTimeAndPage) {
  ASSERT_TRUE(store_->Begin().ok());
  // at_ms 1000, 2000, ... 6000; ids 1 to 6.
  const char* kinds[] = {"apply", "trigger", "trigger", "cancel", "trigger", "auth-failure"};
  const char* actors[] = {"alice", "ci", "alice", "alice", "ci", ""};
  for (int i = 0; i < 6; ++i) {
    EventRow e{0,
               1000 * (i + 1),
               kinds[i],
               actors[i],
               *actors[i] ? std::optional<int64_t>(i + 10) : std::nullopt,
               "s" + std::to_string(i),
               "d"};
    ASSERT_TRUE(store_->InsertEvent(e).ok());
  }
  ASSERT_TRUE(store_->InsertEvent(7000, "pause", "bob", "job", "").ok());
  ASSERT_TRUE(store_->Commit().ok());
  auto ids = [this](EventFilter f) {
    std::vector<int64_t> out;
    Result<std::vector<EventRow>> r = store_->ListEvents(f);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    for (const EventRow& e : *r) out.push_back(e.id);
    return out;
  };
  EXPECT_EQ(ids({}), (std::vector<int64_t>{7, 6, 5, 4, 3, 2, 1}));
  EXPECT_EQ(ids({.kind = "trigger"}), (std::vector<int64_t>{5, 3, 2}));
  EXPECT_EQ(ids({.actor = "alice"}), (std::vector<int64_t>{4, 3, 1}));
  EXPECT_EQ(ids({.kind = "trigger", .actor = "ci"}), (std::vector<int64_t>{5, 2}));
  EXPECT_EQ(ids({.since_ms = 4000}), (std::vector<int64_t>{7, 6, 5, 4}));
  EXPECT_EQ(ids({.since_ms = 99000}), (std::vector<int64_t>{}));
  EXPECT_EQ(ids({.limit = 2}), (std::vector<int64_t>{7, 6}));
  EXPECT_EQ(ids({.before_id = 6, .limit = 2}), (std::vector<int64_t>{5, 4}));
  EXPECT_EQ(ids({.kind = "trigger", .since_ms = 2500, .before_id = 5}), (std::vector<int64_t>{3}));
  Result<std::vector<EventRow>> one = store_->ListEvents({.kind = "trigger", .limit = 1});
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].actor, "ci");
  EXPECT_EQ((*one)[0].token_id, 14);
  EXPECT_EQ((*one)[0].at_ms, 5000);
  EXPECT_EQ((*one)[0].subject, "s4");
  Result<std::vector<EventRow>> last = store_->ListEvents({.limit = 1});
  EXPECT_EQ((*last)[0].token_id, std::nullopt);  // recorded without a credential
}

TEST_P(LogStoreTest, LogChunksAreStoredOnceAndCappedWithAMarker) {
  std::unique_ptr<LogStore> logs = OpenLogs(10);
  ASSERT_NE(logs, nullptr);
  LogStore& l = *logs;
  ASSERT_TRUE(l.Begin().ok());
  LogChunk c{.run_id = 1, .shard = 0, .attempt = 1, .seq = 1, .data = "hello"};
  EXPECT_EQ(*l.Append(c), LogStore::AppendResult::kStored);
  EXPECT_EQ(*l.Append(c), LogStore::AppendResult::kDuplicate);
  c.seq = 2;
  c.data = std::string("\0\x1b[31mbin", 9);
  EXPECT_EQ(*l.Append(c), LogStore::AppendResult::kTruncated);  // 5 + 9 > 10
  c.seq = 3;
  EXPECT_EQ(*l.Append(c), LogStore::AppendResult::kTruncated);
  ASSERT_TRUE(l.Commit().ok());
  auto chunks = l.Read({.run_id = 1});
  ASSERT_TRUE(chunks.ok());
  ASSERT_EQ(chunks->size(), 3u);
  EXPECT_EQ((*chunks)[0].data, "hello");
  EXPECT_EQ((*chunks)[1].stream, LogStream::kMarker);
  EXPECT_NE((*chunks)[1].data.find("truncated"), std::string::npos);
  EXPECT_EQ((*chunks)[2].data, "");  // later chunks are counted, not stored again
  EXPECT_EQ(*l.RunBytes(1), 5);
}

// Retention's deletes go in a transaction whose commit need not wait for the disk; it commits
// and rolls back as any other, and a durable one follows it.
TEST_P(LogStoreTest, ARedoableTransactionCommitsAndRollsBackAsAnyOther) {
  std::unique_ptr<LogStore> logs = OpenLogs(1 << 20);
  ASSERT_NE(logs, nullptr);
  LogStore& l = *logs;
  ASSERT_TRUE(l.Begin().ok());
  for (int64_t run : {1, 2}) {
    ASSERT_TRUE(l.Append({.run_id = run, .shard = 0, .attempt = 1, .seq = 1, .data = "out"}).ok());
  }
  ASSERT_TRUE(l.Commit().ok());
  ASSERT_TRUE(l.BeginRedoable().ok());
  ASSERT_TRUE(l.PruneOutput(1, 5, "", 10).ok());
  l.Rollback();
  EXPECT_EQ(*l.RunBytes(1), 3);
  ASSERT_TRUE(l.BeginRedoable().ok());
  Result<LogStore::Pruned> pruned = l.PruneOutput(1, 5, "", 10);
  ASSERT_TRUE(pruned.ok()) << pruned.status().ToString();
  EXPECT_EQ(pruned->chunks, 1);
  ASSERT_TRUE(l.Commit().ok());
  EXPECT_EQ(*l.RunBytes(1), 0);
  ASSERT_TRUE(l.Begin().ok());
  ASSERT_TRUE(l.Append({.run_id = 3, .shard = 0, .attempt = 1, .seq = 1, .data = "more"}).ok());
  ASSERT_TRUE(l.Commit().ok());
  EXPECT_EQ(*l.RunBytes(2), 3);
  EXPECT_EQ(*l.RunBytes(3), 4);
}

TEST_P(LogStoreTest, TheTailOfAnAttemptIsItsLastBytesInOrderWithoutMarkers) {
  std::unique_ptr<LogStore> logs = OpenLogs(1 << 20);
  ASSERT_NE(logs, nullptr);
  ASSERT_TRUE(logs->Begin().ok());
  int64_t seq = 0;
  for (int i = 0; i < 200; ++i) {
    LogChunk c{.run_id = 5,
               .shard = 1,
               .attempt = 2,
               .seq = ++seq,
               .stream = i % 2 ? LogStream::kStderr : LogStream::kStdout,
               .data = "line " + std::to_string(i) + "\n"};
    ASSERT_TRUE(logs->Append(c).ok());
  }
  // Other attempts, shards and runs are not part of it.
  for (LogChunk c : {LogChunk{.run_id = 5, .shard = 1, .attempt = 1, .seq = 1, .data = "old\n"},
                     LogChunk{.run_id = 5, .shard = 0, .attempt = 2, .seq = 1, .data = "s0\n"},
                     LogChunk{.run_id = 6, .shard = 1, .attempt = 2, .seq = 1, .data = "r6\n"}}) {
    ASSERT_TRUE(logs->Append(c).ok());
  }
  ASSERT_TRUE(logs->Commit().ok());
  Result<std::string> tail = logs->Tail(5, 1, 2, 20);
  ASSERT_TRUE(tail.ok()) << tail.status().ToString();
  EXPECT_EQ(*tail, "7\nline 198\nline 199\n");
  Result<std::string> whole = logs->Tail(5, 1, 1, 100);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(*whole, "old\n");
  Result<std::string> none = logs->Tail(7, 0, 1, 100);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, "");
}

// A job's log_cap comes with each chunk: the lower of it and the store's cap applies.
TEST_P(LogStoreTest, AChunksOwnCapLowerThanTheStoresTruncatesAtIt) {
  std::unique_ptr<LogStore> logs = OpenLogs(100);
  ASSERT_NE(logs, nullptr);
  LogStore& l = *logs;
  ASSERT_TRUE(l.Begin().ok());
  LogChunk c{.run_id = 1, .shard = 0, .attempt = 1, .seq = 1, .data = "hello", .cap_bytes = 8};
  EXPECT_EQ(*l.Append(c), LogStore::AppendResult::kStored);
  c.seq = 2;
  c.data = "world";
  EXPECT_EQ(*l.Append(c), LogStore::AppendResult::kTruncated);  // 5 + 5 > 8
  // A larger cap than the store's keeps no more than the store's.
  LogChunk big{.run_id = 2,
               .shard = 0,
               .attempt = 1,
               .seq = 1,
               .data = std::string(101, 'x'),
               .cap_bytes = 1000};
  EXPECT_EQ(*l.Append(big), LogStore::AppendResult::kTruncated);
  ASSERT_TRUE(l.Commit().ok());
  auto chunks = l.Read({.run_id = 1});
  ASSERT_TRUE(chunks.ok());
  ASSERT_EQ(chunks->size(), 2u);
  EXPECT_EQ((*chunks)[0].data, "hello");
  EXPECT_EQ((*chunks)[1].stream, LogStream::kMarker);
  EXPECT_NE((*chunks)[1].data.find("log cap of 8 bytes"), std::string::npos) << (*chunks)[1].data;
  EXPECT_EQ(*l.RunBytes(1), 5);
  auto capped = l.Read({.run_id = 2});
  ASSERT_TRUE(capped.ok());
  ASSERT_EQ(capped->size(), 1u);
  EXPECT_NE((*capped)[0].data.find("log cap of 100 bytes"), std::string::npos);
}

TEST_P(LogStoreTest, TheLastSeqOfEachAttemptCountsChunksOverTheCap) {
  std::unique_ptr<LogStore> logs = OpenLogs(6);
  ASSERT_NE(logs, nullptr);
  ASSERT_TRUE(logs->Begin().ok());
  for (LogChunk c : {LogChunk{.run_id = 3, .shard = 0, .attempt = 1, .seq = 1, .data = "abc"},
                     LogChunk{.run_id = 3, .shard = 0, .attempt = 1, .seq = 2, .data = "de"},
                     LogChunk{.run_id = 3, .shard = 1, .attempt = 2, .seq = 1, .data = "fg"},
                     LogChunk{.run_id = 3, .shard = 1, .attempt = 2, .seq = 2, .data = "over"},
                     LogChunk{.run_id = 4, .shard = 0, .attempt = 1, .seq = 9, .data = ""}}) {
    ASSERT_TRUE(logs->Append(c).ok());
  }
  ASSERT_TRUE(logs->Commit().ok());
  Result<std::vector<LogStore::AttemptSeq>> seqs = logs->LastSeqs(3);
  ASSERT_TRUE(seqs.ok()) << seqs.status().ToString();
  std::map<std::pair<int, int>, int64_t> by_attempt;
  for (const LogStore::AttemptSeq& s : *seqs) by_attempt[{s.shard, s.attempt}] = s.max_seq;
  EXPECT_EQ(by_attempt, (std::map<std::pair<int, int>, int64_t>{{{0, 1}, 2}, {{1, 2}, 2}}));
  EXPECT_TRUE(logs->LastSeqs(5)->empty());
}

TEST_P(LogStoreTest, ChunksAreReadInArrivalOrderByShardAndStreamAndPagedById) {
  std::unique_ptr<LogStore> logs = OpenLogs(1 << 20);
  ASSERT_NE(logs, nullptr);
  ASSERT_TRUE(logs->Begin().ok());
  std::string binary("a\0b\xff", 4);
  const LogChunk chunks[] = {
      {.run_id = 7, .shard = 0, .seq = 1, .stream = LogStream::kStdout, .at_ms = 10, .data = "o0"},
      {.run_id = 7, .shard = 1, .seq = 1, .stream = LogStream::kStderr, .at_ms = 11, .data = "e1"},
      {.run_id = 8, .shard = 0, .seq = 1, .data = "other run"},
      {.run_id = 7,
       .shard = 0,
       .attempt = 2,
       .seq = 1,
       .stream = LogStream::kStderr,
       .at_ms = 12,
       .data = binary},
  };
  for (const LogChunk& c : chunks) {
    EXPECT_EQ(*logs->Append(c), LogStore::AppendResult::kStored);
  }
  logs->Rollback();  // nothing of a rolled-back turn is kept
  EXPECT_FALSE(logs->in_transaction());
  EXPECT_TRUE(logs->Read({.run_id = 7})->empty());
  ASSERT_TRUE(logs->Begin().ok());
  for (const LogChunk& c : chunks) {
    EXPECT_EQ(*logs->Append(c), LogStore::AppendResult::kStored);
  }
  ASSERT_TRUE(logs->Commit().ok());
  auto data = [&](const LogQuery& q) {
    std::vector<std::string> out;
    Result<std::vector<LogChunk>> r = logs->Read(q);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    for (const LogChunk& c : *r) out.push_back(c.data);
    return out;
  };
  EXPECT_EQ(data({.run_id = 7}), (std::vector<std::string>{"o0", "e1", binary}));
  EXPECT_EQ(data({.run_id = 7, .shard = 0}), (std::vector<std::string>{"o0", binary}));
  EXPECT_EQ(data({.run_id = 7, .stream = LogStream::kStderr}),
            (std::vector<std::string>{"e1", binary}));
  EXPECT_EQ(data({.run_id = 7, .max_bytes = 1}), (std::vector<std::string>{"o0"}));
  Result<std::vector<LogChunk>> all = logs->Read({.run_id = 7});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ((*all)[2].attempt, 2);
  EXPECT_EQ((*all)[2].at_ms, 12);
  EXPECT_EQ((*all)[2].stream, LogStream::kStderr);
  EXPECT_EQ(data({.run_id = 7, .after_id = (*all)[0].id}),
            (std::vector<std::string>{"e1", binary}));
  // The tail before an id: the newest chunks up to max_bytes (at least one), in id order.
  constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(data({.run_id = 7, .before_id = kEnd}), (std::vector<std::string>{"o0", "e1", binary}));
  EXPECT_EQ(data({.run_id = 7, .max_bytes = 1, .before_id = kEnd}),
            (std::vector<std::string>{binary}));
  EXPECT_EQ(data({.run_id = 7, .max_bytes = 5, .before_id = kEnd}),
            (std::vector<std::string>{"e1", binary}));
  EXPECT_EQ(data({.run_id = 7, .before_id = (*all)[2].id}), (std::vector<std::string>{"o0", "e1"}));
  EXPECT_EQ(data({.run_id = 7, .shard = 0, .before_id = kEnd}),
            (std::vector<std::string>{"o0", binary}));
  EXPECT_EQ(data({.run_id = 7, .after_id = (*all)[0].id, .before_id = (*all)[2].id}),
            (std::vector<std::string>{"e1"}));
  EXPECT_TRUE(data({.run_id = 7, .before_id = (*all)[0].id}).empty());
  EXPECT_EQ(*logs->RunBytes(7), 8);
  EXPECT_EQ(*logs->RunBytes(9), 0);
}

TEST_P(LogStoreTest, OutputIsAccountedPerRunAndJobAndListedByAgeAndJob) {
  std::unique_ptr<LogStore> logs = OpenLogs(10);
  ASSERT_NE(logs, nullptr);
  ASSERT_TRUE(logs->Begin().ok());
  for (const LogChunk& c : {
           LogChunk{.run_id = 1, .seq = 1, .at_ms = 100, .data = "aaaa", .job_id = 5},
           LogChunk{.run_id = 1, .seq = 2, .at_ms = 200, .data = "bb", .job_id = 5},
           LogChunk{.run_id = 2, .seq = 1, .at_ms = 5000, .data = "ccc", .job_id = 5},
           LogChunk{.run_id = 3, .seq = 1, .at_ms = 150, .data = "0123456789xyz", .job_id = 6},
       }) {
    ASSERT_TRUE(logs->Append(c).ok());
  }
  ASSERT_TRUE(logs->Commit().ok());
  Result<std::optional<RunOutput>> one = logs->OutputOf(1);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  ASSERT_TRUE(one->has_value());
  EXPECT_EQ((*one)->job_id, 5);
  EXPECT_EQ((*one)->bytes, 6);
  EXPECT_EQ((*one)->stored_bytes, 6);
  EXPECT_EQ((*one)->last_ms, 200);
  EXPECT_FALSE((*one)->truncated);
  EXPECT_EQ((*one)->pruned_ms, std::nullopt);
  Result<std::optional<RunOutput>> capped = logs->OutputOf(3);
  EXPECT_TRUE((*capped)->truncated);
  EXPECT_EQ((*capped)->bytes, 0);                // as RunBytes: nothing within the cap
  EXPECT_LT((*capped)->stored_bytes, 13 + 100);  // kept: the marker only
  EXPECT_FALSE(logs->OutputOf(9)->has_value());
  auto ids = [&](const OutputFilter& f) {
    std::vector<int64_t> out;
    Result<std::vector<RunOutput>> listed = logs->ListOutput(f);
    EXPECT_TRUE(listed.ok()) << listed.status().ToString();
    for (const RunOutput& o : *listed) out.push_back(o.run_id);
    return out;
  };
  EXPECT_EQ(ids({}), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(ids({.last_before_ms = 1000}), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(ids({.job_id = 5}), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(ids({.after_run_id = 1, .limit = 1}), (std::vector<int64_t>{2}));
  // Pruned output leaves the kept list; with_pruned still names it (its mark), by run id.
  ASSERT_TRUE(logs->Begin().ok());
  ASSERT_TRUE(logs->PruneOutput(2, 6000, "logs_for 1s", 10).ok());
  ASSERT_TRUE(logs->Commit().ok());
  EXPECT_EQ(ids({}), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(ids({.with_pruned = true}), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(ids({.after_run_id = 1, .limit = 1, .with_pruned = true}), (std::vector<int64_t>{2}));
  EXPECT_FALSE(logs->ListOutput({.job_id = 5, .with_pruned = true}).ok());
  Result<std::vector<JobOutput>> jobs = logs->OutputByJob(10);
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].job_id, 6);  // the largest first: its marker
  EXPECT_EQ((*jobs)[1].job_id, 5);
  EXPECT_EQ((*jobs)[1].stored_bytes, 6);  // run 2's output was pruned
  EXPECT_EQ((*jobs)[1].runs, 1);
}

TEST_P(LogStoreTest, PrunedOutputIsDeletedInSlicesThenMarkedAndLateOutputIsNotKept) {
  std::unique_ptr<LogStore> logs = OpenLogs(1 << 20);
  ASSERT_NE(logs, nullptr);
  ASSERT_TRUE(logs->Begin().ok());
  for (int seq = 1; seq <= 5; ++seq) {
    ASSERT_TRUE(
        logs->Append({.run_id = 4, .seq = seq, .at_ms = 10, .data = "xy", .job_id = 2}).ok());
  }
  ASSERT_TRUE(logs->Append({.run_id = 8, .seq = 1, .at_ms = 10, .data = "keep", .job_id = 2}).ok());
  ASSERT_TRUE(logs->Commit().ok());
  int calls = 0;
  int64_t chunks = 0;
  int64_t bytes = 0;
  for (bool done = false; !done && calls < 10; ++calls) {
    ASSERT_TRUE(logs->Begin().ok());
    Result<LogStore::Pruned> p = logs->PruneOutput(4, 777, "logs_for 7d", 2);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    ASSERT_TRUE(logs->Commit().ok());
    EXPECT_LE(p->chunks, 2);
    chunks += p->chunks;
    bytes += p->bytes;
    done = p->done;
  }
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(chunks, 5);
  EXPECT_EQ(bytes, 10);
  EXPECT_TRUE(logs->Read({.run_id = 4})->empty());
  EXPECT_EQ(logs->Read({.run_id = 8})->size(), 1u);
  Result<std::optional<RunOutput>> out = logs->OutputOf(4);
  ASSERT_TRUE(out.ok() && out->has_value());
  EXPECT_EQ((*out)->pruned_ms, 777);
  EXPECT_EQ((*out)->pruned_reason, "logs_for 7d");
  EXPECT_EQ((*out)->stored_bytes, 0);
  EXPECT_EQ(*logs->RunBytes(4), 10);  // what the run wrote stays counted
  std::vector<int64_t> kept;
  Result<std::vector<RunOutput>> listed = logs->ListOutput({});
  for (const RunOutput& o : *listed) kept.push_back(o.run_id);
  EXPECT_EQ(kept, (std::vector<int64_t>{8}));
  // Output trailing into a pruned run is not kept.
  ASSERT_TRUE(logs->Begin().ok());
  EXPECT_EQ(*logs->Append({.run_id = 4, .seq = 6, .data = "late"}),
            LogStore::AppendResult::kTruncated);
  // A run that never had output is marked all the same.
  Result<LogStore::Pruned> none = logs->PruneOutput(12, 778, "runs_for 30d", 2);
  ASSERT_TRUE(logs->Commit().ok());
  EXPECT_TRUE(none->done);
  EXPECT_TRUE(logs->Read({.run_id = 4})->empty());
  EXPECT_EQ((*logs->OutputOf(12))->pruned_ms, 778);
  // A run deleted altogether: its output and its accounting go, marked or not.
  ASSERT_TRUE(logs->Begin().ok());
  Result<LogStore::Pruned> forgotten = logs->PruneOutput(4, 779, "", 10);
  ASSERT_TRUE(logs->Commit().ok());
  EXPECT_TRUE(forgotten->done);
  EXPECT_FALSE(logs->OutputOf(4)->has_value());
  EXPECT_EQ(*logs->RunBytes(4), 0);
  Result<LogStoreStats> stats = logs->Stats();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->stored_bytes, 4);
  EXPECT_GT(stats->file_bytes, 0);
  EXPECT_EQ(stats->reclaims_space, GetParam().gives_space_back);
  EXPECT_TRUE(logs->ReclaimSpace(100).ok());
}

}  // namespace
}  // namespace jobctl::store
