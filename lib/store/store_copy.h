// CopyToPostgres moves an embedded store (the SQLite files jobctl.db and logs.db of a data
// directory) into a PostgreSQL database, for `jobctl store copy`: a site that outgrows one
// host keeps its history. Every table is copied as it is, ids included: revisions, jobs,
// runs and their shards, misses, declared output ends, leases, agents, tokens (their hashes),
// the audit events and the counters (the fencing token counter with them, so no token is
// ever handed out twice), and, unless told not to, the run output (log chunks and the bytes
// counted per run). Then each identity sequence is set past the highest copied id, so the
// next run, job or event gets a new id.
//
// All or nothing: the target is migrated to the current schema first, then everything is
// copied in ONE PostgreSQL transaction, output included, while holding the same advisory
// lock a coordinator holds its database by. A failure at any point (the server lost, the
// disk full, an interrupt) rolls it all back and leaves the tables empty, so the copy can
// simply be run again. The price is one long transaction on a big store, which PostgreSQL
// bears (its WAL grows by about the size of the output copied).
//
// The caller makes sure no coordinator writes the source meanwhile (`jobctl store copy`
// holds serve's lock on the data directory). The source is opened as `jobctl serve` would
// open it: a store written by an older jobctl is migrated to the current schema first; one
// newer than this binary is refused.
//
// Errors: kNotFound when there is no jobctl.db; kPermissionDenied when it may not be read;
// kConflict when the target already holds jobctl data (the message names its tables) or a
// coordinator holds the target; kUnavailable when the server cannot be reached; kCorrupt
// for a damaged or newer store; kIo otherwise. Blocking; any thread, one call at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"

namespace jobctl::store {

struct CopyProgress {
  std::string table;  // the PostgreSQL table being written
  int64_t rows = 0;   // copied so far into it
  int64_t bytes = 0;  // output bytes so far (log_chunks only)
  bool done = false;  // the table is complete
};

struct CopyOptions {
  std::string path;       // the embedded store's jobctl.db
  std::string logs_path;  // its logs.db; empty: the output is not copied
  std::string url;        // the target: postgresql://... or a libpq conninfo
  // Called from the calling thread after each table, and every few thousand log chunks; may
  // be empty.
  std::function<void(const CopyProgress&)> on_progress;
};

struct CopyTableStats {
  std::string table;  // PostgreSQL's name of it
  int64_t rows = 0;
};

struct CopyStats {
  std::vector<CopyTableStats> tables;  // in the order they were copied
  int64_t output_bytes = 0;            // the data of the log chunks copied
};

Result<CopyStats> CopyToPostgres(const CopyOptions& options);

}  // namespace jobctl::store
