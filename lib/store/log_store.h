// LogStore keeps job output apart from the scheduler's database (logs.db beside jobctl.db),
// so a flood of output never delays a fire: its own connection, its own WAL, its own group
// commit. A chunk is identified by (run, shard, attempt, seq); a resent chunk is stored
// once. Each run has a byte cap after which one truncation marker is stored and further
// bytes are counted, not kept. Loop thread only.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "store/statement.h"

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
  static Result<std::unique_ptr<LogStore>> Open(const std::string& path, int64_t run_cap_bytes);

  Status Begin() { return db_.Begin(); }
  Status Commit() { return db_.Commit(); }
  void Rollback() { db_.Rollback(); }
  bool in_transaction() const { return db_.in_transaction(); }

  enum class AppendResult { kStored, kDuplicate, kTruncated };
  // Inside a transaction. kTruncated: the run is over its cap; the bytes were counted and a
  // marker stored once.
  Result<AppendResult> Append(const LogChunk& chunk);
  Result<std::vector<LogChunk>> Read(const LogQuery& query);
  Result<int64_t> RunBytes(int64_t run_id);

 private:
  LogStore() = default;
  Status Prepare();

  Database db_;
  int64_t run_cap_bytes_ = 0;
  Statement insert_chunk_, run_bytes_, add_run_bytes_, mark_truncated_, read_;
};

}  // namespace jobctl::store
