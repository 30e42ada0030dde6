// The rows of the coordinator's store: plain values that Store (store.h) reads and writes,
// with no database in sight, so that every backend speaks the same types. Runs and shards
// are RunRecord and ShardRecord (model/run.h). Times are Unix milliseconds, coordinator clock.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/flow_spec.h"
#include "model/job.h"
#include "model/run.h"

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
  // Not for the fire loop but for the coordinator's memory of every job's health, read by
  // the same scan: the job's expect_success_within (0 = none).
  int64_t expect_success_within_ms = 0;
  // What the row is: a [[job]], a [[flow]] (its spec is a Flow) or a flow step's own command
  // (a job that runs only as a step of flow_id).
  JobKind kind = JobKind::kJob;
  std::optional<int64_t> flow_id;
  // Not for the fire loop either: the job's `on` selectors as written, joined by spaces
  // ("role=web dc!=fra1"; "" for none and for flows), for the list's label filter.
  std::string on_labels;

  static JobTiming Of(const Job& job);
  static JobTiming Of(const Flow& flow);
  bool operator==(const JobTiming&) const = default;
};

// A job's `on` selectors as JobTiming::on_labels holds them.
std::string OnLabels(const std::vector<LabelSelector>& on);

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
// backend's current row and are valid only during the callback.
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
  int64_t expect_success_within_ms = 0;  // 0 = none
  int64_t updated_ms = 0;                // created, or its definition last changed
  JobKind kind = JobKind::kJob;
  std::optional<int64_t> flow_id;  // a step's own job: its flow
  std::string_view on_labels;      // JobTiming's
};

// A job's latest results, for the coordinator's memory (ForEachLastResult): its newest
// finished run that was not a skipped instant, and its newest success.
struct LastResult {
  int64_t job_id = 0;
  RunState state = RunState::kFailed;  // of the newest finished run
  int64_t finished_ms = 0;
  int64_t duration_ms = 0;  // from its first shard's start to its end; 0 when none started
  std::optional<int64_t> last_success_ms;  // the newest succeeded run's end
};

struct LeaseRow {
  std::string key;  // "shard/<run>/<index>"
  std::string holder;
  int64_t token = 0;
  int64_t granted_ms = 0;
};

// The end of one shard attempt's output, as its agent declared it in its result: the seq of
// the last log chunk the coordinator took from it (0: none). Readers of the run's output are
// told it is done only once the log store holds that chunk (or the wait is given up).
struct OutputEndRow {
  int64_t run_id = 0;
  int shard = 0;
  int attempt = 1;
  int64_t last_seq = 0;
  std::string agent;  // who declared it, and who alone may still deliver up to it
  int64_t token = 0;  // the attempt's lease
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

// One notification to deliver to one target (a channel, or mailto:ADDRESS), written in the
// same commit as the change that caused it (the outbox). The facts of the run are read when
// it is delivered, so a row stays small.
struct NotificationRow {
  int64_t id = 0;  // assigned on insert; the delivery id is derived from it
  int64_t created_ms = 0;
  int64_t job_id = 0;
  std::string job;     // the job's name when it was written
  int64_t run_id = 0;  // 0: no run (overdue, missed, a channel test)
  std::string event;   // NotifyEventName, or "test"
  bool reminder = false;
  int64_t failures = 0;
  int64_t failing_since_ms = 0;
  std::string detail;             // one line (a miss's reason, how long overdue), at most 1 KiB
  std::string target;             // a channel name or mailto:ADDRESS
  std::string state = "pending";  // pending, sent, failed (gave up)
  int64_t attempts = 0;
  int64_t next_ms = 0;     // pending: the next attempt at or after this
  int64_t done_ms = 0;     // sent or failed: when
  std::string last_error;  // the last attempt's error, at most 1 KiB
};

struct NotificationFilter {
  std::optional<std::string> job;
  std::optional<std::string> state;
  std::optional<int64_t> before_id;  // paging: rows with id < before_id
  int limit = 100;
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
  std::string trace_id;              // "": any; else only the runs of this trace (an index)
};

// Which runs Store::PruneRuns may delete: those that ended before ended_before_ms and are
// not among the newest keep_last runs of their job; never a run still pending or running,
// nor a job's newest succeeded run (its last success stays known), nor the store's newest run
// (SQLite would hand its id out again, and output left of it would become a new run's).
// A flow's step run goes only with its flow run, and a flow run only when each of its step
// runs could go by these rules too (its job's keep_last aside).
struct RunRetention {
  int64_t ended_before_ms = 0;
  int keep_last = 20;
  // Runs deleted at most by one call, step runs counted; the first flow run a call takes goes
  // whole, so one call may pass it by a flow's steps (kMaxFlowSteps).
  int limit = 100;
  int64_t after_id = 0;  // the scan resumes after this run id; 0: from the oldest run
};

struct PrunedRuns {
  std::vector<int64_t> run_ids;  // the runs deleted (a flow run with its step runs)
  int64_t rows = 0;              // rows deleted in all: runs, shards, output ends and misses
  // Where the next call resumes (its after_id): 0 once the scan reached runs that are too
  // new, so that the next pass starts again from the oldest.
  int64_t next_after_id = 0;
};

// The size of a store's database and its oldest run, for `jobctl store stats`.
struct StoreStats {
  int64_t file_bytes = 0;  // the database as allocated (SQLite: page_count * page_size)
  int64_t free_bytes = 0;  // of which unused, to be given back (SQLite: the freelist)
  int64_t runs = 0;
  std::optional<int64_t> oldest_run_ms;  // the oldest run's creation; none without runs
  bool reclaims_space = false;  // free space is given back to the file system (ReclaimSpace)
};

}  // namespace jobctl::store
