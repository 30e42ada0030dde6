// BackupSqlite: a copy taken while another connection commits is one consistent instant of
// the source, and what is left on disk when it fails or is refused.
#include "store/sqlite_backup.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "store/store.h"

namespace jobctl::store {
namespace {

using namespace std::chrono_literals;

class SqliteBackupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/jobctl-backup-test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // The names of the files in the test's directory.
  std::set<std::string> Files() const {
    std::set<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) {
      names.insert(e.path().filename().string());
    }
    return names;
  }
  static void WriteText(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
  }
  static std::string ReadText(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  // A WAL database with table t(n, pad) holding rows 1..rows.
  static sqlite3* MakeSource(const std::string& path, int rows) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    EXPECT_EQ(sqlite3_exec(db,
                           "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                           "CREATE TABLE t(n INTEGER PRIMARY KEY, pad BLOB NOT NULL);",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    std::string fill =
        "BEGIN; WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < " +
        std::to_string(rows) + ") INSERT INTO t SELECT i, zeroblob(300) FROM c; COMMIT;";
    EXPECT_EQ(sqlite3_exec(db, fill.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    return db;
  }
  static std::string QueryText(sqlite3* db, const char* sql) {
    sqlite3_stmt* st = nullptr;
    std::string out;
    if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) != SQLITE_OK) return sqlite3_errmsg(db);
    if (sqlite3_step(st) == SQLITE_ROW) {
      const unsigned char* text = sqlite3_column_text(st, 0);
      out = text != nullptr ? reinterpret_cast<const char*>(text) : "NULL";
    }
    sqlite3_finalize(st);
    return out;
  }

  std::string dir_;
};

TEST_F(SqliteBackupTest, CopyTakenWhileAnotherConnectionCommitsIsAPrefixOfItsWrites) {
  const std::string source = dir_ + "/jobctl.db";
  const std::string dest = dir_ + "/copy.db";
  constexpr int kPrefilled = 2000;
  sqlite3* writer_db = MakeSource(source, kPrefilled);
  ASSERT_NE(writer_db, nullptr);

  // One transaction per row, as the coordinator commits, until told to stop.
  std::atomic<int64_t> written{kPrefilled};
  std::atomic<bool> stop{false};
  std::atomic<int> writer_error{SQLITE_OK};
  std::thread writer([&] {
    sqlite3_stmt* insert = nullptr;
    sqlite3_prepare_v2(writer_db, "INSERT INTO t VALUES (?1, zeroblob(300))", -1, &insert, nullptr);
    for (int64_t n = kPrefilled + 1; !stop.load(); ++n) {
      sqlite3_bind_int64(insert, 1, n);
      int rc = sqlite3_step(insert);
      sqlite3_reset(insert);
      if (rc != SQLITE_DONE) {
        writer_error = rc;
        break;
      }
      written.store(n);
    }
    sqlite3_finalize(insert);
  });

  // Between two steps of the copy the writer commits a few more rows: the copy's read
  // snapshot must not see them. A copy that started over (SQLite's backup restarts when its
  // source changes under it) stops the writer, so that the test ends and fails.
  int steps = 0;
  bool writer_kept_up = true;
  bool restarted = false;
  BackupProgress last;
  Result<BackupStats> stats =
      BackupSqlite({.source = source,
                    .dest = dest,
                    .pages_per_step = 16,
                    .on_progress = [&](const BackupProgress& p) {
                      ++steps;
                      if (steps > 1 && p.pages_done <= last.pages_done) restarted = true;
                      last = p;
                      if (restarted) {
                        stop = true;
                        return;
                      }
                      int64_t before = written.load();
                      auto deadline = std::chrono::steady_clock::now() + 10s;
                      while (written.load() < before + 5 && writer_error.load() == SQLITE_OK) {
                        if (std::chrono::steady_clock::now() > deadline) {
                          writer_kept_up = false;
                          break;
                        }
                        std::this_thread::sleep_for(1ms);
                      }
                    }});
  stop = true;
  writer.join();
  int64_t total_written = written.load();
  sqlite3_close(writer_db);

  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(writer_error.load(), SQLITE_OK);
  EXPECT_TRUE(writer_kept_up);
  EXPECT_FALSE(restarted);
  EXPECT_GT(steps, 5);
  EXPECT_EQ(last.pages_done, last.pages_total);
  EXPECT_EQ(last.pages_total, stats->pages);
  EXPECT_EQ(stats->bytes, stats->pages * last.page_size);

  sqlite3* copy = nullptr;
  ASSERT_EQ(sqlite3_open_v2(dest.c_str(), &copy, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  EXPECT_EQ(QueryText(copy, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(QueryText(copy, "PRAGMA journal_mode"), "delete");
  int64_t rows = std::atoll(QueryText(copy, "SELECT count(*) FROM t").c_str());
  // Rows 1..rows, none missing: a prefix of what the writer committed, not all of it.
  EXPECT_EQ(QueryText(copy, "SELECT min(n) FROM t"), "1");
  EXPECT_EQ(QueryText(copy, "SELECT max(n) FROM t"), std::to_string(rows));
  EXPECT_GE(rows, kPrefilled);
  EXPECT_LT(rows, total_written);
  sqlite3_close(copy);
  for (const std::string& name : Files()) {
    EXPECT_EQ(name.find(".tmp-"), std::string::npos) << name;
  }
}

TEST_F(SqliteBackupTest, CopyOfAStoreOpensAsAStoreWithTheSameContents) {
  const std::string source = dir_ + "/jobctl.db";
  {
    Result<std::unique_ptr<Store>> store = OpenStore({.path = source});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    ASSERT_TRUE((*store)->Begin().ok());
    ASSERT_TRUE((*store)->InsertRevision("[[job]]\n", "alice", 1000, "1 job").ok());
    ASSERT_TRUE((*store)->Commit().ok());
    // Taken while the store is open, as `jobctl backup` is while serve runs.
    Result<BackupStats> stats = BackupSqlite({.source = source, .dest = dir_ + "/copy.db"});
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  }
  Result<std::unique_ptr<Store>> copy = OpenStore({.path = dir_ + "/copy.db"});
  ASSERT_TRUE(copy.ok()) << copy.status().ToString();
  Result<RevisionRow> revision = (*copy)->CurrentRevision();
  ASSERT_TRUE(revision.ok());
  EXPECT_EQ(revision->text, "[[job]]\n");
  EXPECT_EQ(revision->author, "alice");
}

TEST_F(SqliteBackupTest, AnExistingDestinationIsKeptUnlessReplaceIsAsked) {
  const std::string source = dir_ + "/jobctl.db";
  const std::string dest = dir_ + "/copy.db";
  sqlite3_close(MakeSource(source, 10));
  WriteText(dest, "yesterday's backup");
  Result<BackupStats> refused = BackupSqlite({.source = source, .dest = dest});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Status::Code::kConflict);
  EXPECT_NE(refused.status().message().find(dest + " already exists"), std::string::npos);
  EXPECT_EQ(ReadText(dest), "yesterday's backup");
  EXPECT_EQ(Files(), (std::set<std::string>{"jobctl.db", "copy.db"}));

  Result<BackupStats> replaced =
      BackupSqlite({.source = source, .dest = dest, .overwrite = Overwrite::kReplace});
  ASSERT_TRUE(replaced.ok()) << replaced.status().ToString();
  sqlite3* copy = nullptr;
  ASSERT_EQ(sqlite3_open_v2(dest.c_str(), &copy, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  EXPECT_EQ(QueryText(copy, "SELECT count(*) FROM t"), "10");
  sqlite3_close(copy);
}

TEST_F(SqliteBackupTest, TheSourceItselfIsNeverADestination) {
  const std::string source = dir_ + "/jobctl.db";
  sqlite3_close(MakeSource(source, 10));
  Result<BackupStats> r =
      BackupSqlite({.source = source, .dest = source, .overwrite = Overwrite::kReplace});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
}

TEST_F(SqliteBackupTest, AMissingSourceIsNotFoundAndWritesNothing) {
  Result<BackupStats> r = BackupSqlite({.source = dir_ + "/jobctl.db", .dest = dir_ + "/copy.db"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kNotFound);
  EXPECT_NE(r.status().message().find(dir_ + "/jobctl.db"), std::string::npos);
  EXPECT_TRUE(Files().empty());
}

TEST_F(SqliteBackupTest, ASourceThatIsNotADatabaseFailsAndLeavesNoPartialCopy) {
  const std::string source = dir_ + "/jobctl.db";
  WriteText(source, std::string(8192, 'x'));
  Result<BackupStats> r = BackupSqlite({.source = source, .dest = dir_ + "/copy.db"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kCorrupt) << r.status().ToString();
  EXPECT_EQ(Files(), std::set<std::string>{"jobctl.db"});
}

}  // namespace
}  // namespace jobctl::store
