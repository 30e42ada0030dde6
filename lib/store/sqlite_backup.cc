#include "store/sqlite_backup.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "store/statement.h"

namespace jobctl::store {
namespace {

using Connection = std::unique_ptr<sqlite3, int (*)(sqlite3*)>;

Status Errno(const std::string& what) { return Status::Io(what + ": " + std::strerror(errno)); }

std::string DirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// The temporary copy: removed when the backup fails, kept once it has been renamed.
class TempCopy {
 public:
  ~TempCopy() {
    if (!path_.empty() && !kept_) ::unlink(path_.c_str());
  }
  Status Create(const std::string& dest) {
    std::vector<char> name(dest.begin(), dest.end());
    for (char c : std::string(".tmp-XXXXXX")) name.push_back(c);
    name.push_back('\0');
    int fd = ::mkostemp(name.data(), O_CLOEXEC);  // mode 0600
    if (fd < 0) return Errno("cannot create a temporary file beside " + dest);
    ::close(fd);
    path_ = name.data();
    return Status::Ok();
  }
  const std::string& path() const { return path_; }
  void Keep() { kept_ = true; }

 private:
  std::string path_;
  bool kept_ = false;
};

Result<Connection> OpenDatabase(const std::string& path) {
  sqlite3* raw = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
  Connection db(raw, sqlite3_close_v2);
  if (rc != SQLITE_OK) return SqliteStatus(rc, raw, "open " + path);
  sqlite3_extended_result_codes(db.get(), 1);
  sqlite3_busy_timeout(db.get(), 5000);
  return db;
}

Status Exec(sqlite3* db, const char* sql, const std::string& path) {
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
  return SqliteStatus(rc, db, path);
}

Status CheckPaths(const BackupOptions& o) {
  struct stat src {};
  if (::stat(o.source.c_str(), &src) != 0) {
    if (errno == ENOENT) return Status::NotFound("no database at " + o.source);
    return Errno("cannot examine " + o.source);
  }
  if (!S_ISREG(src.st_mode)) return Status::Io(o.source + " is not a regular file");
  struct stat dst {};
  if (::stat(o.dest.c_str(), &dst) == 0) {
    if (dst.st_dev == src.st_dev && dst.st_ino == src.st_ino) {
      return Status::InvalidArgument(o.dest + " is the database being copied");
    }
    if (o.overwrite == Overwrite::kRefuse) return Status::Conflict(o.dest + " already exists");
  }
  return Status::Ok();
}

// Copies the snapshot `src` holds into `dst`, step by step.
Result<int64_t> CopyPages(sqlite3* src, sqlite3* dst, const BackupOptions& o,
                          const std::string& tmp) {
  sqlite3_backup* backup = sqlite3_backup_init(dst, "main", src, "main");
  if (backup == nullptr) return SqliteStatus(sqlite3_errcode(dst), dst, "copy " + o.source);
  int64_t page_size = 0;
  if (sqlite3_stmt* st = nullptr;
      sqlite3_prepare_v2(src, "PRAGMA page_size", -1, &st, nullptr) == SQLITE_OK) {
    if (sqlite3_step(st) == SQLITE_ROW) page_size = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
  }
  int rc = SQLITE_OK;
  int64_t total = 0;
  while (rc == SQLITE_OK) {
    rc = sqlite3_backup_step(backup, o.pages_per_step > 0 ? o.pages_per_step : -1);
    total = sqlite3_backup_pagecount(backup);
    if ((rc == SQLITE_OK || rc == SQLITE_DONE) && o.on_progress) {
      o.on_progress({total - sqlite3_backup_remaining(backup), total, page_size});
    }
  }
  // Finishing leaves the error of a failed step, and its message, on the destination.
  sqlite3_backup_finish(backup);
  if (rc != SQLITE_DONE) return SqliteStatus(rc, dst, "copy " + o.source + " to " + tmp);
  return total;
}

Status SyncFile(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return Errno("cannot open " + path);
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return Errno("cannot flush " + path);
  return Status::Ok();
}

// Renames without replacing when asked: renameat2(RENAME_NOREPLACE), or link and unlink on
// file systems without it. Either way an existing DEST is never touched.
Status Publish(const std::string& tmp, const std::string& dest, Overwrite overwrite) {
  if (overwrite == Overwrite::kReplace) {
    if (::rename(tmp.c_str(), dest.c_str()) != 0) return Errno("cannot rename to " + dest);
    return Status::Ok();
  }
  if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, dest.c_str(), RENAME_NOREPLACE) == 0) {
    return Status::Ok();
  }
  if (errno == EINVAL || errno == ENOSYS) {
    if (::link(tmp.c_str(), dest.c_str()) == 0) {
      ::unlink(tmp.c_str());
      return Status::Ok();
    }
  }
  if (errno == EEXIST) return Status::Conflict(dest + " already exists");
  return Errno("cannot rename to " + dest);
}

}  // namespace

Result<BackupStats> BackupSqlite(const BackupOptions& o) {
  if (Status s = CheckPaths(o); !s.ok()) return s;
  TempCopy tmp;
  if (Status s = tmp.Create(o.dest); !s.ok()) return s;
  BackupStats stats;
  {
    Result<Connection> src = OpenDatabase(o.source);
    if (!src.ok()) return src.status();
    // The snapshot: a read transaction, begun by the first read and held until the copy is
    // done, so every step copies the same instant however many commits happen meanwhile.
    if (Status s = Exec(src->get(), "BEGIN; SELECT count(*) FROM sqlite_master", o.source);
        !s.ok()) {
      return s;
    }
    Result<Connection> dst = OpenDatabase(tmp.path());
    if (!dst.ok()) return dst.status();
    // No journal while the copy is written: until the rename, a torn copy is just a stray
    // temporary file. The file is flushed once, at the end.
    if (Status s = Exec(dst->get(), "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF", tmp.path());
        !s.ok()) {
      return s;
    }
    Result<int64_t> pages = CopyPages(src->get(), dst->get(), o, tmp.path());
    if (!pages.ok()) return pages.status();
    stats.pages = *pages;
    // The pages carry the source's WAL flag; the copy is made a single rollback-journal file.
    if (Status s = Exec(dst->get(), "PRAGMA journal_mode=DELETE", tmp.path()); !s.ok()) return s;
    if (Status s = Exec(src->get(), "COMMIT", o.source); !s.ok()) return s;
  }
  if (Status s = SyncFile(tmp.path(), O_RDONLY); !s.ok()) return s;
  struct stat st {};
  if (::stat(tmp.path().c_str(), &st) != 0) return Errno("cannot examine " + tmp.path());
  stats.bytes = st.st_size;
  if (Status s = Publish(tmp.path(), o.dest, o.overwrite); !s.ok()) return s;
  tmp.Keep();
  // The rename is durable once the directory is.
  if (Status s = SyncFile(DirOf(o.dest), O_RDONLY | O_DIRECTORY); !s.ok()) return s;
  return stats;
}

}  // namespace jobctl::store
