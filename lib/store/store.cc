#include "store/store.h"

#include <cstdint>

#include "store/migrations.h"

namespace jobctl::store {
namespace {

constexpr const char* kRunColumns =
    "r.id, r.job_id, j.name, r.reason, r.scheduled_ms, r.created_ms, r.state, r.trace_id, "
    "COALESCE(r.idempotency_key, ''), r.env, r.note, r.finished_ms, r.shard_total";

// The job's timing columns (JobTiming), in this order, after id, name, active, paused and
// next_fire_ms: columns 5 to 12.
constexpr const char* kTimingColumns =
    "schedule, dialect, timezone, anchor_ms, enabled, misfire, overlap, misfire_cap";

// A shard row as ReadShard reads it: columns 0 to 12.
std::string ShardQuery(const char* where_and_order) {
  return std::string("SELECT run_id, idx, state, attempt, agent, token, exit_code, outcome, "
                     "message, started_ms, finished_ms, not_before_ms, lost_count FROM shards ") +
         where_and_order;
}

// Events newest first within ids [?1, ?2) and at or after ?3 ms, at most ?6 of them.
std::string EventQuery(const char* filter) {
  return std::string("SELECT id, at_ms, kind, actor, token_id, subject, detail FROM events "
                     "WHERE id >= ?1 AND id < ?2 AND at_ms >= ?3 ") +
         filter + "ORDER BY id DESC LIMIT ?6";
}

std::string RunQuery(const char* where_and_order) {
  return std::string("SELECT ") + kRunColumns + " FROM runs r JOIN jobs j ON j.id = r.job_id " +
         where_and_order;
}

}  // namespace

Result<std::unique_ptr<Store>> Store::Open(const std::string& path) {
  std::unique_ptr<Store> store(new Store());
  if (Status s = store->db_.Open(path, SchedulerMigrations()); !s.ok()) return s;
  if (Status s = store->Prepare(); !s.ok()) return s;
  return store;
}

Status Store::Prepare() {
  sqlite3* db = db_.handle();
  struct Item {
    Statement* st;
    std::string sql;
  };
  const Item items[] = {
      {&get_counter_, "SELECT value FROM counters WHERE name = ?1"},
      {&set_counter_,
       "INSERT INTO counters(name, value) VALUES(?1, ?2) "
       "ON CONFLICT(name) DO UPDATE SET value = excluded.value"},
      {&current_revision_,
       "SELECT id, text, author, at_ms FROM revisions ORDER BY id DESC LIMIT 1"},
      {&insert_revision_,
       "INSERT INTO revisions(text, author, at_ms, summary) VALUES(?1, ?2, ?3, ?4)"},
      {&job_heads_,
       "SELECT id, name, active, paused, next_fire_ms, " + std::string(kTimingColumns) +
           " FROM jobs ORDER BY id"},
      {&all_jobs_,
       "SELECT id, name, active, paused, next_fire_ms, " + std::string(kTimingColumns) +
           ", spec, revision FROM jobs ORDER BY id"},
      {&get_job_,
       "SELECT id, name, active, paused, next_fire_ms, " + std::string(kTimingColumns) +
           ", spec, revision FROM jobs WHERE id = ?1"},
      {&insert_job_,
       "INSERT INTO jobs(name, spec, active, paused, next_fire_ms, revision, updated_ms, "
       "schedule, dialect, timezone, anchor_ms, enabled, misfire, overlap, misfire_cap) "
       "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)"},
      {&update_job_spec_,
       "UPDATE jobs SET spec = ?2, active = 1, revision = ?3, updated_ms = ?4, schedule = ?5, "
       "dialect = ?6, timezone = ?7, anchor_ms = ?8, enabled = ?9, misfire = ?10, overlap = ?11, "
       "misfire_cap = ?12 WHERE id = ?1"},
      {&deactivate_job_,
       "UPDATE jobs SET active = 0, revision = ?2, updated_ms = ?3 WHERE id = ?1"},
      {&set_job_paused_, "UPDATE jobs SET paused = ?2 WHERE id = ?1"},
      {&set_next_fire_, "UPDATE jobs SET next_fire_ms = ?2 WHERE id = ?1"},
      {&insert_run_,
       "INSERT INTO runs(job_id, reason, scheduled_ms, created_ms, state, trace_id, "
       "idempotency_key, env, note, finished_ms, shard_total) "
       "VALUES(?1, ?2, ?3, ?4, ?5, ?6, NULLIF(?7, ''), ?8, ?9, ?10, ?11)"},
      {&insert_shard_,
       "INSERT INTO shards(run_id, idx, state, attempt, not_before_ms) VALUES(?1, ?2, ?3, 1, ?4)"},
      {&insert_miss_,
       "INSERT INTO misses(job_id, first_ms, last_ms, count, reason, at_ms) "
       "VALUES(?1, ?2, ?3, ?4, ?5, ?6)"},
      {&update_run_state_,
       "UPDATE runs SET state = ?2, finished_ms = ?3, note = CASE WHEN ?4 = '' THEN note "
       "ELSE ?4 END WHERE id = ?1"},
      {&update_shard_,
       "UPDATE shards SET state = ?3, attempt = ?4, agent = ?5, token = ?6, exit_code = ?7, "
       "outcome = ?8, message = ?9, started_ms = ?10, finished_ms = ?11, not_before_ms = ?12, "
       "lost_count = ?13 WHERE run_id = ?1 AND idx = ?2"},
      {&get_run_, RunQuery("WHERE r.id = ?1")},
      {&shards_of_run_, ShardQuery("WHERE run_id = ?1 ORDER BY idx")},
      {&get_shard_, ShardQuery("WHERE run_id = ?1 AND idx = ?2")},
      {&find_run_by_key_, "SELECT id FROM runs WHERE job_id = ?1 AND idempotency_key = ?2"},
      {&open_runs_, RunQuery("WHERE r.state IN ('pending', 'running') ORDER BY r.id")},
      {&all_runs_, RunQuery("ORDER BY r.id")},
      {&list_misses_,
       "SELECT job_id, first_ms, last_ms, count, reason, at_ms FROM misses "
       "WHERE job_id = ?1 AND last_ms >= ?2 ORDER BY first_ms"},
      {&last_results_,
       "SELECT r.job_id, r.state, r.finished_ms FROM runs r "
       "JOIN (SELECT job_id, MAX(id) AS id FROM runs WHERE finished_ms IS NOT NULL "
       "AND state != 'skipped' GROUP BY job_id) last ON last.id = r.id"},
      {&put_lease_,
       "INSERT INTO leases(key, holder, token, granted_ms) VALUES(?1, ?2, ?3, ?4) "
       "ON CONFLICT(key) DO UPDATE SET holder = excluded.holder, token = excluded.token, "
       "granted_ms = excluded.granted_ms"},
      {&delete_lease_, "DELETE FROM leases WHERE key = ?1"},
      {&all_leases_, "SELECT key, holder, token, granted_ms FROM leases"},
      {&put_agent_,
       "INSERT INTO agents(name, labels, slots, version, last_seen_ms, draining) "
       "VALUES(?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(name) DO UPDATE SET labels = excluded.labels, "
       "slots = excluded.slots, version = excluded.version, last_seen_ms = excluded.last_seen_ms, "
       "draining = excluded.draining"},
      {&all_agents_,
       "SELECT name, labels, slots, version, last_seen_ms, draining FROM agents ORDER BY name"},
      {&delete_agent_, "DELETE FROM agents WHERE name = ?1"},
      {&insert_token_,
       "INSERT INTO tokens(name, role, jobs, hash, created_ms, agent, labels, expires_ms) "
       "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"},
      {&revoke_token_,
       "UPDATE tokens SET revoked_ms = ?2 WHERE id = ?1 AND revoked_ms IS NULL"},
      {&revoke_agent_tokens_,
       "UPDATE tokens SET revoked_ms = ?2 WHERE agent = ?1 AND role = 'agent' "
       "AND revoked_ms IS NULL"},
      {&all_tokens_,
       "SELECT id, name, role, jobs, hash, created_ms, revoked_ms, agent, labels, expires_ms "
       "FROM tokens ORDER BY id"},
      {&insert_event_,
       "INSERT INTO events(at_ms, kind, actor, subject, detail, token_id) "
       "VALUES(?1, ?2, ?3, ?4, ?5, ?6)"},
      {&first_event_since_,
       "SELECT id FROM events WHERE at_ms >= ?1 ORDER BY at_ms, id LIMIT 1"},
      {&list_events_, EventQuery("")},
      {&list_events_by_kind_, EventQuery("AND kind = ?4 ")},
      {&list_events_by_actor_, EventQuery("AND actor = ?5 ")},
      {&list_events_by_kind_actor_, EventQuery("AND kind = ?4 AND actor = ?5 ")},
  };
  for (const Item& item : items) {
    if (Status s = item.st->Prepare(db, item.sql); !s.ok()) return s;
  }
  // ListRuns filters are optional: "?n IS NULL OR ..." keeps it one prepared statement.
  return Status::Ok();
}

Result<int64_t> Store::GetCounter(std::string_view name) {
  auto use = get_counter_.Bind();
  use.Bind(1, name);
  int64_t v = use.Step() ? use.Int(0) : 0;
  if (!use.status().ok()) return use.status();
  return v;
}

Status Store::SetCounter(std::string_view name, int64_t value) {
  return set_counter_.Bind().Bind(1, name).Bind(2, value).Exec();
}

Result<RevisionRow> Store::CurrentRevision() {
  auto use = current_revision_.Bind();
  RevisionRow row;
  if (use.Step()) row = {use.Int(0), use.Text(1), use.Text(2), use.Int(3)};
  if (!use.status().ok()) return use.status();
  return row;
}

Result<int64_t> Store::InsertRevision(const std::string& text, const std::string& author,
                                      int64_t at_ms, const std::string& summary) {
  Status s = insert_revision_.Bind().Bind(1, text).Bind(2, author).Bind(3, at_ms).Bind(4, summary)
                 .Exec();
  if (!s.ok()) return s;
  return sqlite3_last_insert_rowid(db_.handle());
}

JobTiming JobTiming::Of(const Job& job) {
  return {job.schedule, job.dialect, job.timezone, job.anchor_ms, job.enabled,
          job.misfire,  job.overlap, job.misfire_cap};
}

namespace {

// Reads columns 0-12 of a job row; false when an enum name is unknown (defaults kept).
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
  std::optional<Dialect> dialect = ParseDialect(use.View(6));
  std::optional<Misfire> misfire = ParseMisfire(use.View(10));
  std::optional<Overlap> overlap = ParseOverlap(use.View(11));
  h->dialect = dialect.value_or(Dialect::kCron);
  h->misfire = misfire.value_or(Misfire::kFireOnce);
  h->overlap = overlap.value_or(Overlap::kForbid);
  return dialect && misfire && overlap;
}

Statement::Use& BindTiming(Statement::Use& use, int first, const JobTiming& t) {
  return use.Bind(first, t.schedule)
      .Bind(first + 1, DialectName(t.dialect))
      .Bind(first + 2, t.timezone)
      .Bind(first + 3, t.anchor_ms)
      .Bind(first + 4, t.enabled ? 1 : 0)
      .Bind(first + 5, MisfireName(t.misfire))
      .Bind(first + 6, OverlapName(t.overlap))
      .Bind(first + 7, t.misfire_cap);
}

}  // namespace

Status Store::ForEachJobHead(const std::function<void(const JobHead&)>& fn, int64_t* unreadable) {
  auto use = job_heads_.Bind();
  JobHead head;
  while (use.Step()) {
    if (!ReadHead(use, &head) && unreadable != nullptr) ++*unreadable;
    fn(head);
  }
  return use.status();
}

namespace {

// Columns 0-14 of all_jobs_ and get_job_.
JobRow ReadJob(const Statement::Use& use) {
  JobHead h;
  (void)ReadHead(use, &h);
  return JobRow{h.id,
                std::string(h.name),
                use.Text(13),
                h.active,
                h.paused,
                h.next_fire_ms,
                use.Int(14),
                {std::string(h.schedule), h.dialect, std::string(h.timezone), h.anchor_ms,
                 h.enabled, h.misfire, h.overlap, h.misfire_cap}};
}

}  // namespace

Status Store::ForEachJob(const std::function<void(JobRow&&)>& fn) {
  auto use = all_jobs_.Bind();
  while (use.Step()) fn(ReadJob(use));
  return use.status();
}

Result<JobRow> Store::GetJob(int64_t id) {
  auto use = get_job_.Bind();
  use.Bind(1, id);
  if (use.Step()) return ReadJob(use);
  if (!use.status().ok()) return use.status();
  return Status::NotFound("job " + std::to_string(id));
}

Result<int64_t> Store::InsertJob(const JobRow& row, int64_t at_ms) {
  auto use = insert_job_.Bind();
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

Status Store::UpdateJobSpec(int64_t id, const std::string& spec_json, const JobTiming& timing,
                            int64_t revision, int64_t at_ms) {
  auto use = update_job_spec_.Bind();
  use.Bind(1, id).Bind(2, spec_json).Bind(3, revision).Bind(4, at_ms);
  return BindTiming(use, 5, timing).ExecExpectingChanges(1);
}

Status Store::DeactivateJob(int64_t id, int64_t revision, int64_t at_ms) {
  return deactivate_job_.Bind().Bind(1, id).Bind(2, revision).Bind(3, at_ms).ExecExpectingChanges(1);
}

Status Store::SetJobPaused(int64_t id, bool paused) {
  return set_job_paused_.Bind().Bind(1, id).Bind(2, paused ? 1 : 0).ExecExpectingChanges(1);
}

Status Store::SetNextFire(int64_t id, std::optional<int64_t> next_fire_ms) {
  return set_next_fire_.Bind().Bind(1, id).Bind(2, next_fire_ms).Exec();
}

Status Store::InsertRun(RunRecord& run) {
  Status s = insert_run_.Bind()
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
                 .Exec();
  if (!s.ok()) return s;
  run.id = sqlite3_last_insert_rowid(db_.handle());
  for (ShardRecord& shard : run.shards) {
    shard.run_id = run.id;
    s = insert_shard_.Bind()
            .Bind(1, run.id)
            .Bind(2, shard.index)
            .Bind(3, RunStateName(shard.state))
            .Bind(4, shard.not_before_ms)
            .Exec();
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Status Store::InsertMiss(const MissRow& m) {
  return insert_miss_.Bind()
      .Bind(1, m.job_id)
      .Bind(2, m.first_ms)
      .Bind(3, m.last_ms)
      .Bind(4, m.count)
      .Bind(5, m.reason)
      .Bind(6, m.at_ms)
      .Exec();
}

Status Store::UpdateRunState(int64_t run_id, RunState state, std::optional<int64_t> finished_ms,
                             const std::string& note) {
  return update_run_state_.Bind()
      .Bind(1, run_id)
      .Bind(2, RunStateName(state))
      .Bind(3, finished_ms)
      .Bind(4, note)
      .ExecExpectingChanges(1);
}

Status Store::UpdateShard(const ShardRecord& s) {
  return update_shard_.Bind()
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
      .ExecExpectingChanges(1);
}

RunRecord Store::ReadRun(const Statement::Use& use) {
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
  return r;
}

namespace {

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
  return s;
}

}  // namespace

Status Store::LoadShards(RunRecord& run) {
  auto use = shards_of_run_.Bind();
  use.Bind(1, run.id);
  while (use.Step()) run.shards.push_back(ReadShard(use));
  return use.status();
}

Result<std::optional<ShardRecord>> Store::GetShard(int64_t run_id, int index) {
  auto use = get_shard_.Bind();
  use.Bind(1, run_id).Bind(2, index);
  std::optional<ShardRecord> shard;
  if (use.Step()) shard = ReadShard(use);
  if (!use.status().ok()) return use.status();
  return shard;
}

Result<std::optional<RunRecord>> Store::GetRun(int64_t id) {
  std::optional<RunRecord> run;
  {
    auto use = get_run_.Bind();
    use.Bind(1, id);
    if (use.Step()) run = ReadRun(use);
    if (!use.status().ok()) return use.status();
  }
  if (run) {
    if (Status s = LoadShards(*run); !s.ok()) return s;
  }
  return run;
}

Result<std::optional<int64_t>> Store::FindRunByKey(int64_t job_id, const std::string& key) {
  auto use = find_run_by_key_.Bind();
  use.Bind(1, job_id).Bind(2, key);
  std::optional<int64_t> id;
  if (use.Step()) id = use.Int(0);
  if (!use.status().ok()) return use.status();
  return id;
}

Result<std::vector<RunRecord>> Store::ListRuns(const RunFilter& f) {
  // Built per call: the filters are optional and this is not on a hot path.
  std::string sql = RunQuery(
      "WHERE (?1 IS NULL OR r.job_id = ?1) AND (?2 IS NULL OR r.state = ?2) "
      "AND (?3 IS NULL OR r.created_ms >= ?3) AND (?4 IS NULL OR r.id < ?4) "
      "ORDER BY r.id DESC LIMIT ?5");
  Statement st;
  if (Status s = st.Prepare(db_.handle(), sql); !s.ok()) return s;
  std::vector<RunRecord> runs;
  {
    auto use = st.Bind();
    use.Bind(1, f.job_id).Bind(3, f.since_ms).Bind(4, f.before_id).Bind(5, f.limit);
    if (f.state) use.Bind(2, RunStateName(*f.state));
    while (use.Step()) runs.push_back(ReadRun(use));
    if (!use.status().ok()) return use.status();
  }
  for (RunRecord& r : runs) {
    if (Status s = LoadShards(r); !s.ok()) return s;
  }
  return runs;
}

Status Store::ForEachOpenRun(const std::function<void(RunRecord&&)>& fn) {
  return ForEachRunOf(open_runs_, fn);
}

Status Store::ForEachRun(const std::function<void(RunRecord&&)>& fn) {
  return ForEachRunOf(all_runs_, fn);
}

Status Store::ForEachRunOf(Statement& query, const std::function<void(RunRecord&&)>& fn) {
  std::vector<RunRecord> runs;
  {
    auto use = query.Bind();
    while (use.Step()) runs.push_back(ReadRun(use));
    if (!use.status().ok()) return use.status();
  }
  for (RunRecord& r : runs) {
    if (Status s = LoadShards(r); !s.ok()) return s;
    fn(std::move(r));
  }
  return Status::Ok();
}

Result<std::vector<MissRow>> Store::ListMisses(int64_t job_id, int64_t since_ms) {
  auto use = list_misses_.Bind();
  use.Bind(1, job_id).Bind(2, since_ms);
  std::vector<MissRow> out;
  while (use.Step()) {
    out.push_back({use.Int(0), use.Int(1), use.Int(2), use.Int(3), use.Text(4), use.Int(5)});
  }
  if (!use.status().ok()) return use.status();
  return out;
}

Status Store::ForEachLastResult(const std::function<void(int64_t, RunState, int64_t)>& fn) {
  auto use = last_results_.Bind();
  while (use.Step()) {
    fn(use.Int(0), ParseRunState(use.Text(1)).value_or(RunState::kFailed), use.Int(2));
  }
  return use.status();
}

Status Store::PutLease(const LeaseRow& l) {
  return put_lease_.Bind().Bind(1, l.key).Bind(2, l.holder).Bind(3, l.token).Bind(4, l.granted_ms)
      .Exec();
}

Status Store::DeleteLease(const std::string& key) {
  return delete_lease_.Bind().Bind(1, key).Exec();
}

Status Store::ForEachLease(const std::function<void(LeaseRow&&)>& fn) {
  auto use = all_leases_.Bind();
  while (use.Step()) fn({use.Text(0), use.Text(1), use.Int(2), use.Int(3)});
  return use.status();
}

Status Store::PutAgent(const AgentRow& a) {
  return put_agent_.Bind()
      .Bind(1, a.name)
      .Bind(2, a.labels_json)
      .Bind(3, a.slots)
      .Bind(4, a.version)
      .Bind(5, a.last_seen_ms)
      .Bind(6, a.draining ? 1 : 0)
      .Exec();
}

Status Store::ForEachAgent(const std::function<void(AgentRow&&)>& fn) {
  auto use = all_agents_.Bind();
  while (use.Step()) {
    fn({use.Text(0), use.Text(1), static_cast<int>(use.Int(2)), use.Text(3), use.Int(4),
        use.Int(5) != 0});
  }
  return use.status();
}

Status Store::DeleteAgent(const std::string& name) {
  return delete_agent_.Bind().Bind(1, name).ExecExpectingChanges(1);
}

Result<int64_t> Store::InsertToken(const TokenRow& t) {
  Status s = insert_token_.Bind()
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

Status Store::RevokeToken(int64_t id, int64_t at_ms) {
  return revoke_token_.Bind().Bind(1, id).Bind(2, at_ms).ExecExpectingChanges(1);
}

Result<int64_t> Store::RevokeAgentTokens(const std::string& agent, int64_t at_ms) {
  Status s = revoke_agent_tokens_.Bind().Bind(1, agent).Bind(2, at_ms).Exec();
  if (!s.ok()) return s;
  return sqlite3_changes64(db_.handle());
}

Status Store::ForEachToken(const std::function<void(TokenRow&&)>& fn) {
  auto use = all_tokens_.Bind();
  while (use.Step()) {
    fn({use.Int(0), use.Text(1), use.Text(2), use.Text(3), use.Text(4), use.Int(5),
        use.OptInt(6), use.Text(7), use.Text(8), use.OptInt(9)});
  }
  return use.status();
}

Status Store::InsertEvent(int64_t at_ms, std::string_view kind, std::string_view actor,
                          std::string_view subject, std::string_view detail) {
  return InsertEvent(EventRow{0, at_ms, std::string(kind), std::string(actor), std::nullopt,
                              std::string(subject), std::string(detail)});
}

Status Store::InsertEvent(const EventRow& e) {
  return insert_event_.Bind()
      .Bind(1, e.at_ms)
      .Bind(2, e.kind)
      .Bind(3, e.actor)
      .Bind(4, e.subject)
      .Bind(5, e.detail)
      .Bind(6, e.token_id)
      .Exec();
}

Result<std::vector<EventRow>> Store::ListEvents(const EventFilter& f) {
  // The time bound becomes an id bound first (events_by_time), so that every query below
  // is a range of ids on the table or on one index, never a scan of older events.
  int64_t low = 0;
  if (f.since_ms) {
    auto use = first_event_since_.Bind();
    use.Bind(1, *f.since_ms);
    low = use.Step() ? use.Int(0) : INT64_MAX;
    if (!use.status().ok()) return use.status();
  }
  Statement& st = f.kind && f.actor ? list_events_by_kind_actor_
                  : f.kind          ? list_events_by_kind_
                  : f.actor         ? list_events_by_actor_
                                    : list_events_;
  auto use = st.Bind();
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

}  // namespace jobctl::store
