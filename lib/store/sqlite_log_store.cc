// Each method's SQL is a `static const Sql` at its top, bound with ?1..?n in the same order
// below it; Database::Use prepares it the first time and reuses it after.
#include "store/sqlite_log_store.h"

#include <sqlite3.h>

#include <algorithm>

#include "store/migrations.h"

namespace jobctl::store {

Result<std::unique_ptr<SqliteLogStore>> SqliteLogStore::Open(const std::string& path,
                                                             int64_t run_cap_bytes) {
  std::unique_ptr<SqliteLogStore> store(new SqliteLogStore());
  store->run_cap_bytes_ = run_cap_bytes;
  // Chunks are blobs of up to 256 KiB: in 64 KiB pages SQLite writes (twice: WAL, then the
  // checkpoint) and reads back a sixteenth of the pages it would in 4 KiB ones, which cuts
  // its CPU per logged byte by more than half.
  if (Status s = store->db_.Open(path, LogMigrations(), 65536); !s.ok()) return s;
  // The WAL is checkpointed off the loop once it holds 64 pages (4 MiB here; SQLite's 1000
  // would be 64 MiB): a copy and an fsync in the commit that passed the mark held up the
  // fires behind it while pruning deleted output and gave space back.
  if (Status s = store->db_.CheckpointInBackground(path, 64); !s.ok()) return s;
  return store;
}

Status SqliteLogStore::Begin() {
  // A durable transaction never begins relaxed: if FULL could not be set again after a
  // redoable one, it is set here or this one fails.
  if (Status s = RestoreSync(); !s.ok()) return s;
  return db_.Begin();
}

Status SqliteLogStore::BeginRedoable() {
  // The level can only change outside a transaction.
  relaxed_ = true;
  if (Status s = db_.Exec("PRAGMA synchronous=NORMAL"); !s.ok()) return s;
  return db_.Begin();
}

Status SqliteLogStore::Commit() {
  Status s = db_.Commit();
  if (!db_.in_transaction()) (void)RestoreSync();  // else Begin() tries again
  return s;
}

void SqliteLogStore::Rollback() {
  db_.Rollback();
  (void)RestoreSync();  // if it fails, Begin() tries again
}

Status SqliteLogStore::RestoreSync() {
  if (!relaxed_) return Status::Ok();
  if (Status s = db_.Exec("PRAGMA synchronous=FULL"); !s.ok()) return s;
  relaxed_ = false;
  return Status::Ok();
}

Result<bool> SqliteLogStore::InsertChunk(const LogChunk& chunk) {
  static const Sql kSql{
      "INSERT INTO chunks(run_id, shard, attempt, seq, stream, at_ms, data) "
      "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(run_id, shard, attempt, seq) DO NOTHING"};
  auto use = db_.Use(kSql);
  use.Bind(1, chunk.run_id)
      .Bind(2, chunk.shard)
      .Bind(3, chunk.attempt)
      .Bind(4, chunk.seq)
      .Bind(5, static_cast<int>(chunk.stream))
      .Bind(6, chunk.at_ms)
      .BindBlob(7, chunk.data);
  if (Status s = use.Exec(); !s.ok()) return s;
  return sqlite3_changes(db_.handle()) == 1;
}

Status SqliteLogStore::AddRunBytes(const LogChunk& c, int64_t counted, int64_t stored) {
  static const Sql kSql{
      "INSERT INTO run_bytes(run_id, bytes, job_id, stored, last_ms) VALUES(?1, ?2, ?3, ?4, ?5) "
      "ON CONFLICT(run_id) DO UPDATE SET bytes = bytes + excluded.bytes, "
      "stored = stored + excluded.stored, last_ms = MAX(last_ms, excluded.last_ms), "
      "job_id = CASE WHEN excluded.job_id != 0 THEN excluded.job_id ELSE job_id END"};
  return db_.Use(kSql)
      .Bind(1, c.run_id)
      .Bind(2, counted)
      .Bind(3, c.job_id)
      .Bind(4, stored)
      .Bind(5, c.at_ms)
      .Exec();
}

Result<LogStore::AppendResult> SqliteLogStore::Append(const LogChunk& c) {
  static const Sql kRunBytes{
      "SELECT bytes, truncated, pruned_ms IS NOT NULL FROM run_bytes WHERE run_id = ?1"};
  static const Sql kMarkTruncated{"UPDATE run_bytes SET truncated = 1 WHERE run_id = ?1"};
  int64_t bytes = 0;
  bool truncated = false;
  bool pruned = false;
  {
    auto use = db_.Use(kRunBytes);
    use.Bind(1, c.run_id);
    if (use.Step()) {
      bytes = use.Int(0);
      truncated = use.Int(1) != 0;
      pruned = use.Int(2) != 0;
    }
    if (!use.status().ok()) return use.status();
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
    if (Status s = AddRunBytes(c, 0, static_cast<int64_t>(marker.data.size())); !s.ok()) return s;
    if (Status s = db_.Use(kMarkTruncated).Bind(1, c.run_id).Exec(); !s.ok()) return s;
    return AppendResult::kTruncated;
  }
  Result<bool> stored = InsertChunk(c);
  if (!stored.ok()) return stored.status();
  if (!*stored) return AppendResult::kDuplicate;
  int64_t size = static_cast<int64_t>(c.data.size());
  if (Status s = AddRunBytes(c, size, size); !s.ok()) return s;
  return AppendResult::kStored;
}

Result<std::vector<LogChunk>> SqliteLogStore::Read(const LogQuery& q) {
  static const Sql kSql{
      "SELECT id, run_id, shard, attempt, seq, stream, at_ms, data FROM chunks "
      "WHERE run_id = ?1 AND id > ?2 AND (?3 IS NULL OR shard = ?3) "
      "AND (?4 IS NULL OR stream = ?4 OR stream = 3) ORDER BY id LIMIT 1000"};
  // The tail before an id: the same rows read newest first, put back in order below.
  static const Sql kTail{
      "SELECT id, run_id, shard, attempt, seq, stream, at_ms, data FROM chunks "
      "WHERE run_id = ?1 AND id > ?2 AND (?3 IS NULL OR shard = ?3) "
      "AND (?4 IS NULL OR stream = ?4 OR stream = 3) AND id < ?5 ORDER BY id DESC LIMIT 1000"};
  std::vector<LogChunk> out;
  auto use = db_.Use(q.before_id ? kTail : kSql);
  use.Bind(1, q.run_id).Bind(2, q.after_id);
  if (q.shard) use.Bind(3, *q.shard);
  if (q.stream) use.Bind(4, static_cast<int>(*q.stream));
  if (q.before_id) use.Bind(5, *q.before_id);
  size_t total = 0;
  while (total < q.max_bytes && use.Step()) {
    LogChunk c;
    c.id = use.Int(0);
    c.run_id = use.Int(1);
    c.shard = static_cast<int>(use.Int(2));
    c.attempt = static_cast<int>(use.Int(3));
    c.seq = use.Int(4);
    c.stream = static_cast<LogStream>(use.Int(5));
    c.at_ms = use.Int(6);
    c.data = use.Text(7);
    total += c.data.size();
    out.push_back(std::move(c));
  }
  if (!use.status().ok()) return use.status();
  if (q.before_id) std::reverse(out.begin(), out.end());
  return out;
}

Result<std::vector<LogStore::AttemptSeq>> SqliteLogStore::LastSeqs(int64_t run_id) {
  // Answered from the chunks_key index alone.
  static const Sql kSql{
      "SELECT shard, attempt, MAX(seq) FROM chunks WHERE run_id = ?1 GROUP BY shard, attempt"};
  auto use = db_.Use(kSql);
  use.Bind(1, run_id);
  std::vector<AttemptSeq> out;
  while (use.Step()) {
    out.push_back({static_cast<int>(use.Int(0)), static_cast<int>(use.Int(1)), use.Int(2)});
  }
  if (!use.status().ok()) return use.status();
  return out;
}

Result<int64_t> SqliteLogStore::RunBytes(int64_t run_id) {
  static const Sql kSql{"SELECT bytes FROM run_bytes WHERE run_id = ?1"};
  auto use = db_.Use(kSql);
  use.Bind(1, run_id);
  int64_t bytes = use.Step() ? use.Int(0) : 0;
  if (!use.status().ok()) return use.status();
  return bytes;
}

namespace {

constexpr const char* kOutputColumns =
    "SELECT run_id, job_id, bytes, stored, last_ms, truncated, pruned_ms, pruned_reason "
    "FROM run_bytes ";

RunOutput ReadOutput(const Statement::Use& use) {
  return {use.Int(0), use.Int(1),      use.Int(2),    use.Int(3),
          use.Int(4), use.Int(5) != 0, use.OptInt(6), use.Text(7)};
}

}  // namespace

Result<std::optional<RunOutput>> SqliteLogStore::OutputOf(int64_t run_id) {
  static const Sql kSql{std::string(kOutputColumns) + "WHERE run_id = ?1"};
  auto use = db_.Use(kSql);
  use.Bind(1, run_id);
  std::optional<RunOutput> out;
  if (use.Step()) out = ReadOutput(use);
  if (!use.status().ok()) return use.status();
  return out;
}

Result<std::vector<RunOutput>> SqliteLogStore::ListOutput(const OutputFilter& f) {
  // Of one job: the run_bytes_kept_by_job index; else the table in run id order.
  static const Sql kAll{std::string(kOutputColumns) +
                        "WHERE pruned_ms IS NULL AND run_id > ?1 AND (?2 IS NULL OR last_ms < ?2) "
                        "ORDER BY run_id LIMIT ?3"};
  static const Sql kOfJob{std::string(kOutputColumns) +
                          "WHERE job_id = ?4 AND pruned_ms IS NULL AND run_id > ?1 "
                          "AND (?2 IS NULL OR last_ms < ?2) ORDER BY run_id LIMIT ?3"};
  static const Sql kEvery{std::string(kOutputColumns) +
                          "WHERE run_id > ?1 AND (?2 IS NULL OR last_ms < ?2) "
                          "ORDER BY run_id LIMIT ?3"};
  if (f.with_pruned && f.job_id) {
    return Status::InvalidArgument("with_pruned is not for one job's output");
  }
  auto use = db_.Use(f.with_pruned ? kEvery : f.job_id ? kOfJob : kAll);
  use.Bind(1, f.after_run_id).Bind(2, f.last_before_ms).Bind(3, std::max(f.limit, 1));
  if (f.job_id) use.Bind(4, *f.job_id);
  std::vector<RunOutput> out;
  while (use.Step()) out.push_back(ReadOutput(use));
  if (!use.status().ok()) return use.status();
  return out;
}

Result<std::vector<JobOutput>> SqliteLogStore::OutputByJob(int limit) {
  static const Sql kSql{
      "SELECT job_id, SUM(stored) AS total, COUNT(*) FROM run_bytes WHERE pruned_ms IS NULL "
      "GROUP BY job_id ORDER BY total DESC, job_id LIMIT ?1"};
  auto use = db_.Use(kSql);
  use.Bind(1, std::max(limit, 1));
  std::vector<JobOutput> out;
  while (use.Step()) out.push_back({use.Int(0), use.Int(1), use.Int(2)});
  if (!use.status().ok()) return use.status();
  return out;
}

Result<LogStore::Pruned> SqliteLogStore::PruneOutput(int64_t run_id, int64_t at_ms,
                                                     const std::string& reason, int max_chunks) {
  static const Sql kSelect{
      "SELECT id, length(data) FROM chunks WHERE run_id = ?1 ORDER BY id LIMIT ?2"};
  static const Sql kDelete{"DELETE FROM chunks WHERE run_id = ?1 AND id <= ?2"};
  static const Sql kLess{"UPDATE run_bytes SET stored = MAX(stored - ?2, 0) WHERE run_id = ?1"};
  static const Sql kMark{
      "INSERT INTO run_bytes(run_id, bytes, stored, pruned_ms, pruned_reason) "
      "VALUES(?1, 0, 0, ?2, ?3) ON CONFLICT(run_id) DO UPDATE SET stored = 0, "
      "pruned_ms = excluded.pruned_ms, pruned_reason = excluded.pruned_reason"};
  static const Sql kForget{"DELETE FROM run_bytes WHERE run_id = ?1"};
  Pruned out;
  int64_t last_id = 0;
  const int limit = std::max(max_chunks, 1);
  {
    auto use = db_.Use(kSelect);
    use.Bind(1, run_id).Bind(2, limit + 1);
    int rows = 0;
    while (use.Step()) {
      if (++rows > limit) break;  // one more than the limit: output is left after this call
      last_id = use.Int(0);
      out.bytes += use.Int(1);
      ++out.chunks;
    }
    if (!use.status().ok()) return use.status();
    out.done = rows <= limit;
  }
  if (out.chunks > 0) {
    if (Status s = db_.Use(kDelete).Bind(1, run_id).Bind(2, last_id).Exec(); !s.ok()) return s;
    if (Status s = db_.Use(kLess).Bind(1, run_id).Bind(2, out.bytes).Exec(); !s.ok()) return s;
  }
  if (out.done && reason.empty()) {
    if (Status s = db_.Use(kForget).Bind(1, run_id).Exec(); !s.ok()) return s;
  } else if (out.done) {
    if (Status s = db_.Use(kMark).Bind(1, run_id).Bind(2, at_ms).Bind(3, reason).Exec(); !s.ok()) {
      return s;
    }
  }
  return out;
}

Result<LogStoreStats> SqliteLogStore::Stats() {
  static const Sql kStored{"SELECT COALESCE(SUM(stored), 0) FROM run_bytes"};
  Result<Database::Space> space = db_.SpaceUsed();
  if (!space.ok()) return space.status();
  LogStoreStats out;
  out.file_bytes = space->file_bytes;
  out.free_bytes = space->free_bytes;
  out.reclaims_space = space->incremental;
  auto use = db_.Use(kStored);
  if (use.Step()) out.stored_bytes = use.Int(0);
  if (!use.status().ok()) return use.status();
  return out;
}

Result<std::string> SqliteLogStore::Tail(int64_t run_id, int shard, int attempt, size_t max_bytes) {
  static const Sql kSql{
      "SELECT data FROM chunks WHERE run_id = ?1 AND shard = ?2 AND attempt = ?3 "
      "AND stream != 3 ORDER BY id DESC LIMIT 64"};
  auto use = db_.Use(kSql);
  use.Bind(1, run_id).Bind(2, shard).Bind(3, attempt);
  std::vector<std::string> newest_first;
  size_t total = 0;
  while (total < max_bytes && use.Step()) {
    newest_first.push_back(use.Text(0));
    total += newest_first.back().size();
  }
  if (!use.status().ok()) return use.status();
  std::string out;
  for (auto it = newest_first.rbegin(); it != newest_first.rend(); ++it) out += *it;
  if (out.size() > max_bytes) out.erase(0, out.size() - max_bytes);
  return out;
}

}  // namespace jobctl::store
