// LogStore keeps job output apart from the scheduler's store, so a flood of output never
// delays a fire: its own connection and its own group commit (with the embedded backend,
// SqliteLogStore, its own file: logs.db beside jobctl.db, with its own WAL; with PostgreSQL,
// PgLogStore, tables of their own in the scheduler's database). A chunk is
// identified by (run, shard, attempt, seq); a resent chunk is stored once. Each run has a
// byte cap after which one truncation marker is stored and further bytes are counted, not
// kept. This header names no database; every backend passes the log tests of store_test.cc.
// Loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace jobctl::store {

enum class LogStream { kStdout = 1, kStderr = 2, kMarker = 3 };

struct LogChunk {
  int64_t id = 0;  // arrival order within the log database; readers page by it
  int64_t run_id = 0;
  int shard = 0;
  int attempt = 1;
  int64_t seq = 0;
  LogStream stream = LogStream::kStdout;
  int64_t at_ms = 0;
  std::string data;
};

struct LogQuery {
  int64_t run_id = 0;
  int64_t after_id = 0;
  std::optional<int> shard;
  std::optional<LogStream> stream;
  size_t max_bytes = 4 << 20;
};

class LogStore {
 public:
  virtual ~LogStore() = default;

  virtual Status Begin() = 0;
  virtual Status Commit() = 0;
  virtual void Rollback() = 0;  // a no-op outside a transaction
  virtual bool in_transaction() const = 0;

  enum class AppendResult { kStored, kDuplicate, kTruncated };
  // Inside a transaction. kTruncated: the run is over its cap; the bytes were counted and a
  // marker stored once.
  virtual Result<AppendResult> Append(const LogChunk& chunk) = 0;
  // In arrival order, from after_id on: at most 1000 chunks, and no chunk more once
  // max_bytes is reached. A stream filter keeps the truncation markers.
  virtual Result<std::vector<LogChunk>> Read(const LogQuery& query) = 0;
  // The highest seq stored for each (shard, attempt) of a run that has output; a chunk over
  // the cap counts (its marker keeps its seq).
  struct AttemptSeq {
    int shard = 0;
    int attempt = 1;
    int64_t max_seq = 0;
  };
  virtual Result<std::vector<AttemptSeq>> LastSeqs(int64_t run_id) = 0;
  // The bytes counted for a run, kept or not; 0 for a run without output.
  virtual Result<int64_t> RunBytes(int64_t run_id) = 0;

  // A log store opened as a standby's (LogStoreOptions::standby) reads only; once the
  // scheduler's store is held in `epoch` (Store::TryHold), this migrates its schema and
  // writes from then on, fenced by that epoch. A no-op for the embedded store.
  virtual Status Hold(int64_t /*epoch*/) { return Status::Ok(); }
};

struct LogStoreOptions {
  std::string path;           // the SQLite database file (<data>/logs.db); created if missing
  std::string url;            // PostgreSQL (the scheduler's database); when set, not `path`
  int64_t run_cap_bytes = 0;  // output kept per run
  // A standby's: no migration and no write until Hold (PostgreSQL only).
  bool standby = false;
};

Result<std::unique_ptr<LogStore>> OpenLogStore(const LogStoreOptions& options);

}  // namespace jobctl::store
