// Database and Statement: a thin, RAII layer over one sqlite3 connection, for the SQLite
// backend (sqlite_store.cc, sqlite_log_store.cc). Each statement's SQL is a `static const Sql`
// beside the method that binds it; Database::Use prepares it the first time and keeps it for
// the connection's life, and a statement is reset (with bindings cleared) when its Use()
// scope ends, so call sites never reset by hand. It brings in sqlite3.h, so only the SQLite
// backend's files in lib/store (and their tests) include it. Loop thread only, but for the
// checkpoint thread a Database may start (CheckpointInBackground), which has a connection
// of its own.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"

namespace jobctl::store {

// Maps an SQLite result code to a Status code: BUSY/LOCKED -> kUnavailable, FULL ->
// kResourceExhausted, CONSTRAINT -> kConflict, CORRUPT/NOTADB -> kCorrupt, else kIo.
Status SqliteStatus(int rc, sqlite3* db, std::string_view what);

// The text of one SQL statement. Declare it `static const` in the method that binds it: its
// address names its prepared statement in the connection's cache (Database::Use).
struct Sql {
  std::string text;
};

class Statement {
 public:
  class Use;
  Statement() = default;
  Statement(Statement&&) = default;
  Statement& operator=(Statement&&) = default;
  ~Statement();
  Status Prepare(sqlite3* db, std::string_view sql);
  bool prepared() const { return stmt_ != nullptr; }
  Use Bind();

 private:
  friend class Use;
  sqlite3* db_ = nullptr;
  std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> stmt_{nullptr, sqlite3_finalize};
  std::string sql_;
};

// One execution of a prepared statement; resets it when destroyed. Built with a failed
// prepare's status, it binds nothing, steps no row and reports that status.
class Statement::Use {
 public:
  explicit Use(Statement* s, Status prepared = Status::Ok())
      : s_(s), bind_status_(std::move(prepared)) {}
  Use(const Use&) = delete;
  Use& operator=(const Use&) = delete;
  ~Use();

  Use& Bind(int i, int64_t v);
  Use& Bind(int i, int v) { return Bind(i, static_cast<int64_t>(v)); }
  Use& Bind(int i, std::string_view v);
  Use& Bind(int i, const char* v) { return Bind(i, std::string_view(v)); }
  Use& Bind(int i, const std::string& v) { return Bind(i, std::string_view(v)); }
  Use& BindBlob(int i, std::string_view bytes);
  Use& Bind(int i, std::nullopt_t);
  Use& Bind(int i, const std::optional<int64_t>& v);

  // Steps once: true when a row is ready, false at the end; errors go to status().
  bool Step();
  // Runs to completion (for writes).
  Status Exec();
  // Runs a write that must change exactly `n` rows; kNotFound otherwise.
  Status ExecExpectingChanges(int n);
  const Status& status() const { return status_; }

  int64_t Int(int col) const;
  std::optional<int64_t> OptInt(int col) const;
  std::string Text(int col) const;
  // The column's bytes in place: valid until the next Step() or the end of this Use.
  std::string_view View(int col) const;
  bool IsNull(int col) const;

 private:
  Statement* s_;
  Status status_;
  Status bind_status_;
};

// Creates `path` if missing and makes it, and its -wal, -shm and -journal files where they
// exist, mode 0600 whatever the umask: a store holds token hashes and every job's command.
// A file that was readable by others is logged (warn) as it is tightened.
Status RestrictToOwner(const std::string& path);

class WalCheckpointer;

class Database {
 public:
  // VACUUM copies the file through temp_store (memory): a bound on both time and memory.
  static constexpr int64_t kConvertAtOpenBytes = 64LL << 20;
  Database();
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  struct Migration {
    int version;
    const char* sql;
  };
  // Opens (creating) the file: WAL, synchronous=FULL, foreign_keys, busy_timeout, then
  // applies the migrations newer than PRAGMA user_version, each in its own transaction.
  // A database newer than the newest migration is refused. `page_size` (0: SQLite's 4096)
  // applies to a new file only: an existing one keeps the page size it was created with.
  // A new file is created with auto_vacuum=INCREMENTAL, so that retention can give freed
  // pages back (Reclaim). A file created without it is converted by one VACUUM at open
  // when it is at most kConvertAtOpenBytes; a larger one keeps reusing its free pages but
  // does not shrink, and a warning says how to convert it by hand.
  Status Open(const std::string& path, const std::vector<Migration>& migrations, int page_size = 0);
  sqlite3* handle() const { return db_; }
  // One execution of `sql` (which must outlive this Database: declare it static), prepared
  // on first use. A failed prepare is the Use's status and is tried again next time.
  Statement::Use Use(const Sql& sql);
  Status Exec(std::string_view sql);  // for pragmas and fixed statements
  // One integer pragma's value ("page_count").
  Result<int64_t> PragmaInt(std::string_view name);
  // Space: the file as allocated and its free pages, in bytes, and whether free pages can be
  // given back (auto_vacuum=INCREMENTAL).
  struct Space {
    int64_t file_bytes = 0;
    int64_t free_bytes = 0;
    bool incremental = false;
  };
  Result<Space> SpaceUsed();
  // PRAGMA incremental_vacuum of about max_bytes (at least a page) where the file allows
  // it; the bytes given back.
  Result<int64_t> Reclaim(int64_t max_bytes);
  Status Begin();  // BEGIN IMMEDIATE
  Status Commit();
  void Rollback();
  bool in_transaction() const { return db_ != nullptr && !sqlite3_get_autocommit(db_); }

  // Checkpoints the WAL from a thread of its own, with a connection of its own, once a
  // commit leaves at least `pages` pages in it, instead of in the commit that passes
  // SQLite's wal_autocheckpoint: this connection then never copies the WAL into the file
  // nor waits for that copy's fsync (a passive checkpoint takes no lock a writer needs).
  // The file and its WAL are what they would be otherwise; closing this Database stops
  // the thread first, and the close's own checkpoint empties the WAL as before.
  Status CheckpointInBackground(const std::string& path, int64_t pages);

 private:
  Status UseIncrementalVacuum(const std::string& path);

  std::unique_ptr<WalCheckpointer> checkpointer_;  // stopped before db_ closes
  sqlite3* db_ = nullptr;
  // Keyed by the address of each statement's Sql; finalized before the connection closes.
  std::unordered_map<const Sql*, Statement> statements_;
};

}  // namespace jobctl::store
