// SqliteStore is the embedded backend of Store: one SQLite file (WAL, synchronous=FULL, so a
// commit is on disk when Commit() returns), schema from SchedulerMigrations(). Each method's
// SQL sits beside it in sqlite_store.cc and is prepared the first time the method runs.
// Internal to lib/store: the coordinator reaches it through OpenStore (store.h). Loop thread
// only.
#pragma once

#include <memory>
#include <string>

#include "store/statement.h"
#include "store/store.h"

namespace jobctl::store {

class SqliteStore final : public Store {
 public:
  static Result<std::unique_ptr<SqliteStore>> Open(const std::string& path);

  Status Begin() override { return db_.Begin(); }
  Status Commit() override { return db_.Commit(); }
  void Rollback() override { db_.Rollback(); }
  bool in_transaction() const override { return db_.in_transaction(); }

  Result<int64_t> GetCounter(std::string_view name) override;
  Status SetCounter(std::string_view name, int64_t value) override;

  Result<RevisionRow> CurrentRevision() override;
  Result<int64_t> InsertRevision(const std::string& text, const std::string& author, int64_t at_ms,
                                 const std::string& summary) override;

  Status ForEachJobHead(const std::function<void(const JobHead&)>& fn,
                        int64_t* unreadable) override;
  Status ForEachJob(const std::function<void(JobRow&&)>& fn) override;
  Result<JobRow> GetJob(int64_t id) override;
  Result<int64_t> InsertJob(const JobRow& row, int64_t at_ms) override;
  Status UpdateJobSpec(int64_t id, const std::string& spec_json, const JobTiming& timing,
                       int64_t revision, int64_t at_ms) override;
  Status DeactivateJob(int64_t id, int64_t revision, int64_t at_ms) override;
  Status SetJobPaused(int64_t id, bool paused) override;
  Status SetNextFire(int64_t id, std::optional<int64_t> next_fire_ms) override;

  Status InsertRun(RunRecord& run) override;
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

  Result<PrunedRuns> PruneRuns(const RunRetention& retention) override;
  Result<std::vector<int64_t>> MissingRuns(const std::vector<int64_t>& ids) override;
  Result<StoreStats> Stats() override;
  Result<int64_t> ReclaimSpace(int64_t max_bytes) override { return db_.Reclaim(max_bytes); }

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

 private:
  SqliteStore() = default;
  Status LoadShards(RunRecord& run);
  // Runs `query` (run columns, see RunQuery in the .cc), then loads each run's shards.
  Status ForEachRunOf(const Sql& query, const std::function<void(RunRecord&&)>& fn);

  Database db_;
};

}  // namespace jobctl::store
