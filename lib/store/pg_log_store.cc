#include "store/pg_log_store.h"

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

Result<LogStore::AppendResult> PgLogStore::Append(const LogChunk& c) {
  static const Sql kRunBytes{"SELECT bytes, truncated FROM log_run_bytes WHERE run_id = $1"};
  static const Sql kAddBytes{
      "INSERT INTO log_run_bytes(run_id, bytes, truncated) VALUES($1, $2, $3) "
      "ON CONFLICT(run_id) DO UPDATE SET bytes = log_run_bytes.bytes + excluded.bytes, "
      "truncated = log_run_bytes.truncated OR excluded.truncated"};
  int64_t bytes = 0;
  bool truncated = false;
  {
    Result<Rows> rows = db_->Exec(kRunBytes, Params().Add(c.run_id));
    if (!rows.ok()) return rows.status();
    if (rows->size() > 0) {
      bytes = rows->Int(0, 0);
      truncated = rows->Bool(0, 1);
    }
  }
  bool over = truncated || bytes + static_cast<int64_t>(c.data.size()) > run_cap_bytes_;
  if (over) {
    // Keep the (run, shard, attempt, seq) identity so a resend stays a duplicate, but store a
    // marker instead of the bytes, once per run.
    LogChunk marker = c;
    marker.stream = LogStream::kMarker;
    marker.data = truncated ? std::string()
                            : "[jobctl: output truncated: the run reached its log cap of " +
                                  std::to_string(run_cap_bytes_) + " bytes]\n";
    Result<bool> stored = InsertChunk(marker);
    if (!stored.ok()) return stored.status();
    if (!*stored) return AppendResult::kDuplicate;
    Result<Rows> r = db_->Exec(kAddBytes, Params().Add(c.run_id).Add(int64_t{0}).Add(true));
    if (!r.ok()) return r.status();
    return AppendResult::kTruncated;
  }
  Result<bool> stored = InsertChunk(c);
  if (!stored.ok()) return stored.status();
  if (!*stored) return AppendResult::kDuplicate;
  Result<Rows> r = db_->Exec(
      kAddBytes, Params().Add(c.run_id).Add(static_cast<int64_t>(c.data.size())).Add(false));
  if (!r.ok()) return r.status();
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
  Result<Rows> rows = db_->Exec(kBounded, p);
  if (!rows.ok()) return rows.status();
  std::vector<LogChunk> out;
  size_t total = 0;
  for (int i = 0; i < rows->size() && total < q.max_bytes; ++i) {
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

}  // namespace jobctl::store
