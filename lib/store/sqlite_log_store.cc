// Each method's SQL is a `static const Sql` at its top, bound with ?1..?n in the same order
// below it; Database::Use prepares it the first time and reuses it after.
#include "store/sqlite_log_store.h"

#include <sqlite3.h>

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
  return store;
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

Status SqliteLogStore::AddRunBytes(int64_t run_id, int64_t bytes) {
  static const Sql kSql{
      "INSERT INTO run_bytes(run_id, bytes) VALUES(?1, ?2) "
      "ON CONFLICT(run_id) DO UPDATE SET bytes = bytes + excluded.bytes"};
  return db_.Use(kSql).Bind(1, run_id).Bind(2, bytes).Exec();
}

Result<LogStore::AppendResult> SqliteLogStore::Append(const LogChunk& c) {
  static const Sql kRunBytes{"SELECT bytes, truncated FROM run_bytes WHERE run_id = ?1"};
  static const Sql kMarkTruncated{"UPDATE run_bytes SET truncated = 1 WHERE run_id = ?1"};
  int64_t bytes = 0;
  bool truncated = false;
  {
    auto use = db_.Use(kRunBytes);
    use.Bind(1, c.run_id);
    if (use.Step()) {
      bytes = use.Int(0);
      truncated = use.Int(1) != 0;
    }
    if (!use.status().ok()) return use.status();
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
    if (Status s = AddRunBytes(c.run_id, 0); !s.ok()) return s;
    if (Status s = db_.Use(kMarkTruncated).Bind(1, c.run_id).Exec(); !s.ok()) return s;
    return AppendResult::kTruncated;
  }
  Result<bool> stored = InsertChunk(c);
  if (!stored.ok()) return stored.status();
  if (!*stored) return AppendResult::kDuplicate;
  if (Status s = AddRunBytes(c.run_id, static_cast<int64_t>(c.data.size())); !s.ok()) return s;
  return AppendResult::kStored;
}

Result<std::vector<LogChunk>> SqliteLogStore::Read(const LogQuery& q) {
  static const Sql kSql{
      "SELECT id, run_id, shard, attempt, seq, stream, at_ms, data FROM chunks "
      "WHERE run_id = ?1 AND id > ?2 AND (?3 IS NULL OR shard = ?3) "
      "AND (?4 IS NULL OR stream = ?4 OR stream = 3) ORDER BY id LIMIT 1000"};
  std::vector<LogChunk> out;
  auto use = db_.Use(kSql);
  use.Bind(1, q.run_id).Bind(2, q.after_id);
  if (q.shard) use.Bind(3, *q.shard);
  if (q.stream) use.Bind(4, static_cast<int>(*q.stream));
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

}  // namespace jobctl::store
