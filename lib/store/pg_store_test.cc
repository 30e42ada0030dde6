// What only the PostgreSQL backend has, against a real server (testlib/postgres.h): errors
// of a server that is not there or is newer, the hold one coordinator keeps on a shared
// database (a second store waits for it; a store that lost it refuses every transaction),
// and a connection lost and found again. The contract every backend keeps is store_test.cc.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <thread>

#include "store/log_store.h"
#include "store/pg.h"
#include "store/pg_migrations.h"
#include "store/store.h"
#include "testlib/postgres.h"

namespace jobctl::store {
namespace {

// A finished run 7 of job 1 with its one shard, as any schema version holds it.
constexpr const char* kOldRun =
    "INSERT INTO runs(id, job_id, reason, scheduled_ms, created_ms, state, trace_id, "
    "shard_total) VALUES(7, 1, 'schedule', 1000, 1000, 'succeeded', "
    "'0123456789abcdef0123456789abcdef', 1); "
    "INSERT INTO shards(run_id, idx, state, attempt) VALUES(7, 0, 'succeeded', 1)";

class PgStoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Result<std::unique_ptr<jobctl::testing::PostgresServer>> s =
        jobctl::testing::PostgresServer::Start();
    if (s.ok()) {
      server_ = std::move(*s);
    } else {
      why_not_ = s.status().ToString();
    }
  }
  static void TearDownTestSuite() { server_.reset(); }

  void SetUp() override {
    if (server_ == nullptr) {
      if (jobctl::testing::RunningInCi()) FAIL() << why_not_;
      GTEST_SKIP() << "PostgreSQL not available: " << why_not_;
    }
    static int databases = 0;
    std::string name = "t" + std::to_string(++databases);
    ASSERT_TRUE(server_->CreateDatabase(name).ok());
    url_ = server_->Url(name);
  }

  // The scheduler schema at `version` (an earlier release's), with `sql` run in it.
  void WriteOlderDatabase(int version, const std::string& sql) {
    Result<std::unique_ptr<pg::Connection>> older = pg::Connection::Open(url_);
    ASSERT_TRUE(older.ok()) << older.status().ToString();
    std::vector<pg::Connection::Migration> before(PgSchedulerMigrations().begin(),
                                                  PgSchedulerMigrations().begin() + version);
    ASSERT_EQ(before.back().version, version);
    ASSERT_TRUE((*older)->Migrate("scheduler", before).ok());
    ASSERT_TRUE((*older)->Script(sql).ok());
  }

  std::unique_ptr<Store> Open(int64_t hold_ttl_ms = 10000) {
    Result<std::unique_ptr<Store>> s =
        OpenStore({.url = url_, .holder = "test", .hold_ttl_ms = hold_ttl_ms});
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }

  // Ends the session that holds a coordinator's hold (the advisory lock 7462019284: class 1,
  // object 3167051988), as a server that lost sight of the coordinator does; the number ended.
  int64_t EndHoldingSessions() {
    Result<std::unique_ptr<pg::Connection>> admin = pg::Connection::Open(url_);
    EXPECT_TRUE(admin.ok());
    static const pg::Sql kSql{
        "SELECT count(pg_terminate_backend(pid)) FROM pg_locks "
        "WHERE locktype = 'advisory' AND granted AND classid = 1 AND objid = 3167051988 "
        "AND objsubid = 1"};
    Result<pg::Rows> rows = (*admin)->Exec(kSql);
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    return rows.ok() ? rows->Int(0, 0) : -1;
  }

  static std::unique_ptr<jobctl::testing::PostgresServer> server_;
  static std::string why_not_;
  std::string url_;
};

// Joins a thread however the test ends (an ASSERT returns early).
struct Joined {
  std::thread t;
  ~Joined() {
    if (t.joinable()) t.join();
  }
};

std::unique_ptr<jobctl::testing::PostgresServer> PgStoreTest::server_;
std::string PgStoreTest::why_not_;

TEST_F(PgStoreTest, AServerThatIsNotThereIsUnavailable) {
  int port = jobctl::testing::FreeLoopbackPort();
  Result<std::unique_ptr<Store>> s =
      OpenStore({.url = "postgresql://jobctl@127.0.0.1:" + std::to_string(port) + "/x"});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Status::Code::kUnavailable) << s.status().ToString();
}

TEST_F(PgStoreTest, ASchemaNewerThanThisBinaryIsRefused) {
  ASSERT_NE(Open(), nullptr);
  Result<std::unique_ptr<pg::Connection>> admin = pg::Connection::Open(url_);
  ASSERT_TRUE(admin.ok());
  ASSERT_TRUE(
      (*admin)->Script("UPDATE jobctl_schema SET version = 999 WHERE name = 'scheduler'").ok());
  Result<std::unique_ptr<Store>> s = OpenStore({.url = url_});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Status::Code::kCorrupt);
  EXPECT_NE(s.status().message().find("newer than this jobctl"), std::string::npos)
      << s.status().ToString();
}

TEST_F(PgStoreTest, ASecondStoreWaitsUntilTheFirstIsClosedThenHoldsTheDatabase) {
  std::unique_ptr<Store> first = Open();
  ASSERT_NE(first, nullptr);
  std::atomic<bool> opened{false};
  std::unique_ptr<Store> second;
  Joined t{std::thread([&] {
    second = Open();
    opened = true;
  })};
  // Its own writes meanwhile are the first store's alone.
  ASSERT_TRUE(first->Begin().ok());
  ASSERT_TRUE(first->SetCounter("fence", 1).ok());
  ASSERT_TRUE(first->Commit().ok());
  EXPECT_FALSE(opened) << "the second store opened while the first held the database";
  first.reset();
  t.t.join();
  ASSERT_NE(second, nullptr);
  EXPECT_TRUE(second->held());
  EXPECT_EQ(*second->GetCounter("fence"), 1);
}

TEST_F(PgStoreTest, AStoreWhoseSessionEndedTakesItsHoldAgainWhenNobodyElseHasIt) {
  std::unique_ptr<Store> store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_EQ(EndHoldingSessions(), 1);
  // The next transaction finds the connection lost, reconnects and holds the database again.
  ASSERT_TRUE(store->Begin().ok());
  ASSERT_TRUE(store->SetCounter("after", 7).ok());
  ASSERT_TRUE(store->Commit().ok());
  EXPECT_TRUE(store->held());
  EXPECT_EQ(*store->GetCounter("after"), 7);
}

TEST_F(PgStoreTest, AStoreThatLostItsHoldToAnotherRefusesEveryTransactionAndWritesNothing) {
  std::unique_ptr<Store> old = Open();
  ASSERT_NE(old, nullptr);
  std::unique_ptr<Store> next;
  Joined t{std::thread([&] { next = Open(); })};
  // The server loses sight of the old holder; the waiting store takes over.
  ASSERT_EQ(EndHoldingSessions(), 1);
  t.t.join();
  ASSERT_NE(next, nullptr);
  ASSERT_TRUE(next->held());

  Status begin = old->Begin();
  EXPECT_EQ(begin.code(), Status::Code::kUnavailable) << begin.ToString();
  EXPECT_FALSE(old->held());
  // And it stays refused.
  EXPECT_EQ(old->Begin().code(), Status::Code::kUnavailable);
}

TEST_F(PgStoreTest, AStoreWhoseEpochMovedOnCommitsNothingWhetherItsWritesWaitOrAreSent) {
  for (bool pipelined : {false, true}) {
    SCOPED_TRACE(pipelined ? "pipelined" : "waiting");
    std::unique_ptr<Store> old = Open();
    ASSERT_NE(old, nullptr);
    old->PipelineWrites(pipelined);
    ASSERT_TRUE(old->Begin().ok());
    ASSERT_TRUE(old->SetCounter("token", 10).ok());
    ASSERT_TRUE(old->Commit().ok());
    // A newer epoch while this store's session lives (what a takeover would leave).
    Result<std::unique_ptr<pg::Connection>> admin = pg::Connection::Open(url_);
    ASSERT_TRUE(admin.ok());
    ASSERT_TRUE((*admin)->Script("UPDATE leader SET epoch = epoch + 1").ok());
    Status begin = old->Begin();
    Status outcome = begin;
    if (begin.ok()) {
      // Sent, not yet checked: the commit checks it before COMMIT and refuses.
      EXPECT_TRUE(pipelined);
      ASSERT_TRUE(old->SetCounter("token", 11).ok());
      outcome = old->Commit();
    }
    EXPECT_EQ(outcome.code(), Status::Code::kUnavailable) << outcome.ToString();
    EXPECT_FALSE(old->held());
    EXPECT_EQ(*old->GetCounter("token"), 10);
    EXPECT_EQ(old->Begin().code(), Status::Code::kUnavailable);
    old.reset();
    // The next test's store starts on a fresh database.
    SetUp();
  }
}

TEST_F(PgStoreTest, AStoreDoesNotHoldTheDatabaseAgainAfterAnotherHeldItMeanwhile) {
  std::unique_ptr<Store> old = Open();
  ASSERT_NE(old, nullptr);
  ASSERT_TRUE(old->Begin().ok());
  ASSERT_TRUE(old->SetCounter("token", 10).ok());
  ASSERT_TRUE(old->Commit().ok());
  ASSERT_EQ(EndHoldingSessions(), 1);
  {
    // Another coordinator takes over, moves on, and goes away: the lock is free again.
    std::unique_ptr<Store> other = Open();
    ASSERT_NE(other, nullptr);
    ASSERT_TRUE(other->Begin().ok());
    ASSERT_TRUE(other->SetCounter("token", 20).ok());
    ASSERT_TRUE(other->Commit().ok());
  }
  // The old one must not write what it remembers over what happened meanwhile.
  EXPECT_EQ(old->Begin().code(), Status::Code::kUnavailable);
  EXPECT_FALSE(old->held());
  std::unique_ptr<Store> next = Open();
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(*next->GetCounter("token"), 20);
}

TEST_F(PgStoreTest, AHolderThatStopsRenewingHasItsSessionEndedByAWaitingStore) {
  std::unique_ptr<Store> frozen = Open(3000);
  ASSERT_NE(frozen, nullptr);
  frozen->CheckHold();  // renews; then nothing more, as a coordinator stopped with SIGSTOP
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<Store> next = Open(3000);
  ASSERT_NE(next, nullptr);
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(waited, 2.5) << "taken over before the holder's time ran out";
  EXPECT_LE(waited, 3.0 + 2.0);
  EXPECT_EQ(frozen->Begin().code(), Status::Code::kUnavailable);
  EXPECT_FALSE(frozen->held());
}

TEST_F(PgStoreTest, TheOutputOfACoordinatorThatLostTheDatabaseIsRefused) {
  std::unique_ptr<Store> old = Open();
  ASSERT_NE(old, nullptr);
  Result<std::unique_ptr<LogStore>> logs = OpenLogStore({.url = url_, .run_cap_bytes = 1 << 20});
  ASSERT_TRUE(logs.ok()) << logs.status().ToString();
  ASSERT_TRUE((*logs)->Begin().ok());
  (*logs)->Rollback();
  // Only the scheduler's session is ended: the log store's own connection lives on.
  ASSERT_EQ(EndHoldingSessions(), 1);
  std::unique_ptr<Store> next = Open();
  ASSERT_NE(next, nullptr);
  Status begin = (*logs)->Begin();
  EXPECT_EQ(begin.code(), Status::Code::kUnavailable) << begin.ToString();
}

TEST_F(PgStoreTest, AServerRestartIsSurvivedAndCommittedDataIsKept) {
  std::unique_ptr<Store> store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Begin().ok());
  ASSERT_TRUE(store->SetCounter("kept", 3).ok());
  ASSERT_TRUE(store->Commit().ok());
  ASSERT_TRUE(server_->Restart().ok()) << server_->Log();
  ASSERT_TRUE(store->Begin().ok());
  ASSERT_TRUE(store->SetCounter("more", 4).ok());
  ASSERT_TRUE(store->Commit().ok());
  EXPECT_EQ(*store->GetCounter("kept"), 3);
  EXPECT_EQ(*store->GetCounter("more"), 4);
}

TEST_F(PgStoreTest, AfterARestartAStandbyStoreLeavesTheDatabaseToItsHolderForHoldTtl) {
  std::unique_ptr<Store> holder = Open(3000);
  ASSERT_NE(holder, nullptr);
  Result<std::unique_ptr<Store>> standby =
      OpenStore({.url = url_, .holder = "standby", .hold_ttl_ms = 3000, .standby = true});
  ASSERT_TRUE(standby.ok()) << standby.status().ToString();
  Result<bool> got = (*standby)->TryHold();
  ASSERT_TRUE(got.ok() && !*got);
  // Every session ends (a failover to a promoted server frees the lock the same way). The
  // standby reconnects at its next try and, finding the lock free, leaves it to the holder,
  // which reconnects and holds the database again in its epoch.
  ASSERT_TRUE(server_->Restart().ok()) << server_->Log();
  got = (*standby)->TryHold();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_FALSE(*got) << "the standby took the database from its holder";
  holder->CheckHold();
  EXPECT_TRUE(holder->held());
  ASSERT_TRUE(holder->Begin().ok());
  ASSERT_TRUE(holder->SetCounter("kept", 5).ok());
  ASSERT_TRUE(holder->Commit().ok());
  // Once the holder is gone, the standby holds the database (hold_ttl after it reconnected).
  holder.reset();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (got = false; got.ok() && !*got && std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));  // a standby's tries
    got = (*standby)->TryHold();
  }
  ASSERT_TRUE(got.ok() && *got) << got.status().ToString();
  EXPECT_EQ(*(*standby)->GetCounter("kept"), 5);
}

// A standby never migrates: the coordinator that holds the database may be an older one,
// whose log tables lack the retention accounting (log schema version 1). The standby's
// reads answer as for output without accounting (nothing pruned), rather than fail.
TEST_F(PgStoreTest, AStandbysLogStoreReadsAHoldersLogTablesWithoutRetention) {
  {
    Result<std::unique_ptr<pg::Connection>> older = pg::Connection::Open(url_);
    ASSERT_TRUE(older.ok()) << older.status().ToString();
    ASSERT_TRUE((*older)->Migrate("logs", {PgLogMigrations()[0]}).ok());
    ASSERT_TRUE((*older)
                    ->Script("INSERT INTO log_chunks(run_id, shard, attempt, seq, stream, at_ms, "
                             "data) VALUES(7, 0, 1, 1, 1, 10, 'hello'::bytea); "
                             "INSERT INTO log_run_bytes(run_id, bytes) VALUES(7, 5)")
                    .ok());
  }
  Result<std::unique_ptr<LogStore>> logs =
      OpenLogStore({.url = url_, .run_cap_bytes = 100, .standby = true});
  ASSERT_TRUE(logs.ok()) << logs.status().ToString();
  Result<std::optional<RunOutput>> output = (*logs)->OutputOf(7);
  ASSERT_TRUE(output.ok()) << output.status().ToString();
  EXPECT_FALSE(output->has_value());
  EXPECT_TRUE((*logs)->ListOutput({})->empty());
  EXPECT_TRUE((*logs)->OutputByJob(10)->empty());
  Result<LogStoreStats> stats = (*logs)->Stats();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->stored_bytes, 5);
  EXPECT_EQ((*logs)->Read({.run_id = 7})->size(), 1u);
  EXPECT_EQ(*(*logs)->RunBytes(7), 5);
}

// A database of schema 6 gets its jobs' `on` selectors from their specs, in order, and its
// shards no usage. A spec holding a NUL escape (a description may), which jsonb refuses,
// does not stop the migration.
TEST_F(PgStoreTest, ADatabaseFromBeforeLabelsTakesEachJobsSelectorsFromItsSpec) {
  ASSERT_NO_FATAL_FAILURE(WriteOlderDatabase(
      6,
      "INSERT INTO jobs(id, name, spec, active, revision, updated_ms, schedule) "
      "VALUES(1, 'web', '{\"name\":\"web\",\"on\":[\"role=web\",\"dc!=fra1\"]}', "
      "true, 1, 1, '@daily'), (2, 'old', '{}', true, 1, 1, '@daily'), "
      "(3, 'nul', '{\"description\":\"a\\u0000b\",\"on\":[\"z=1\",\"a=2\"]}', true, 1, 1, "
      "'@daily'); " +
          std::string(kOldRun)));
  std::unique_ptr<Store> store = Open();
  ASSERT_NE(store, nullptr);
  std::map<std::string, std::string> labels;
  ASSERT_TRUE(
      store
          ->ForEachJobHead(
              [&](const JobHead& h) { labels[std::string(h.name)] = std::string(h.on_labels); },
              nullptr)
          .ok());
  EXPECT_EQ(labels, (std::map<std::string, std::string>{
                        {"web", "role=web dc!=fra1"}, {"old", ""}, {"nul", "z=1 a=2"}}));
  Result<std::optional<RunRecord>> run = store->GetRun(7);
  ASSERT_TRUE(run.ok() && run->has_value());
  ASSERT_EQ((*run)->shards.size(), 1u);
  EXPECT_EQ((*run)->shards[0].peak_rss_bytes, std::nullopt);
}

// A database of schema 5, from before flows, opens with its jobs and runs as plain ones, and
// a step's second run is refused on the migrated table.
TEST_F(PgStoreTest, ADatabaseFromBeforeFlowsKeepsItsRowsAsPlainJobsAndRuns) {
  ASSERT_NO_FATAL_FAILURE(
      WriteOlderDatabase(5,
                         "INSERT INTO jobs(id, name, spec, active, revision, updated_ms, "
                         "schedule) VALUES(1, 'backup', '{}', true, 1, 1, '@daily'); " +
                             std::string(kOldRun)));
  std::unique_ptr<Store> store = Open();
  ASSERT_NE(store, nullptr);
  Result<JobRow> job = store->GetJob(1);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->timing.kind, JobKind::kJob);
  EXPECT_EQ(job->timing.flow_id, std::nullopt);
  Result<std::optional<RunRecord>> run = store->GetRun(7);
  ASSERT_TRUE(run.ok() && run->has_value());
  EXPECT_EQ((*run)->flow_run_id, 0);
  EXPECT_EQ((*run)->flow_step, -1);
  EXPECT_EQ((*run)->flow_json, "");
  ASSERT_EQ((*run)->shards.size(), 1u);
  EXPECT_EQ((*run)->shards[0].outputs_json, "");
  RunRecord step;
  step.job_id = 1;
  step.reason = RunReason::kFlow;
  step.trace_id = "0123456789abcdef0123456789abcdef";
  step.flow_run_id = 7;
  step.flow_step = 0;
  ASSERT_TRUE(store->Begin().ok());
  ASSERT_TRUE(store->InsertRun(step).ok());
  RunRecord again = step;
  EXPECT_EQ(store->InsertRun(again).code(), Status::Code::kConflict);
  store->Rollback();
}

TEST_F(PgStoreTest, AFailedStatementRollsTheTransactionBackAndCommitSaysSo) {
  std::unique_ptr<Store> store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Begin().ok());
  ASSERT_TRUE(store->SetCounter("lost", 1).ok());
  // A run of a job that does not exist breaks a foreign key: the transaction is aborted.
  RunRecord run;
  run.job_id = 12345;
  run.shard_total = 1;
  run.shards.push_back({.index = 0});
  EXPECT_FALSE(store->InsertRun(run).ok());
  EXPECT_FALSE(store->Commit().ok());
  EXPECT_EQ(*store->GetCounter("lost"), 0);
}

}  // namespace
}  // namespace jobctl::store
