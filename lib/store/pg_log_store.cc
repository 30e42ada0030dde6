#include "store/pg_log_store.h"

#include <algorithm>

#include "store/pg_migrations.h"
#include "store/pg_store.h"

namespace jobctl::store {

using pg::Params;
using pg::Rows;
using pg::Sql;

Result<std::unique_ptr<PgLogStore>> PgLogStore::Open(const std::string& url, int64_t run_cap_bytes,
                                                     bool standby) {
  Result<std::unique_ptr<pg::Connection>> conn = pg::Connection::Open(url);
  if (!conn.ok()) return conn.status();
  std::unique_ptr<PgLogStore> store(new PgLogStore());
  store->db_ = std::move(*conn);
  store->run_cap_bytes_ = run_cap_bytes;
  // A standby never migrates: the coordinator that holds the database may be an older one.
  if (standby) {
    store->epoch_ = kStandby;
    return store;
  }
  if (Status s = store->db_->Migrate("logs", PgLogMigrations()); !s.ok()) return s;
  static const Sql kEpoch{
      "SELECT epoch FROM leader WHERE id = 1 AND EXISTS (SELECT 1 FROM pg_locks WHERE "
      "pid = leader.pid AND locktype = 'advisory' AND granted)"};
  if (Result<Rows> epoch = store->db_->Exec(kEpoch); epoch.ok() && epoch->size() == 1) {
    if (Status s = store->Hold(epoch->Int(0, 0)); !s.ok()) return s;
  }
  return store;
}

Status PgLogStore::Hold(int64_t epoch) {
  if (Status s = db_->Migrate("logs", PgLogMigrations()); !s.ok()) return s;
  if (Status s = TakeHolderLock(); !s.ok()) return s;
  // A new session (the server restarted, or failed over) takes it again.
  db_->on_reconnect = [this] { return TakeHolderLock(); };
  epoch_ = epoch;
  return Status::Ok();
}

Result<bool> PgLogStore::HasRetention() {
  static const Sql kSql{"SELECT version >= 2 FROM jobctl_schema WHERE name = 'logs'"};
  if (has_retention_ || epoch_ != kStandby) return true;
  Result<Rows> rows = db_->Exec(kSql);
  if (!rows.ok()) return rows.status();
  has_retention_ = rows->size() == 1 && rows->Bool(0, 0);
  return has_retention_;
}

Status PgLogStore::TakeHolderLock() {
  static const Sql kSql{"SELECT pg_advisory_lock_shared($1)"};
  return db_->Exec(kSql, Params().Add(kHolderLogLock)).status();
}

Status PgLogStore::Begin() {
  static const Sql kSql{"SELECT epoch FROM leader WHERE id = 1"};
  if (epoch_ == kStandby) {
    return Status::Unavailable("a standby coordinator writes no output to the database");
  }
  if (Status s = db_->Begin(); !s.ok()) return s;
  if (epoch_ < 0) return Status::Ok();
  Result<Rows> rows = db_->Exec(kSql);
  if (rows.ok() && rows->size() == 1 && rows->Int(0, 0) == epoch_) return Status::Ok();
  db_->Rollback();
  if (!rows.ok()) return rows.status();
  return Status::Unavailable("this coordinator no longer holds the database");
}

Status PgLogStore::BeginRedoable() {
  static const Sql kSql{"SET LOCAL synchronous_commit = off"};
  if (Status s = Begin(); !s.ok()) return s;
  if (Status s = db_->Exec(kSql).status(); !s.ok()) {
    db_->Rollback();
    return s;
  }
  return Status::Ok();
}

Result<bool> PgLogStore::InsertChunk(const LogChunk& c) {
  static const Sql kSql{
      "INSERT INTO log_chunks(run_id, shard, attempt, seq, stream, at_ms, data) "
      "VALUES($1, $2, $3, $4, $5, $6, $7) ON CONFLICT(run_id, shard, attempt, seq) DO NOTHING"};
  Result<Rows> rows = db_->Exec(kSql, Params()
                                          .Add(c.run_id)
                                          .Add(c.shard)
                                          .Add(c.attempt)
                                          .Add(c.seq)
                                          .Add(static_cast<int>(c.stream))
                                          .Add(c.at_ms)
                                          .AddBytes(c.data));
  if (!rows.ok()) return rows.status();
  return rows->affected() == 1;
}

Status PgLogStore::AddRunBytes(const LogChunk& c, int64_t counted, int64_t stored, bool truncated) {
  static const Sql kSql{
      "INSERT INTO log_run_bytes(run_id, bytes, truncated, job_id, stored, last_ms) "
      "VALUES($1, $2, $3, $4, $5, $6) ON CONFLICT(run_id) DO UPDATE SET "
      "bytes = log_run_bytes.bytes + excluded.bytes, "
      "truncated = log_run_bytes.truncated OR excluded.truncated, "
      "stored = log_run_bytes.stored + excluded.stored, "
      "last_ms = GREATEST(log_run_bytes.last_ms, excluded.last_ms), "
      "job_id = CASE WHEN excluded.job_id <> 0 THEN excluded.job_id ELSE log_run_bytes.job_id END"};
  return db_
      ->Exec(kSql, Params().Add(c.run_id).Add(counted).Add(truncated).Add(c.job_id).Add(stored).Add(
                       c.at_ms))
      .status();
}

Result<LogStore::AppendResult> PgLogStore::Append(const LogChunk& c) {
  static const Sql kRunBytes{
      "SELECT bytes, truncated, pruned_ms IS NOT NULL FROM log_run_bytes WHERE run_id = $1"};
  int64_t bytes = 0;
  bool truncated = false;
  bool pruned = false;
  {
    Result<Rows> rows = db_->Exec(kRunBytes, Params().Add(c.run_id));
    if (!rows.ok()) return rows.status();
    if (rows->size() > 0) {
      bytes = rows->Int(0, 0);
      truncated = rows->Bool(0, 1);
      pruned = rows->Bool(0, 2);
    }
  }
  if (pruned) {
    // Retention deleted this run's output: a late chunk is not kept.
    return AppendResult::kTruncated;
  }
  int64_t cap = c.cap_bytes > 0 ? std::min(c.cap_bytes, run_cap_bytes_) : run_cap_bytes_;
  bool over = truncated || bytes + static_cast<int64_t>(c.data.size()) > cap;
  if (over) {
    // Keep the (run, shard, attempt, seq) identity so a resend stays a duplicate, but store a
    // marker instead of the bytes, once per run.
    LogChunk marker = c;
    marker.stream = LogStream::kMarker;
    marker.data = truncated ? std::string()
                            : "[jobctl: output truncated: the run reached its log cap of " +
                                  std::to_string(cap) + " bytes]\n";
    Result<bool> stored = InsertChunk(marker);
    if (!stored.ok()) return stored.status();
    if (!*stored) return AppendResult::kDuplicate;
    if (Status s = AddRunBytes(c, 0, static_cast<int64_t>(marker.data.size()), true); !s.ok()) {
      return s;
    }
    return AppendResult::kTruncated;
  }
  Result<bool> stored = InsertChunk(c);
  if (!stored.ok()) return stored.status();
  if (!*stored) return AppendResult::kDuplicate;
  int64_t size = static_cast<int64_t>(c.data.size());
  if (Status s = AddRunBytes(c, size, size, false); !s.ok()) return s;
  return AppendResult::kStored;
}

Result<std::vector<LogChunk>> PgLogStore::Read(const LogQuery& q) {
  // As the other backend steps row by row and stops once max_bytes is reached, the server
  // sends no row past the one that reaches it (the bytes before each row, summed in order).
  static const Sql kBounded{
      "SELECT id, run_id, shard, attempt, seq, stream, at_ms, data FROM ("
      "SELECT *, sum(length(data)) OVER (ORDER BY id) - length(data) AS before FROM ("
      "SELECT id, run_id, shard, attempt, seq, stream, at_ms, data FROM log_chunks "
      "WHERE run_id = $1 AND id > $2 AND ($3::integer IS NULL OR shard = $3) "
      "AND ($4::smallint IS NULL OR stream = $4 OR stream = 3) ORDER BY id LIMIT 1000) c) b "
      "WHERE before < $5 ORDER BY id"};
  // The tail before an id: the bytes after each row, newest first, bound what is sent.
  static const Sql kTail{
      "SELECT id, run_id, shard, attempt, seq, stream, at_ms, data FROM ("
      "SELECT *, sum(length(data)) OVER (ORDER BY id DESC) - length(data) AS after FROM ("
      "SELECT id, run_id, shard, attempt, seq, stream, at_ms, data FROM log_chunks "
      "WHERE run_id = $1 AND id > $2 AND ($3::integer IS NULL OR shard = $3) "
      "AND ($4::smallint IS NULL OR stream = $4 OR stream = 3) AND id < $6 "
      "ORDER BY id DESC LIMIT 1000) c) b "
      "WHERE after < $5 ORDER BY id"};
  Params p;
  p.Add(q.run_id).Add(q.after_id);
  if (q.shard) {
    p.Add(*q.shard);
  } else {
    p.Add(std::nullopt);
  }
  if (q.stream) {
    p.Add(static_cast<int>(*q.stream));
  } else {
    p.Add(std::nullopt);
  }
  p.Add(static_cast<int64_t>(q.max_bytes));
  if (q.before_id) p.Add(*q.before_id);
  Result<Rows> rows = db_->Exec(q.before_id ? kTail : kBounded, p);
  if (!rows.ok()) return rows.status();
  std::vector<LogChunk> out;
  size_t total = 0;
  // A tail is bounded by the server alone (from its newest row).
  for (int i = 0; i < rows->size() && (q.before_id || total < q.max_bytes); ++i) {
    LogChunk c;
    c.id = rows->Int(i, 0);
    c.run_id = rows->Int(i, 1);
    c.shard = static_cast<int>(rows->Int(i, 2));
    c.attempt = static_cast<int>(rows->Int(i, 3));
    c.seq = rows->Int(i, 4);
    c.stream = static_cast<LogStream>(rows->Int(i, 5));
    c.at_ms = rows->Int(i, 6);
    c.data = rows->Bytes(i, 7);
    total += c.data.size();
    out.push_back(std::move(c));
  }
  return out;
}

Result<std::vector<LogStore::AttemptSeq>> PgLogStore::LastSeqs(int64_t run_id) {
  static const Sql kSql{
      "SELECT shard, attempt, MAX(seq) FROM log_chunks WHERE run_id = $1 "
      "GROUP BY shard, attempt ORDER BY shard, attempt"};
  Result<Rows> rows = db_->Exec(kSql, Params().Add(run_id));
  if (!rows.ok()) return rows.status();
  std::vector<AttemptSeq> out;
  for (int i = 0; i < rows->size(); ++i) {
    out.push_back(
        {static_cast<int>(rows->Int(i, 0)), static_cast<int>(rows->Int(i, 1)), rows->Int(i, 2)});
  }
  return out;
}

Result<int64_t> PgLogStore::RunBytes(int64_t run_id) {
  static const Sql kSql{"SELECT bytes FROM log_run_bytes WHERE run_id = $1"};
  Result<Rows> rows = db_->Exec(kSql, Params().Add(run_id));
  if (!rows.ok()) return rows.status();
  return rows->size() > 0 ? rows->Int(0, 0) : 0;
}

namespace {

constexpr const char* kOutputColumns =
    "SELECT run_id, job_id, bytes, stored, last_ms, truncated, pruned_ms, pruned_reason "
    "FROM log_run_bytes ";

RunOutput ReadOutput(const Rows& rows, int i) {
  return {rows.Int(i, 0), rows.Int(i, 1),  rows.Int(i, 2),    rows.Int(i, 3),
          rows.Int(i, 4), rows.Bool(i, 5), rows.OptInt(i, 6), rows.Text(i, 7)};
}

}  // namespace

Result<std::optional<RunOutput>> PgLogStore::OutputOf(int64_t run_id) {
  static const Sql kSql{std::string(kOutputColumns) + "WHERE run_id = $1"};
  Result<bool> has = HasRetention();
  if (!has.ok()) return has.status();
  if (!*has) return std::optional<RunOutput>();
  Result<Rows> rows = db_->Exec(kSql, Params().Add(run_id));
  if (!rows.ok()) return rows.status();
  std::optional<RunOutput> out;
  if (rows->size() > 0) out = ReadOutput(*rows, 0);
  return out;
}

Result<std::vector<RunOutput>> PgLogStore::ListOutput(const OutputFilter& f) {
  // Of one job: the log_run_bytes_kept_by_job index; else the table in run id order.
  static const Sql kAll{std::string(kOutputColumns) +
                        "WHERE pruned_ms IS NULL AND run_id > $1 "
                        "AND ($2::bigint IS NULL OR last_ms < $2) ORDER BY run_id LIMIT $3"};
  static const Sql kOfJob{std::string(kOutputColumns) +
                          "WHERE job_id = $4 AND pruned_ms IS NULL AND run_id > $1 "
                          "AND ($2::bigint IS NULL OR last_ms < $2) ORDER BY run_id LIMIT $3"};
  static const Sql kEvery{std::string(kOutputColumns) +
                          "WHERE run_id > $1 AND ($2::bigint IS NULL OR last_ms < $2) "
                          "ORDER BY run_id LIMIT $3"};
  if (f.with_pruned && f.job_id) {
    return Status::InvalidArgument("with_pruned is not for one job's output");
  }
  Result<bool> has = HasRetention();
  if (!has.ok()) return has.status();
  if (!*has) return std::vector<RunOutput>();
  Params p;
  p.Add(f.after_run_id).Add(f.last_before_ms).Add(std::max(f.limit, 1));
  if (f.job_id) p.Add(*f.job_id);
  Result<Rows> rows = db_->Exec(f.with_pruned ? kEvery : f.job_id ? kOfJob : kAll, p);
  if (!rows.ok()) return rows.status();
  std::vector<RunOutput> out;
  for (int i = 0; i < rows->size(); ++i) out.push_back(ReadOutput(*rows, i));
  return out;
}

Result<std::vector<JobOutput>> PgLogStore::OutputByJob(int limit) {
  static const Sql kSql{
      "SELECT job_id, SUM(stored) AS total, COUNT(*) FROM log_run_bytes WHERE pruned_ms IS NULL "
      "GROUP BY job_id ORDER BY total DESC, job_id LIMIT $1"};
  Result<bool> has = HasRetention();
  if (!has.ok()) return has.status();
  if (!*has) return std::vector<JobOutput>();
  Result<Rows> rows = db_->Exec(kSql, Params().Add(std::max(limit, 1)));
  if (!rows.ok()) return rows.status();
  std::vector<JobOutput> out;
  for (int i = 0; i < rows->size(); ++i) {
    out.push_back({rows->Int(i, 0), rows->Int(i, 1), rows->Int(i, 2)});
  }
  return out;
}

Result<LogStore::Pruned> PgLogStore::PruneOutput(int64_t run_id, int64_t at_ms,
                                                 const std::string& reason, int max_chunks) {
  static const Sql kSelect{
      "SELECT id, octet_length(data) FROM log_chunks WHERE run_id = $1 ORDER BY id LIMIT $2"};
  static const Sql kDelete{"DELETE FROM log_chunks WHERE run_id = $1 AND id <= $2"};
  static const Sql kLess{
      "UPDATE log_run_bytes SET stored = GREATEST(stored - $2, 0) WHERE run_id = $1"};
  static const Sql kMark{
      "INSERT INTO log_run_bytes(run_id, bytes, stored, pruned_ms, pruned_reason) "
      "VALUES($1, 0, 0, $2, $3) ON CONFLICT(run_id) DO UPDATE SET stored = 0, "
      "pruned_ms = excluded.pruned_ms, pruned_reason = excluded.pruned_reason"};
  static const Sql kForget{"DELETE FROM log_run_bytes WHERE run_id = $1"};
  Pruned out;
  const int limit = std::max(max_chunks, 1);
  // One more than the limit: output is left after this call when it comes back.
  Result<Rows> rows = db_->Exec(kSelect, Params().Add(run_id).Add(limit + 1));
  if (!rows.ok()) return rows.status();
  int64_t last_id = 0;
  for (int i = 0; i < rows->size() && i < limit; ++i) {
    last_id = rows->Int(i, 0);
    out.bytes += rows->Int(i, 1);
    ++out.chunks;
  }
  out.done = rows->size() <= limit;
  if (out.chunks > 0) {
    if (Status s = db_->Exec(kDelete, Params().Add(run_id).Add(last_id)).status(); !s.ok()) {
      return s;
    }
    if (Status s = db_->Exec(kLess, Params().Add(run_id).Add(out.bytes)).status(); !s.ok()) {
      return s;
    }
  }
  if (out.done && reason.empty()) {
    if (Status s = db_->Exec(kForget, Params().Add(run_id)).status(); !s.ok()) return s;
  } else if (out.done) {
    Status s = db_->Exec(kMark, Params().Add(run_id).Add(at_ms).Add(reason)).status();
    if (!s.ok()) return s;
  }
  return out;
}

Result<LogStoreStats> PgLogStore::Stats() {
  static const Sql kSql{
      "SELECT COALESCE((SELECT SUM(pg_total_relation_size(to_regclass(t))) "
      "FROM unnest(ARRAY['log_chunks', 'log_run_bytes']) t), 0)::bigint, "
      "COALESCE((SELECT SUM(stored) FROM log_run_bytes), 0)::bigint"};
  // A holder's older schema counts no bytes kept: the chunks' size then.
  static const Sql kOld{
      "SELECT COALESCE((SELECT SUM(pg_total_relation_size(to_regclass(t))) "
      "FROM unnest(ARRAY['log_chunks', 'log_run_bytes']) t), 0)::bigint, "
      "COALESCE((SELECT SUM(octet_length(data)) FROM log_chunks), 0)::bigint"};
  Result<bool> has = HasRetention();
  if (!has.ok()) return has.status();
  Result<Rows> rows = db_->Exec(*has ? kSql : kOld);
  if (!rows.ok()) return rows.status();
  LogStoreStats out;
  out.file_bytes = rows->Int(0, 0);
  out.stored_bytes = rows->Int(0, 1);
  return out;
}

Result<std::string> PgLogStore::Tail(int64_t run_id, int shard, int attempt, size_t max_bytes) {
  static const Sql kSql{
      "SELECT data FROM log_chunks WHERE run_id = $1 AND shard = $2 AND attempt = $3 "
      "AND stream != 3 ORDER BY id DESC LIMIT 64"};
  Result<Rows> rows = db_->Exec(kSql, Params().Add(run_id).Add(shard).Add(attempt));
  if (!rows.ok()) return rows.status();
  std::vector<std::string> newest_first;
  size_t total = 0;
  for (int i = 0; i < rows->size() && total < max_bytes; ++i) {
    newest_first.push_back(rows->Bytes(i, 0));
    total += newest_first.back().size();
  }
  std::string out;
  for (auto it = newest_first.rbegin(); it != newest_first.rend(); ++it) out += *it;
  if (out.size() > max_bytes) out.erase(0, out.size() - max_bytes);
  return out;
}

}  // namespace jobctl::store
