// Store is the coordinator's durable state: job file revisions, jobs, runs and shards, the
// lease table, agents, API tokens, missed instants and the audit trail. It is the truth; the
// coordinator's memory is an index rebuilt from it at start. This header is the seam between
// the coordinator and a database: it names no database, and every backend (today the
// embedded SQLite file, SqliteStore in sqlite_store.h, and PostgreSQL, PgStore in
// pg_store.h) passes the same store tests
// (store_test.cc). The rows it speaks are in rows.h.
//
// Writes happen inside a transaction the caller opens with Begin() and ends with Commit():
// the coordinator groups every write of one loop iteration into one commit, and answers
// no request before that commit returned. Loop thread only.
//
// Errors, whatever the backend: kConflict for a uniqueness violation (a scheduled instant
// fired twice, an idempotency key or a job name reused), kNotFound where a method says so,
// kUnavailable when the database is busy, kResourceExhausted when it is full, kCorrupt when
// it is damaged or newer than this binary, kIo otherwise.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "model/run.h"
#include "store/rows.h"

namespace jobctl::store {

class Store {
 public:
  virtual ~Store() = default;

  virtual Status Begin() = 0;
  virtual Status Commit() = 0;
  virtual void Rollback() = 0;  // a no-op outside a transaction
  virtual bool in_transaction() const = 0;

  // Whether this coordinator still holds the store alone. The embedded store always does (a
  // file of its own). A shared database is held by one coordinator at a time: OpenStore waits
  // until it holds it (unless opened as a standby, see TryHold), and once the hold is lost
  // (its database session ended while it could not see it, and another coordinator may have
  // taken over) every transaction is refused and the coordinator must stop.
  virtual bool held() const { return true; }
  // A store opened as a standby (StoreOptions::standby) reads but writes nothing until this
  // returns true: the hold is taken if it is free (ending the session of a holder that
  // stopped renewing), the schema migrated and a new epoch begun. True at once when held.
  virtual Result<bool> TryHold() { return held(); }
  // The epoch this coordinator holds the store in (0 for the embedded store, and before the
  // hold): each holder of a shared database has a greater one than the last.
  virtual int64_t epoch() const { return 0; }
  // Who holds the store now, as the holder names itself ("" when unknown or the embedded
  // store); for messages.
  virtual std::string Holder() { return ""; }
  // Asks the database whether the hold is still this coordinator's, outside a transaction:
  // a lost connection is found here, not only at the next write. Then held() says.
  virtual void CheckHold() {}

  // Lets the backend send the writes whose callers read nothing back (SetCounter,
  // UpdateShard, UpdateRunState, SetNextFire(s), InsertMiss, PutOutputEnd, PutLease,
  // DeleteLease, PutAgent, InsertEvent), and its own checks at Begin, without waiting for each
  // one's outcome, where it can (PostgreSQL's pipeline mode): a failure among them, kNotFound
  // included, is then returned by the next read or write that waits, or by Commit, and fails the
  // transaction. For a caller that fails its whole transaction on any failed write, as the
  // coordinator's group commit does. Off until turned on.
  virtual void PipelineWrites(bool on) { (void)on; }

  // Counters that only grow (the fencing token): read at start, written in the batch that
  // used them. A counter never written reads 0.
  virtual Result<int64_t> GetCounter(std::string_view name) = 0;
  virtual Status SetCounter(std::string_view name, int64_t value) = 0;

  // The newest revision; id 0 when no file was ever applied.
  virtual Result<RevisionRow> CurrentRevision() = 0;
  virtual Result<int64_t> InsertRevision(const std::string& text, const std::string& author,
                                         int64_t at_ms, const std::string& summary) = 0;

  // Every job in id order, timing only (no JSON). A row whose dialect, misfire or overlap
  // name is unknown is passed with the defaults and counted in *unreadable.
  virtual Status ForEachJobHead(const std::function<void(const JobHead&)>& fn,
                                int64_t* unreadable) = 0;
  // Every job in id order with its spec (for tools and checkers; the coordinator's start
  // uses ForEachJobHead).
  virtual Status ForEachJob(const std::function<void(JobRow&&)>& fn) = 0;
  virtual Result<JobRow> GetJob(int64_t id) = 0;  // kNotFound when there is no such job
  // The jobs of `ids` that exist, in no particular order, in one read where the backend can
  // (the fire loop loads a slice's definitions so).
  virtual Status GetJobs(const std::vector<int64_t>& ids, const std::function<void(JobRow&&)>& fn);
  // kConflict when a job of that name exists.
  virtual Result<int64_t> InsertJob(const JobRow& row, int64_t at_ms) = 0;
  // Replaces the spec and its timing columns and marks the job active. kNotFound when there
  // is no such job, as for DeactivateJob and SetJobPaused.
  virtual Status UpdateJobSpec(int64_t id, const std::string& spec_json, const JobTiming& timing,
                               int64_t revision, int64_t at_ms) = 0;
  // The job left the job file: it stops firing, its definition and history stay.
  virtual Status DeactivateJob(int64_t id, int64_t revision, int64_t at_ms) = 0;
  virtual Status SetJobPaused(int64_t id, bool paused) = 0;
  virtual Status SetNextFire(int64_t id, std::optional<int64_t> next_fire_ms) = 0;
  // SetNextFire for several jobs, in one write where the backend can.
  virtual Status SetNextFires(const std::vector<std::pair<int64_t, std::optional<int64_t>>>& next);

  // Inserts the run and its shard rows; kConflict when (job, scheduled_at) of a scheduled
  // run or (job, idempotency key) already exists. Fills run.id and the shards' run_id.
  virtual Status InsertRun(RunRecord& run) = 0;
  // InsertRun for each of `runs`, in one write where the backend can: inserted[i] says
  // whether runs[i] was (its id and its shards' run_id filled), false where InsertRun would
  // have returned kConflict. Any other failure is returned, and nothing is then known to be
  // inserted.
  virtual Status InsertRuns(std::vector<RunRecord>& runs, std::vector<bool>& inserted);
  virtual Status InsertMiss(const MissRow& miss) = 0;
  // An empty note keeps the one stored. kNotFound when there is no such run.
  virtual Status UpdateRunState(int64_t run_id, RunState state, std::optional<int64_t> finished_ms,
                                const std::string& note) = 0;
  virtual Status UpdateShard(const ShardRecord& shard) = 0;  // kNotFound when there is none

  virtual Result<std::optional<RunRecord>> GetRun(int64_t id) = 0;  // with shards and job name
  virtual Result<std::optional<ShardRecord>> GetShard(int64_t run_id, int index) = 0;
  virtual Result<std::optional<int64_t>> FindRunByKey(int64_t job_id, const std::string& key) = 0;
  // Newest first, with shards.
  virtual Result<std::vector<RunRecord>> ListRuns(const RunFilter& filter) = 0;
  // The step runs of a flow run, by step, with shards (at most one per step).
  virtual Result<std::vector<RunRecord>> StepRuns(int64_t flow_run_id) = 0;
  // Pending or running, oldest first, with shards.
  virtual Status ForEachOpenRun(const std::function<void(RunRecord&&)>& fn) = 0;
  // All, oldest first, with shards (audits).
  virtual Status ForEachRun(const std::function<void(RunRecord&&)>& fn) = 0;
  // The misses of a job that ended at or after since_ms, by their first instant.
  virtual Result<std::vector<MissRow>> ListMisses(int64_t job_id, int64_t since_ms) = 0;
  // Per job that has a finished run (skipped instants aside): its latest results.
  virtual Status ForEachLastResult(const std::function<void(const LastResult&)>& fn) = 0;

  // The declared end of an attempt's output: inserted, or replaced for the same attempt.
  virtual Status PutOutputEnd(const OutputEndRow& end) = 0;
  virtual Result<std::optional<OutputEndRow>> GetOutputEnd(int64_t run_id, int shard,
                                                           int attempt) = 0;
  // Every declared end of a run, by shard and attempt.
  virtual Result<std::vector<OutputEndRow>> OutputEnds(int64_t run_id) = 0;

  virtual Status PutLease(const LeaseRow& lease) = 0;  // inserts or replaces by key
  virtual Status DeleteLease(const std::string& key) = 0;
  virtual Status ForEachLease(const std::function<void(LeaseRow&&)>& fn) = 0;

  virtual Status PutAgent(const AgentRow& agent) = 0;  // inserts or replaces by name
  virtual Status ForEachAgent(const std::function<void(AgentRow&&)>& fn) = 0;  // by name
  virtual Status DeleteAgent(const std::string& name) = 0;  // kNotFound when there is no such row

  // kConflict when a token with that hash exists.
  virtual Result<int64_t> InsertToken(const TokenRow& token) = 0;
  // kNotFound when there is no such token or it is already revoked.
  virtual Status RevokeToken(int64_t id, int64_t at_ms) = 0;
  // Revokes every active token bound to this agent name; the number revoked.
  virtual Result<int64_t> RevokeAgentTokens(const std::string& agent, int64_t at_ms) = 0;
  virtual Status ForEachToken(const std::function<void(TokenRow&&)>& fn) = 0;  // by id

  // Retention (the coordinator's Pruner). Inside a transaction: deletes at most
  // retention.limit runs that RunRetention allows (as it says), oldest first, with their shards and
  // output ends, and at most as many misses that ended before retention.ended_before_ms. It looks
  // at a bounded number of runs per call (a few times the limit), from after_id on in id order, so
  // that a call stays short however large the store is; a pass over the store is a chain of calls,
  // each resuming at the last one's next_after_id.
  virtual Result<PrunedRuns> PruneRuns(const RunRetention& retention) = 0;
  // Of `ids`, those that name no run (deleted, or never recorded), in the order given: the
  // Pruner's sweep for output left by runs deleted before a crash.
  virtual Result<std::vector<int64_t>> MissingRuns(const std::vector<int64_t>& ids) = 0;
  // The database's size, its free space, its run count and its oldest run.
  virtual Result<StoreStats> Stats() = 0;
  // Gives about max_bytes of unused space (SQLite: pages of the freelist, at least one) back
  // to the file system, where the database can (SQLite: a file with
  // auto_vacuum=INCREMENTAL); else a no-op. The bytes given back. Inside a transaction or
  // outside one.
  virtual Result<int64_t> ReclaimSpace(int64_t max_bytes) = 0;

  // Notifications (the outbox) and each job's AlertState (model/notify.h).
  virtual Status InsertNotification(const NotificationRow& row) = 0;  // row.id is assigned
  // Pending rows whose next_ms is at or before now_ms, oldest first.
  virtual Result<std::vector<NotificationRow>> DueNotifications(int64_t now_ms, int limit) = 0;
  // Sets state, attempts, next_ms, done_ms and last_error of the row with row.id.
  virtual Status UpdateNotification(const NotificationRow& row) = 0;
  // Newest first.
  virtual Result<std::vector<NotificationRow>> ListNotifications(
      const NotificationFilter& filter) = 0;
  // Deletes at most `limit` delivered or failed rows done before `before_ms`; how many.
  virtual Result<int64_t> PruneNotifications(int64_t before_ms, int limit) = 0;
  virtual Status PutAlertState(int64_t job_id, const AlertState& state) = 0;
  virtual Status ForEachAlertState(const std::function<void(int64_t, const AlertState&)>& fn) = 0;

  // An event without a credential.
  Status InsertEvent(int64_t at_ms, std::string_view kind, std::string_view actor,
                     std::string_view subject, std::string_view detail);
  virtual Status InsertEvent(const EventRow& event) = 0;  // event.id is assigned, not read
  virtual Result<std::vector<EventRow>> ListEvents(const EventFilter& filter) = 0;
};

// Which store to open, and where: the embedded SQLite file, or a PostgreSQL database when
// `url` is set (PgStore, pg_store.h), which several coordinators may share.
struct StoreOptions {
  std::string path;  // the SQLite database file (<data>/jobctl.db); created if missing
  std::string url;   // postgresql://...; when set, `path` is not used
  // A shared database: this coordinator's name to the others, and how long a holder may go
  // without renewing its hold before a waiting coordinator ends its session.
  std::string holder;
  int64_t hold_ttl_ms = 10000;
  // Return at once when another coordinator holds the database, as a standby that reads
  // (TryHold takes over later), rather than wait for the hold.
  bool standby = false;
};

// Opens the store, creating and migrating its schema as needed. A store whose schema is
// newer than this binary is refused (kCorrupt).
Result<std::unique_ptr<Store>> OpenStore(const StoreOptions& options);

}  // namespace jobctl::store
