// LogStore keeps job output apart from the scheduler's store, so a flood of output never
// delays a fire: its own connection and its own group commit (with the embedded backend,
// SqliteLogStore, its own file: logs.db beside jobctl.db, with its own WAL; with PostgreSQL,
// PgLogStore, tables of their own in the scheduler's database). A chunk is
// identified by (run, shard, attempt, seq); a resent chunk is stored once. Each run has a
// byte cap (the store's, or the chunk's own when lower) after which one truncation marker is stored
// and further bytes are counted, not kept. This header names no database; every backend passes the
// log tests of store_test.cc. Loop thread only.
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
  int64_t job_id = 0;  // the run's job, for per-job accounting (0: unknown)
  // The run's job's own cap (its log_cap), when lower than the store's; 0: the store's.
  int64_t cap_bytes = 0;
};

// The output kept for one run, as the log store counts it.
struct RunOutput {
  int64_t run_id = 0;
  int64_t job_id = 0;                // 0: unknown (output stored before jobs were recorded)
  int64_t bytes = 0;                 // counted, kept or not (RunBytes)
  int64_t stored_bytes = 0;          // kept: what pruning gives back
  int64_t last_ms = 0;               // the newest chunk's time
  bool truncated = false;            // the run reached its cap
  std::optional<int64_t> pruned_ms;  // the output was deleted by retention then
  std::string pruned_reason;         // why, as shown to readers: "logs_for 7d"
};

// Which runs' output ListOutput returns: kept (not pruned), run id above after_run_id, by
// run id, at most limit; of one job, and last written before a time, when given. With
// with_pruned, the runs whose output was pruned come too (their marks): every run the log
// store still holds something of (not together with job_id).
struct OutputFilter {
  int64_t after_run_id = 0;
  std::optional<int64_t> job_id;
  std::optional<int64_t> last_before_ms;
  int limit = 100;
  bool with_pruned = false;
};

struct JobOutput {
  int64_t job_id = 0;
  int64_t stored_bytes = 0;
  int64_t runs = 0;  // runs with output kept
};

// The size of the log database, for `jobctl store stats`.
struct LogStoreStats {
  int64_t file_bytes = 0;
  int64_t free_bytes = 0;
  int64_t stored_bytes = 0;  // output kept, all runs
  bool reclaims_space = false;
};

struct LogQuery {
  int64_t run_id = 0;
  int64_t after_id = 0;
  std::optional<int> shard;
  std::optional<LogStream> stream;
  size_t max_bytes = 4 << 20;
  // Set: the newest chunks with ids below it (and above after_id), up to max_bytes (at least
  // one), still returned in id order: the tail of what was stored before that id.
  std::optional<int64_t> before_id;
};

class LogStore {
 public:
  virtual ~LogStore() = default;

  virtual Status Begin() = 0;
  // A transaction whose commit need not wait for the disk: for writes that are done again
  // if a crash loses them (retention's deletes). Its commit is ordered before every later
  // one, and the next durable commit makes it durable too. Where a backend cannot relax a
  // commit this is Begin().
  virtual Status BeginRedoable() { return Begin(); }
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
  // The last bytes of one attempt's output (stdout and stderr as they arrived, without
  // truncation markers): whole chunks from the newest back until at least max_bytes, then
  // cut to the last max_bytes. "" when it has none. For notifications; reads at most 64
  // chunks.
  virtual Result<std::string> Tail(int64_t run_id, int shard, int attempt, size_t max_bytes) = 0;
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

  // Retention (the coordinator's Pruner). The accounting of one run's output; none for a run
  // that never had output.
  virtual Result<std::optional<RunOutput>> OutputOf(int64_t run_id) = 0;
  // Runs with output kept, by OutputFilter.
  virtual Result<std::vector<RunOutput>> ListOutput(const OutputFilter& filter) = 0;
  // Output kept per job, the largest first, at most limit jobs (job 0: output of unknown job).
  virtual Result<std::vector<JobOutput>> OutputByJob(int limit) = 0;
  // Inside a transaction: deletes at most max_chunks chunks of the run's output; once none is
  // left, the run is marked pruned (at_ms, reason) and the result is true. A run without
  // output is marked too. Output appended to a pruned run later is not kept (Append answers
  // kTruncated), so that a pruned run reads as pruned, never as partial. An empty reason is
  // for a run that no longer exists: once its chunks are gone its accounting goes too
  // (OutputOf answers none), leaving nothing behind.
  struct Pruned {
    bool done = false;
    int64_t chunks = 0;  // deleted by this call
    int64_t bytes = 0;
  };
  virtual Result<Pruned> PruneOutput(int64_t run_id, int64_t at_ms, const std::string& reason,
                                     int max_chunks) = 0;
  virtual Result<LogStoreStats> Stats() = 0;
  // As Store::ReclaimSpace.
  virtual Result<int64_t> ReclaimSpace(int64_t max_bytes) = 0;
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
