// Each method's SQL is a `static const pg::Sql` at its top, bound with $1..$n in the same
// order below it; pg::Connection::Exec prepares it the first time and reuses it after.
// The scans of jobs, runs and leases read in pages, so that neither side holds those
// tables whole in memory.
#include "store/pg_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <thread>

#include "base/log.h"
#include "store/pg_migrations.h"

namespace jobctl::store {
namespace {

using pg::Params;
using pg::Rows;
using pg::Sql;

// Rows a scan reads at a time.
constexpr int kPage = 5000;

constexpr const char* kRunColumns =
    "r.id, r.job_id, j.name, r.reason, r.scheduled_ms, r.created_ms, r.state, r.trace_id, "
    "COALESCE(r.idempotency_key, ''), r.env, r.note, r.finished_ms, r.shard_total, "
    "r.not_before_ms, COALESCE(r.flow_run_id, 0), r.flow_step, r.flow";

// Runs with their job's name, read by ReadRun: columns 0 to 16.
std::string RunQuery(const char* where_and_order) {
  return std::string("SELECT ") + kRunColumns + " FROM runs r JOIN jobs j ON j.id = r.job_id " +
         where_and_order;
}

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

// Events newest first within ids [$1, $2) and at or after $3 ms, then `filter` (from $4
// on), at most $`limit` of them.
std::string EventQuery(const char* filter, int limit) {
  return std::string(
             "SELECT id, at_ms, kind, actor, token_id, subject, detail FROM events "
             "WHERE id >= $1 AND id < $2 AND at_ms >= $3 ") +
         filter + "ORDER BY id DESC LIMIT $" + std::to_string(limit);
}

bool ReadHead(const Rows& rows, int i, JobHead* h) {
  h->id = rows.Int(i, 0);
  h->name = rows.View(i, 1);
  h->active = rows.Bool(i, 2);
  h->paused = rows.Bool(i, 3);
  h->next_fire_ms = rows.OptInt(i, 4);
  h->schedule = rows.View(i, 5);
  h->timezone = rows.View(i, 7);
  h->anchor_ms = rows.Int(i, 8);
  h->enabled = rows.Bool(i, 9);
  h->misfire_cap = static_cast<int>(rows.Int(i, 12));
  h->expect_success_within_ms = rows.Int(i, 13);
  h->flow_id = rows.OptInt(i, 15);
  h->on_labels = rows.View(i, 16);
  h->updated_ms = rows.Int(i, 17);
  std::optional<Dialect> dialect = ParseDialect(rows.View(i, 6));
  std::optional<Misfire> misfire = ParseMisfire(rows.View(i, 10));
  std::optional<Overlap> overlap = ParseOverlap(rows.View(i, 11));
  std::optional<JobKind> kind = ParseJobKind(rows.View(i, 14));
  h->dialect = dialect.value_or(Dialect::kCron);
  h->misfire = misfire.value_or(Misfire::kFireOnce);
  h->overlap = overlap.value_or(Overlap::kForbid);
  h->kind = kind.value_or(JobKind::kJob);
  return dialect && misfire && overlap && kind;
}

// Columns 0-19 of JobQuery(", spec, revision ...").
JobRow ReadJob(const Rows& rows, int i) {
  JobHead h;
  ReadHead(rows, i, &h);
  return JobRow{h.id,
                std::string(h.name),
                rows.Text(i, 18),
                h.active,
                h.paused,
                h.next_fire_ms,
                rows.Int(i, 19),
                {std::string(h.schedule), h.dialect, std::string(h.timezone), h.anchor_ms,
                 h.enabled, h.misfire, h.overlap, h.misfire_cap, h.expect_success_within_ms, h.kind,
                 h.flow_id, std::string(h.on_labels)}};
}

Params& AddTiming(Params& p, const JobTiming& t) {
  return p.Add(t.schedule)
      .Add(DialectName(t.dialect))
      .Add(t.timezone)
      .Add(t.anchor_ms)
      .Add(t.enabled)
      .Add(MisfireName(t.misfire))
      .Add(OverlapName(t.overlap))
      .Add(t.misfire_cap)
      .Add(t.expect_success_within_ms)
      .Add(JobKindName(t.kind))
      .Add(t.flow_id)
      .Add(t.on_labels);
}

RunRecord ReadRun(const Rows& rows, int i) {
  RunRecord r;
  r.id = rows.Int(i, 0);
  r.job_id = rows.Int(i, 1);
  r.job = rows.Text(i, 2);
  r.reason = ParseRunReason(rows.View(i, 3)).value_or(RunReason::kSchedule);
  r.scheduled_ms = rows.Int(i, 4);
  r.created_ms = rows.Int(i, 5);
  r.state = ParseRunState(rows.View(i, 6)).value_or(RunState::kFailed);
  r.trace_id = rows.Text(i, 7);
  r.idempotency_key = rows.Text(i, 8);
  r.env_json = rows.Text(i, 9);
  r.note = rows.Text(i, 10);
  r.finished_ms = rows.OptInt(i, 11);
  r.shard_total = static_cast<int>(rows.Int(i, 12));
  r.not_before_ms = rows.Int(i, 13);
  r.flow_run_id = rows.Int(i, 14);
  r.flow_step = static_cast<int>(rows.Int(i, 15));
  r.flow_json = rows.Text(i, 16);
  return r;
}

ShardRecord ReadShard(const Rows& rows, int i) {
  ShardRecord s;
  s.run_id = rows.Int(i, 0);
  s.index = static_cast<int>(rows.Int(i, 1));
  s.state = ParseRunState(rows.View(i, 2)).value_or(RunState::kFailed);
  s.attempt = static_cast<int>(rows.Int(i, 3));
  s.agent = rows.Text(i, 4);
  s.token = rows.Int(i, 5);
  s.exit_code = rows.OptInt(i, 6);
  s.outcome = rows.Text(i, 7);
  s.message = rows.Text(i, 8);
  s.started_ms = rows.OptInt(i, 9);
  s.finished_ms = rows.OptInt(i, 10);
  s.not_before_ms = rows.Int(i, 11);
  s.lost_count = static_cast<int>(rows.Int(i, 12));
  s.outputs_json = rows.Text(i, 13);
  s.peak_rss_bytes = rows.OptInt(i, 14);
  s.cpu_ms = rows.OptInt(i, 15);
  return s;
}

// An array literal of numbers, e.g. {1,2,3}.
template <typename T, typename F>
std::string ArrayOf(const std::vector<T>& items, F value) {
  std::string out = "{";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ',';
    out += value(items[i]);
  }
  return out + "}";
}

}  // namespace

Result<std::unique_ptr<PgStore>> PgStore::Open(const std::string& url, const std::string& holder,
                                               int64_t hold_ttl_ms, bool standby) {
  Result<std::unique_ptr<pg::Connection>> conn = pg::Connection::Open(url);
  if (!conn.ok()) return conn.status();
  std::unique_ptr<PgStore> store(new PgStore());
  store->db_ = std::move(*conn);
  store->holder_ = holder;
  store->hold_ttl_ms_ = hold_ttl_ms;
  // Until it holds the database, a store notes when its lost connection was made again
  // (the database restarted or failed over): see TryHold.
  PgStore* self = store.get();
  store->db_->before_wait = [self] { return self->SendHeld(); };
  store->db_->on_reconnect = [self] {
    self->back_at_ = std::chrono::steady_clock::now();
    log::Info("standby: the database is back; the coordinator that held it may hold it again first",
              {{"hold_ttl_ms", self->hold_ttl_ms_}});
    return Status::Ok();
  };
  for (bool said = false;;) {
    Result<bool> got = store->TryHold();
    if (!got.ok()) return got.status();
    if (*got || standby) break;
    if (!said) {
      log::Info(
          "another coordinator holds the database; waiting until its session ends or it stops "
          "renewing its hold",
          {{"hold_ttl_ms", hold_ttl_ms}});
      said = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return store;
}

Result<bool> PgStore::TryHold() {
  if (held_) return true;
  if (epoch_ != 0) return false;  // held once and lost: for good
  // After this store's connection was lost and made again, the coordinator that held the
  // database gets hold_ttl to hold it again first: it reconnects within a second and
  // carries on, though the lock is free (on a promoted server it is: advisory locks are not
  // replicated).
  if (Returning()) return false;
  // The hold first, then the schema: a newer coordinator waiting to take over never
  // migrates the schema under the one that serves.
  Result<bool> got = TakeLock();
  if (!got.ok()) return got.status();
  if (!*got) {
    EndStaleHolder();
    return false;
  }
  if (Returning()) {
    // The connection was made again at this very statement: leave the lock for now.
    static const Sql kUnlock{"SELECT pg_advisory_unlock($1)"};
    static_cast<void>(db_->Exec(kUnlock, Params().Add(kHoldLock)));
    return false;
  }
  if (Status s = db_->Migrate("scheduler", PgSchedulerMigrations()); !s.ok()) return s;
  // The log sessions of earlier holders are ended (and waited for) first: one that was
  // stopped inside a transaction would otherwise keep its row locks, and this holder's first
  // write of the same output would wait for it (its loop with it) until it too is replaced.
  static const Sql kEndLogSessions{
      "SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_locks WHERE locktype = "
      "'advisory' AND granted AND classid = ($1::bigint >> 32)::oid AND objid = ($1::bigint & "
      "4294967295)::oid AND objsubid = 1 AND pid != pg_backend_pid()"};
  Result<Rows> ended = db_->Exec(kEndLogSessions, Params().Add(kHolderLogLock));
  if (!ended.ok()) return ended.status();
  if (ended->Int(0, 0) > 0) {
    log::Info("ended the log sessions of the coordinator that held the database before",
              {{"sessions", ended->Int(0, 0)}});
  }
  // A new epoch: the writes of every earlier holder are refused from now on (Begin).
  static const Sql kEpoch{
      "UPDATE leader SET epoch = epoch + 1, pid = pg_backend_pid(), holder = $1, "
      "renewed_at = now() WHERE id = 1 RETURNING epoch"};
  Result<Rows> epoch = db_->Exec(kEpoch, Params().Add(holder_));
  if (!epoch.ok()) return epoch.status();
  epoch_ = epoch->Int(0, 0);
  held_ = true;
  log::Info("the database is held by this coordinator", {{"epoch", epoch_}});
  db_->on_reconnect = [this] { return Rehold(); };
  return true;
}

bool PgStore::Returning() const {
  return back_at_ &&
         std::chrono::steady_clock::now() - *back_at_ < std::chrono::milliseconds(hold_ttl_ms_);
}

std::string PgStore::Holder() {
  static const Sql kSql{"SELECT holder FROM leader WHERE id = 1 AND pid != 0"};
  if (db_->in_transaction()) return "";
  Result<Rows> rows = db_->Exec(kSql);
  return rows.ok() && rows->size() == 1 ? rows->Text(0, 0) : "";
}

Result<bool> PgStore::TakeLock() {
  static const Sql kSql{"SELECT pg_try_advisory_lock($1)"};
  Result<Rows> rows = db_->Exec(kSql, Params().Add(kHoldLock));
  if (!rows.ok()) return rows.status();
  return rows->Bool(0, 0);
}

void PgStore::EndStaleHolder() {
  // The holder renews every second (CheckHold). One that has not for hold_ttl (frozen, or
  // its loop stuck) has its session ended, by the server's clock, which releases the lock;
  // only the session that holds the lock is ended. Before the first start there is no
  // leader table yet: nothing to do.
  static const Sql kSql{
      "SELECT l.holder, pg_terminate_backend(l.pid) FROM leader l WHERE l.id = 1 AND l.pid != 0 "
      "AND now() - l.renewed_at > make_interval(secs => $1::double precision / 1000) "
      "AND EXISTS (SELECT 1 FROM pg_locks k WHERE k.pid = l.pid AND k.locktype = 'advisory' "
      "AND k.granted AND k.classid = ($2::bigint >> 32)::oid "
      "AND k.objid = ($2::bigint & 4294967295)::oid AND k.objsubid = 1)"};
  Result<Rows> rows = db_->Exec(kSql, Params().Add(hold_ttl_ms_).Add(kHoldLock));
  if (rows.ok() && rows->size() > 0) {
    log::Warn("the coordinator holding the database stopped renewing its hold; ending its session",
              {{"holder", rows->Text(0, 0)}, {"hold_ttl_ms", hold_ttl_ms_}});
  }
}

Status PgStore::Lost() {
  if (held_) {
    held_ = false;
    log::Error(
        "lost the hold on the database: another coordinator may serve it now; refusing every "
        "write");
  }
  return Status::Unavailable("this coordinator no longer holds the database");
}

Status PgStore::Rehold() {
  // The session that held the lock is gone. Holding the database again is safe only if
  // nobody held it meanwhile: the lock free now, and the epoch still this coordinator's.
  static const Sql kSame{
      "UPDATE leader SET pid = pg_backend_pid(), renewed_at = now() WHERE id = 1 AND epoch = $1"};
  static const Sql kUnlock{"SELECT pg_advisory_unlock($1)"};
  Result<bool> got = TakeLock();
  if (!got.ok()) return got.status();
  if (!*got) return Lost();
  Result<Rows> same = db_->Exec(kSame, Params().Add(epoch_));
  if (same.ok() && same->affected() == 1) return Status::Ok();
  // Another coordinator held it in between: leave the lock to whoever waits for it.
  static_cast<void>(db_->Exec(kUnlock, Params().Add(kHoldLock)));
  return same.ok() ? Lost() : same.status();
}

void PgStore::CheckHold() {
  // The renewal standbys judge this coordinator by; a dead connection is found (and
  // reset, and the hold taken again or lost) here, not only at the next write.
  static const Sql kSql{"UPDATE leader SET renewed_at = now() WHERE id = 1 AND epoch = $1"};
  if (!held_ || db_->in_transaction()) return;
  Result<Rows> rows = db_->Exec(kSql, Params().Add(epoch_));
  if (rows.ok() && rows->affected() != 1) static_cast<void>(Lost());
}

Status PgStore::Begin() {
  // Every write transaction first checks the epoch, and keeps the row locked (FOR SHARE)
  // so that a coordinator taking over waits for it to end before its epoch begins.
  static const Sql kSql{"SELECT 1 FROM leader WHERE id = 1 AND epoch = $1 FOR SHARE"};
  if (!held_) return Lost();
  ClearHeld();
  if (Status s = db_->Begin(); !s.ok()) return s;
  if (pipelined_) {
    // Its outcome is read with those of the transaction's writes, before COMMIT is sent (or
    // at the first read before that): nothing commits in an epoch that is not this one.
    if (Status s = db_->Send(kSql, Params().Add(epoch_), 1, [this] { return Lost(); }); !s.ok()) {
      db_->Rollback();
      return s;
    }
    return Status::Ok();
  }
  Result<Rows> rows = db_->Exec(kSql, Params().Add(epoch_));
  if (rows.ok() && rows->size() == 1) return Status::Ok();
  db_->Rollback();
  return rows.ok() ? Lost() : rows.status();
}

Result<int64_t> PgStore::GetCounter(std::string_view name) {
  static const Sql kSql{"SELECT value FROM counters WHERE name = $1"};
  Result<Rows> rows = db_->Exec(kSql, Params().Add(name));
  if (!rows.ok()) return rows.status();
  return rows->size() > 0 ? rows->Int(0, 0) : 0;
}

Status PgStore::SetCounter(std::string_view name, int64_t value) {
  static const Sql kSql{
      "INSERT INTO counters(name, value) VALUES($1, $2) "
      "ON CONFLICT(name) DO UPDATE SET value = excluded.value"};
  return Write(kSql, Params().Add(name).Add(value));
}

Result<RevisionRow> PgStore::CurrentRevision() {
  static const Sql kSql{"SELECT id, text, author, at_ms FROM revisions ORDER BY id DESC LIMIT 1"};
  Result<Rows> rows = db_->Exec(kSql);
  if (!rows.ok()) return rows.status();
  RevisionRow row;
  if (rows->size() > 0)
    row = {rows->Int(0, 0), rows->Text(0, 1), rows->Text(0, 2), rows->Int(0, 3)};
  return row;
}

Result<int64_t> PgStore::InsertRevision(const std::string& text, const std::string& author,
                                        int64_t at_ms, const std::string& summary) {
  static const Sql kSql{
      "INSERT INTO revisions(text, author, at_ms, summary) VALUES($1, $2, $3, $4) RETURNING id"};
  Result<Rows> rows = db_->Exec(kSql, Params().Add(text).Add(author).Add(at_ms).Add(summary));
  if (!rows.ok()) return rows.status();
  return rows->Int(0, 0);
}

Status PgStore::ForEachJobHead(const std::function<void(const JobHead&)>& fn, int64_t* unreadable) {
  static const Sql kSql{JobQuery(" FROM jobs WHERE id > $1 ORDER BY id LIMIT 5000")};
  JobHead head;
  for (int64_t after = 0;;) {
    Result<Rows> rows = db_->Exec(kSql, Params().Add(after));
    if (!rows.ok()) return rows.status();
    for (int i = 0; i < rows->size(); ++i) {
      if (!ReadHead(*rows, i, &head) && unreadable != nullptr) ++*unreadable;
      fn(head);
      after = head.id;
    }
    if (rows->size() < kPage) return Status::Ok();
  }
}

Status PgStore::ForEachJob(const std::function<void(JobRow&&)>& fn) {
  static const Sql kSql{
      JobQuery(", spec, revision FROM jobs WHERE id > $1 ORDER BY id LIMIT 5000")};
  for (int64_t after = 0;;) {
    Result<Rows> rows = db_->Exec(kSql, Params().Add(after));
    if (!rows.ok()) return rows.status();
    for (int i = 0; i < rows->size(); ++i) {
      JobRow row = ReadJob(*rows, i);
      after = row.id;
      fn(std::move(row));
    }
    if (rows->size() < kPage) return Status::Ok();
  }
}

Result<JobRow> PgStore::GetJob(int64_t id) {
  static const Sql kSql{JobQuery(", spec, revision FROM jobs WHERE id = $1")};
  Result<Rows> rows = db_->Exec(kSql, Params().Add(id));
  if (!rows.ok()) return rows.status();
  if (rows->size() == 0) return Status::NotFound("job " + std::to_string(id));
  return ReadJob(*rows, 0);
}

Status PgStore::GetJobs(const std::vector<int64_t>& ids, const std::function<void(JobRow&&)>& fn) {
  if (ids.empty()) return Status::Ok();
  static const Sql kSql{JobQuery(", spec, revision FROM jobs WHERE id = ANY($1::bigint[])")};
  pg::ArrayLiteral list;
  for (int64_t id : ids) list.Add(id);
  Result<Rows> rows = db_->Exec(kSql, Params().Add(list));
  if (!rows.ok()) return rows.status();
  for (int i = 0; i < rows->size(); ++i) fn(ReadJob(*rows, i));
  return Status::Ok();
}

Result<int64_t> PgStore::InsertJob(const JobRow& row, int64_t at_ms) {
  // ON CONFLICT DO NOTHING reports a taken name without aborting the transaction, as the
  // other backend's constraint error does not.
  static const Sql kSql{
      "INSERT INTO jobs(name, spec, active, paused, next_fire_ms, revision, updated_ms, "
      "schedule, dialect, timezone, anchor_ms, enabled, misfire, overlap, misfire_cap, "
      "expect_success_within_ms, kind, flow_id, on_labels) "
      "VALUES($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, "
      "$19) "
      "ON CONFLICT (name) DO NOTHING RETURNING id"};
  Params p;
  p.Add(row.name)
      .Add(row.spec_json)
      .Add(row.active)
      .Add(row.paused)
      .Add(row.next_fire_ms)
      .Add(row.revision)
      .Add(at_ms);
  Result<Rows> rows = db_->Exec(kSql, AddTiming(p, row.timing));
  if (!rows.ok()) return rows.status();
  if (rows->size() == 0) return Status::Conflict("a job named " + row.name + " exists");
  return rows->Int(0, 0);
}

Status PgStore::UpdateJobSpec(int64_t id, const std::string& spec_json, const JobTiming& timing,
                              int64_t revision, int64_t at_ms) {
  static const Sql kSql{
      "UPDATE jobs SET spec = $2, active = true, revision = $3, updated_ms = $4, schedule = $5, "
      "dialect = $6, timezone = $7, anchor_ms = $8, enabled = $9, misfire = $10, overlap = $11, "
      "misfire_cap = $12, expect_success_within_ms = $13, kind = $14, flow_id = $15, "
      "on_labels = $16 "
      "WHERE id = $1"};
  Params p;
  p.Add(id).Add(spec_json).Add(revision).Add(at_ms);
  return db_->ExecExpectingChanges(kSql, AddTiming(p, timing), 1);
}

Status PgStore::DeactivateJob(int64_t id, int64_t revision, int64_t at_ms) {
  static const Sql kSql{
      "UPDATE jobs SET active = false, revision = $2, updated_ms = $3 WHERE id = $1"};
  return db_->ExecExpectingChanges(kSql, Params().Add(id).Add(revision).Add(at_ms), 1);
}

Status PgStore::SetJobPaused(int64_t id, bool paused) {
  static const Sql kSql{"UPDATE jobs SET paused = $2 WHERE id = $1"};
  return db_->ExecExpectingChanges(kSql, Params().Add(id).Add(paused), 1);
}

Status PgStore::Write(const Sql& sql, const Params& params, int64_t changes) {
  if (pipelined_) return db_->Send(sql, params, changes);
  if (changes >= 0) return db_->ExecExpectingChanges(sql, params, changes);
  return db_->Exec(sql, params).status();
}

Status PgStore::SetNextFire(int64_t id, std::optional<int64_t> next_fire_ms) {
  static const Sql kSql{"UPDATE jobs SET next_fire_ms = $2 WHERE id = $1"};
  return Write(kSql, Params().Add(id).Add(next_fire_ms));
}

Status PgStore::SetNextFires(const std::vector<std::pair<int64_t, std::optional<int64_t>>>& next) {
  if (next.empty()) return Status::Ok();
  static const Sql kSql{
      "UPDATE jobs SET next_fire_ms = u.t FROM unnest($1::bigint[], $2::bigint[]) AS u(id, t) "
      "WHERE jobs.id = u.id"};
  pg::ArrayLiteral ids, at;
  for (const auto& [id, t] : next) {
    ids.Add(id);
    at.Add(t);
  }
  return Write(kSql, Params().Add(ids).Add(at));
}

Status PgStore::InsertRuns(std::vector<RunRecord>& runs, std::vector<bool>& inserted) {
  inserted.assign(runs.size(), false);
  if (runs.empty()) return Status::Ok();
  // Every run gets its id from the sequence first (u), so that its shards can name it; a run
  // whose instant or key is taken inserts nothing (r) and neither do its shards. The result
  // is the (position, id) of each run inserted.
  static const Sql kSql{
      "WITH u AS (SELECT nextval((SELECT pg_get_serial_sequence('runs', 'id'))::regclass) AS id, "
      "v.* FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::bigint[], $5::text[], "
      "$6::text[], $7::text[], $8::text[], $9::text[], $10::bigint[], $11::integer[], "
      "$12::bigint[], $17::bigint[], $18::integer[], $19::text[]) WITH ORDINALITY AS "
      "v(job_id, reason, scheduled_ms, created_ms, state, trace_id, idempotency_key, env, note, "
      "finished_ms, shard_total, not_before_ms, flow_run_id, flow_step, flow, ord)), "
      "r AS (INSERT INTO runs(id, job_id, reason, scheduled_ms, created_ms, state, trace_id, "
      "idempotency_key, env, note, finished_ms, shard_total, not_before_ms, flow_run_id, "
      "flow_step, flow) "
      "SELECT id, job_id, reason, scheduled_ms, created_ms, state, trace_id, "
      "NULLIF(idempotency_key, ''), env, note, finished_ms, shard_total, not_before_ms, "
      "NULLIF(flow_run_id, 0), flow_step, flow "
      "FROM u ORDER BY ord ON CONFLICT DO NOTHING RETURNING id), "
      "s AS (INSERT INTO shards(run_id, idx, state, attempt, not_before_ms) "
      "SELECT u.id, sh.idx, sh.state, 1, sh.nb FROM unnest($13::bigint[], $14::integer[], "
      "$15::text[], $16::bigint[]) AS sh(ord, idx, state, nb) "
      "JOIN u ON u.ord = sh.ord JOIN r ON r.id = u.id) "
      "SELECT u.ord, u.id FROM u JOIN r ON r.id = u.id"};
  pg::ArrayLiteral job, reason, scheduled, created, state, trace, key, env, note, finished, total,
      not_before, sh_run, sh_idx, sh_state, sh_nb, flow_run, flow_step, flow;
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunRecord& run = runs[i];
    job.Add(run.job_id);
    reason.Add(RunReasonName(run.reason));
    scheduled.Add(run.scheduled_ms);
    created.Add(run.created_ms);
    state.Add(RunStateName(run.state));
    trace.Add(run.trace_id);
    key.Add(run.idempotency_key);
    env.Add(run.env_json);
    note.Add(run.note);
    finished.Add(run.finished_ms);
    total.Add(run.shard_total);
    not_before.Add(run.not_before_ms);
    flow_run.Add(run.flow_run_id);
    flow_step.Add(run.flow_step);
    flow.Add(run.flow_json);
    for (const ShardRecord& shard : run.shards) {
      sh_run.Add(static_cast<int64_t>(i + 1));
      sh_idx.Add(shard.index);
      sh_state.Add(RunStateName(shard.state));
      sh_nb.Add(shard.not_before_ms);
    }
  }
  Params p;
  p.Add(job)
      .Add(reason)
      .Add(scheduled)
      .Add(created)
      .Add(state)
      .Add(trace)
      .Add(key)
      .Add(env)
      .Add(note)
      .Add(finished)
      .Add(total)
      .Add(not_before)
      .Add(sh_run)
      .Add(sh_idx)
      .Add(sh_state)
      .Add(sh_nb)
      .Add(flow_run)
      .Add(flow_step)
      .Add(flow);
  Result<Rows> rows = db_->Exec(kSql, p);
  if (!rows.ok()) return rows.status();
  for (int i = 0; i < rows->size(); ++i) {
    int64_t ord = rows->Int(i, 0);
    if (ord < 1 || ord > static_cast<int64_t>(runs.size())) {
      return Status::Corrupt("runs inserted: position " + std::to_string(ord) + " of " +
                             std::to_string(runs.size()));
    }
    RunRecord& run = runs[static_cast<size_t>(ord - 1)];
    run.id = rows->Int(i, 1);
    for (ShardRecord& shard : run.shards) shard.run_id = run.id;
    inserted[static_cast<size_t>(ord - 1)] = true;
  }
  return Status::Ok();
}

Status PgStore::InsertRun(RunRecord& run) {
  // The run and its shards in one statement (one round trip a fire). A taken instant or
  // key inserts nothing and returns no id, without aborting the transaction.
  static const Sql kSql{
      "WITH r AS (INSERT INTO runs(job_id, reason, scheduled_ms, created_ms, state, trace_id, "
      "idempotency_key, env, note, finished_ms, shard_total, not_before_ms, flow_run_id, "
      "flow_step, flow) "
      "VALUES($1, $2, $3, $4, $5, $6, NULLIF($7, ''), $8, $9, $10, $11, $12, NULLIF($16::bigint, "
      "0), "
      "$17, $18) ON CONFLICT DO NOTHING RETURNING id), "
      "s AS (INSERT INTO shards(run_id, idx, state, attempt, not_before_ms) "
      "SELECT r.id, u.idx, u.state, 1, u.nb FROM r, "
      "unnest($13::integer[], $14::text[], $15::bigint[]) AS u(idx, state, nb)) "
      "SELECT id FROM r"};
  Params p;
  p.Add(run.job_id)
      .Add(RunReasonName(run.reason))
      .Add(run.scheduled_ms)
      .Add(run.created_ms)
      .Add(RunStateName(run.state))
      .Add(run.trace_id)
      .Add(run.idempotency_key)
      .Add(run.env_json)
      .Add(run.note)
      .Add(run.finished_ms)
      .Add(run.shard_total)
      .Add(run.not_before_ms)
      .Add(ArrayOf(run.shards, [](const ShardRecord& s) { return std::to_string(s.index); }))
      .Add(ArrayOf(run.shards,
                   [](const ShardRecord& s) { return std::string(RunStateName(s.state)); }))
      .Add(
          ArrayOf(run.shards, [](const ShardRecord& s) { return std::to_string(s.not_before_ms); }))
      .Add(run.flow_run_id)
      .Add(run.flow_step)
      .Add(run.flow_json);
  Result<Rows> rows = db_->Exec(kSql, p);
  if (!rows.ok()) return rows.status();
  if (rows->size() == 0) {
    return Status::Conflict("job " + std::to_string(run.job_id) +
                            ": that instant or idempotency key already has a run");
  }
  run.id = rows->Int(0, 0);
  for (ShardRecord& shard : run.shards) shard.run_id = run.id;
  return Status::Ok();
}

Status PgStore::InsertMiss(const MissRow& m) {
  static const Sql kSql{
      "INSERT INTO misses(job_id, first_ms, last_ms, count, reason, at_ms) "
      "VALUES($1, $2, $3, $4, $5, $6)"};
  return Write(kSql, Params()
                         .Add(m.job_id)
                         .Add(m.first_ms)
                         .Add(m.last_ms)
                         .Add(m.count)
                         .Add(m.reason)
                         .Add(m.at_ms));
}

Status PgStore::UpdateRunState(int64_t run_id, RunState state, std::optional<int64_t> finished_ms,
                               const std::string& note) {
  static const Sql kSql{
      "UPDATE runs SET state = $2, finished_ms = $3, note = CASE WHEN $4 = '' THEN note "
      "ELSE $4 END WHERE id = $1"};
  if (pipelined_ && db_->in_transaction()) {
    auto [it, added] = held_states_.try_emplace(run_id, StateWrite{state, finished_ms, note});
    if (!added) {
      it->second.state = state;
      it->second.finished_ms = finished_ms;
      if (!note.empty()) it->second.note = note;
    }
    return Status::Ok();
  }
  return Write(kSql, Params().Add(run_id).Add(RunStateName(state)).Add(finished_ms).Add(note), 1);
}

Status PgStore::UpdateShard(const ShardRecord& s) {
  if (pipelined_ && db_->in_transaction()) {
    held_shards_.insert_or_assign({s.run_id, s.index}, s);
    return Status::Ok();
  }
  static const Sql kSql{
      "UPDATE shards SET state = $3, attempt = $4, agent = $5, token = $6, exit_code = $7, "
      "outcome = $8, message = $9, started_ms = $10, finished_ms = $11, not_before_ms = $12, "
      "lost_count = $13, outputs = $14, peak_rss_bytes = $15, cpu_ms = $16 "
      "WHERE run_id = $1 AND idx = $2"};
  return Write(kSql,
               Params()
                   .Add(s.run_id)
                   .Add(s.index)
                   .Add(RunStateName(s.state))
                   .Add(s.attempt)
                   .Add(s.agent)
                   .Add(s.token)
                   .Add(s.exit_code)
                   .Add(s.outcome)
                   .Add(s.message)
                   .Add(s.started_ms)
                   .Add(s.finished_ms)
                   .Add(s.not_before_ms)
                   .Add(s.lost_count)
                   .Add(s.outputs_json)
                   .Add(s.peak_rss_bytes)
                   .Add(s.cpu_ms),
               1);
}

Status PgStore::LoadShards(std::vector<RunRecord>& runs) {
  static const Sql kSql{ShardQuery("WHERE run_id = ANY($1::bigint[]) ORDER BY run_id, idx")};
  if (runs.empty()) return Status::Ok();
  Result<Rows> rows = db_->Exec(
      kSql, Params().Add(ArrayOf(runs, [](const RunRecord& r) { return std::to_string(r.id); })));
  if (!rows.ok()) return rows.status();
  std::unordered_map<int64_t, RunRecord*> by_id;
  for (RunRecord& r : runs) by_id[r.id] = &r;
  for (int i = 0; i < rows->size(); ++i) {
    ShardRecord s = ReadShard(*rows, i);
    auto it = by_id.find(s.run_id);
    if (it != by_id.end()) it->second->shards.push_back(std::move(s));
  }
  return Status::Ok();
}

Result<std::optional<ShardRecord>> PgStore::GetShard(int64_t run_id, int index) {
  static const Sql kSql{ShardQuery("WHERE run_id = $1 AND idx = $2")};
  Result<Rows> rows = db_->Exec(kSql, Params().Add(run_id).Add(index));
  if (!rows.ok()) return rows.status();
  std::optional<ShardRecord> shard;
  if (rows->size() > 0) shard = ReadShard(*rows, 0);
  return shard;
}

Result<std::optional<RunRecord>> PgStore::GetRun(int64_t id) {
  static const Sql kSql{RunQuery("WHERE r.id = $1")};
  Result<Rows> rows = db_->Exec(kSql, Params().Add(id));
  if (!rows.ok()) return rows.status();
  if (rows->size() == 0) return std::optional<RunRecord>();
  std::vector<RunRecord> runs{ReadRun(*rows, 0)};
  if (Status s = LoadShards(runs); !s.ok()) return s;
  return std::optional<RunRecord>(std::move(runs[0]));
}

Result<std::optional<int64_t>> PgStore::FindRunByKey(int64_t job_id, const std::string& key) {
  static const Sql kSql{"SELECT id FROM runs WHERE job_id = $1 AND idempotency_key = $2"};
  Result<Rows> rows = db_->Exec(kSql, Params().Add(job_id).Add(key));
  if (!rows.ok()) return rows.status();
  std::optional<int64_t> id;
  if (rows->size() > 0) id = rows->Int(0, 0);
  return id;
}

Result<std::vector<RunRecord>> PgStore::ListRuns(const RunFilter& f) {
  static const Sql kSql{
      RunQuery("WHERE ($1::bigint IS NULL OR r.job_id = $1) AND ($2::text IS NULL OR "
               "r.state = $2) AND ($3::bigint IS NULL OR r.created_ms >= $3) AND "
               "($4::bigint IS NULL OR r.id < $4) ORDER BY r.id DESC LIMIT $5")};
  // A trace's runs through its index: a generic plan for "$n IS NULL OR" would not use it.
  static const Sql kOfTrace{
      RunQuery("WHERE r.trace_id = $6 AND ($1::bigint IS NULL OR r.job_id = $1) AND "
               "($2::text IS NULL OR r.state = $2) AND ($3::bigint IS NULL OR r.created_ms >= $3) "
               "AND ($4::bigint IS NULL OR r.id < $4) ORDER BY r.id DESC LIMIT $5")};
  Params p;
  p.Add(f.job_id);
  if (f.state) {
    p.Add(RunStateName(*f.state));
  } else {
    p.Add(std::nullopt);
  }
  p.Add(f.since_ms).Add(f.before_id).Add(f.limit);
  if (!f.trace_id.empty()) p.Add(f.trace_id);
  Result<Rows> rows = db_->Exec(f.trace_id.empty() ? kSql : kOfTrace, p);
  if (!rows.ok()) return rows.status();
  std::vector<RunRecord> runs;
  for (int i = 0; i < rows->size(); ++i) runs.push_back(ReadRun(*rows, i));
  if (Status s = LoadShards(runs); !s.ok()) return s;
  return runs;
}

Result<std::vector<RunRecord>> PgStore::StepRuns(int64_t flow_run_id) {
  static const Sql kSql{RunQuery("WHERE r.flow_run_id = $1 ORDER BY r.flow_step")};
  Result<Rows> rows = db_->Exec(kSql, Params().Add(flow_run_id));
  if (!rows.ok()) return rows.status();
  std::vector<RunRecord> runs;
  for (int i = 0; i < rows->size(); ++i) runs.push_back(ReadRun(*rows, i));
  if (Status s = LoadShards(runs); !s.ok()) return s;
  return runs;
}

Status PgStore::ForEachOpenRun(const std::function<void(RunRecord&&)>& fn) {
  static const Sql kSql{
      RunQuery("WHERE r.state IN ('pending', 'running') AND r.id > $1 ORDER BY r.id LIMIT 5000")};
  return ForEachRunOf(kSql, fn);
}

Status PgStore::ForEachRun(const std::function<void(RunRecord&&)>& fn) {
  static const Sql kSql{RunQuery("WHERE r.id > $1 ORDER BY r.id LIMIT 5000")};
  return ForEachRunOf(kSql, fn);
}

Status PgStore::ForEachRunOf(const Sql& page, const std::function<void(RunRecord&&)>& fn) {
  for (int64_t after = 0;;) {
    std::vector<RunRecord> runs;
    {
      Result<Rows> rows = db_->Exec(page, Params().Add(after));
      if (!rows.ok()) return rows.status();
      for (int i = 0; i < rows->size(); ++i) runs.push_back(ReadRun(*rows, i));
    }
    if (Status s = LoadShards(runs); !s.ok()) return s;
    size_t n = runs.size();
    if (n > 0) after = runs.back().id;
    for (RunRecord& r : runs) fn(std::move(r));
    if (n < static_cast<size_t>(kPage)) return Status::Ok();
  }
}

Result<std::vector<MissRow>> PgStore::ListMisses(int64_t job_id, int64_t since_ms) {
  static const Sql kSql{
      "SELECT job_id, first_ms, last_ms, count, reason, at_ms FROM misses "
      "WHERE job_id = $1 AND last_ms >= $2 ORDER BY first_ms"};
  Result<Rows> rows = db_->Exec(kSql, Params().Add(job_id).Add(since_ms));
  if (!rows.ok()) return rows.status();
  std::vector<MissRow> out;
  for (int i = 0; i < rows->size(); ++i) {
    out.push_back({rows->Int(i, 0), rows->Int(i, 1), rows->Int(i, 2), rows->Int(i, 3),
                   rows->Text(i, 4), rows->Int(i, 5)});
  }
  return out;
}

Status PgStore::ForEachLastResult(const std::function<void(const LastResult&)>& fn) {
  // One scan of the runs for both the newest finished run and the newest success; the
  // duration reads the shards of the one run per job.
  static const Sql kSql{
      "SELECT r.job_id, r.state, r.finished_ms, "
      "COALESCE(r.finished_ms - (SELECT MIN(s.started_ms) FROM shards s WHERE s.run_id = r.id "
      "AND s.outcome != 'kept'), 0), last.success_ms FROM runs r "
      "JOIN (SELECT job_id, MAX(id) AS id, "
      "MAX(finished_ms) FILTER (WHERE state = 'succeeded') AS success_ms FROM runs "
      "WHERE finished_ms IS NOT NULL AND state != 'skipped' GROUP BY job_id) last "
      "ON last.id = r.id"};
  Result<Rows> rows = db_->Exec(kSql);
  if (!rows.ok()) return rows.status();
  for (int i = 0; i < rows->size(); ++i) {
    fn({.job_id = rows->Int(i, 0),
        .state = ParseRunState(rows->View(i, 1)).value_or(RunState::kFailed),
        .finished_ms = rows->Int(i, 2),
        .duration_ms = std::max<int64_t>(rows->Int(i, 3), 0),
        .last_success_ms = rows->OptInt(i, 4)});
  }
  return Status::Ok();
}

Status PgStore::PutOutputEnd(const OutputEndRow& e) {
  static const Sql kSql{
      "INSERT INTO output_ends(run_id, shard, attempt, last_seq, agent, token) "
      "VALUES($1, $2, $3, $4, $5, $6) ON CONFLICT(run_id, shard, attempt) DO UPDATE SET "
      "last_seq = excluded.last_seq, agent = excluded.agent, token = excluded.token"};
  return Write(
      kSql,
      Params().Add(e.run_id).Add(e.shard).Add(e.attempt).Add(e.last_seq).Add(e.agent).Add(e.token));
}

Result<std::optional<OutputEndRow>> PgStore::GetOutputEnd(int64_t run_id, int shard, int attempt) {
  static const Sql kSql{
      "SELECT last_seq, agent, token FROM output_ends "
      "WHERE run_id = $1 AND shard = $2 AND attempt = $3"};
  Result<Rows> rows = db_->Exec(kSql, Params().Add(run_id).Add(shard).Add(attempt));
  if (!rows.ok()) return rows.status();
  std::optional<OutputEndRow> end;
  if (rows->size() > 0) {
    end = OutputEndRow{run_id, shard, attempt, rows->Int(0, 0), rows->Text(0, 1), rows->Int(0, 2)};
  }
  return end;
}

Result<std::vector<OutputEndRow>> PgStore::OutputEnds(int64_t run_id) {
  static const Sql kSql{
      "SELECT shard, attempt, last_seq, agent, token FROM output_ends WHERE run_id = $1 "
      "ORDER BY shard, attempt"};
  Result<Rows> rows = db_->Exec(kSql, Params().Add(run_id));
  if (!rows.ok()) return rows.status();
  std::vector<OutputEndRow> out;
  for (int i = 0; i < rows->size(); ++i) {
    out.push_back({run_id, static_cast<int>(rows->Int(i, 0)), static_cast<int>(rows->Int(i, 1)),
                   rows->Int(i, 2), rows->Text(i, 3), rows->Int(i, 4)});
  }
  return out;
}

Status PgStore::PutLease(const LeaseRow& l) {
  if (pipelined_ && db_->in_transaction()) {
    held_leases_.insert_or_assign(l.key, l);
    return Status::Ok();
  }
  static const Sql kSql{
      "INSERT INTO leases(key, holder, token, granted_ms) VALUES($1, $2, $3, $4) "
      "ON CONFLICT(key) DO UPDATE SET holder = excluded.holder, token = excluded.token, "
      "granted_ms = excluded.granted_ms"};
  return Write(kSql, Params().Add(l.key).Add(l.holder).Add(l.token).Add(l.granted_ms));
}

Status PgStore::DeleteLease(const std::string& key) {
  if (pipelined_ && db_->in_transaction()) {
    held_leases_.insert_or_assign(key, std::nullopt);
    return Status::Ok();
  }
  static const Sql kSql{"DELETE FROM leases WHERE key = $1"};
  return Write(kSql, Params().Add(key));
}

void PgStore::ClearHeld() {
  held_shards_.clear();
  held_states_.clear();
  held_leases_.clear();
}

Status PgStore::SendHeld() {
  static const Sql kShards{
      "UPDATE shards SET state = u.state, attempt = u.attempt, agent = u.agent, token = u.token, "
      "exit_code = u.exit_code, outcome = u.outcome, message = u.message, "
      "started_ms = u.started_ms, finished_ms = u.finished_ms, not_before_ms = u.not_before_ms, "
      "lost_count = u.lost_count, outputs = u.outputs, peak_rss_bytes = u.peak_rss_bytes, "
      "cpu_ms = u.cpu_ms FROM unnest($1::bigint[], $2::integer[], "
      "$3::text[], $4::integer[], $5::text[], $6::bigint[], $7::bigint[], $8::text[], "
      "$9::text[], $10::bigint[], $11::bigint[], $12::bigint[], $13::integer[], $14::text[], "
      "$15::bigint[], $16::bigint[]) "
      "AS u(run_id, idx, state, attempt, agent, token, exit_code, outcome, message, "
      "started_ms, finished_ms, not_before_ms, lost_count, outputs, peak_rss_bytes, cpu_ms) "
      "WHERE shards.run_id = u.run_id AND shards.idx = u.idx"};
  static const Sql kStates{
      "UPDATE runs SET state = u.state, finished_ms = u.finished_ms, note = CASE WHEN u.note = "
      "'' THEN runs.note ELSE u.note END FROM unnest($1::bigint[], $2::text[], $3::bigint[], "
      "$4::text[]) AS u(id, state, finished_ms, note) WHERE runs.id = u.id"};
  static const Sql kPutLeases{
      "INSERT INTO leases(key, holder, token, granted_ms) SELECT * FROM unnest($1::text[], "
      "$2::text[], $3::bigint[], $4::bigint[]) ON CONFLICT(key) DO UPDATE SET holder = "
      "excluded.holder, token = excluded.token, granted_ms = excluded.granted_ms"};
  static const Sql kDeleteLeases{"DELETE FROM leases WHERE key = ANY($1::text[])"};
  auto shards = std::move(held_shards_);
  auto states = std::move(held_states_);
  auto leases = std::move(held_leases_);
  ClearHeld();
  if (!shards.empty()) {
    pg::ArrayLiteral run, idx, state, attempt, agent, token, exit_code, outcome, message, started,
        finished, not_before, lost, outputs, peak_rss, cpu;
    for (const auto& [key, sh] : shards) {
      run.Add(sh.run_id);
      idx.Add(sh.index);
      state.Add(RunStateName(sh.state));
      attempt.Add(sh.attempt);
      agent.Add(sh.agent);
      token.Add(sh.token);
      exit_code.Add(sh.exit_code);
      outcome.Add(sh.outcome);
      message.Add(sh.message);
      started.Add(sh.started_ms);
      finished.Add(sh.finished_ms);
      not_before.Add(sh.not_before_ms);
      lost.Add(sh.lost_count);
      outputs.Add(sh.outputs_json);
      peak_rss.Add(sh.peak_rss_bytes);
      cpu.Add(sh.cpu_ms);
    }
    Params p;
    p.Add(run).Add(idx).Add(state).Add(attempt).Add(agent).Add(token).Add(exit_code);
    p.Add(outcome).Add(message).Add(started).Add(finished).Add(not_before).Add(lost).Add(outputs);
    p.Add(peak_rss).Add(cpu);
    if (Status s = db_->Send(kShards, p, static_cast<int64_t>(shards.size())); !s.ok()) return s;
  }
  if (!states.empty()) {
    pg::ArrayLiteral id, state, finished, note;
    for (const auto& [run_id, w] : states) {
      id.Add(run_id);
      state.Add(RunStateName(w.state));
      finished.Add(w.finished_ms);
      note.Add(w.note);
    }
    Params p;
    p.Add(id).Add(state).Add(finished).Add(note);
    if (Status s = db_->Send(kStates, p, static_cast<int64_t>(states.size())); !s.ok()) return s;
  }
  pg::ArrayLiteral put_key, put_holder, put_token, put_granted, gone;
  size_t puts = 0, deletes = 0;
  for (const auto& [key, lease] : leases) {
    if (!lease) {
      gone.Add(key);
      ++deletes;
      continue;
    }
    put_key.Add(lease->key);
    put_holder.Add(lease->holder);
    put_token.Add(lease->token);
    put_granted.Add(lease->granted_ms);
    ++puts;
  }
  if (puts > 0) {
    Params p;
    p.Add(put_key).Add(put_holder).Add(put_token).Add(put_granted);
    if (Status s = db_->Send(kPutLeases, p); !s.ok()) return s;
  }
  if (deletes > 0) {
    if (Status s = db_->Send(kDeleteLeases, Params().Add(gone)); !s.ok()) return s;
  }
  return Status::Ok();
}

Status PgStore::ForEachLease(const std::function<void(LeaseRow&&)>& fn) {
  static const Sql kSql{
      "SELECT key, holder, token, granted_ms FROM leases WHERE key > $1 ORDER BY key LIMIT 5000"};
  for (std::string after;;) {
    Result<Rows> rows = db_->Exec(kSql, Params().Add(after));
    if (!rows.ok()) return rows.status();
    for (int i = 0; i < rows->size(); ++i) {
      after = rows->Text(i, 0);
      fn({rows->Text(i, 0), rows->Text(i, 1), rows->Int(i, 2), rows->Int(i, 3)});
    }
    if (rows->size() < kPage) return Status::Ok();
  }
}

Status PgStore::PutAgent(const AgentRow& a) {
  static const Sql kSql{
      "INSERT INTO agents(name, labels, slots, version, last_seen_ms, draining) "
      "VALUES($1, $2, $3, $4, $5, $6) ON CONFLICT(name) DO UPDATE SET labels = excluded.labels, "
      "slots = excluded.slots, version = excluded.version, last_seen_ms = excluded.last_seen_ms, "
      "draining = excluded.draining"};
  return Write(kSql, Params()
                         .Add(a.name)
                         .Add(a.labels_json)
                         .Add(a.slots)
                         .Add(a.version)
                         .Add(a.last_seen_ms)
                         .Add(a.draining));
}

Status PgStore::ForEachAgent(const std::function<void(AgentRow&&)>& fn) {
  static const Sql kSql{
      "SELECT name, labels, slots, version, last_seen_ms, draining FROM agents ORDER BY name"};
  Result<Rows> rows = db_->Exec(kSql);
  if (!rows.ok()) return rows.status();
  for (int i = 0; i < rows->size(); ++i) {
    fn({rows->Text(i, 0), rows->Text(i, 1), static_cast<int>(rows->Int(i, 2)), rows->Text(i, 3),
        rows->Int(i, 4), rows->Bool(i, 5)});
  }
  return Status::Ok();
}

Status PgStore::DeleteAgent(const std::string& name) {
  static const Sql kSql{"DELETE FROM agents WHERE name = $1"};
  return db_->ExecExpectingChanges(kSql, Params().Add(name), 1);
}

Result<int64_t> PgStore::InsertToken(const TokenRow& t) {
  static const Sql kSql{
      "INSERT INTO tokens(name, role, jobs, hash, created_ms, agent, labels, expires_ms) "
      "VALUES($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (hash) DO NOTHING RETURNING id"};
  Result<Rows> rows = db_->Exec(kSql, Params()
                                          .Add(t.name)
                                          .Add(t.role)
                                          .Add(t.jobs)
                                          .Add(t.hash)
                                          .Add(t.created_ms)
                                          .Add(t.agent)
                                          .Add(t.labels_json)
                                          .Add(t.expires_ms));
  if (!rows.ok()) return rows.status();
  if (rows->size() == 0) return Status::Conflict("a token with that secret exists");
  return rows->Int(0, 0);
}

Status PgStore::RevokeToken(int64_t id, int64_t at_ms) {
  static const Sql kSql{"UPDATE tokens SET revoked_ms = $2 WHERE id = $1 AND revoked_ms IS NULL"};
  return db_->ExecExpectingChanges(kSql, Params().Add(id).Add(at_ms), 1);
}

Result<int64_t> PgStore::RevokeAgentTokens(const std::string& agent, int64_t at_ms) {
  static const Sql kSql{
      "UPDATE tokens SET revoked_ms = $2 WHERE agent = $1 AND role = 'agent' "
      "AND revoked_ms IS NULL"};
  Result<Rows> rows = db_->Exec(kSql, Params().Add(agent).Add(at_ms));
  if (!rows.ok()) return rows.status();
  return rows->affected();
}

Status PgStore::ForEachToken(const std::function<void(TokenRow&&)>& fn) {
  static const Sql kSql{
      "SELECT id, name, role, jobs, hash, created_ms, revoked_ms, agent, labels, expires_ms "
      "FROM tokens ORDER BY id"};
  Result<Rows> rows = db_->Exec(kSql);
  if (!rows.ok()) return rows.status();
  for (int i = 0; i < rows->size(); ++i) {
    fn({rows->Int(i, 0), rows->Text(i, 1), rows->Text(i, 2), rows->Text(i, 3), rows->Text(i, 4),
        rows->Int(i, 5), rows->OptInt(i, 6), rows->Text(i, 7), rows->Text(i, 8),
        rows->OptInt(i, 9)});
  }
  return Status::Ok();
}

Status PgStore::InsertEvent(const EventRow& e) {
  static const Sql kSql{
      "INSERT INTO events(at_ms, kind, actor, subject, detail, token_id) "
      "VALUES($1, $2, $3, $4, $5, $6)"};
  return Write(
      kSql,
      Params().Add(e.at_ms).Add(e.kind).Add(e.actor).Add(e.subject).Add(e.detail).Add(e.token_id));
}

Result<std::vector<EventRow>> PgStore::ListEvents(const EventFilter& f) {
  static const Sql kFirstSince{
      "SELECT id FROM events WHERE at_ms >= $1 ORDER BY at_ms, id LIMIT 1"};
  // One statement per combination of filters, so that each uses its own index.
  static const Sql kAll{EventQuery("", 4)};
  static const Sql kByKind{EventQuery("AND kind = $4 ", 5)};
  static const Sql kByActor{EventQuery("AND actor = $4 ", 5)};
  static const Sql kByKindActor{EventQuery("AND kind = $4 AND actor = $5 ", 6)};
  int64_t low = 0;
  if (f.since_ms) {
    Result<Rows> rows = db_->Exec(kFirstSince, Params().Add(*f.since_ms));
    if (!rows.ok()) return rows.status();
    low = rows->size() > 0 ? rows->Int(0, 0) : INT64_MAX;
  }
  const Sql& sql = f.kind && f.actor ? kByKindActor : f.kind ? kByKind : f.actor ? kByActor : kAll;
  Params p;
  p.Add(low).Add(f.before_id.value_or(INT64_MAX)).Add(f.since_ms.value_or(0));
  if (f.kind) p.Add(*f.kind);
  if (f.actor) p.Add(*f.actor);
  p.Add(f.limit);
  Result<Rows> rows = db_->Exec(sql, p);
  if (!rows.ok()) return rows.status();
  std::vector<EventRow> out;
  for (int i = 0; i < rows->size(); ++i) {
    out.push_back({rows->Int(i, 0), rows->Int(i, 1), rows->Text(i, 2), rows->Text(i, 3),
                   rows->OptInt(i, 4), rows->Text(i, 5), rows->Text(i, 6)});
  }
  return out;
}

Result<PrunedRuns> PgStore::PruneRuns(const RunRetention& r) {
  // A run is kept when it is one of the keep_last newest of its job: its id is at least the
  // keep_last-th newest id (runs_by_job answers that in keep_last steps). A job with fewer
  // runs keeps them all. Column 6: a step run (it goes with its flow run); 7: a step run of
  // this flow run must stay (open, ended too late, the store's newest or its job's newest
  // success); 8: how many step runs it has (runs_step answers both).
  static const Sql kScan{
      "SELECT r.id, r.state, r.created_ms, r.finished_ms, "
      "$2::integer > 0 AND r.id >= COALESCE((SELECT n.id FROM runs n WHERE n.job_id = r.job_id "
      "ORDER BY n.id DESC LIMIT 1 OFFSET GREATEST($2::integer - 1, 0)), 0), "
      "r.state = 'succeeded' AND r.id = (SELECT MAX(n.id) FROM runs n "
      "WHERE n.job_id = r.job_id AND n.state = 'succeeded'), "
      "r.flow_run_id IS NOT NULL, "
      "EXISTS(SELECT 1 FROM runs s WHERE s.flow_run_id = r.id AND (s.finished_ms IS NULL OR "
      "s.finished_ms >= $4::bigint OR s.state IN ('pending', 'running') OR s.id >= (SELECT "
      "MAX(id) FROM runs) OR (s.state = 'succeeded' AND s.id = (SELECT MAX(n.id) FROM runs n "
      "WHERE n.job_id = s.job_id AND n.state = 'succeeded')))), "
      "(SELECT COUNT(*) FROM runs s WHERE s.flow_run_id = r.id) "
      "FROM runs r WHERE r.id > $1 AND r.id < (SELECT MAX(id) FROM runs) ORDER BY r.id LIMIT $3"};
  // A flow run's step runs before it.
  static const Sql kSteps{
      "SELECT id FROM runs WHERE flow_run_id = ANY($1::bigint[]) ORDER BY flow_run_id, id"};
  static const Sql kEnds{"DELETE FROM output_ends WHERE run_id = ANY($1::bigint[])"};
  static const Sql kShards{"DELETE FROM shards WHERE run_id = ANY($1::bigint[])"};
  static const Sql kRuns{"DELETE FROM runs WHERE id = ANY($1::bigint[])"};
  static const Sql kMisses{
      "DELETE FROM misses WHERE id IN (SELECT id FROM misses WHERE last_ms < $1 ORDER BY id "
      "LIMIT $2)"};
  PrunedRuns out;
  const int limit = std::max(r.limit, 1);
  const int scan = limit * 4;
  Result<Rows> rows =
      db_->Exec(kScan, Params().Add(r.after_id).Add(r.keep_last).Add(scan).Add(r.ended_before_ms));
  if (!rows.ok()) return rows.status();
  int seen = 0;
  int64_t taken = 0;  // runs chosen, step runs counted
  int64_t last = r.after_id;
  bool reached_new = false;
  std::vector<int64_t> chosen;
  for (int i = 0; i < rows->size() && taken < limit; ++i) {
    ++seen;
    // Runs are created in id order: past the first one created after the bound, none has
    // ended before it.
    if (rows->Int(i, 2) >= r.ended_before_ms) {
      reached_new = true;
      break;
    }
    last = rows->Int(i, 0);
    std::string_view state = rows->View(i, 1);
    std::optional<int64_t> finished = rows->OptInt(i, 3);
    bool open = state == "pending" || state == "running";
    if (open || rows->Bool(i, 4) || rows->Bool(i, 5) || rows->Bool(i, 6) || rows->Bool(i, 7) ||
        !finished || *finished >= r.ended_before_ms) {
      continue;
    }
    chosen.push_back(last);
    taken += 1 + rows->Int(i, 8);
  }
  if (!chosen.empty()) {
    std::string flows = ArrayOf(chosen, [](int64_t id) { return std::to_string(id); });
    Result<Rows> steps = db_->Exec(kSteps, Params().Add(flows));
    if (!steps.ok()) return steps.status();
    for (int i = 0; i < steps->size(); ++i) out.run_ids.push_back(steps->Int(i, 0));
    out.run_ids.insert(out.run_ids.end(), chosen.begin(), chosen.end());
    std::string ids = ArrayOf(out.run_ids, [](int64_t id) { return std::to_string(id); });
    // Rows that name a run first: the foreign keys.
    for (const Sql* sql : {&kEnds, &kShards, &kRuns}) {
      Result<Rows> deleted = db_->Exec(*sql, Params().Add(ids));
      if (!deleted.ok()) return deleted.status();
      out.rows += deleted->affected();
    }
  }
  Result<Rows> misses = db_->Exec(kMisses, Params().Add(r.ended_before_ms).Add(limit));
  if (!misses.ok()) return misses.status();
  out.rows += misses->affected();
  // The end of the table (fewer rows than asked) or a run too new ends the pass.
  bool more = !reached_new && (taken >= limit || seen >= scan);
  out.next_after_id = more ? last : 0;
  return out;
}

Result<std::vector<int64_t>> PgStore::MissingRuns(const std::vector<int64_t>& ids) {
  static const Sql kSql{
      "SELECT t.id FROM unnest($1::bigint[]) WITH ORDINALITY AS t(id, n) "
      "WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = t.id) ORDER BY t.n"};
  std::vector<int64_t> out;
  if (ids.empty()) return out;
  std::string list = ArrayOf(ids, [](int64_t id) { return std::to_string(id); });
  Result<Rows> rows = db_->Exec(kSql, Params().Add(list));
  if (!rows.ok()) return rows.status();
  for (int i = 0; i < rows->size(); ++i) out.push_back(rows->Int(i, 0));
  return out;
}

Result<StoreStats> PgStore::Stats() {
  // Every table of PgSchedulerMigrations.
  static const Sql kSql{
      "SELECT COALESCE((SELECT SUM(pg_total_relation_size(to_regclass(t))) FROM unnest(ARRAY["
      "'counters', 'revisions', 'jobs', 'runs', 'shards', 'leases', 'misses', 'agents', "
      "'tokens', 'events', 'output_ends', 'leader']) t), 0)::bigint, "
      "(SELECT COUNT(*) FROM runs), (SELECT MIN(created_ms) FROM runs)"};
  Result<Rows> rows = db_->Exec(kSql);
  if (!rows.ok()) return rows.status();
  StoreStats out;
  out.file_bytes = rows->Int(0, 0);
  out.runs = rows->Int(0, 1);
  out.oldest_run_ms = rows->OptInt(0, 2);
  return out;
}

// ---- Notifications -----------------------------------------------------------------------

namespace {
constexpr std::string_view kNotificationColumns =
    "id, created_ms, job_id, job, run_id, event, reminder, failures, failing_since_ms, detail, "
    "target, state, attempts, next_ms, done_ms, last_error";

std::vector<NotificationRow> ReadNotifications(const Rows& rows) {
  std::vector<NotificationRow> out;
  for (int i = 0; i < rows.size(); ++i) {
    NotificationRow n;
    n.id = rows.Int(i, 0);
    n.created_ms = rows.Int(i, 1);
    n.job_id = rows.Int(i, 2);
    n.job = rows.Text(i, 3);
    n.run_id = rows.Int(i, 4);
    n.event = rows.Text(i, 5);
    n.reminder = rows.Bool(i, 6);
    n.failures = rows.Int(i, 7);
    n.failing_since_ms = rows.Int(i, 8);
    n.detail = rows.Text(i, 9);
    n.target = rows.Text(i, 10);
    n.state = rows.Text(i, 11);
    n.attempts = rows.Int(i, 12);
    n.next_ms = rows.Int(i, 13);
    n.done_ms = rows.Int(i, 14);
    n.last_error = rows.Text(i, 15);
    out.push_back(std::move(n));
  }
  return out;
}
}  // namespace

Status PgStore::InsertNotification(const NotificationRow& n) {
  static const Sql kSql{
      "INSERT INTO notifications(created_ms, job_id, job, run_id, event, reminder, failures, "
      "failing_since_ms, detail, target, state, attempts, next_ms, done_ms, last_error) "
      "VALUES($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)"};
  return Write(kSql, Params()
                         .Add(n.created_ms)
                         .Add(n.job_id)
                         .Add(n.job)
                         .Add(n.run_id)
                         .Add(n.event)
                         .Add(n.reminder)
                         .Add(n.failures)
                         .Add(n.failing_since_ms)
                         .Add(n.detail)
                         .Add(n.target)
                         .Add(n.state)
                         .Add(n.attempts)
                         .Add(n.next_ms)
                         .Add(n.done_ms)
                         .Add(n.last_error));
}

Result<std::vector<NotificationRow>> PgStore::DueNotifications(int64_t now_ms, int limit) {
  static const Sql kSql{
      fmt::format("SELECT {} FROM notifications WHERE state = 'pending' AND next_ms <= $1 "
                  "ORDER BY next_ms, id LIMIT $2",
                  kNotificationColumns)};
  Result<Rows> rows = db_->Exec(kSql, Params().Add(now_ms).Add(limit));
  if (!rows.ok()) return rows.status();
  return ReadNotifications(*rows);
}

Status PgStore::UpdateNotification(const NotificationRow& n) {
  static const Sql kSql{
      "UPDATE notifications SET state = $2, attempts = $3, next_ms = $4, done_ms = $5, "
      "last_error = $6 WHERE id = $1"};
  return Write(kSql,
               Params()
                   .Add(n.id)
                   .Add(n.state)
                   .Add(n.attempts)
                   .Add(n.next_ms)
                   .Add(n.done_ms)
                   .Add(n.last_error),
               1);
}

Result<std::vector<NotificationRow>> PgStore::ListNotifications(const NotificationFilter& f) {
  static const Sql kAll{
      fmt::format("SELECT {} FROM notifications WHERE id < $1 AND ($2 = '' OR state = $2) "
                  "ORDER BY id DESC LIMIT $3",
                  kNotificationColumns)};
  static const Sql kByJob{fmt::format(
      "SELECT {} FROM notifications WHERE job = $4 AND id < $1 AND ($2 = '' OR state = $2) "
      "ORDER BY id DESC LIMIT $3",
      kNotificationColumns)};
  Params p;
  p.Add(f.before_id.value_or(INT64_MAX)).Add(f.state.value_or("")).Add(f.limit);
  if (f.job) p.Add(*f.job);
  Result<Rows> rows = db_->Exec(f.job ? kByJob : kAll, p);
  if (!rows.ok()) return rows.status();
  return ReadNotifications(*rows);
}

Result<int64_t> PgStore::PruneNotifications(int64_t before_ms, int limit) {
  static const Sql kSql{
      "WITH gone AS (DELETE FROM notifications WHERE id IN (SELECT id FROM notifications "
      "WHERE state != 'pending' AND done_ms < $1 ORDER BY done_ms LIMIT $2) RETURNING 1) "
      "SELECT count(*) FROM gone"};
  Result<Rows> rows = db_->Exec(kSql, Params().Add(before_ms).Add(limit));
  if (!rows.ok()) return rows.status();
  return rows->Int(0, 0);
}

Status PgStore::PutAlertState(int64_t job_id, const AlertState& a) {
  static const Sql kSql{
      "INSERT INTO alert_states(job_id, failing_since_ms, failures, last_sent_ms, "
      "overdue_sent_ms, missed_sent_ms, skipped_sent_ms, agent_lost_sent_ms) "
      "VALUES($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT(job_id) DO UPDATE SET "
      "failing_since_ms = excluded.failing_since_ms, failures = excluded.failures, "
      "last_sent_ms = excluded.last_sent_ms, overdue_sent_ms = excluded.overdue_sent_ms, "
      "missed_sent_ms = excluded.missed_sent_ms, skipped_sent_ms = excluded.skipped_sent_ms, "
      "agent_lost_sent_ms = excluded.agent_lost_sent_ms"};
  return Write(kSql, Params()
                         .Add(job_id)
                         .Add(a.failing_since_ms)
                         .Add(a.failures)
                         .Add(a.last_sent_ms)
                         .Add(a.overdue_sent_ms)
                         .Add(a.missed_sent_ms)
                         .Add(a.skipped_sent_ms)
                         .Add(a.agent_lost_sent_ms));
}

Status PgStore::ForEachAlertState(const std::function<void(int64_t, const AlertState&)>& fn) {
  static const Sql kSql{
      "SELECT job_id, failing_since_ms, failures, last_sent_ms, overdue_sent_ms, "
      "missed_sent_ms, skipped_sent_ms, agent_lost_sent_ms FROM alert_states ORDER BY job_id"};
  Result<Rows> rows = db_->Exec(kSql, Params());
  if (!rows.ok()) return rows.status();
  for (int i = 0; i < rows->size(); ++i) {
    AlertState a;
    a.failing_since_ms = rows->Int(i, 1);
    a.failures = static_cast<int>(rows->Int(i, 2));
    a.last_sent_ms = rows->Int(i, 3);
    a.overdue_sent_ms = rows->Int(i, 4);
    a.missed_sent_ms = rows->Int(i, 5);
    a.skipped_sent_ms = rows->Int(i, 6);
    a.agent_lost_sent_ms = rows->Int(i, 7);
    fn(rows->Int(i, 0), a);
  }
  return Status::Ok();
}

}  // namespace jobctl::store
