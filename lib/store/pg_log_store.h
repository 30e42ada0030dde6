// PgLogStore is the PostgreSQL backend of LogStore: the log tables (PgLogMigrations) in the
// same database as the scheduler's store, so a run's output survives the loss of the
// coordinator that received it, over a connection of its own (its own group commit, as
// with the embedded backend's separate file). Internal to lib/store: the coordinator
// reaches it through OpenLogStore (log_store.h). Loop thread only.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store/log_store.h"
#include "store/pg.h"

namespace jobctl::store {

class PgLogStore final : public LogStore {
 public:
  // `standby`: no migration, and every transaction refused until Hold.
  static Result<std::unique_ptr<PgLogStore>> Open(const std::string& url, int64_t run_cap_bytes,
                                                  bool standby = false);
  // Also marks this session as the holder's (TakeHolderLock): the next holder ends it.
  Status Hold(int64_t epoch) override;

  // Refused once another coordinator began an epoch after the one this store opened in
  // (the epoch of the scheduler's store, pg_store.h): output is written only by the
  // coordinator that holds the database.
  Status Begin() override;
  // SET LOCAL synchronous_commit = off: the commit does not wait for the server's WAL flush
  // (nor for synchronous standbys); a crash of the server may lose it, never half of it.
  Status BeginRedoable() override;
  Status Commit() override { return db_->Commit(); }
  void Rollback() override { db_->Rollback(); }
  bool in_transaction() const override { return db_->in_transaction(); }

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
  // The log tables' size on disk (pg_total_relation_size: heap, TOAST and indexes). Free
  // space inside them is not reported (0): PostgreSQL has no cheap measure of it.
  Result<LogStoreStats> Stats() override;
  // Nothing, 0: PostgreSQL has no incremental vacuum, and VACUUM cannot run inside a
  // transaction. Autovacuum makes the space of deleted chunks reusable by new ones; the
  // tables' files do not shrink (see jobctl-coordinator.toml(5)).
  Result<int64_t> ReclaimSpace(int64_t /*max_bytes*/) override { return int64_t{0}; }

 private:
  PgLogStore() = default;
  // Marks this session as a holder's log session (kHolderLogLock, shared), so that the next
  // holder ends it when it takes over.
  Status TakeHolderLock();
  // Whether the log tables have the retention accounting (log schema version 2). Always,
  // once this store migrated them; a standby's may be a holder's older schema, and its
  // reads then answer as for runs without accounting, rather than fail.
  Result<bool> HasRetention();
  // Stores the chunk unless (run, shard, attempt, seq) is already there; false then.
  Result<bool> InsertChunk(const LogChunk& chunk);
  // Adds to the run's accounting: `counted` bytes toward its cap, `stored` bytes kept.
  Status AddRunBytes(const LogChunk& chunk, int64_t counted, int64_t stored, bool truncated);

  std::unique_ptr<pg::Connection> db_;
  int64_t run_cap_bytes_ = 0;
  // -1: opened without a scheduler store in the database (unfenced); kStandby: refuses every
  // transaction until Hold.
  static constexpr int64_t kStandby = -2;
  int64_t epoch_ = -1;
  bool has_retention_ = false;  // known to be there (it never goes away)
};

}  // namespace jobctl::store
