#include "store/log_store.h"

#include "store/migrations.h"

namespace jobctl::store {

Result<std::unique_ptr<LogStore>> LogStore::Open(const std::string& path, int64_t run_cap_bytes) {
  std::unique_ptr<LogStore> store(new LogStore());
  store->run_cap_bytes_ = run_cap_bytes;
  // Chunks are blobs of up to 256 KiB: in 64 KiB pages SQLite writes (twice: WAL, then the
  // checkpoint) and reads back a sixteenth of the pages it would in 4 KiB ones, which cuts
  // its CPU per logged byte by more than half.
  if (Status s = store->db_.Open(path, LogMigrations(), 65536); !s.ok()) return s;
  if (Status s = store->Prepare(); !s.ok()) return s;
  return store;
}

Status LogStore::Prepare() {
  sqlite3* db = db_.handle();
  if (Status s = insert_chunk_.Prepare(
          db,
          "INSERT INTO chunks(run_id, shard, attempt, seq, stream, at_ms, data) "
          "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(run_id, shard, attempt, seq) DO NOTHING");
      !s.ok()) {
    return s;
  }
  if (Status s = run_bytes_.Prepare(db, "SELECT bytes, truncated FROM run_bytes WHERE run_id = ?1");
      !s.ok()) {
    return s;
  }
  if (Status s = add_run_bytes_.Prepare(
          db,
          "INSERT INTO run_bytes(run_id, bytes) VALUES(?1, ?2) "
          "ON CONFLICT(run_id) DO UPDATE SET bytes = bytes + excluded.bytes");
      !s.ok()) {
    return s;
  }
  if (Status s = mark_truncated_.Prepare(db, "UPDATE run_bytes SET truncated = 1 WHERE run_id = ?1");
      !s.ok()) {
    return s;
  }
  return read_.Prepare(
      db,
      "SELECT id, run_id, shard, attempt, seq, stream, at_ms, data FROM chunks "
      "WHERE run_id = ?1 AND id > ?2 AND (?3 IS NULL OR shard = ?3) "
      "AND (?4 IS NULL OR stream = ?4 OR stream = 3) ORDER BY id LIMIT 1000");
}

Result<LogStore::AppendResult> LogStore::Append(const LogChunk& c) {
  int64_t bytes = 0;
  bool truncated = false;
  {
    auto use = run_bytes_.Bind();
    use.Bind(1, c.run_id);
    if (use.Step()) {
      bytes = use.Int(0);
      truncated = use.Int(1) != 0;
    }
    if (!use.status().ok()) return use.status();
  }
  auto insert = [&](const LogChunk& chunk) -> Result<bool> {
    auto use = insert_chunk_.Bind();
    use.Bind(1, chunk.run_id)
        .Bind(2, chunk.shard)
        .Bind(3, chunk.attempt)
        .Bind(4, chunk.seq)
        .Bind(5, static_cast<int>(chunk.stream))
        .Bind(6, chunk.at_ms)
        .BindBlob(7, chunk.data);
    if (Status s = use.Exec(); !s.ok()) return s;
    return sqlite3_changes(db_.handle()) == 1;
  };
  bool over = truncated || bytes + static_cast<int64_t>(c.data.size()) > run_cap_bytes_;
  if (over) {
    // Keep the (run, shard, attempt, seq) identity so a resend stays a duplicate, but store a
    // marker instead of the bytes, once per run.
    LogChunk marker = c;
    marker.stream = LogStream::kMarker;
    marker.data = truncated ? std::string() :
        "[jobctl: output truncated: the run reached its log cap of " +
        std::to_string(run_cap_bytes_) + " bytes]\n";
    Result<bool> stored = insert(marker);
    if (!stored.ok()) return stored.status();
    if (!*stored) return AppendResult::kDuplicate;
    if (Status s = add_run_bytes_.Bind().Bind(1, c.run_id).Bind(2, 0).Exec(); !s.ok()) return s;
    if (Status s = mark_truncated_.Bind().Bind(1, c.run_id).Exec(); !s.ok()) return s;
    return AppendResult::kTruncated;
  }
  Result<bool> stored = insert(c);
  if (!stored.ok()) return stored.status();
  if (!*stored) return AppendResult::kDuplicate;
  if (Status s = add_run_bytes_.Bind().Bind(1, c.run_id).Bind(2, static_cast<int64_t>(c.data.size()))
                     .Exec();
      !s.ok()) {
    return s;
  }
  return AppendResult::kStored;
}

Result<std::vector<LogChunk>> LogStore::Read(const LogQuery& q) {
  std::vector<LogChunk> out;
  auto use = read_.Bind();
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

Result<int64_t> LogStore::RunBytes(int64_t run_id) {
  auto use = run_bytes_.Bind();
  use.Bind(1, run_id);
  int64_t bytes = use.Step() ? use.Int(0) : 0;
  if (!use.status().ok()) return use.status();
  return bytes;
}

}  // namespace jobctl::store
