// SqliteLogStore is the embedded backend of LogStore: logs.db beside jobctl.db, with its own
// connection and WAL, in 64 KiB pages. Each method's SQL sits beside it in
// sqlite_log_store.cc. Internal to lib/store: the coordinator reaches it through OpenLogStore
// (log_store.h). Loop thread only.
#pragma once

#include <memory>
#include <string>

#include "store/log_store.h"
#include "store/statement.h"

namespace jobctl::store {

class SqliteLogStore final : public LogStore {
 public:
  static Result<std::unique_ptr<SqliteLogStore>> Open(const std::string& path,
                                                      int64_t run_cap_bytes);

  Status Begin() override;
  // synchronous=NORMAL for the one transaction: its commit writes the WAL without an fsync
  // (a kill loses nothing, a power loss may lose it); FULL again once it ended, and always
  // before a durable transaction begins.
  Status BeginRedoable() override;
  Status Commit() override;
  void Rollback() override;
  bool in_transaction() const override { return db_.in_transaction(); }

  Result<AppendResult> Append(const LogChunk& chunk) override;
  Result<std::vector<LogChunk>> Read(const LogQuery& query) override;
  Result<std::string> Tail(int64_t run_id, int shard, int attempt, size_t max_bytes) override;
  Result<std::vector<AttemptSeq>> LastSeqs(int64_t run_id) override;
  Result<int64_t> RunBytes(int64_t run_id) override;

  Result<std::optional<RunOutput>> OutputOf(int64_t run_id) override;
  Result<std::vector<RunOutput>> ListOutput(const OutputFilter& filter) override;
  Result<std::vector<JobOutput>> OutputByJob(int limit) override;
  Result<Pruned> PruneOutput(int64_t run_id, int64_t at_ms, const std::string& reason,
                             int max_chunks) override;
  Result<LogStoreStats> Stats() override;
  Result<int64_t> ReclaimSpace(int64_t max_bytes) override { return db_.Reclaim(max_bytes); }

 private:
  SqliteLogStore() = default;
  // Stores the chunk unless (run, shard, attempt, seq) is already there; false then.
  Result<bool> InsertChunk(const LogChunk& chunk);
  // Counts `counted` bytes for the chunk's run, of which `stored` were kept.
  Status AddRunBytes(const LogChunk& chunk, int64_t counted, int64_t stored);

  Status RestoreSync();  // synchronous=FULL again after a BeginRedoable

  Database db_;
  int64_t run_cap_bytes_ = 0;
  bool relaxed_ = false;  // synchronous=NORMAL since a BeginRedoable
};

}  // namespace jobctl::store
