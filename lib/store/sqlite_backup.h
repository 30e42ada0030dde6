// BackupSqlite copies one database of the embedded store (jobctl.db, or the log store
// logs.db) to a new file while the coordinator goes on writing to it; `jobctl backup` calls
// it once per file.
//
// The copy is the database as of one instant. The source is opened on a connection of its
// own, which opens a read transaction first and holds it to the end: under WAL a reader never
// blocks the writer, and the writer never disturbs the reader's snapshot, so the coordinator
// keeps committing while SQLite's online backup API copies that snapshot page by page
// (pages_per_step at a time, with a progress report after each step). The WAL grows while
// the snapshot is held and is checkpointed once it is released.
//
// What a crash may leave: the copy is written to DEST.tmp-XXXXXX beside the destination
// (mode 0600: a store holds token hashes and every job's command), switched to a rollback
// journal (one self-contained file, readable on read-only media), flushed to disk, and only
// then renamed to DEST, and the directory flushed. A crash or a failure leaves at most a
// stray temporary file, never a partial copy under DEST. The copy is an ordinary SQLite file:
// `jobctl serve` opens it in a data directory as it opens its own store (WAL again).
//
// The source connection opens the file read-write (never creating it) so that, when it is
// the last connection, SQLite removes the -wal and -shm files it made; run the backup as
// the user the coordinator runs as, so such files never belong to another user.
//
// Errors: kNotFound when the source does not exist, kConflict when DEST exists and
// Overwrite::kRefuse, kCorrupt when the source is not a database, kUnavailable when it is
// locked, kIo otherwise; each names the file. Blocking; any thread, one call at a time per
// destination.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "base/status.h"

namespace jobctl::store {

enum class Overwrite { kRefuse, kReplace };

struct BackupProgress {
  int64_t pages_done = 0;
  int64_t pages_total = 0;  // of the snapshot being copied
  int64_t page_size = 0;    // bytes
};

struct BackupOptions {
  std::string source;  // an existing SQLite database file
  std::string dest;    // the file to write; its directory must exist
  Overwrite overwrite = Overwrite::kRefuse;
  int pages_per_step = 1024;  // pages copied between two progress reports (4 MiB at 4 KiB)
  // Called after each step, from the calling thread; may be empty.
  std::function<void(const BackupProgress&)> on_progress;
};

struct BackupStats {
  int64_t bytes = 0;  // size of the file written
  int64_t pages = 0;
};

Result<BackupStats> BackupSqlite(const BackupOptions& options);

}  // namespace jobctl::store
