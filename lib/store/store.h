// Store is the coordinator's durable state: job file revisions, jobs, runs and shards, the
// lease table, agents, API tokens, missed instants and the audit trail, in one SQLite file
// (WAL, synchronous=FULL). It is the truth; the coordinator's memory is an index rebuilt
// from it at start. All SQL of the scheduler lives here, next to the typed method using it.
//
// Writes happen inside a transaction the caller opens with Begin() and ends with Commit():
// the coordinator groups every write of one loop iteration into one commit, and answers
// no request before that commit returned. Loop thread only.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/job.h"
#include "model/run.h"
#include "store/statement.h"

namespace jobctl::store {

struct RevisionRow {
  int64_t id = 0;  // 0 = no file applied yet
  std::string text;
  std::string author;
  int64_t at_ms = 0;
};

// What the fire loop needs of a job. Stored in columns of their own next to the spec, so
// that a start reads them with one scan and parses no JSON.
struct JobTiming {
  std::string schedule;
  Dialect dialect = Dialect::kCron;
  std::string timezone;
  int64_t anchor_ms = 0;
  bool enabled = true;
  Misfire misfire = Misfire::kFireOnce;
  Overlap overlap = Overlap::kForbid;
  int misfire_cap = 100;

  static JobTiming Of(const Job& job);
  bool operator==(const JobTiming&) const = default;
};

struct JobRow {
  int64_t id = 0;
  std::string name;
  std::string spec_json;  // the Job as JSON (wire/job_json.h)
  bool active = true;     // false once removed from the job file; history stays
  bool paused = false;
  std::optional<int64_t> next_fire_ms;
  int64_t revision = 0;
  JobTiming timing;
};

// One row of the start-up scan: the job's timing without its spec. The views point into the
// statement's row and are valid only during the callback.
struct JobHead {
  int64_t id = 0;
  std::string_view name;
  bool active = true;
  bool paused = false;
  std::optional<int64_t> next_fire_ms;
  std::string_view schedule;
  Dialect dialect = Dialect::kCron;
  std::string_view timezone;
  int64_t anchor_ms = 0;
  bool enabled = true;
  Misfire misfire = Misfire::kFireOnce;
  Overlap overlap = Overlap::kForbid;
  int misfire_cap = 100;
};

struct LeaseRow {
  std::string key;  // "shard/<run>/<index>"
  std::string holder;
  int64_t token = 0;
  int64_t granted_ms = 0;
};

struct AgentRow {
  std::string name;
  std::string labels_json;
  int slots = 0;
  std::string version;
  int64_t last_seen_ms = 0;
  bool draining = false;
};

struct TokenRow {
  int64_t id = 0;
  std::string name;
  std::string role;
  std::string jobs;  // glob limiting the trigger role; "" = all
  std::string hash;  // hex SHA-256 of the secret
  int64_t created_ms = 0;
  std::optional<int64_t> revoked_ms;
  std::string agent;        // agent role: the one agent name it speaks for; else ""
  std::string labels_json;  // agent and join roles: allowed labels {"k": "glob"}; "" = any
  std::optional<int64_t> expires_ms;  // refused from then on; nullopt = never
};

struct MissRow {
  int64_t job_id = 0;
  int64_t first_ms = 0;
  int64_t last_ms = 0;
  int64_t count = 0;
  std::string reason;
  int64_t at_ms = 0;
};

// One entry of the audit trail: a change, or a refused request.
struct EventRow {
  int64_t id = 0;  // grows with every event: the paging key
  int64_t at_ms = 0;
  std::string kind;   // apply, trigger, cancel, retry, pause, resume, drain, token-create,
                      // token-revoke, auth-failure
  std::string actor;  // the credential's name; "" when none was valid
  std::optional<int64_t> token_id;  // the credential; none when none was valid
  std::string subject;  // what it was done to: a job, "run 12", a token id, "METHOD /path"
  std::string detail;
};

// Newest first. Every filter narrows an indexed range: the id range from since_ms and
// before_id, then kind or actor by their (column, id) indexes.
struct EventFilter {
  std::optional<std::string> kind;
  std::optional<std::string> actor;
  std::optional<int64_t> since_ms;   // at or after
  std::optional<int64_t> before_id;  // paging: events with id < before_id
  int limit = 100;
};

struct RunFilter {
  std::optional<int64_t> job_id;
  std::optional<RunState> state;
  std::optional<int64_t> since_ms;  // created at or after
  int limit = 50;
  std::optional<int64_t> before_id;  // paging: runs with id < before_id
};

class Store {
 public:
  static Result<std::unique_ptr<Store>> Open(const std::string& path);

  Status Begin() { return db_.Begin(); }
  Status Commit() { return db_.Commit(); }
  void Rollback() { db_.Rollback(); }
  bool in_transaction() const { return db_.in_transaction(); }

  // Counters that only grow (the fencing token): read at start, written in the batch that
  // used them.
  Result<int64_t> GetCounter(std::string_view name);
  Status SetCounter(std::string_view name, int64_t value);

  Result<RevisionRow> CurrentRevision();
  Result<int64_t> InsertRevision(const std::string& text, const std::string& author,
                                 int64_t at_ms, const std::string& summary);

  // Every job in id order, timing only (one prepared scan, no JSON). A row whose dialect,
  // misfire or overlap name is unknown is passed with the defaults and counted in *unreadable.
  Status ForEachJobHead(const std::function<void(const JobHead&)>& fn, int64_t* unreadable);
  // Every job in id order with its spec (for tools and checkers; the coordinator's start
  // uses ForEachJobHead).
  Status ForEachJob(const std::function<void(JobRow&&)>& fn);
  Result<JobRow> GetJob(int64_t id);
  Result<int64_t> InsertJob(const JobRow& row, int64_t at_ms);
  // Replaces the spec and its timing columns and marks the job active.
  Status UpdateJobSpec(int64_t id, const std::string& spec_json, const JobTiming& timing,
                       int64_t revision, int64_t at_ms);
  // The job left the job file: it stops firing, its definition and history stay.
  Status DeactivateJob(int64_t id, int64_t revision, int64_t at_ms);
  Status SetJobPaused(int64_t id, bool paused);
  Status SetNextFire(int64_t id, std::optional<int64_t> next_fire_ms);

  // Inserts the run and its shard rows; kConflict when (job, scheduled_at) of a scheduled
  // run or (job, idempotency key) already exists. Fills run.id.
  Status InsertRun(RunRecord& run);
  Status InsertMiss(const MissRow& miss);
  Status UpdateRunState(int64_t run_id, RunState state, std::optional<int64_t> finished_ms,
                        const std::string& note);
  Status UpdateShard(const ShardRecord& shard);

  Result<std::optional<RunRecord>> GetRun(int64_t id);  // with shards and job name
  Result<std::optional<ShardRecord>> GetShard(int64_t run_id, int index);
  Result<std::optional<int64_t>> FindRunByKey(int64_t job_id, const std::string& key);
  Result<std::vector<RunRecord>> ListRuns(const RunFilter& filter);  // newest first, with shards
  Status ForEachOpenRun(const std::function<void(RunRecord&&)>& fn);  // pending or running
  Status ForEachRun(const std::function<void(RunRecord&&)>& fn);      // all, oldest first (audits)
  Result<std::vector<MissRow>> ListMisses(int64_t job_id, int64_t since_ms);
  // The latest finished run per job: (job_id, state, finished_ms).
  Status ForEachLastResult(const std::function<void(int64_t, RunState, int64_t)>& fn);

  Status PutLease(const LeaseRow& lease);
  Status DeleteLease(const std::string& key);
  Status ForEachLease(const std::function<void(LeaseRow&&)>& fn);

  Status PutAgent(const AgentRow& agent);
  Status ForEachAgent(const std::function<void(AgentRow&&)>& fn);
  Status DeleteAgent(const std::string& name);  // kNotFound when there is no such row

  Result<int64_t> InsertToken(const TokenRow& token);
  Status RevokeToken(int64_t id, int64_t at_ms);
  // Revokes every active token bound to this agent name; the number revoked.
  Result<int64_t> RevokeAgentTokens(const std::string& agent, int64_t at_ms);
  Status ForEachToken(const std::function<void(TokenRow&&)>& fn);

  Status InsertEvent(int64_t at_ms, std::string_view kind, std::string_view actor,
                     std::string_view subject, std::string_view detail);
  Status InsertEvent(const EventRow& event);
  Result<std::vector<EventRow>> ListEvents(const EventFilter& filter);

 private:
  Store() = default;
  Status Prepare();
  Status LoadShards(RunRecord& run);
  RunRecord ReadRun(const Statement::Use& use);
  Status ForEachRunOf(Statement& query, const std::function<void(RunRecord&&)>& fn);

  Database db_;
  Statement get_counter_, set_counter_;
  Statement current_revision_, insert_revision_;
  Statement job_heads_, all_jobs_, get_job_, insert_job_, update_job_spec_, deactivate_job_, set_job_paused_,
      set_next_fire_;
  Statement insert_run_, insert_shard_, insert_miss_, update_run_state_, update_shard_;
  Statement get_run_, shards_of_run_, get_shard_, find_run_by_key_, open_runs_, all_runs_, list_misses_,
      last_results_;
  Statement put_lease_, delete_lease_, all_leases_;
  Statement put_agent_, all_agents_, delete_agent_;
  Statement insert_token_, revoke_token_, revoke_agent_tokens_, all_tokens_;
  Statement insert_event_, first_event_since_, list_events_, list_events_by_kind_,
      list_events_by_actor_, list_events_by_kind_actor_;
};

}  // namespace jobctl::store
