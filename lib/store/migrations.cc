// The schema, as an ordered list of migrations. Never edit a migration that has shipped;
// add the next one.
#include "store/migrations.h"

namespace jobctl::store {

const std::vector<Database::Migration>& SchedulerMigrations() {
  static const std::vector<Database::Migration> kMigrations = {
      {1, R"sql(
CREATE TABLE counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE revisions(
  id INTEGER PRIMARY KEY, text TEXT NOT NULL, author TEXT NOT NULL,
  at_ms INTEGER NOT NULL, summary TEXT NOT NULL);
CREATE TABLE jobs(
  id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, spec TEXT NOT NULL,
  active INTEGER NOT NULL, paused INTEGER NOT NULL DEFAULT 0, next_fire_ms INTEGER,
  revision INTEGER NOT NULL, updated_ms INTEGER NOT NULL);
CREATE TABLE runs(
  id INTEGER PRIMARY KEY, job_id INTEGER NOT NULL REFERENCES jobs(id),
  reason TEXT NOT NULL, scheduled_ms INTEGER NOT NULL, created_ms INTEGER NOT NULL,
  state TEXT NOT NULL, trace_id TEXT NOT NULL, idempotency_key TEXT,
  env TEXT NOT NULL DEFAULT '', note TEXT NOT NULL DEFAULT '', finished_ms INTEGER,
  shard_total INTEGER NOT NULL);
-- A scheduled instant becomes at most one run (or one skipped record): never fired twice.
CREATE UNIQUE INDEX runs_fire ON runs(job_id, scheduled_ms) WHERE reason = 'schedule';
CREATE UNIQUE INDEX runs_key ON runs(job_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX runs_by_job ON runs(job_id, id);
CREATE INDEX runs_open ON runs(state) WHERE state IN ('pending', 'running');
CREATE TABLE shards(
  run_id INTEGER NOT NULL REFERENCES runs(id), idx INTEGER NOT NULL, state TEXT NOT NULL,
  attempt INTEGER NOT NULL, agent TEXT NOT NULL DEFAULT '', token INTEGER NOT NULL DEFAULT 0,
  exit_code INTEGER, outcome TEXT NOT NULL DEFAULT '', message TEXT NOT NULL DEFAULT '',
  started_ms INTEGER, finished_ms INTEGER, not_before_ms INTEGER NOT NULL DEFAULT 0,
  lost_count INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY(run_id, idx)) WITHOUT ROWID;
CREATE TABLE leases(
  key TEXT PRIMARY KEY, holder TEXT NOT NULL, token INTEGER NOT NULL,
  granted_ms INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE misses(
  id INTEGER PRIMARY KEY, job_id INTEGER NOT NULL REFERENCES jobs(id),
  first_ms INTEGER NOT NULL, last_ms INTEGER NOT NULL, count INTEGER NOT NULL,
  reason TEXT NOT NULL, at_ms INTEGER NOT NULL);
CREATE INDEX misses_by_job ON misses(job_id, first_ms);
CREATE TABLE agents(
  name TEXT PRIMARY KEY, labels TEXT NOT NULL, slots INTEGER NOT NULL, version TEXT NOT NULL,
  last_seen_ms INTEGER NOT NULL, draining INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
CREATE TABLE tokens(
  id INTEGER PRIMARY KEY, name TEXT NOT NULL, role TEXT NOT NULL, jobs TEXT NOT NULL,
  hash TEXT NOT NULL UNIQUE, created_ms INTEGER NOT NULL, revoked_ms INTEGER);
CREATE TABLE events(
  id INTEGER PRIMARY KEY, at_ms INTEGER NOT NULL, kind TEXT NOT NULL, actor TEXT NOT NULL,
  subject TEXT NOT NULL, detail TEXT NOT NULL);
)sql"},
      // What the fire loop needs of a job, in columns of its own: a start reads these with
      // one scan and parses no JSON. Existing rows take their values from the stored spec.
      {2, R"sql(
ALTER TABLE jobs ADD COLUMN schedule TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN dialect TEXT NOT NULL DEFAULT 'cron';
ALTER TABLE jobs ADD COLUMN timezone TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN anchor_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN enabled INTEGER NOT NULL DEFAULT 1;
ALTER TABLE jobs ADD COLUMN misfire TEXT NOT NULL DEFAULT 'fire-once';
ALTER TABLE jobs ADD COLUMN overlap TEXT NOT NULL DEFAULT 'forbid';
ALTER TABLE jobs ADD COLUMN misfire_cap INTEGER NOT NULL DEFAULT 100;
UPDATE jobs SET
  schedule = COALESCE(json_extract(spec, '$.schedule'), ''),
  dialect = COALESCE(json_extract(spec, '$.dialect'), 'cron'),
  timezone = COALESCE(json_extract(spec, '$.timezone'), ''),
  anchor_ms = COALESCE(json_extract(spec, '$.anchor_ms'), 0),
  enabled = COALESCE(json_extract(spec, '$.enabled'), 1),
  misfire = COALESCE(json_extract(spec, '$.misfire'), 'fire-once'),
  overlap = COALESCE(json_extract(spec, '$.overlap'), 'forbid'),
  misfire_cap = COALESCE(json_extract(spec, '$.misfire_cap'), 100)
WHERE json_valid(spec);
)sql"},
      // Agent credentials: an agent token is bound to one agent name (and optionally a set of
      // allowed labels, a JSON object of label -> value glob); any token may expire. An agent
      // token bound to no name was the shared bootstrap credential: it becomes a join token,
      // which can only enrol agents.
      {3, R"sql(
ALTER TABLE tokens ADD COLUMN agent TEXT NOT NULL DEFAULT '';
ALTER TABLE tokens ADD COLUMN labels TEXT NOT NULL DEFAULT '';
ALTER TABLE tokens ADD COLUMN expires_ms INTEGER;
UPDATE tokens SET role = 'join' WHERE role = 'agent' AND agent = '';
CREATE INDEX tokens_by_agent ON tokens(agent) WHERE agent != '';
)sql"},
      // The audit trail names the credential of each change, and is read newest first by
      // time, action or actor (GET /v1/audit).
      {4, R"sql(
ALTER TABLE events ADD COLUMN token_id INTEGER;
CREATE INDEX events_by_time ON events(at_ms);
CREATE INDEX events_by_kind ON events(kind, id);
CREATE INDEX events_by_actor ON events(actor, id);
)sql"},
      // A run may wait before its shards start: a scheduled fire's random delay (jitter) or
      // a manual run deferred to a time (trigger --at / --in).
      {5, R"sql(
ALTER TABLE runs ADD COLUMN not_before_ms INTEGER NOT NULL DEFAULT 0;
)sql"},
      // The end of each shard attempt's output, as its agent declared it with its result:
      // readers of a run's output are done only once the log store reached it.
      {6, R"sql(
CREATE TABLE output_ends(
  run_id INTEGER NOT NULL REFERENCES runs(id), shard INTEGER NOT NULL, attempt INTEGER NOT NULL,
  last_seq INTEGER NOT NULL, agent TEXT NOT NULL, token INTEGER NOT NULL,
  PRIMARY KEY(run_id, shard, attempt)) WITHOUT ROWID;
)sql"},
      // A job's dead-man's switch (expect_success_within), read with its timing at start so
      // that every job's health is known without parsing its spec. Existing specs have none.
      {7, R"sql(
ALTER TABLE jobs ADD COLUMN expect_success_within_ms INTEGER NOT NULL DEFAULT 0;
)sql"},
      // Notifications: the outbox, written in the commit of the change that caused each,
      // and what each job last sent (model/notify.h AlertState).
      {8, R"sql(
CREATE TABLE notifications(
  id INTEGER PRIMARY KEY, created_ms INTEGER NOT NULL, job_id INTEGER NOT NULL,
  job TEXT NOT NULL, run_id INTEGER NOT NULL, event TEXT NOT NULL, reminder INTEGER NOT NULL,
  failures INTEGER NOT NULL, failing_since_ms INTEGER NOT NULL, detail TEXT NOT NULL,
  target TEXT NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL, next_ms INTEGER NOT NULL,
  done_ms INTEGER NOT NULL, last_error TEXT NOT NULL);
CREATE INDEX notifications_due ON notifications(next_ms) WHERE state = 'pending';
CREATE INDEX notifications_by_job ON notifications(job, id);
CREATE INDEX notifications_done ON notifications(done_ms) WHERE state != 'pending';
CREATE TABLE alert_states(
  job_id INTEGER PRIMARY KEY, failing_since_ms INTEGER NOT NULL, failures INTEGER NOT NULL,
  last_sent_ms INTEGER NOT NULL, overdue_sent_ms INTEGER NOT NULL,
  missed_sent_ms INTEGER NOT NULL, skipped_sent_ms INTEGER NOT NULL,
  agent_lost_sent_ms INTEGER NOT NULL);
)sql"},
      // Retention keeps each job's newest success (its health's "last success"): found in
      // one index step per run looked at.
      {9, R"sql(
CREATE INDEX runs_succeeded ON runs(job_id, id) WHERE state = 'succeeded';
)sql"},
      // The runs of a trace (jobctl runs --trace), newest first.
      {10, R"sql(
CREATE INDEX runs_by_trace ON runs(trace_id, id);
)sql"},
      // Flows (model/flow.h). A flow is a row of jobs (kind 'flow'), fired by its timing
      // columns; a step with its own command is a job of kind 'step' of its flow. A step run
      // names its flow run and step, at most one run per step of a flow run; a flow run's
      // flow holds its graph, a step run's what it started with. A step's shards keep what
      // their last attempt wrote to $JOB_OUTPUT.
      {11, R"sql(
ALTER TABLE jobs ADD COLUMN kind TEXT NOT NULL DEFAULT 'job';
ALTER TABLE jobs ADD COLUMN flow_id INTEGER;
ALTER TABLE runs ADD COLUMN flow_run_id INTEGER;
ALTER TABLE runs ADD COLUMN flow_step INTEGER NOT NULL DEFAULT -1;
ALTER TABLE runs ADD COLUMN flow TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX runs_step ON runs(flow_run_id, flow_step) WHERE flow_run_id IS NOT NULL;
ALTER TABLE shards ADD COLUMN outputs TEXT NOT NULL DEFAULT '';
)sql"},
      // A job's `on` selectors as written ("role=web dc!=fra1"), for the list's label filter
      // without parsing specs; existing rows take them from the stored spec. A shard's
      // attempt keeps what its process used, where the agent reports it: the largest
      // resident set of one of its processes (bytes) and their CPU time (user + system, ms).
      {12, R"sql(
ALTER TABLE jobs ADD COLUMN on_labels TEXT NOT NULL DEFAULT '';
UPDATE jobs SET on_labels = COALESCE(
  (SELECT group_concat(value, ' ') FROM
     (SELECT value FROM json_each(spec, '$.on') ORDER BY key)), '')
WHERE json_valid(spec) AND json_type(spec, '$.on') = 'array';
ALTER TABLE shards ADD COLUMN peak_rss_bytes INTEGER;
ALTER TABLE shards ADD COLUMN cpu_ms INTEGER;
)sql"},
  };
  return kMigrations;
}

const std::vector<Database::Migration>& LogMigrations() {
  static const std::vector<Database::Migration> kMigrations = {
      {1, R"sql(
CREATE TABLE chunks(
  id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, shard INTEGER NOT NULL,
  attempt INTEGER NOT NULL, seq INTEGER NOT NULL, stream INTEGER NOT NULL,
  at_ms INTEGER NOT NULL, data BLOB NOT NULL);
-- A chunk resent after a lost acknowledgement is stored once.
CREATE UNIQUE INDEX chunks_key ON chunks(run_id, shard, attempt, seq);
CREATE INDEX chunks_by_run ON chunks(run_id, id);
CREATE TABLE run_bytes(
  run_id INTEGER PRIMARY KEY, bytes INTEGER NOT NULL, truncated INTEGER NOT NULL DEFAULT 0);
)sql"},
      // Retention: each run's output knows its job, the bytes it keeps (bytes counts those
      // over the cap too) and when it was last written, and is marked once it was pruned.
      // Output stored before this has job 0 (unknown): logs_for prunes it, logs_max does not
      // count it.
      {2, R"sql(
ALTER TABLE run_bytes ADD COLUMN job_id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE run_bytes ADD COLUMN stored INTEGER NOT NULL DEFAULT 0;
ALTER TABLE run_bytes ADD COLUMN last_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE run_bytes ADD COLUMN pruned_ms INTEGER;
ALTER TABLE run_bytes ADD COLUMN pruned_reason TEXT NOT NULL DEFAULT '';
UPDATE run_bytes SET
  stored = (SELECT COALESCE(SUM(length(data)), 0) FROM chunks c WHERE c.run_id = run_bytes.run_id),
  last_ms = COALESCE((SELECT at_ms FROM chunks c WHERE c.run_id = run_bytes.run_id
                      ORDER BY id DESC LIMIT 1), 0);
CREATE INDEX run_bytes_kept_by_job ON run_bytes(job_id, run_id) WHERE pruned_ms IS NULL;
)sql"},
  };
  return kMigrations;
}

}  // namespace jobctl::store
