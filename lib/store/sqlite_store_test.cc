// What only the embedded SQLite backend has, so these are plain tests and not part of the
// contract every backend meets (store_test.cc): the files on disk and their mode, SQLite's
// schema version (PRAGMA user_version), a file from an earlier release, the WAL checkpoint
// thread, the syncs a log store commit waits for, and the statement cache of one connection.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "store/log_store.h"
#include "store/migrations.h"
#include "store/statement.h"
#include "store/store.h"

namespace jobctl::store {
namespace {

std::string TempDir() {
  char tmpl[] = "/tmp/jobctl-store-test.XXXXXX";
  return mkdtemp(tmpl) != nullptr ? std::string(tmpl) : std::string();
}

TEST(SqliteStoreTest, RefusesADatabaseFromANewerVersion) {
  std::string dir = TempDir();
  ASSERT_FALSE(dir.empty());
  ASSERT_TRUE(OpenStore({.path = dir + "/jobctl.db"}).ok());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir + "/jobctl.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version=999", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  auto reopened = OpenStore({.path = dir + "/jobctl.db"});
  ASSERT_FALSE(reopened.ok());
  EXPECT_EQ(reopened.status().code(), Status::Code::kCorrupt);
  EXPECT_NE(reopened.status().message().find("newer than this binary"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// A file made before retention (auto_vacuum=NONE) could never give freed pages back: a small
// one is converted when it is opened, keeping what it holds.
TEST(SqliteStoreTest, AFileWithoutIncrementalVacuumIsConvertedAtOpen) {
  std::string dir = TempDir();
  ASSERT_FALSE(dir.empty());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir + "/logs.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "PRAGMA auto_vacuum=NONE; CREATE TABLE chunks(id INTEGER PRIMARY KEY, "
                         "run_id INTEGER NOT NULL, shard INTEGER NOT NULL, attempt INTEGER NOT "
                         "NULL, seq INTEGER NOT NULL, stream INTEGER NOT NULL, at_ms INTEGER NOT "
                         "NULL, data BLOB NOT NULL); CREATE UNIQUE INDEX chunks_key ON "
                         "chunks(run_id, shard, attempt, seq); CREATE INDEX chunks_by_run ON "
                         "chunks(run_id, id); CREATE TABLE run_bytes(run_id INTEGER PRIMARY KEY, "
                         "bytes INTEGER NOT NULL, truncated INTEGER NOT NULL DEFAULT 0); "
                         "INSERT INTO chunks VALUES(1, 7, 0, 1, 1, 1, 50, 'old output'); "
                         "INSERT INTO run_bytes VALUES(7, 10, 0); PRAGMA user_version=1;",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto logs = OpenLogStore({.path = dir + "/logs.db", .run_cap_bytes = 1 << 20});
  ASSERT_TRUE(logs.ok()) << logs.status().ToString();
  Result<LogStoreStats> stats = (*logs)->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_TRUE(stats->reclaims_space);
  // Migrated: the output knows its bytes and when it was last written.
  Result<std::optional<RunOutput>> out = (*logs)->OutputOf(7);
  ASSERT_TRUE(out.ok() && out->has_value()) << out.status().ToString();
  EXPECT_EQ((*out)->stored_bytes, 10);
  EXPECT_EQ((*out)->last_ms, 50);
  EXPECT_EQ((*out)->job_id, 0);
  logs->reset();
  std::filesystem::remove_all(dir);
}

TEST(StoreMigrationTest, JobsStoredBeforeTimingColumnsGetThemFromTheirSpec) {
  std::string dir = TempDir();
  ASSERT_FALSE(dir.empty());
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
)sql")
                    .ok());
  }
  Result<std::unique_ptr<Store>> store = OpenStore({.path = path});
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

// A finished run 7 of job 1 with its one shard, as any schema version holds it.
constexpr const char* kOldRun = R"sql(
INSERT INTO runs(id, job_id, reason, scheduled_ms, created_ms, state, trace_id, shard_total)
  VALUES (7, 1, 'schedule', 1000, 1000, 'succeeded', '0123456789abcdef0123456789abcdef', 1);
INSERT INTO shards(run_id, idx, state, attempt) VALUES (7, 0, 'succeeded', 1);
)sql";

// A scheduler file at schema `version` (an earlier release's), with `sql` run in it.
void WriteOlderFile(const std::string& path, int version, const std::string& sql) {
  std::vector<Database::Migration> before(SchedulerMigrations().begin(),
                                          SchedulerMigrations().begin() + version);
  ASSERT_EQ(before.back().version, version);
  Database db;
  ASSERT_TRUE(db.Open(path, before).ok());
  ASSERT_TRUE(db.Exec(sql.c_str()).ok());
}

// A job whose stored enum names this binary does not know (a newer release wrote them) keeps
// the defaults and is counted, instead of stopping the start.
// A file of version 10 (before flows) opens with its jobs, runs and shards as they were: none
// a flow or a step, and step runs unique per step from then on.
TEST(StoreMigrationTest, AFileFromBeforeFlowsKeepsItsRowsAsPlainJobsAndRuns) {
  std::string dir = TempDir();
  ASSERT_FALSE(dir.empty());
  std::string path = dir + "/jobctl.db";
  ASSERT_NO_FATAL_FAILURE(WriteOlderFile(path, 10, R"sql(
INSERT INTO jobs(id, name, spec, active, paused, next_fire_ms, revision, updated_ms, schedule)
  VALUES (1, 'backup', '{"name":"backup","schedule":"@daily"}', 1, 0, 5000, 1, 1, '@daily');
)sql" + std::string(kOldRun)));
  Result<std::unique_ptr<Store>> store = OpenStore({.path = path});
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  Result<JobRow> job = (*store)->GetJob(1);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->timing.kind, JobKind::kJob);
  EXPECT_EQ(job->timing.flow_id, std::nullopt);
  Result<std::optional<RunRecord>> run = (*store)->GetRun(7);
  ASSERT_TRUE(run.ok() && run->has_value());
  EXPECT_EQ((*run)->flow_run_id, 0);
  EXPECT_EQ((*run)->flow_step, -1);
  EXPECT_EQ((*run)->flow_json, "");
  ASSERT_EQ((*run)->shards.size(), 1u);
  EXPECT_EQ((*run)->shards[0].outputs_json, "");
  // The migrated table keeps a step to one run of a flow run.
  RunRecord step;
  step.job_id = 1;
  step.reason = RunReason::kFlow;
  step.trace_id = "0123456789abcdef0123456789abcdef";
  step.flow_run_id = 7;
  step.flow_step = 0;
  ASSERT_TRUE((*store)->Begin().ok());
  ASSERT_TRUE((*store)->InsertRun(step).ok());
  RunRecord again = step;
  EXPECT_FALSE((*store)->InsertRun(again).ok());
  (*store)->Rollback();
  store->reset();
  std::filesystem::remove_all(dir);
}

// A file of version 11 gets its jobs' `on` selectors from their specs, for the list's label
// filter, and its shards no usage (none was reported).
TEST(StoreMigrationTest, AFileFromBeforeLabelsTakesEachJobsSelectorsFromItsSpec) {
  std::string dir = TempDir();
  ASSERT_FALSE(dir.empty());
  std::string path = dir + "/jobctl.db";
  ASSERT_NO_FATAL_FAILURE(WriteOlderFile(path, 11, R"sql(
INSERT INTO jobs(id, name, spec, active, revision, updated_ms, schedule) VALUES
  (1, 'web', '{"name":"web","on":["role=web","dc!=fra1"]}', 1, 1, 1, '@daily'),
  (2, 'any', '{"name":"any","on":[]}', 1, 1, 1, '@daily'),
  (3, 'old', '{"name":"old"}', 1, 1, 1, '@daily');
)sql" + std::string(kOldRun)));
  Result<std::unique_ptr<Store>> store = OpenStore({.path = path});
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  std::map<std::string, std::string> labels;
  ASSERT_TRUE(
      (*store)
          ->ForEachJobHead(
              [&](const JobHead& h) { labels[std::string(h.name)] = std::string(h.on_labels); },
              nullptr)
          .ok());
  EXPECT_EQ(labels, (std::map<std::string, std::string>{
                        {"web", "role=web dc!=fra1"}, {"any", ""}, {"old", ""}}));
  Result<std::optional<RunRecord>> run = (*store)->GetRun(7);
  ASSERT_TRUE(run.ok() && run->has_value());
  ASSERT_EQ((*run)->shards.size(), 1u);
  EXPECT_EQ((*run)->shards[0].peak_rss_bytes, std::nullopt);
  EXPECT_EQ((*run)->shards[0].cpu_ms, std::nullopt);
  store->reset();
  std::filesystem::remove_all(dir);
}

TEST(StoreMigrationTest, JobsWithUnknownTimingNamesAreCountedAsUnreadable) {
  std::string dir = TempDir();
  ASSERT_FALSE(dir.empty());
  std::string path = dir + "/jobctl.db";
  {
    Database db;
    ASSERT_TRUE(db.Open(path, SchedulerMigrations()).ok());
    ASSERT_TRUE(db.Exec("INSERT INTO jobs(name, spec, active, revision, updated_ms, misfire) "
                        "VALUES('odd', '{}', 1, 1, 1, 'fire-twice')")
                    .ok());
  }
  Result<std::unique_ptr<Store>> store = OpenStore({.path = path});
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  int64_t unreadable = 0;
  Misfire misfire = Misfire::kSkip;
  ASSERT_TRUE(
      (*store)->ForEachJobHead([&](const JobHead& h) { misfire = h.misfire; }, &unreadable).ok());
  EXPECT_EQ(unreadable, 1);
  EXPECT_EQ(misfire, Misfire::kFireOnce);
  store->reset();
  std::filesystem::remove_all(dir);
}

TEST(StoreFileModeTest, StoreFilesAreOwnerOnlyWhateverTheUmask) {
  std::string dir = TempDir();
  ASSERT_FALSE(dir.empty());
  mode_t old = umask(022);
  auto mode = [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 07777) : -1;
  };
  {
    Result<std::unique_ptr<Store>> store = OpenStore({.path = dir + "/jobctl.db"});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    ASSERT_TRUE((*store)->Begin().ok());
    ASSERT_TRUE((*store)->SetCounter("x", 1).ok());
    ASSERT_TRUE((*store)->Commit().ok());
    EXPECT_EQ(mode(dir + "/jobctl.db"), 0600);
    EXPECT_EQ(mode(dir + "/jobctl.db-wal"), 0600);
    EXPECT_EQ(mode(dir + "/jobctl.db-shm"), 0600);
    Result<std::unique_ptr<LogStore>> logs =
        OpenLogStore({.path = dir + "/logs.db", .run_cap_bytes = 1 << 20});
    ASSERT_TRUE(logs.ok()) << logs.status().ToString();
    EXPECT_EQ(mode(dir + "/logs.db"), 0600);
  }
  // A store an earlier version left readable by others is tightened when opened.
  ASSERT_EQ(::chmod((dir + "/jobctl.db").c_str(), 0644), 0);
  {
    Result<std::unique_ptr<Store>> store = OpenStore({.path = dir + "/jobctl.db"});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    EXPECT_EQ(mode(dir + "/jobctl.db"), 0600);
  }
  umask(old);
  std::filesystem::remove_all(dir);
}

int OpenStatements(sqlite3* db) {
  int n = 0;
  for (sqlite3_stmt* st = sqlite3_next_stmt(db, nullptr); st; st = sqlite3_next_stmt(db, st)) ++n;
  return n;
}

TEST(StatementCacheTest, AStatementIsPreparedOnItsFirstUseAndKeptForTheConnection) {
  std::string dir = TempDir();
  ASSERT_FALSE(dir.empty());
  {
    Database db;
    ASSERT_TRUE(db.Open(dir + "/jobctl.db", SchedulerMigrations()).ok());
    static const Sql kSql{"SELECT value FROM counters WHERE name = ?1"};
    EXPECT_EQ(OpenStatements(db.handle()), 0);
    for (int i = 0; i < 3; ++i) {
      auto use = db.Use(kSql);
      use.Bind(1, "token");
      EXPECT_FALSE(use.Step());
      EXPECT_TRUE(use.status().ok()) << use.status().ToString();
    }
    EXPECT_EQ(OpenStatements(db.handle()), 1);
  }
  std::filesystem::remove_all(dir);
}

TEST(StatementCacheTest, AStatementThatFailsToPrepareReportsItOnEveryUse) {
  std::string dir = TempDir();
  ASSERT_FALSE(dir.empty());
  {
    Database db;
    ASSERT_TRUE(db.Open(dir + "/jobctl.db", SchedulerMigrations()).ok());
    static const Sql kSql{"SELECT nothing FROM nowhere WHERE id = ?1"};
    for (int i = 0; i < 2; ++i) {
      auto use = db.Use(kSql);
      use.Bind(1, int64_t{1}).Bind(2, "ignored");
      EXPECT_FALSE(use.Step());
      EXPECT_EQ(use.status().code(), Status::Code::kIo);
      EXPECT_NE(use.status().message().find("nowhere"), std::string::npos);
    }
    EXPECT_EQ(db.Use(kSql).Exec().code(), Status::Code::kIo);
    EXPECT_EQ(OpenStatements(db.handle()), 0);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
TEST(WalCheckpointTest, CommitsPastTheMarkReachTheFileFromTheCheckpointThread) {
  std::string dir = TempDir();
  ASSERT_FALSE(dir.empty());
  const std::string path = dir + "/jobctl.db";
  const int kCommits = 32;  // 2 MiB: under SQLite's own mark (1000 pages), past this one
  const std::string blob(64 << 10, 'x');
  {
    Database db;
    ASSERT_TRUE(db.Open(path, SchedulerMigrations()).ok());
    ASSERT_TRUE(db.CheckpointInBackground(path, 16).ok());
    ASSERT_TRUE(db.Exec("CREATE TABLE t(b BLOB)").ok());
    static const Sql kInsert{"INSERT INTO t(b) VALUES(?1)"};
    for (int i = 0; i < kCommits; ++i) {
      ASSERT_TRUE(db.Begin().ok());
      ASSERT_TRUE(db.Use(kInsert).BindBlob(1, blob).Exec().ok());
      ASSERT_TRUE(db.Commit().ok());
    }
    // The rows are copied from the WAL into the file by the thread, while the connection that
    // wrote them stays open and idle (it no longer checkpoints in its commits).
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    auto file_bytes = [&] { return static_cast<int64_t>(std::filesystem::file_size(path)); };
    while (file_bytes() < kCommits * static_cast<int64_t>(blob.size()) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_GE(file_bytes(), kCommits * static_cast<int64_t>(blob.size()));
  }
  // Closed: the thread stopped first, the close's own checkpoint emptied the WAL, and every
  // row is in the file.
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
  {
    Database db;
    ASSERT_TRUE(db.Open(path, SchedulerMigrations()).ok());
    static const Sql kCount{"SELECT COUNT(*), SUM(length(b)) FROM t"};
    auto use = db.Use(kCount);
    ASSERT_TRUE(use.Step());
    EXPECT_EQ(use.Int(0), kCommits);
    EXPECT_EQ(use.Int(1), kCommits * static_cast<int64_t>(blob.size()));
  }
  std::filesystem::remove_all(dir);
}

// An SQLite VFS over the default one that counts the syncs of every file it opened, for the
// tests of what a commit waits for. Registered as the default while a test holds it.
class SyncCountingVfs {
 public:
  SyncCountingVfs() {
    real_ = sqlite3_vfs_find(nullptr);
    vfs_ = *real_;
    vfs_.zName = "sync-counting";
    vfs_.szOsFile = static_cast<int>(sizeof(File)) + real_->szOsFile;
    vfs_.xOpen = &Open;
    self_ = this;
    sqlite3_vfs_register(&vfs_, /*makeDflt=*/1);
  }
  ~SyncCountingVfs() {
    sqlite3_vfs_unregister(&vfs_);
    sqlite3_vfs_register(real_, 1);
    self_ = nullptr;
  }
  int syncs() const { return syncs_; }

 private:
  struct File {
    sqlite3_file base;
    sqlite3_file* real;  // the default VFS's file, right after this struct
  };
  static sqlite3_file* Real(sqlite3_file* f) { return reinterpret_cast<File*>(f)->real; }
  static int Open(sqlite3_vfs*, const char* name, sqlite3_file* f, int flags, int* out) {
    auto* file = reinterpret_cast<File*>(f);
    file->real = reinterpret_cast<sqlite3_file*>(file + 1);
    int rc = self_->real_->xOpen(self_->real_, name, file->real, flags, out);
    if (file->real->pMethods == nullptr) {
      f->pMethods = nullptr;
      return rc;
    }
    self_->methods_ = *file->real->pMethods;
    self_->methods_.xClose = [](sqlite3_file* x) { return Real(x)->pMethods->xClose(Real(x)); };
    self_->methods_.xRead = [](sqlite3_file* x, void* b, int n, sqlite3_int64 o) {
      return Real(x)->pMethods->xRead(Real(x), b, n, o);
    };
    self_->methods_.xWrite = [](sqlite3_file* x, const void* b, int n, sqlite3_int64 o) {
      return Real(x)->pMethods->xWrite(Real(x), b, n, o);
    };
    self_->methods_.xTruncate = [](sqlite3_file* x, sqlite3_int64 n) {
      return Real(x)->pMethods->xTruncate(Real(x), n);
    };
    self_->methods_.xSync = [](sqlite3_file* x, int how) {
      ++self_->syncs_;
      return Real(x)->pMethods->xSync(Real(x), how);
    };
    self_->methods_.xFileSize = [](sqlite3_file* x, sqlite3_int64* n) {
      return Real(x)->pMethods->xFileSize(Real(x), n);
    };
    self_->methods_.xLock = [](sqlite3_file* x, int l) {
      return Real(x)->pMethods->xLock(Real(x), l);
    };
    self_->methods_.xUnlock = [](sqlite3_file* x, int l) {
      return Real(x)->pMethods->xUnlock(Real(x), l);
    };
    self_->methods_.xCheckReservedLock = [](sqlite3_file* x, int* r) {
      return Real(x)->pMethods->xCheckReservedLock(Real(x), r);
    };
    self_->methods_.xFileControl = [](sqlite3_file* x, int op, void* a) {
      return Real(x)->pMethods->xFileControl(Real(x), op, a);
    };
    self_->methods_.xSectorSize = [](sqlite3_file* x) {
      return Real(x)->pMethods->xSectorSize(Real(x));
    };
    self_->methods_.xDeviceCharacteristics = [](sqlite3_file* x) {
      return Real(x)->pMethods->xDeviceCharacteristics(Real(x));
    };
    self_->methods_.xShmMap = [](sqlite3_file* x, int i, int n, int w, void volatile** p) {
      return Real(x)->pMethods->xShmMap(Real(x), i, n, w, p);
    };
    self_->methods_.xShmLock = [](sqlite3_file* x, int o, int n, int fl) {
      return Real(x)->pMethods->xShmLock(Real(x), o, n, fl);
    };
    self_->methods_.xShmBarrier = [](sqlite3_file* x) { Real(x)->pMethods->xShmBarrier(Real(x)); };
    self_->methods_.xShmUnmap = [](sqlite3_file* x, int d) {
      return Real(x)->pMethods->xShmUnmap(Real(x), d);
    };
    self_->methods_.xFetch = [](sqlite3_file* x, sqlite3_int64 o, int n, void** p) {
      return Real(x)->pMethods->xFetch(Real(x), o, n, p);
    };
    self_->methods_.xUnfetch = [](sqlite3_file* x, sqlite3_int64 o, void* p) {
      return Real(x)->pMethods->xUnfetch(Real(x), o, p);
    };
    f->pMethods = &self_->methods_;
    return rc;
  }

  static inline SyncCountingVfs* self_ = nullptr;
  sqlite3_vfs* real_ = nullptr;
  sqlite3_vfs vfs_{};
  sqlite3_io_methods methods_{};
  std::atomic<int> syncs_{0};
};

// Retention's deletes of output are redone if a crash loses them, so their commit does not
// wait for the disk; every other commit of the log store still does, also right after one.
TEST(LogStoreSyncTest, ARedoableCommitWaitsForNoSyncAndADurableOneAfterItDoes) {
  std::string dir = TempDir();
  ASSERT_FALSE(dir.empty());
  {
    SyncCountingVfs vfs;
    auto logs = OpenLogStore({.path = dir + "/logs.db", .run_cap_bytes = 1 << 20});
    ASSERT_TRUE(logs.ok()) << logs.status().ToString();
    LogStore& l = **logs;
    // The syncs one durable commit of a chunk of `run` made (0 when it failed).
    auto durable_commit = [&](int64_t run) {
      int before = vfs.syncs();
      bool ok = l.Begin().ok() &&
                l.Append({.run_id = run,
                          .shard = 0,
                          .attempt = 1,
                          .seq = 1,
                          .at_ms = 1,
                          .data = "line\n",
                          .job_id = 1})
                    .ok() &&
                l.Commit().ok();
      return ok ? vfs.syncs() - before : 0;
    };
    EXPECT_GT(durable_commit(1), 0) << "a durable commit syncs the WAL";

    int before = vfs.syncs();
    ASSERT_TRUE(l.BeginRedoable().ok());
    Result<LogStore::Pruned> pruned = l.PruneOutput(1, 2, "", 10);
    ASSERT_TRUE(pruned.ok()) << pruned.status().ToString();
    EXPECT_EQ(pruned->chunks, 1);
    ASSERT_TRUE(l.Commit().ok());
    EXPECT_EQ(vfs.syncs(), before) << "a redoable commit waits for no sync";

    EXPECT_GT(durable_commit(2), 0) << "a durable commit after a redoable one syncs again";

    ASSERT_TRUE(l.BeginRedoable().ok());
    l.Rollback();
    EXPECT_GT(durable_commit(3), 0) << "and so does one after a redoable one rolled back";
    logs->reset();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace jobctl::store
