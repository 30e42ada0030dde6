#include "store/statement.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

#include "base/log.h"

namespace jobctl::store {

Status SqliteStatus(int rc, sqlite3* db, std::string_view what) {
  std::string msg = std::string(what) + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  switch (rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_DONE:
    case SQLITE_ROW: return Status::Ok();
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return Status::Unavailable(msg);
    case SQLITE_FULL: return Status::ResourceExhausted(msg);
    case SQLITE_CONSTRAINT: return Status::Conflict(msg);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return Status::Corrupt(msg);
    default: return Status::Io(msg);
  }
}

Statement::~Statement() = default;

Status Statement::Prepare(sqlite3* db, std::string_view sql) {
  db_ = db;
  sql_ = std::string(sql);
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v3(db, sql_.c_str(), static_cast<int>(sql_.size()),
                              SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
  if (rc != SQLITE_OK) return SqliteStatus(rc, db, "prepare \"" + sql_ + "\"");
  stmt_.reset(raw);
  return Status::Ok();
}

Statement::Use Statement::Bind() { return Use(this); }

Statement::Use::~Use() {
  if (!s_->prepared()) return;
  sqlite3_reset(s_->stmt_.get());
  sqlite3_clear_bindings(s_->stmt_.get());
}

Statement::Use& Statement::Use::Bind(int i, int64_t v) {
  if (!bind_status_.ok()) return *this;
  int rc = sqlite3_bind_int64(s_->stmt_.get(), i, v);
  if (rc != SQLITE_OK && bind_status_.ok()) bind_status_ = SqliteStatus(rc, s_->db_, "bind");
  return *this;
}

Statement::Use& Statement::Use::Bind(int i, std::string_view v) {
  if (!bind_status_.ok()) return *this;
  int rc =
      sqlite3_bind_text64(s_->stmt_.get(), i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK && bind_status_.ok()) bind_status_ = SqliteStatus(rc, s_->db_, "bind");
  return *this;
}

Statement::Use& Statement::Use::BindBlob(int i, std::string_view bytes) {
  if (!bind_status_.ok()) return *this;
  int rc = sqlite3_bind_blob64(s_->stmt_.get(), i, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK && bind_status_.ok()) bind_status_ = SqliteStatus(rc, s_->db_, "bind");
  return *this;
}

Statement::Use& Statement::Use::Bind(int i, std::nullopt_t) {
  if (!bind_status_.ok()) return *this;
  sqlite3_bind_null(s_->stmt_.get(), i);
  return *this;
}

Statement::Use& Statement::Use::Bind(int i, const std::optional<int64_t>& v) {
  return v ? Bind(i, *v) : Bind(i, std::nullopt);
}

bool Statement::Use::Step() {
  if (!bind_status_.ok()) {
    status_ = bind_status_;
    return false;
  }
  int rc = sqlite3_step(s_->stmt_.get());
  if (rc == SQLITE_ROW) return true;
  if (rc != SQLITE_DONE) status_ = SqliteStatus(rc, s_->db_, s_->sql_);
  return false;
}

Status Statement::Use::Exec() {
  while (Step()) {
  }
  return status_;
}

Status Statement::Use::ExecExpectingChanges(int n) {
  if (Status s = Exec(); !s.ok()) return s;
  if (sqlite3_changes(s_->db_) != n) return Status::NotFound("no matching row");
  return Status::Ok();
}

int64_t Statement::Use::Int(int col) const { return sqlite3_column_int64(s_->stmt_.get(), col); }

std::optional<int64_t> Statement::Use::OptInt(int col) const {
  if (IsNull(col)) return std::nullopt;
  return Int(col);
}

std::string Statement::Use::Text(int col) const {
  const void* p = sqlite3_column_blob(s_->stmt_.get(), col);
  int n = sqlite3_column_bytes(s_->stmt_.get(), col);
  return p ? std::string(static_cast<const char*>(p), static_cast<size_t>(n)) : std::string();
}

std::string_view Statement::Use::View(int col) const {
  const void* p = sqlite3_column_blob(s_->stmt_.get(), col);
  int n = sqlite3_column_bytes(s_->stmt_.get(), col);
  return p ? std::string_view(static_cast<const char*>(p), static_cast<size_t>(n))
           : std::string_view();
}

bool Statement::Use::IsNull(int col) const {
  return sqlite3_column_type(s_->stmt_.get(), col) == SQLITE_NULL;
}

Status RestrictToOwner(const std::string& path) {
  // SQLite creates a database 0644 less the umask, and its -wal and -shm files with the
  // database's own mode: creating the file first, 0600, keeps all three to their owner.
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Io("cannot open " + path + ": " + std::strerror(errno));
  ::close(fd);
  for (const std::string& p : {path, path + "-wal", path + "-shm", path + "-journal"}) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 07777) == 0600) {
      continue;
    }
    if (::chmod(p.c_str(), 0600) != 0) {
      return Status::Io("cannot make " + p + " private (chmod 0600): " + std::strerror(errno));
    }
    if ((st.st_mode & 077) != 0) {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
      log::Warn("store file was readable by others; made it 0600", {{"path", p}, {"mode", mode}});
    }
  }
  return Status::Ok();
}

// The checkpoint thread of one database file (Database::CheckpointInBackground). The
// writer's WAL hook, on the writer's thread, asks for a checkpoint; the thread runs them one
// at a time, passively (never waiting for the writer, never making it wait), so a
// checkpoint that could not copy every frame (a reader held an older snapshot) is simply
// asked for again by a later commit. The thread never logs (the log is the loop's alone): a
// failure it met is logged by the hook, on the writer's thread, at a later commit.
class WalCheckpointer {
 public:
  WalCheckpointer(sqlite3* writer, sqlite3* own, std::string path, int64_t pages)
      : writer_(writer), db_(own), path_(std::move(path)), pages_(pages) {
    sqlite3_wal_hook(writer_, &WalCheckpointer::OnCommit, this);
    thread_ = std::thread([this] { Run(); });
  }
  ~WalCheckpointer() {
    sqlite3_wal_hook(writer_, nullptr, nullptr);
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
    sqlite3_close_v2(db_);
  }

 private:
  static int OnCommit(void* self, sqlite3*, const char*, int frames) {
    auto* c = static_cast<WalCheckpointer*>(self);
    std::string failure;
    {
      std::lock_guard lock(c->mu_);
      failure.swap(c->failure_);
      if (frames >= c->pages_) c->due_ = true;
    }
    if (frames >= c->pages_) c->cv_.notify_one();
    // A failed checkpoint (a full disk) is said once a minute at most.
    auto now = std::chrono::steady_clock::now();
    if (!failure.empty() && now - c->last_warning_ > std::chrono::minutes(1)) {
      c->last_warning_ = now;
      log::Warn("WAL checkpoint failed; the WAL grows until one succeeds",
                {{"path", c->path_}, {"error", failure}});
    }
    return SQLITE_OK;
  }
  void Run() {
    std::unique_lock lock(mu_);
    while (true) {
      cv_.wait(lock, [this] { return due_ || stop_; });
      if (stop_) return;
      due_ = false;
      lock.unlock();
      int rc = sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
      // BUSY: another checkpoint was running (the close's, or a tool's); the next commit asks
      // again. Anything else (a full disk) is left for the hook to log.
      std::string failure;
      if (rc != SQLITE_OK && rc != SQLITE_BUSY) {
        failure = SqliteStatus(rc, db_, "checkpoint").ToString();
      }
      lock.lock();
      if (!failure.empty()) failure_ = std::move(failure);
    }
  }

  sqlite3* writer_;
  sqlite3* db_;
  std::string path_;
  int64_t pages_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool due_ = false;
  bool stop_ = false;
  std::string failure_;  // the last checkpoint's failure, not logged yet
  std::chrono::steady_clock::time_point last_warning_{};  // the writer's thread only
};

Status Database::CheckpointInBackground(const std::string& path, int64_t pages) {
  if (db_ == nullptr) return Status::Internal("checkpoint: the database is not open");
  checkpointer_.reset();
  sqlite3* own = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &own, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Status s = SqliteStatus(rc, own, "open " + path + " to checkpoint it");
    sqlite3_close_v2(own);
    return s;
  }
  sqlite3_extended_result_codes(own, 1);
  // FULL: the file is synced after each checkpoint, as the writer's own checkpoints were.
  char* err = nullptr;
  rc = sqlite3_exec(own, "PRAGMA synchronous=FULL", nullptr, nullptr, &err);
  sqlite3_free(err);
  if (rc != SQLITE_OK) {
    Status s = SqliteStatus(rc, own, path + ": synchronous");
    sqlite3_close_v2(own);
    return s;
  }
  // The writer no longer checkpoints in its commits: the hook below replaces SQLite's.
  checkpointer_ = std::make_unique<WalCheckpointer>(db_, own, path, std::max<int64_t>(pages, 1));
  return Status::Ok();
}

Database::Database() = default;

Database::~Database() {
  checkpointer_.reset();
  statements_.clear();
  if (db_ != nullptr) sqlite3_close_v2(db_);
}

Statement::Use Database::Use(const Sql& sql) {
  Statement& st = statements_[&sql];
  if (st.prepared()) return Statement::Use(&st);
  return Statement::Use(&st, st.Prepare(db_, sql.text));
}

Status Database::Exec(std::string_view sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, std::string(sql).c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    // "COMMIT: database or disk is full", with SQLite's own detail when it says more.
    std::string what(sql);
    if (err != nullptr && std::string_view(err) != sqlite3_errstr(rc))
      what += std::string(": ") + err;
    sqlite3_free(err);
    return SqliteStatus(rc, nullptr, what);
  }
  return Status::Ok();
}

Status Database::Begin() { return Exec("BEGIN IMMEDIATE"); }
Status Database::Commit() { return Exec("COMMIT"); }
void Database::Rollback() {
  if (!in_transaction()) return;
  // A failed ROLLBACK leaves nothing to undo by hand: SQLite rolls back itself when a
  // statement of the transaction failed, and a closed connection keeps nothing uncommitted.
  if (Status s = Exec("ROLLBACK"); !s.ok()) log::Warn("rollback failed", {{"error", s.ToString()}});
}

Status Database::Open(const std::string& path, const std::vector<Migration>& migrations,
                      int page_size) {
  if (Status s = RestrictToOwner(path); !s.ok()) return s;
  int rc =
      sqlite3_open_v2(path.c_str(), &db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) return SqliteStatus(rc, db_, "open " + path);
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, 5000);
  // Before anything is written (WAL mode writes the header): later it would be a no-op.
  if (page_size > 0) {
    if (Status s = Exec("PRAGMA page_size=" + std::to_string(page_size)); !s.ok()) {
      return s.WithContext(path);
    }
  }
  // Before the first table is created, where it takes effect without a VACUUM.
  if (Status s = Exec("PRAGMA auto_vacuum=INCREMENTAL"); !s.ok()) return s.WithContext(path);
  // FULL: a commit is on disk when COMMIT returns, so nothing acknowledged can be lost.
  for (const char* pragma : {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL",
                             "PRAGMA foreign_keys=ON", "PRAGMA temp_store=MEMORY"}) {
    if (Status s = Exec(pragma); !s.ok()) return s.WithContext(path);
  }
  Statement version;
  if (Status s = version.Prepare(db_, "PRAGMA user_version"); !s.ok()) return s;
  int64_t current = 0;
  {
    auto use = version.Bind();
    if (use.Step()) current = use.Int(0);
    if (!use.status().ok()) return use.status();
  }
  int newest = migrations.empty() ? 0 : migrations.back().version;
  if (current > newest) {
    return Status::Corrupt(path + " has schema version " + std::to_string(current) +
                           ", newer than this binary knows (" + std::to_string(newest) +
                           "); run a newer jobctl");
  }
  if (Status s = UseIncrementalVacuum(path); !s.ok()) return s;
  for (const Migration& m : migrations) {
    if (m.version <= current) continue;
    if (Status s = Begin(); !s.ok()) return s;
    Status s = Exec(m.sql);
    if (s.ok()) s = Exec("PRAGMA user_version=" + std::to_string(m.version));
    if (s.ok()) s = Commit();
    if (!s.ok()) {
      Rollback();
      return s.WithContext(path + ": migration " + std::to_string(m.version));
    }
  }
  return Status::Ok();
}

Result<int64_t> Database::PragmaInt(std::string_view name) {
  Statement st;
  if (Status s = st.Prepare(db_, "PRAGMA " + std::string(name)); !s.ok()) return s;
  auto use = st.Bind();
  int64_t v = use.Step() ? use.Int(0) : 0;
  if (!use.status().ok()) return use.status();
  return v;
}

Status Database::UseIncrementalVacuum(const std::string& path) {
  Result<int64_t> mode = PragmaInt("auto_vacuum");
  if (!mode.ok()) return mode.status().WithContext(path);
  if (*mode == 2) return Status::Ok();  // INCREMENTAL
  Result<Space> space = SpaceUsed();
  if (!space.ok()) return space.status().WithContext(path);
  if (space->file_bytes > kConvertAtOpenBytes) {
    log::Warn(
        "store file does not give freed space back; stop the coordinator and run "
        "sqlite3 FILE 'PRAGMA auto_vacuum=INCREMENTAL; VACUUM;' to convert it",
        {{"path", path}, {"bytes", space->file_bytes}});
    return Status::Ok();
  }
  // The pragma takes effect on an existing file only through a VACUUM, which rewrites it:
  // cheap at this size, and done once.
  if (Status s = Exec("PRAGMA auto_vacuum=INCREMENTAL"); !s.ok()) return s.WithContext(path);
  if (Status s = Exec("VACUUM"); !s.ok()) return s.WithContext(path + ": vacuum");
  log::Info("store file converted to give freed space back",
            {{"path", path}, {"bytes", space->file_bytes}});
  return Status::Ok();
}

Result<Database::Space> Database::SpaceUsed() {
  Space out;
  Result<int64_t> pages = PragmaInt("page_count");
  if (!pages.ok()) return pages.status();
  Result<int64_t> free_pages = PragmaInt("freelist_count");
  if (!free_pages.ok()) return free_pages.status();
  Result<int64_t> page_size = PragmaInt("page_size");
  if (!page_size.ok()) return page_size.status();
  Result<int64_t> mode = PragmaInt("auto_vacuum");
  if (!mode.ok()) return mode.status();
  out.file_bytes = *pages * *page_size;
  out.free_bytes = *free_pages * *page_size;
  out.incremental = *mode == 2;
  return out;
}

Result<int64_t> Database::Reclaim(int64_t max_bytes) {
  Result<int64_t> before = PragmaInt("freelist_count");
  if (!before.ok()) return before.status();
  if (*before == 0 || max_bytes <= 0) return int64_t{0};
  Result<int64_t> page_size = PragmaInt("page_size");
  if (!page_size.ok()) return page_size.status();
  int64_t pages = std::max<int64_t>(max_bytes / *page_size, 1);
  if (Status s = Exec("PRAGMA incremental_vacuum(" + std::to_string(pages) + ")"); !s.ok()) {
    return s;
  }
  Result<int64_t> after = PragmaInt("freelist_count");
  if (!after.ok()) return after.status();
  return (*before - *after) * *page_size;
}

}  // namespace jobctl::store
