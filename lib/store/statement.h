// Database and Statement: a thin, RAII layer over one sqlite3 connection. Statements are
// prepared once and reset (with bindings cleared) when a Use() scope ends, so call sites
// never reset by hand. Only lib/store includes this header. Loop thread only.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace jobctl::store {

// Maps an SQLite result code to a Status code: BUSY/LOCKED -> kUnavailable, FULL ->
// kResourceExhausted, CONSTRAINT -> kConflict, CORRUPT/NOTADB -> kCorrupt, else kIo.
Status SqliteStatus(int rc, sqlite3* db, std::string_view what);

class Statement {
 public:
  class Use;
  Statement() = default;
  Statement(Statement&&) = default;
  Statement& operator=(Statement&&) = default;
  ~Statement();
  Status Prepare(sqlite3* db, std::string_view sql);
  Use Bind();

 private:
  friend class Use;
  sqlite3* db_ = nullptr;
  std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> stmt_{nullptr, sqlite3_finalize};
  std::string sql_;
};

// One execution of a prepared statement; resets it when destroyed.
class Statement::Use {
 public:
  explicit Use(Statement* s) : s_(s) {}
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

class Database {
 public:
  Database() = default;
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
  Status Open(const std::string& path, const std::vector<Migration>& migrations,
              int page_size = 0);
  sqlite3* handle() const { return db_; }
  Status Exec(std::string_view sql);  // for pragmas and fixed statements
  Status Begin();                    // BEGIN IMMEDIATE
  Status Commit();
  void Rollback();
  bool in_transaction() const { return db_ != nullptr && !sqlite3_get_autocommit(db_); }

 private:
  sqlite3* db_ = nullptr;
};

}  // namespace jobctl::store
