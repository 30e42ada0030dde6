// Each method's SQL is a `static const Sql` at its top, bound with ?1..?n in the same order
// below it; Database::Use prepares it the first time and reuses it after.
#include "store/sqlite_store.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdint>

#include "store/migrations.h"

namespace jobctl::store {
namespace {

constexpr const char* kRunColumns =
    "r.id, r.job_id, j.name, r.reason, r.scheduled_ms, r.created_ms, r.state, r.trace_id, "
    "COALESCE(r.idempotency_key, ''), r.env, r.note, r.finished_ms, r.shard_total, "
    "r.not_before_ms, COALESCE(r.flow_run_id, 0), r.flow_step, r.flow";

// Runs with their job's name, read by ReadRun: columns 0 to 16.
std::string RunQuery(const char* where_and_order) {
  return std::string("SELECT ") + kRunColumns + " FROM runs r JOIN jobs j ON j.id = r.job_id " +
         where_and_order;
}

// The job's timing columns (JobTiming), in this order, after id, name, active, paused and
// next_fire_ms: columns 5 to 16.
constexpr const char* kTimingColumns =
    "schedule, dialect, timezone, anchor_ms, enabled, misfire, overlap, misfire_cap, "
    "expect_success_within_ms, kind, flow_id, on_labels";

// Jobs as ReadHead reads them (columns 0 to 17: updated_ms last), then `more`.
std::string JobQuery(const char* more) {
  return std::string("SELECT id, name, active, paused, next_fire_ms, ") + kTimingColumns +
         ", updated_ms" + more;
}

// A shard row as ReadShard reads it: columns 0 to 15.
std::string ShardQuery(const char* where_and_order) {
  return std::string(
             "SELECT run_id, idx, state, attempt, agent, token, exit_code, outcome, "
             "message, started_ms, finished_ms, not_before_ms, lost_count, outputs, "
             "peak_rss_bytes, "
             "cpu_ms FROM shards ") +
         where_and_order;
}

// Events newest first within ids [?1, ?2) and at or after ?3 ms, at most ?6 of them.
std::string EventQuery(const char* filter) {
  return std::string(
             "SELECT id, at_ms, kind, actor, token_id, subject, detail FROM events "
             "WHERE id >= ?1 AND id < ?2 AND at_ms >= ?3 ") +
         filter + "ORDER BY id DESC LIMIT ?6";
}

// Reads columns 0-17 of a job row; false when an enum name is unknown (defaults kept).
bool ReadHead(const Statement::Use& use, JobHead* h) {
  h->id = use.Int(0);
  h->name = use.View(1);
  h->active = use.Int(2) != 0;
  h->paused = use.Int(3) != 0;
  h->next_fire_ms = use.OptInt(4);
  h->schedule = use.View(5);
  h->timezone = use.View(7);
  h->anchor_ms = use.Int(8);
  h->enabled = use.Int(9) != 0;
  h->misfire_cap = static_cast<int>(use.Int(12));
  h->expect_success_within_ms = use.Int(13);
  h->flow_id = use.OptInt(15);
  h->on_labels = use.View(16);
  h->updated_ms = use.Int(17);
  std::optional<Dialect> dialect = ParseDialect(use.View(6));
  std::optional<Misfire> misfire = ParseMisfire(use.View(10));
  std::optional<Overlap> overlap = ParseOverlap(use.View(11));
  std::optional<JobKind> kind = ParseJobKind(use.View(14));
  h->dialect = dialect.value_or(Dialect::kCron);
  h->misfire = misfire.value_or(Misfire::kFireOnce);
  h->overlap = overlap.value_or(Overlap::kForbid);
  h->kind = kind.value_or(JobKind::kJob);
  return dialect && misfire && overlap && kind;
}

// Columns 0-19 of JobQuery(", spec, revision ...").
JobRow ReadJob(const Statement::Use& use) {
  JobHead h;
  // A name this version does not know reads as its default here; the job's spec (column 17)
  // is what the coordinator runs, and ForEachJobHead reports such rows as unreadable.
  ReadHead(use, &h);
  return JobRow{h.id,
                std::string(h.name),
                use.Text(18),
                h.active,
                h.paused,
                h.next_fire_ms,
                use.Int(19),
                {std::string(h.schedule), h.dialect, std::string(h.timezone), h.anchor_ms,
                 h.enabled, h.misfire, h.overlap, h.misfire_cap, h.expect_success_within_ms, h.kind,
                 h.flow_id, std::string(h.on_labels)}};
}

Statement::Use& BindTiming(Statement::Use& use, int first, const JobTiming& t) {
  return use.Bind(first, t.schedule)
      .Bind(first + 1, DialectName(t.dialect))
      .Bind(first + 2, t.timezone)
      .Bind(first + 3, t.anchor_ms)
      .Bind(first + 4, t.enabled ? 1 : 0)
      .Bind(first + 5, MisfireName(t.misfire))
      .Bind(first + 6, OverlapName(t.overlap))
      .Bind(first + 7, t.misfire_cap)
      .Bind(first + 8, t.expect_success_within_ms)
      .Bind(first + 9, JobKindName(t.kind))
      .Bind(first + 10, t.flow_id)
      .Bind(first + 11, t.on_labels);
}

// The columns of RunQuery.
RunRecord ReadRun(const Statement::Use& use) {
  RunRecord r;
  r.id = use.Int(0);
  r.job_id = use.Int(1);
  r.job = use.Text(2);
  r.reason = ParseRunReason(use.Text(3)).value_or(RunReason::kSchedule);
  r.scheduled_ms = use.Int(4);
  r.created_ms = use.Int(5);
  r.state = ParseRunState(use.Text(6)).value_or(RunState::kFailed);
  r.trace_id = use.Text(7);
  r.idempotency_key = use.Text(8);
  r.env_json = use.Text(9);
  r.note = use.Text(10);
  r.finished_ms = use.OptInt(11);
  r.shard_total = static_cast<int>(use.Int(12));
  r.not_before_ms = use.Int(13);
  r.flow_run_id = use.Int(14);
  r.flow_step = static_cast<int>(use.Int(15));
  r.flow_json = use.Text(16);
  return r;
}

// The columns of ShardQuery.
ShardRecord ReadShard(const Statement::Use& use) {
  ShardRecord s;
  s.run_id = use.Int(0);
  s.index = static_cast<int>(use.Int(1));
  s.state = ParseRunState(use.Text(2)).value_or(RunState::kFailed);
  s.attempt = static_cast<int>(use.Int(3));
  s.agent = use.Text(4);
  s.token = use.Int(5);
  s.exit_code = use.OptInt(6);
  s.outcome = use.Text(7);
  s.message = use.Text(8);
  s.started_ms = use.OptInt(9);
  s.finished_ms = use.OptInt(10);
  s.not_before_ms = use.Int(11);
  s.lost_count = static_cast<int>(use.Int(12));
  s.outputs_json = use.Text(13);
  s.peak_rss_bytes = use.OptInt(14);
  s.cpu_ms = use.OptInt(15);
  return s;
}

}  // namespace

Result<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& path) {
  std::unique_ptr<SqliteStore> store(new SqliteStore());
  if (Status s = store->db_.Open(path, SchedulerMigrations()); !s.ok()) return s;
  // At SQLite's own mark (1000 pages, 4 MiB), but off the thread that commits.
  if (Status s = store->db_.CheckpointInBackground(path, 1000); !s.ok()) return s;
  return store;
}

Result<int64_t> SqliteStore::GetCounter(std::string_view name) {
  static const Sql kSql{"SELECT value FROM counters WHERE name = ?1"};
  auto use = db_.Use(kSql);
  use.Bind(1, name);
  int64_t v = use.Step() ? use.Int(0) : 0;
  if (!use.status().ok()) return use.status();
  return v;
}

Status SqliteStore::SetCounter(std::string_view name, int64_t value) {
  static const Sql kSql{
      "INSERT INTO counters(name, value) VALUES(?1, ?2) "
      "ON CONFLICT(name) DO UPDATE SET value = excluded.value"};
  return db_.Use(kSql).Bind(1, name).Bind(2, value).Exec();
}

Result<RevisionRow> SqliteStore::CurrentRevision() {
  static const Sql kSql{"SELECT id, text, author, at_ms FROM revisions ORDER BY id DESC LIMIT 1"};
  auto use = db_.Use(kSql);
  RevisionRow row;
  if (use.Step()) row = {use.Int(0), use.Text(1), use.Text(2), use.Int(3)};
  if (!use.status().ok()) return use.status();
  return row;
}

Result<int64_t> SqliteStore::InsertRevision(const std::string& text, const std::string& author,
                                            int64_t at_ms, const std::string& summary) {
  static const Sql kSql{
      "INSERT INTO revisions(text, author, at_ms, summary) VALUES(?1, ?2, ?3, ?4)"};
  Status s = db_.Use(kSql).Bind(1, text).Bind(2, author).Bind(3, at_ms).Bind(4, summary).Exec();
  if (!s.ok()) return s;
  return sqlite3_last_insert_rowid(db_.handle());
}

Status SqliteStore::ForEachJobHead(const std::function<void(const JobHead&)>& fn,
                                   int64_t* unreadable) {
  static const Sql kSql{JobQuery(" FROM jobs ORDER BY id")};
  auto use = db_.Use(kSql);
  JobHead head;
  while (use.Step()) {
    if (!ReadHead(use, &head) && unreadable != nullptr) ++*unreadable;
    fn(head);
  }
  return use.status();
}

Status SqliteStore::ForEachJob(const std::function<void(JobRow&&)>& fn) {
  static const Sql kSql{JobQuery(", spec, revision FROM jobs ORDER BY id")};
  auto use = db_.Use(kSql);
  while (use.Step()) fn(ReadJob(use));
  return use.status();
}

Result<JobRow> SqliteStore::GetJob(int64_t id) {
  static const Sql kSql{JobQuery(", spec, revision FROM jobs WHERE id = ?1")};
  auto use = db_.Use(kSql);
  use.Bind(1, id);
  if (use.Step()) return ReadJob(use);
  if (!use.status().ok()) return use.status();
  return Status::NotFound("job " + std::to_string(id));
}

Result<int64_t> SqliteStore::InsertJob(const JobRow& row, int64_t at_ms) {
  static const Sql kSql{
      "INSERT INTO jobs(name, spec, active, paused, next_fire_ms, revision, updated_ms, "
      "schedule, dialect, timezone, anchor_ms, enabled, misfire, overlap, misfire_cap, "
      "expect_success_within_ms, kind, flow_id, on_labels) "
      "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, "
      "?19)"};
  auto use = db_.Use(kSql);
  use.Bind(1, row.name)
      .Bind(2, row.spec_json)
      .Bind(3, row.active ? 1 : 0)
      .Bind(4, row.paused ? 1 : 0)
      .Bind(5, row.next_fire_ms)
      .Bind(6, row.revision)
      .Bind(7, at_ms);
  if (Status s = BindTiming(use, 8, row.timing).Exec(); !s.ok()) return s;
  return sqlite3_last_insert_rowid(db_.handle());
}

Status SqliteStore::UpdateJobSpec(int64_t id, const std::string& spec_json, const JobTiming& timing,
                                  int64_t revision, int64_t at_ms) {
  static const Sql kSql{
      "UPDATE jobs SET spec = ?2, active = 1, revision = ?3, updated_ms = ?4, schedule = ?5, "
      "dialect = ?6, timezone = ?7, anchor_ms = ?8, enabled = ?9, misfire = ?10, overlap = ?11, "
      "misfire_cap = ?12, expect_success_within_ms = ?13, kind = ?14, flow_id = ?15, "
      "on_labels = ?16 WHERE id = ?1"};
  auto use = db_.Use(kSql);
  use.Bind(1, id).Bind(2, spec_json).Bind(3, revision).Bind(4, at_ms);
  return BindTiming(use, 5, timing).ExecExpectingChanges(1);
}

Status SqliteStore::DeactivateJob(int64_t id, int64_t revision, int64_t at_ms) {
  static const Sql kSql{"UPDATE jobs SET active = 0, revision = ?2, updated_ms = ?3 WHERE id = ?1"};
  return db_.Use(kSql).Bind(1, id).Bind(2, revision).Bind(3, at_ms).ExecExpectingChanges(1);
}

Status SqliteStore::SetJobPaused(int64_t id, bool paused) {
  static const Sql kSql{"UPDATE jobs SET paused = ?2 WHERE id = ?1"};
  return db_.Use(kSql).Bind(1, id).Bind(2, paused ? 1 : 0).ExecExpectingChanges(1);
}

Status SqliteStore::SetNextFire(int64_t id, std::optional<int64_t> next_fire_ms) {
  static const Sql kSql{"UPDATE jobs SET next_fire_ms = ?2 WHERE id = ?1"};
  return db_.Use(kSql).Bind(1, id).Bind(2, next_fire_ms).Exec();
}

Status SqliteStore::InsertRun(RunRecord& run) {
  static const Sql kRun{
      "INSERT INTO runs(job_id, reason, scheduled_ms, created_ms, state, trace_id, "
      "idempotency_key, env, note, finished_ms, shard_total, not_before_ms, flow_run_id, "
      "flow_step, flow) "
      "VALUES(?1, ?2, ?3, ?4, ?5, ?6, NULLIF(?7, ''), ?8, ?9, ?10, ?11, ?12, NULLIF(?13, 0), ?14, "
      "?15)"};
  static const Sql kShard{
      "INSERT INTO shards(run_id, idx, state, attempt, not_before_ms) VALUES(?1, ?2, ?3, 1, ?4)"};
  Status s = db_.Use(kRun)
                 .Bind(1, run.job_id)
                 .Bind(2, RunReasonName(run.reason))
                 .Bind(3, run.scheduled_ms)
                 .Bind(4, run.created_ms)
                 .Bind(5, RunStateName(run.state))
                 .Bind(6, run.trace_id)
                 .Bind(7, run.idempotency_key)
                 .Bind(8, run.env_json)
                 .Bind(9, run.note)
                 .Bind(10, run.finished_ms)
                 .Bind(11, run.shard_total)
                 .Bind(12, run.not_before_ms)
                 .Bind(13, run.flow_run_id)
                 .Bind(14, run.flow_step)
                 .Bind(15, run.flow_json)
                 .Exec();
  if (!s.ok()) return s;
  run.id = sqlite3_last_insert_rowid(db_.handle());
  for (ShardRecord& shard : run.shards) {
    shard.run_id = run.id;
    s = db_.Use(kShard)
            .Bind(1, run.id)
            .Bind(2, shard.index)
            .Bind(3, RunStateName(shard.state))
            .Bind(4, shard.not_before_ms)
            .Exec();
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Status SqliteStore::InsertMiss(const MissRow& m) {
  static const Sql kSql{
      "INSERT INTO misses(job_id, first_ms, last_ms, count, reason, at_ms) "
      "VALUES(?1, ?2, ?3, ?4, ?5, ?6)"};
  return db_.Use(kSql)
      .Bind(1, m.job_id)
      .Bind(2, m.first_ms)
      .Bind(3, m.last_ms)
      .Bind(4, m.count)
      .Bind(5, m.reason)
      .Bind(6, m.at_ms)
      .Exec();
}

Status SqliteStore::UpdateRunState(int64_t run_id, RunState state,
                                   std::optional<int64_t> finished_ms, const std::string& note) {
  static const Sql kSql{
      "UPDATE runs SET state = ?2, finished_ms = ?3, note = CASE WHEN ?4 = '' THEN note "
      "ELSE ?4 END WHERE id = ?1"};
  return db_.Use(kSql)
      .Bind(1, run_id)
      .Bind(2, RunStateName(state))
      .Bind(3, finished_ms)
      .Bind(4, note)
      .ExecExpectingChanges(1);
}

Status SqliteStore::UpdateShard(const ShardRecord& s) {
  static const Sql kSql{
      "UPDATE shards SET state = ?3, attempt = ?4, agent = ?5, token = ?6, exit_code = ?7, "
      "outcome = ?8, message = ?9, started_ms = ?10, finished_ms = ?11, not_before_ms = ?12, "
      "lost_count = ?13, outputs = ?14, peak_rss_bytes = ?15, cpu_ms = ?16 "
      "WHERE run_id = ?1 AND idx = ?2"};
  return db_.Use(kSql)
      .Bind(1, s.run_id)
      .Bind(2, s.index)
      .Bind(3, RunStateName(s.state))
      .Bind(4, s.attempt)
      .Bind(5, s.agent)
      .Bind(6, s.token)
      .Bind(7, s.exit_code)
      .Bind(8, s.outcome)
      .Bind(9, s.message)
      .Bind(10, s.started_ms)
      .Bind(11, s.finished_ms)
      .Bind(12, s.not_before_ms)
      .Bind(13, s.lost_count)
      .Bind(14, s.outputs_json)
      .Bind(15, s.peak_rss_bytes)
      .Bind(16, s.cpu_ms)
      .ExecExpectingChanges(1);
}

Status SqliteStore::LoadShards(RunRecord& run) {
  static const Sql kSql{ShardQuery("WHERE run_id = ?1 ORDER BY idx")};
  auto use = db_.Use(kSql);
  use.Bind(1, run.id);
  while (use.Step()) run.shards.push_back(ReadShard(use));
  return use.status();
}

Result<std::optional<ShardRecord>> SqliteStore::GetShard(int64_t run_id, int index) {
  static const Sql kSql{ShardQuery("WHERE run_id = ?1 AND idx = ?2")};
  auto use = db_.Use(kSql);
  use.Bind(1, run_id).Bind(2, index);
  std::optional<ShardRecord> shard;
  if (use.Step()) shard = ReadShard(use);
  if (!use.status().ok()) return use.status();
  return shard;
}

Result<std::optional<RunRecord>> SqliteStore::GetRun(int64_t id) {
  static const Sql kSql{RunQuery("WHERE r.id = ?1")};
  std::optional<RunRecord> run;
  {
    auto use = db_.Use(kSql);
    use.Bind(1, id);
    if (use.Step()) run = ReadRun(use);
    if (!use.status().ok()) return use.status();
  }
  if (run) {
    if (Status s = LoadShards(*run); !s.ok()) return s;
  }
  return run;
}

Result<std::optional<int64_t>> SqliteStore::FindRunByKey(int64_t job_id, const std::string& key) {
  static const Sql kSql{"SELECT id FROM runs WHERE job_id = ?1 AND idempotency_key = ?2"};
  auto use = db_.Use(kSql);
  use.Bind(1, job_id).Bind(2, key);
  std::optional<int64_t> id;
  if (use.Step()) id = use.Int(0);
  if (!use.status().ok()) return use.status();
  return id;
}

Result<std::vector<RunRecord>> SqliteStore::ListRuns(const RunFilter& f) {
  // Every filter is optional: "?n IS NULL OR ..." keeps it one prepared statement, an unset
  // filter being an unbound (NULL) parameter.
  static const Sql kSql{
      RunQuery("WHERE (?1 IS NULL OR r.job_id = ?1) AND (?2 IS NULL OR r.state = ?2) "
               "AND (?3 IS NULL OR r.created_ms >= ?3) AND (?4 IS NULL OR r.id < ?4) "
               "ORDER BY r.id DESC LIMIT ?5")};
  // A trace's runs through its index: "?n IS NULL OR" would keep the planner from it.
  static const Sql kOfTrace{
      RunQuery("WHERE r.trace_id = ?6 AND (?1 IS NULL OR r.job_id = ?1) AND (?2 IS NULL OR "
               "r.state = ?2) AND (?3 IS NULL OR r.created_ms >= ?3) AND (?4 IS NULL OR r.id < ?4) "
               "ORDER BY r.id DESC LIMIT ?5")};
  std::vector<RunRecord> runs;
  {
    auto use = db_.Use(f.trace_id.empty() ? kSql : kOfTrace);
    use.Bind(1, f.job_id).Bind(3, f.since_ms).Bind(4, f.before_id).Bind(5, f.limit);
    if (f.state) use.Bind(2, RunStateName(*f.state));
    if (!f.trace_id.empty()) use.Bind(6, f.trace_id);
    while (use.Step()) runs.push_back(ReadRun(use));
    if (!use.status().ok()) return use.status();
  }
  for (RunRecord& r : runs) {
    if (Status s = LoadShards(r); !s.ok()) return s;
  }
  return runs;
}

Result<std::vector<RunRecord>> SqliteStore::StepRuns(int64_t flow_run_id) {
  static const Sql kSql{RunQuery("WHERE r.flow_run_id = ?1 ORDER BY r.flow_step")};
  std::vector<RunRecord> runs;
  {
    auto use = db_.Use(kSql);
    use.Bind(1, flow_run_id);
    while (use.Step()) runs.push_back(ReadRun(use));
    if (!use.status().ok()) return use.status();
  }
  for (RunRecord& r : runs) {
    if (Status s = LoadShards(r); !s.ok()) return s;
  }
  return runs;
}

Status SqliteStore::ForEachOpenRun(const std::function<void(RunRecord&&)>& fn) {
  static const Sql kSql{RunQuery("WHERE r.state IN ('pending', 'running') ORDER BY r.id")};
  return ForEachRunOf(kSql, fn);
}

Status SqliteStore::ForEachRun(const std::function<void(RunRecord&&)>& fn) {
  static const Sql kSql{RunQuery("ORDER BY r.id")};
  return ForEachRunOf(kSql, fn);
}

Status SqliteStore::ForEachRunOf(const Sql& query, const std::function<void(RunRecord&&)>& fn) {
  // The runs are read in full before their shards are loaded and the callback runs, so that
  // no read stays open across the callback.
  std::vector<RunRecord> runs;
  {
    auto use = db_.Use(query);
    while (use.Step()) runs.push_back(ReadRun(use));
    if (!use.status().ok()) return use.status();
  }
  for (RunRecord& r : runs) {
    if (Status s = LoadShards(r); !s.ok()) return s;
    fn(std::move(r));
  }
  return Status::Ok();
}

Result<std::vector<MissRow>> SqliteStore::ListMisses(int64_t job_id, int64_t since_ms) {
  static const Sql kSql{
      "SELECT job_id, first_ms, last_ms, count, reason, at_ms FROM misses "
      "WHERE job_id = ?1 AND last_ms >= ?2 ORDER BY first_ms"};
  auto use = db_.Use(kSql);
  use.Bind(1, job_id).Bind(2, since_ms);
  std::vector<MissRow> out;
  while (use.Step()) {
    out.push_back({use.Int(0), use.Int(1), use.Int(2), use.Int(3), use.Text(4), use.Int(5)});
  }
  if (!use.status().ok()) return use.status();
  return out;
}

Status SqliteStore::ForEachLastResult(const std::function<void(const LastResult&)>& fn) {
  // One scan of the runs for both the newest finished run and the newest success; the
  // duration reads the shards of the one run per job.
  static const Sql kSql{
      "SELECT r.job_id, r.state, r.finished_ms, "
      "COALESCE(r.finished_ms - (SELECT MIN(s.started_ms) FROM shards s WHERE s.run_id = r.id "
      "AND s.outcome != 'kept'), 0), last.success_ms FROM runs r "
      "JOIN (SELECT job_id, MAX(id) AS id, "
      "MAX(CASE WHEN state = 'succeeded' THEN finished_ms END) AS success_ms FROM runs "
      "WHERE finished_ms IS NOT NULL AND state != 'skipped' GROUP BY job_id) last "
      "ON last.id = r.id"};
  auto use = db_.Use(kSql);
  while (use.Step()) {
    fn({.job_id = use.Int(0),
        .state = ParseRunState(use.Text(1)).value_or(RunState::kFailed),
        .finished_ms = use.Int(2),
        .duration_ms = std::max<int64_t>(use.Int(3), 0),
        .last_success_ms = use.OptInt(4)});
  }
  return use.status();
}

Status SqliteStore::PutOutputEnd(const OutputEndRow& e) {
  static const Sql kSql{
      "INSERT INTO output_ends(run_id, shard, attempt, last_seq, agent, token) "
      "VALUES(?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(run_id, shard, attempt) DO UPDATE SET "
      "last_seq = excluded.last_seq, agent = excluded.agent, token = excluded.token"};
  return db_.Use(kSql)
      .Bind(1, e.run_id)
      .Bind(2, e.shard)
      .Bind(3, e.attempt)
      .Bind(4, e.last_seq)
      .Bind(5, e.agent)
      .Bind(6, e.token)
      .Exec();
}

Result<std::optional<OutputEndRow>> SqliteStore::GetOutputEnd(int64_t run_id, int shard,
                                                              int attempt) {
  static const Sql kSql{
      "SELECT last_seq, agent, token FROM output_ends "
      "WHERE run_id = ?1 AND shard = ?2 AND attempt = ?3"};
  auto use = db_.Use(kSql);
  use.Bind(1, run_id).Bind(2, shard).Bind(3, attempt);
  std::optional<OutputEndRow> end;
  if (use.Step()) end = OutputEndRow{run_id, shard, attempt, use.Int(0), use.Text(1), use.Int(2)};
  if (!use.status().ok()) return use.status();
  return end;
}

Result<std::vector<OutputEndRow>> SqliteStore::OutputEnds(int64_t run_id) {
  static const Sql kSql{
      "SELECT shard, attempt, last_seq, agent, token FROM output_ends WHERE run_id = ?1 "
      "ORDER BY shard, attempt"};
  auto use = db_.Use(kSql);
  use.Bind(1, run_id);
  std::vector<OutputEndRow> out;
  while (use.Step()) {
    out.push_back({run_id, static_cast<int>(use.Int(0)), static_cast<int>(use.Int(1)), use.Int(2),
                   use.Text(3), use.Int(4)});
  }
  if (!use.status().ok()) return use.status();
  return out;
}

Status SqliteStore::PutLease(const LeaseRow& l) {
  static const Sql kSql{
      "INSERT INTO leases(key, holder, token, granted_ms) VALUES(?1, ?2, ?3, ?4) "
      "ON CONFLICT(key) DO UPDATE SET holder = excluded.holder, token = excluded.token, "
      "granted_ms = excluded.granted_ms"};
  return db_.Use(kSql)
      .Bind(1, l.key)
      .Bind(2, l.holder)
      .Bind(3, l.token)
      .Bind(4, l.granted_ms)
      .Exec();
}

Status SqliteStore::DeleteLease(const std::string& key) {
  static const Sql kSql{"DELETE FROM leases WHERE key = ?1"};
  return db_.Use(kSql).Bind(1, key).Exec();
}

Status SqliteStore::ForEachLease(const std::function<void(LeaseRow&&)>& fn) {
  static const Sql kSql{"SELECT key, holder, token, granted_ms FROM leases"};
  auto use = db_.Use(kSql);
  while (use.Step()) fn({use.Text(0), use.Text(1), use.Int(2), use.Int(3)});
  return use.status();
}

Status SqliteStore::PutAgent(const AgentRow& a) {
  static const Sql kSql{
      "INSERT INTO agents(name, labels, slots, version, last_seen_ms, draining) "
      "VALUES(?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(name) DO UPDATE SET labels = excluded.labels, "
      "slots = excluded.slots, version = excluded.version, last_seen_ms = excluded.last_seen_ms, "
      "draining = excluded.draining"};
  return db_.Use(kSql)
      .Bind(1, a.name)
      .Bind(2, a.labels_json)
      .Bind(3, a.slots)
      .Bind(4, a.version)
      .Bind(5, a.last_seen_ms)
      .Bind(6, a.draining ? 1 : 0)
      .Exec();
}

Status SqliteStore::ForEachAgent(const std::function<void(AgentRow&&)>& fn) {
  static const Sql kSql{
      "SELECT name, labels, slots, version, last_seen_ms, draining FROM agents ORDER BY name"};
  auto use = db_.Use(kSql);
  while (use.Step()) {
    fn({use.Text(0), use.Text(1), static_cast<int>(use.Int(2)), use.Text(3), use.Int(4),
        use.Int(5) != 0});
  }
  return use.status();
}

Status SqliteStore::DeleteAgent(const std::string& name) {
  static const Sql kSql{"DELETE FROM agents WHERE name = ?1"};
  return db_.Use(kSql).Bind(1, name).ExecExpectingChanges(1);
}

Result<int64_t> SqliteStore::InsertToken(const TokenRow& t) {
  static const Sql kSql{
      "INSERT INTO tokens(name, role, jobs, hash, created_ms, agent, labels, expires_ms) "
      "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"};
  Status s = db_.Use(kSql)
                 .Bind(1, t.name)
                 .Bind(2, t.role)
                 .Bind(3, t.jobs)
                 .Bind(4, t.hash)
                 .Bind(5, t.created_ms)
                 .Bind(6, t.agent)
                 .Bind(7, t.labels_json)
                 .Bind(8, t.expires_ms)
                 .Exec();
  if (!s.ok()) return s;
  return sqlite3_last_insert_rowid(db_.handle());
}

Status SqliteStore::RevokeToken(int64_t id, int64_t at_ms) {
  static const Sql kSql{"UPDATE tokens SET revoked_ms = ?2 WHERE id = ?1 AND revoked_ms IS NULL"};
  return db_.Use(kSql).Bind(1, id).Bind(2, at_ms).ExecExpectingChanges(1);
}

Result<int64_t> SqliteStore::RevokeAgentTokens(const std::string& agent, int64_t at_ms) {
  static const Sql kSql{
      "UPDATE tokens SET revoked_ms = ?2 WHERE agent = ?1 AND role = 'agent' "
      "AND revoked_ms IS NULL"};
  Status s = db_.Use(kSql).Bind(1, agent).Bind(2, at_ms).Exec();
  if (!s.ok()) return s;
  return sqlite3_changes64(db_.handle());
}

Status SqliteStore::ForEachToken(const std::function<void(TokenRow&&)>& fn) {
  static const Sql kSql{
      "SELECT id, name, role, jobs, hash, created_ms, revoked_ms, agent, labels, expires_ms "
      "FROM tokens ORDER BY id"};
  auto use = db_.Use(kSql);
  while (use.Step()) {
    fn({use.Int(0), use.Text(1), use.Text(2), use.Text(3), use.Text(4), use.Int(5), use.OptInt(6),
        use.Text(7), use.Text(8), use.OptInt(9)});
  }
  return use.status();
}

Status SqliteStore::InsertEvent(const EventRow& e) {
  static const Sql kSql{
      "INSERT INTO events(at_ms, kind, actor, subject, detail, token_id) "
      "VALUES(?1, ?2, ?3, ?4, ?5, ?6)"};
  return db_.Use(kSql)
      .Bind(1, e.at_ms)
      .Bind(2, e.kind)
      .Bind(3, e.actor)
      .Bind(4, e.subject)
      .Bind(5, e.detail)
      .Bind(6, e.token_id)
      .Exec();
}

Result<std::vector<EventRow>> SqliteStore::ListEvents(const EventFilter& f) {
  static const Sql kFirstSince{
      "SELECT id FROM events WHERE at_ms >= ?1 ORDER BY at_ms, id LIMIT 1"};
  // One statement per combination of filters, so that each uses its own index.
  static const Sql kAll{EventQuery("")};
  static const Sql kByKind{EventQuery("AND kind = ?4 ")};
  static const Sql kByActor{EventQuery("AND actor = ?5 ")};
  static const Sql kByKindActor{EventQuery("AND kind = ?4 AND actor = ?5 ")};
  // The time bound becomes an id bound first (events_by_time), so that every query below
  // is a range of ids on the table or on one index, never a scan of older events.
  int64_t low = 0;
  if (f.since_ms) {
    auto use = db_.Use(kFirstSince);
    use.Bind(1, *f.since_ms);
    low = use.Step() ? use.Int(0) : INT64_MAX;
    if (!use.status().ok()) return use.status();
  }
  const Sql& sql = f.kind && f.actor ? kByKindActor : f.kind ? kByKind : f.actor ? kByActor : kAll;
  auto use = db_.Use(sql);
  use.Bind(1, low).Bind(2, f.before_id.value_or(INT64_MAX)).Bind(3, f.since_ms.value_or(0));
  if (f.kind) use.Bind(4, *f.kind);
  if (f.actor) use.Bind(5, *f.actor);
  use.Bind(6, f.limit);
  std::vector<EventRow> out;
  while (use.Step()) {
    out.push_back({use.Int(0), use.Int(1), use.Text(2), use.Text(3), use.OptInt(4), use.Text(5),
                   use.Text(6)});
  }
  if (!use.status().ok()) return use.status();
  return out;
}

Result<PrunedRuns> SqliteStore::PruneRuns(const RunRetention& r) {
  // A run is kept when it is one of the keep_last newest of its job: its id is at least the
  // keep_last-th newest id (runs_by_job answers that in keep_last steps). A job with fewer
  // runs keeps them all. Column 6: a step run (it goes with its flow run); 7: a step run of
  // this flow run must stay (open, ended too late, the store's newest or its job's newest
  // success); 8: how many step runs it has (runs_step answers both).
  static const Sql kScan{
      "SELECT r.id, r.state, r.created_ms, r.finished_ms, "
      "?2 > 0 AND r.id >= COALESCE((SELECT n.id FROM runs n WHERE n.job_id = r.job_id "
      "ORDER BY n.id DESC LIMIT 1 OFFSET ?2 - 1), 0), "
      "r.state = 'succeeded' AND r.id = (SELECT MAX(n.id) FROM runs n "
      "WHERE n.job_id = r.job_id AND n.state = 'succeeded'), "
      "r.flow_run_id IS NOT NULL, "
      "EXISTS(SELECT 1 FROM runs s WHERE s.flow_run_id = r.id AND (s.finished_ms IS NULL OR "
      "s.finished_ms >= ?4 OR s.state IN ('pending', 'running') OR s.id >= (SELECT MAX(id) "
      "FROM runs) OR (s.state = 'succeeded' AND s.id = (SELECT MAX(n.id) FROM runs n WHERE "
      "n.job_id = s.job_id AND n.state = 'succeeded')))), "
      "(SELECT COUNT(*) FROM runs s WHERE s.flow_run_id = r.id) "
      "FROM runs r WHERE r.id > ?1 AND r.id < (SELECT MAX(id) FROM runs) ORDER BY r.id LIMIT ?3"};
  static const Sql kSteps{"SELECT id FROM runs WHERE flow_run_id = ?1 ORDER BY id"};
  static const Sql kEnds{"DELETE FROM output_ends WHERE run_id = ?1"};
  static const Sql kShards{"DELETE FROM shards WHERE run_id = ?1"};
  static const Sql kRun{"DELETE FROM runs WHERE id = ?1"};
  static const Sql kMisses{
      "DELETE FROM misses WHERE id IN (SELECT id FROM misses WHERE last_ms < ?1 ORDER BY id "
      "LIMIT ?2)"};
  PrunedRuns out;
  const int limit = std::max(r.limit, 1);
  const int scan = limit * 4;
  int seen = 0;
  int64_t taken = 0;  // runs chosen, step runs counted
  int64_t last = r.after_id;
  bool reached_new = false;
  std::vector<int64_t> chosen;
  {
    auto use = db_.Use(kScan);
    use.Bind(1, r.after_id).Bind(2, r.keep_last).Bind(3, scan).Bind(4, r.ended_before_ms);
    while (taken < limit && use.Step()) {
      ++seen;
      // Runs are created in id order: past the first one created after the bound, none has
      // ended before it.
      if (use.Int(2) >= r.ended_before_ms) {
        reached_new = true;
        break;
      }
      last = use.Int(0);
      std::string state = use.Text(1);
      std::optional<int64_t> finished = use.OptInt(3);
      bool open = state == "pending" || state == "running";
      if (open || use.Int(4) != 0 || use.Int(5) != 0 || use.Int(6) != 0 || use.Int(7) != 0 ||
          !finished || *finished >= r.ended_before_ms) {
        continue;
      }
      chosen.push_back(last);
      taken += 1 + use.Int(8);
    }
    if (!use.status().ok()) return use.status();
  }
  // Each flow run's step runs before it.
  for (int64_t id : chosen) {
    auto use = db_.Use(kSteps);
    use.Bind(1, id);
    while (use.Step()) out.run_ids.push_back(use.Int(0));
    if (!use.status().ok()) return use.status();
    out.run_ids.push_back(id);
  }
  for (int64_t id : out.run_ids) {
    for (const Sql* sql : {&kEnds, &kShards, &kRun}) {
      if (Status s = db_.Use(*sql).Bind(1, id).Exec(); !s.ok()) return s;
      out.rows += sqlite3_changes(db_.handle());
    }
  }
  if (Status s = db_.Use(kMisses).Bind(1, r.ended_before_ms).Bind(2, limit).Exec(); !s.ok()) {
    return s;
  }
  out.rows += sqlite3_changes(db_.handle());
  // The end of the table (fewer rows than asked) or a run too new ends the pass.
  bool more = !reached_new && (taken >= limit || seen >= scan);
  out.next_after_id = more ? last : 0;
  return out;
}

Result<std::vector<int64_t>> SqliteStore::MissingRuns(const std::vector<int64_t>& ids) {
  static const Sql kSql{"SELECT 1 FROM runs WHERE id = ?1"};
  std::vector<int64_t> out;
  for (int64_t id : ids) {
    auto use = db_.Use(kSql);
    use.Bind(1, id);
    bool found = use.Step();
    if (!use.status().ok()) return use.status();
    if (!found) out.push_back(id);
  }
  return out;
}

Result<StoreStats> SqliteStore::Stats() {
  static const Sql kRuns{"SELECT COUNT(*), MIN(created_ms) FROM runs"};
  Result<Database::Space> space = db_.SpaceUsed();
  if (!space.ok()) return space.status();
  StoreStats out;
  out.file_bytes = space->file_bytes;
  out.free_bytes = space->free_bytes;
  out.reclaims_space = space->incremental;
  auto use = db_.Use(kRuns);
  if (use.Step()) {
    out.runs = use.Int(0);
    out.oldest_run_ms = use.OptInt(1);
  }
  if (!use.status().ok()) return use.status();
  return out;
}

// ---- Notifications -----------------------------------------------------------------------

namespace {
constexpr std::string_view kNotificationColumns =
    "id, created_ms, job_id, job, run_id, event, reminder, failures, failing_since_ms, detail, "
    "target, state, attempts, next_ms, done_ms, last_error";
}  // namespace

Status SqliteStore::InsertNotification(const NotificationRow& n) {
  static const Sql kSql{
      "INSERT INTO notifications(created_ms, job_id, job, run_id, event, reminder, failures, "
      "failing_since_ms, detail, target, state, attempts, next_ms, done_ms, last_error) "
      "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)"};
  return db_.Use(kSql)
      .Bind(1, n.created_ms)
      .Bind(2, n.job_id)
      .Bind(3, n.job)
      .Bind(4, n.run_id)
      .Bind(5, n.event)
      .Bind(6, n.reminder ? 1 : 0)
      .Bind(7, n.failures)
      .Bind(8, n.failing_since_ms)
      .Bind(9, n.detail)
      .Bind(10, n.target)
      .Bind(11, n.state)
      .Bind(12, n.attempts)
      .Bind(13, n.next_ms)
      .Bind(14, n.done_ms)
      .Bind(15, n.last_error)
      .Exec();
}

namespace {
template <typename UseT>
NotificationRow ReadNotification(UseT& use) {
  NotificationRow n;
  n.id = use.Int(0);
  n.created_ms = use.Int(1);
  n.job_id = use.Int(2);
  n.job = use.Text(3);
  n.run_id = use.Int(4);
  n.event = use.Text(5);
  n.reminder = use.Int(6) != 0;
  n.failures = use.Int(7);
  n.failing_since_ms = use.Int(8);
  n.detail = use.Text(9);
  n.target = use.Text(10);
  n.state = use.Text(11);
  n.attempts = use.Int(12);
  n.next_ms = use.Int(13);
  n.done_ms = use.Int(14);
  n.last_error = use.Text(15);
  return n;
}
}  // namespace

Result<std::vector<NotificationRow>> SqliteStore::DueNotifications(int64_t now_ms, int limit) {
  static const Sql kSql{
      fmt::format("SELECT {} FROM notifications WHERE state = 'pending' AND next_ms <= ?1 "
                  "ORDER BY next_ms, id LIMIT ?2",
                  kNotificationColumns)};
  auto use = db_.Use(kSql);
  use.Bind(1, now_ms).Bind(2, limit);
  std::vector<NotificationRow> out;
  while (use.Step()) out.push_back(ReadNotification(use));
  if (!use.status().ok()) return use.status();
  return out;
}

Status SqliteStore::UpdateNotification(const NotificationRow& n) {
  static const Sql kSql{
      "UPDATE notifications SET state = ?2, attempts = ?3, next_ms = ?4, done_ms = ?5, "
      "last_error = ?6 WHERE id = ?1"};
  return db_.Use(kSql)
      .Bind(1, n.id)
      .Bind(2, n.state)
      .Bind(3, n.attempts)
      .Bind(4, n.next_ms)
      .Bind(5, n.done_ms)
      .Bind(6, n.last_error)
      .ExecExpectingChanges(1);
}

Result<std::vector<NotificationRow>> SqliteStore::ListNotifications(const NotificationFilter& f) {
  static const Sql kAll{
      fmt::format("SELECT {} FROM notifications WHERE id < ?1 AND (?2 = '' OR state = ?2) "
                  "ORDER BY id DESC LIMIT ?3",
                  kNotificationColumns)};
  static const Sql kByJob{fmt::format(
      "SELECT {} FROM notifications WHERE job = ?4 AND id < ?1 AND (?2 = '' OR state = ?2) "
      "ORDER BY id DESC LIMIT ?3",
      kNotificationColumns)};
  auto use = db_.Use(f.job ? kByJob : kAll);
  use.Bind(1, f.before_id.value_or(INT64_MAX)).Bind(2, f.state.value_or("")).Bind(3, f.limit);
  if (f.job) use.Bind(4, *f.job);
  std::vector<NotificationRow> out;
  while (use.Step()) out.push_back(ReadNotification(use));
  if (!use.status().ok()) return use.status();
  return out;
}

Result<int64_t> SqliteStore::PruneNotifications(int64_t before_ms, int limit) {
  static const Sql kSql{
      "DELETE FROM notifications WHERE id IN (SELECT id FROM notifications "
      "WHERE state != 'pending' AND done_ms < ?1 ORDER BY done_ms LIMIT ?2)"};
  if (Status s = db_.Use(kSql).Bind(1, before_ms).Bind(2, limit).Exec(); !s.ok()) return s;
  return static_cast<int64_t>(sqlite3_changes(db_.handle()));
}

Status SqliteStore::PutAlertState(int64_t job_id, const AlertState& a) {
  static const Sql kSql{
      "INSERT OR REPLACE INTO alert_states(job_id, failing_since_ms, failures, last_sent_ms, "
      "overdue_sent_ms, missed_sent_ms, skipped_sent_ms, agent_lost_sent_ms) "
      "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"};
  return db_.Use(kSql)
      .Bind(1, job_id)
      .Bind(2, a.failing_since_ms)
      .Bind(3, a.failures)
      .Bind(4, a.last_sent_ms)
      .Bind(5, a.overdue_sent_ms)
      .Bind(6, a.missed_sent_ms)
      .Bind(7, a.skipped_sent_ms)
      .Bind(8, a.agent_lost_sent_ms)
      .Exec();
}

Status SqliteStore::ForEachAlertState(const std::function<void(int64_t, const AlertState&)>& fn) {
  static const Sql kSql{
      "SELECT job_id, failing_since_ms, failures, last_sent_ms, overdue_sent_ms, "
      "missed_sent_ms, skipped_sent_ms, agent_lost_sent_ms FROM alert_states ORDER BY job_id"};
  auto use = db_.Use(kSql);
  while (use.Step()) {
    AlertState a;
    a.failing_since_ms = use.Int(1);
    a.failures = static_cast<int>(use.Int(2));
    a.last_sent_ms = use.Int(3);
    a.overdue_sent_ms = use.Int(4);
    a.missed_sent_ms = use.Int(5);
    a.skipped_sent_ms = use.Int(6);
    a.agent_lost_sent_ms = use.Int(7);
    fn(use.Int(0), a);
  }
  return use.status();
}

}  // namespace jobctl::store
