#include "store/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "store/log_store.h"
#include "store/migrations.h"

namespace jobctl::store {
namespace {

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/jobctl-store-test.XXXXXX";
    dir_ = mkdtemp(tmpl);
    auto s = Store::Open(dir_ + "/jobctl.db");
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
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
  std::string dir_;
  std::unique_ptr<Store> store_;
};

TEST_F(StoreTest, ScheduledInstantCanBeInsertedOnlyOnce) {
  int64_t job = AddJob("backup");
  ASSERT_TRUE(store_->Begin().ok());
  RunRecord first = NewRun(job, 60'000);
  ASSERT_TRUE(store_->InsertRun(first).ok());
  RunRecord again = NewRun(job, 60'000);
  EXPECT_EQ(store_->InsertRun(again).code(), Status::Code::kConflict);
  store_->Rollback();
}

TEST_F(StoreTest, EveryRunIsReadOldestFirstWithItsShardsWhateverItsState) {
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

TEST_F(StoreTest, ManualRunsDoNotTakeTheScheduledSlotButKeysAreUnique) {
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
}

TEST_F(StoreTest, RunRoundTripsWithShards) {
  int64_t job = AddJob("report");
  ASSERT_TRUE(store_->Begin().ok());
  RunRecord run = NewRun(job, 120'000, 3);
  ASSERT_TRUE(store_->InsertRun(run).ok());
  ShardRecord s = run.shards[1];
  s.state = RunState::kRunning;
  s.agent = "host-a";
  s.token = 17;
  s.started_ms = 120'010;
  ASSERT_TRUE(store_->UpdateShard(s).ok());
  ASSERT_TRUE(store_->Commit().ok());
  auto got = store_->GetRun(run.id);
  ASSERT_TRUE(got.ok() && got->has_value());
  const RunRecord& r = **got;
  EXPECT_EQ(r.job, "report");
  ASSERT_EQ(r.shards.size(), 3u);
  EXPECT_EQ(r.shards[1].agent, "host-a");
  EXPECT_EQ(r.shards[1].token, 17);
  EXPECT_EQ(r.shards[1].state, RunState::kRunning);
  int open = 0;
  ASSERT_TRUE(store_->ForEachOpenRun([&](RunRecord&&) { ++open; }).ok());
  EXPECT_EQ(open, 1);
}

TEST_F(StoreTest, NothingUncommittedSurvivesReopen) {
  int64_t job = AddJob("x");
  ASSERT_TRUE(store_->Begin().ok());
  RunRecord run = NewRun(job, 1000);
  ASSERT_TRUE(store_->InsertRun(run).ok());
  store_.reset();  // closes without COMMIT
  auto reopened = Store::Open(dir_ + "/jobctl.db");
  ASSERT_TRUE(reopened.ok());
  auto runs = (*reopened)->ListRuns({});
  ASSERT_TRUE(runs.ok());
  EXPECT_TRUE(runs->empty());
}

TEST_F(StoreTest, RefusesADatabaseFromANewerVersion) {
  store_.reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ + "/jobctl.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version=999", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  auto reopened = Store::Open(dir_ + "/jobctl.db");
  ASSERT_FALSE(reopened.ok());
  EXPECT_NE(reopened.status().message().find("newer than this binary"), std::string::npos);
}

TEST_F(StoreTest, CountersPersist) {
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->SetCounter("token", 41).ok());
  ASSERT_TRUE(store_->Commit().ok());
  EXPECT_EQ(*store_->GetCounter("token"), 41);
  EXPECT_EQ(*store_->GetCounter("missing"), 0);
}

TEST_F(StoreTest, LogChunksAreStoredOnceAndCappedWithAMarker) {
  auto logs = LogStore::Open(dir_ + "/logs.db", 10);
  ASSERT_TRUE(logs.ok()) << logs.status().ToString();
  LogStore& l = **logs;
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
}

}  // namespace
}  // namespace jobctl::store

namespace jobctl::store {
namespace {

TEST(StoreMigrationTest, JobsStoredBeforeTimingColumnsGetThemFromTheirSpec) {
  char tmpl[] = "/tmp/jobctl-store-test.XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::string path = dir + "/jobctl.db";
  {
    // A database as the first release left it: migration 1 only.
    std::vector<Database::Migration> first(SchedulerMigrations().begin(),
                                           SchedulerMigrations().begin() + 1);
    Database db;
    ASSERT_TRUE(db.Open(path, first).ok());
    ASSERT_TRUE(db.Exec(R"sql(
INSERT INTO jobs(id, name, spec, active, paused, next_fire_ms, revision, updated_ms) VALUES
 (1, 'tokyo', '{"name":"tokyo","schedule":"0 9 * * *","dialect":"quartz","timezone":"Asia/Tokyo",
   "anchor_ms":0,"enabled":false,"misfire":"fire-all","overlap":"replace","misfire_cap":7}',
   1, 0, 5000, 1, 1),
 (2, 'every', '{"name":"every","schedule":"@every 90s","dialect":"cron","timezone":"",
   "anchor_ms":1500,"enabled":true,"misfire":"skip","overlap":"allow","misfire_cap":100}',
   0, 1, NULL, 1, 1),
 (3, 'broken', 'not json', 1, 0, 7000, 1, 1);
)sql").ok());
  }
  Result<std::unique_ptr<Store>> store = Store::Open(path);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  std::vector<JobHead> heads;
  std::vector<std::string> texts;
  int64_t unreadable = 0;
  ASSERT_TRUE((*store)
                  ->ForEachJobHead(
                      [&](const JobHead& h) {
                        heads.push_back(h);
                        texts.push_back(std::string(h.name) + "|" + std::string(h.schedule) + "|" +
                                        std::string(h.timezone));
                        heads.back().name = heads.back().schedule = heads.back().timezone = {};
                      },
                      &unreadable)
                  .ok());
  ASSERT_EQ(heads.size(), 3u);
  EXPECT_EQ(unreadable, 0);
  EXPECT_EQ(texts[0], "tokyo|0 9 * * *|Asia/Tokyo");
  EXPECT_EQ(heads[0].dialect, Dialect::kQuartz);
  EXPECT_FALSE(heads[0].enabled);
  EXPECT_EQ(heads[0].misfire, Misfire::kFireAll);
  EXPECT_EQ(heads[0].overlap, Overlap::kReplace);
  EXPECT_EQ(heads[0].misfire_cap, 7);
  EXPECT_EQ(heads[0].next_fire_ms, 5000);
  EXPECT_TRUE(heads[0].active);
  EXPECT_EQ(texts[1], "every|@every 90s|");
  EXPECT_EQ(heads[1].anchor_ms, 1500);
  EXPECT_EQ(heads[1].misfire, Misfire::kSkip);
  EXPECT_EQ(heads[1].overlap, Overlap::kAllow);
  EXPECT_FALSE(heads[1].active);
  EXPECT_TRUE(heads[1].paused);
  EXPECT_EQ(heads[1].next_fire_ms, std::nullopt);
  // An unreadable spec keeps the defaults and no schedule: it cannot fire.
  EXPECT_EQ(texts[2], "broken||");
  EXPECT_EQ(heads[2].misfire, Misfire::kFireOnce);
  store->reset();
  std::filesystem::remove_all(dir);
}

TEST_F(StoreTest, JobTimingIsWrittenOnInsertAndUpdateAndReadBackWithoutTheSpec) {
  JobTiming timing{"*/5 * * * *", Dialect::kCron, "Europe/Berlin", 0, true,
                   Misfire::kSkip, Overlap::kAllow, 3};
  ASSERT_TRUE(store_->Begin().ok());
  Result<int64_t> id =
      store_->InsertJob({0, "five", "{}", true, false, 1000, 1, timing}, 1);
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(store_->Commit().ok());
  Result<JobRow> row = store_->GetJob(*id);
  ASSERT_TRUE(row.ok());
  EXPECT_EQ(row->timing, timing);
  EXPECT_EQ(row->spec_json, "{}");

  JobTiming changed{"@every 1h", Dialect::kCron, "", 42, false,
                    Misfire::kFireAll, Overlap::kReplace, 9};
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
                      },
                      &unreadable)
                  .ok());
  EXPECT_EQ(names, std::vector<std::string>{"five"});
  ASSERT_TRUE(store_->Begin().ok());
  ASSERT_TRUE(store_->DeactivateJob(*id, 4, 4).ok());
  ASSERT_TRUE(store_->Commit().ok());
  EXPECT_FALSE(store_->GetJob(*id)->active);
}

TEST_F(StoreTest, EventsAreListedNewestFirstByActionActorTimeAndPage) {
  ASSERT_TRUE(store_->Begin().ok());
  // at_ms 1000, 2000, ... 6000; ids 1 to 6.
  const char* kinds[] = {"apply", "trigger", "trigger", "cancel", "trigger", "auth-failure"};
  const char* actors[] = {"alice", "ci", "alice", "alice", "ci", ""};
  for (int i = 0; i < 6; ++i) {
    EventRow e{0, 1000 * (i + 1), kinds[i], actors[i],
               *actors[i] ? std::optional<int64_t>(i + 10) : std::nullopt, "s" + std::to_string(i),
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

TEST(StoreFileModeTest, StoreFilesAreOwnerOnlyWhateverTheUmask) {
  char tmpl[] = "/tmp/jobctl-store-test.XXXXXX";
  std::string dir = mkdtemp(tmpl);
  mode_t old = umask(022);
  auto mode = [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 07777) : -1;
  };
  {
    Result<std::unique_ptr<Store>> store = Store::Open(dir + "/jobctl.db");
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    ASSERT_TRUE((*store)->Begin().ok());
    ASSERT_TRUE((*store)->SetCounter("x", 1).ok());
    ASSERT_TRUE((*store)->Commit().ok());
    EXPECT_EQ(mode(dir + "/jobctl.db"), 0600);
    EXPECT_EQ(mode(dir + "/jobctl.db-wal"), 0600);
    EXPECT_EQ(mode(dir + "/jobctl.db-shm"), 0600);
    Result<std::unique_ptr<LogStore>> logs = LogStore::Open(dir + "/logs.db", 1 << 20);
    ASSERT_TRUE(logs.ok()) << logs.status().ToString();
    EXPECT_EQ(mode(dir + "/logs.db"), 0600);
  }
  // A store an earlier version left readable by others is tightened when opened.
  ASSERT_EQ(::chmod((dir + "/jobctl.db").c_str(), 0644), 0);
  {
    Result<std::unique_ptr<Store>> store = Store::Open(dir + "/jobctl.db");
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    EXPECT_EQ(mode(dir + "/jobctl.db"), 0600);
  }
  umask(old);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace jobctl::store
