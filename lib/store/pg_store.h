// PgStore is the PostgreSQL backend of Store: one libpq connection (pg.h) to a database that
// several coordinators may share, schema from PgSchedulerMigrations(). A commit is durable
// as the server's settings make it (synchronous_commit, and synchronous standbys for a
// replicated server). Each method's SQL sits beside it in pg_store.cc and is prepared the
// first time the method runs. Internal to lib/store: the coordinator reaches it through
// OpenStore (store.h). Loop thread only.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "store/pg.h"
#include "store/store.h"

namespace jobctl::store {

// The advisory locks of a shared database (any numbers, the same in every version of jobctl):
// the hold, taken by the holder's scheduler session (PgStore), and one taken shared by the
// log sessions of holders (PgLogStore::Hold), by which a new holder finds and ends the log
// sessions of every earlier one.
inline constexpr int64_t kHoldLock = 7462019284;
inline constexpr int64_t kHolderLogLock = 7462019285;

class PgStore final : public Store {
 public:
  // Waits until this coordinator holds the database (see held()), logging once that it
  // waits, then migrates the schema and begins a new epoch; with `standby`, returns at once
  // when another coordinator holds it (TryHold takes over later). `holder` names this
  // coordinator to the others; a holder that has not renewed its hold for `hold_ttl_ms` has
  // its session ended by a waiting coordinator.
  static Result<std::unique_ptr<PgStore>> Open(const std::string& url, const std::string& holder,
                                               int64_t hold_ttl_ms, bool standby = false);
  Result<bool> TryHold() override;
  int64_t epoch() const override { return held_ ? epoch_ : 0; }
  std::string Holder() override;

  void PipelineWrites(bool on) override { pipelined_ = on; }
  Status Begin() override;
  Status Commit() override { return db_->Commit(); }
  void Rollback() override {
    ClearHeld();
    db_->Rollback();
  }
  bool in_transaction() const override { return db_->in_transaction(); }
  // The hold is a session-level advisory lock on the database, taken by this connection,
  // and an epoch in the `leader` row that each new holder increments. PostgreSQL releases
  // the lock when the session ends (the coordinator died, or the server lost sight of it),
  // and a coordinator waiting in Open takes it then; one that waits ends the session of a
  // holder that stopped renewing (CheckHold) for hold_ttl. Every write transaction checks the
  // epoch (Begin). After a lost connection this one holds the database again only if the
  // lock is free and the epoch unchanged (nobody held it meanwhile); else it has lost it for
  // good.
  bool held() const override { return held_; }
  // Renews the hold (the leader row's time), outside a transaction; once a second.
  void CheckHold() override;

  Result<int64_t> GetCounter(std::string_view name) override;
  Status SetCounter(std::string_view name, int64_t value) override;

  Result<RevisionRow> CurrentRevision() override;
  Result<int64_t> InsertRevision(const std::string& text, const std::string& author, int64_t at_ms,
                                 const std::string& summary) override;

  Status ForEachJobHead(const std::function<void(const JobHead&)>& fn,
                        int64_t* unreadable) override;
  Status ForEachJob(const std::function<void(JobRow&&)>& fn) override;
  Result<JobRow> GetJob(int64_t id) override;
  Status GetJobs(const std::vector<int64_t>& ids, const std::function<void(JobRow&&)>& fn) override;
  Result<int64_t> InsertJob(const JobRow& row, int64_t at_ms) override;
  Status UpdateJobSpec(int64_t id, const std::string& spec_json, const JobTiming& timing,
                       int64_t revision, int64_t at_ms) override;
  Status DeactivateJob(int64_t id, int64_t revision, int64_t at_ms) override;
  Status SetJobPaused(int64_t id, bool paused) override;
  Status SetNextFire(int64_t id, std::optional<int64_t> next_fire_ms) override;
  Status SetNextFires(const std::vector<std::pair<int64_t, std::optional<int64_t>>>& next) override;

  Status InsertRun(RunRecord& run) override;
  Status InsertRuns(std::vector<RunRecord>& runs, std::vector<bool>& inserted) override;
  Status InsertMiss(const MissRow& miss) override;
  Status UpdateRunState(int64_t run_id, RunState state, std::optional<int64_t> finished_ms,
                        const std::string& note) override;
  Status UpdateShard(const ShardRecord& shard) override;

  Result<std::optional<RunRecord>> GetRun(int64_t id) override;
  Result<std::optional<ShardRecord>> GetShard(int64_t run_id, int index) override;
  Result<std::optional<int64_t>> FindRunByKey(int64_t job_id, const std::string& key) override;
  Result<std::vector<RunRecord>> ListRuns(const RunFilter& filter) override;
  Result<std::vector<RunRecord>> StepRuns(int64_t flow_run_id) override;
  Status ForEachOpenRun(const std::function<void(RunRecord&&)>& fn) override;
  Status ForEachRun(const std::function<void(RunRecord&&)>& fn) override;
  Result<std::vector<MissRow>> ListMisses(int64_t job_id, int64_t since_ms) override;
  Status ForEachLastResult(const std::function<void(const LastResult&)>& fn) override;

  Status PutOutputEnd(const OutputEndRow& end) override;
  Result<std::optional<OutputEndRow>> GetOutputEnd(int64_t run_id, int shard, int attempt) override;
  Result<std::vector<OutputEndRow>> OutputEnds(int64_t run_id) override;

  Status PutLease(const LeaseRow& lease) override;
  Status DeleteLease(const std::string& key) override;
  Status ForEachLease(const std::function<void(LeaseRow&&)>& fn) override;

  Status PutAgent(const AgentRow& agent) override;
  Status ForEachAgent(const std::function<void(AgentRow&&)>& fn) override;
  Status DeleteAgent(const std::string& name) override;

  Result<int64_t> InsertToken(const TokenRow& token) override;
  Status RevokeToken(int64_t id, int64_t at_ms) override;
  Result<int64_t> RevokeAgentTokens(const std::string& agent, int64_t at_ms) override;
  Status ForEachToken(const std::function<void(TokenRow&&)>& fn) override;

  Status InsertNotification(const NotificationRow& row) override;
  Result<std::vector<NotificationRow>> DueNotifications(int64_t now_ms, int limit) override;
  Status UpdateNotification(const NotificationRow& row) override;
  Result<std::vector<NotificationRow>> ListNotifications(const NotificationFilter& filter) override;
  Result<int64_t> PruneNotifications(int64_t before_ms, int limit) override;
  Status PutAlertState(int64_t job_id, const AlertState& state) override;
  Status ForEachAlertState(const std::function<void(int64_t, const AlertState&)>& fn) override;
  using Store::InsertEvent;
  Status InsertEvent(const EventRow& event) override;
  Result<std::vector<EventRow>> ListEvents(const EventFilter& filter) override;

  Result<PrunedRuns> PruneRuns(const RunRetention& retention) override;
  Result<std::vector<int64_t>> MissingRuns(const std::vector<int64_t>& ids) override;
  // The scheduler's tables' size on disk (pg_total_relation_size: heap, TOAST and indexes).
  // Free space inside them is not reported (0): PostgreSQL has no cheap measure of it.
  Result<StoreStats> Stats() override;
  // Nothing, 0: PostgreSQL has no incremental vacuum, and VACUUM cannot run inside a
  // transaction. Autovacuum makes the space of deleted rows reusable by new ones; the
  // tables' files do not shrink (see jobctl-coordinator.toml(5)).
  Result<int64_t> ReclaimSpace(int64_t /*max_bytes*/) override { return int64_t{0}; }

 private:
  PgStore() = default;
  // Takes the lock if it is free: true when this session holds it now.
  Result<bool> TakeLock();
  // Whether this store's connection was made again less than hold_ttl ago (TryHold).
  bool Returning() const;
  void EndStaleHolder();
  Status Rehold();  // on_reconnect
  Status Lost();    // kUnavailable, held() false from now on
  // Loads the shards of `runs` with one query.
  Status LoadShards(std::vector<RunRecord>& runs);
  // Runs of `page` (run columns, a page of ids after $1, see RunQuery in the .cc) page by
  // page, each with its shards, to fn.
  Status ForEachRunOf(const pg::Sql& page, const std::function<void(RunRecord&&)>& fn);

  // A write whose caller reads nothing back: sent without waiting when pipelined_ (see
  // Store::PipelineWrites), else run; `changes` as Connection::Send.
  Status Write(const pg::Sql& sql, const pg::Params& params, int64_t changes = -1);

  // With pipelined writes, the updates of shards, of run states and of leases are held and
  // coalesced per transaction (the last of each row wins; an empty note keeps the one held),
  // then sent as one statement per kind before the next statement that waits, or COMMIT
  // (Connection::before_wait): a turn's results cost a few statements, not a few a result.
  Status SendHeld();
  void ClearHeld();
  struct StateWrite {
    RunState state;
    std::optional<int64_t> finished_ms;
    std::string note;
  };
  std::map<std::pair<int64_t, int>, ShardRecord> held_shards_;
  std::map<int64_t, StateWrite> held_states_;
  std::map<std::string, std::optional<LeaseRow>> held_leases_;  // nullopt: deleted

  std::unique_ptr<pg::Connection> db_;
  bool pipelined_ = false;
  bool held_ = false;
  int64_t epoch_ = 0;  // 0 until held; kept after the hold is lost
  std::string holder_;
  int64_t hold_ttl_ms_ = 10000;
  // When the connection was last made again before this store held the database.
  std::optional<std::chrono::steady_clock::time_point> back_at_;
};

}  // namespace jobctl::store
