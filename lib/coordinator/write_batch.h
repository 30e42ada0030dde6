// WriteBatch is the coordinator's group commit. Every write made while handling one turn of
// the event loop (fires, claims, results, log chunks) goes into one transaction per
// database, committed once at the end of that turn (a uv_check handle); replies wait for
// the commit through OnCommit(). One fsync then covers every request of the turn, and
// nothing is acknowledged before it is durable.
//
// Every write goes through Write() (or WriteLogs()), the one error path: it opens the turn's
// transaction if needed, runs the write in it, and makes any failure sticky. If a write fails
// midway (disk full, I/O error) the whole turn is rolled back, every
// waiting reply gets the error, and on_failure lets the coordinator rebuild its memory from
// the store, which is the truth. While commits keep failing (a full disk does not heal by
// itself) RetryDelayMs() tells the parts that write on their own (the fire loop) how long to
// hold off, growing from 100 ms to 2 s, so that a failing disk is retried a few times a
// second instead of in a hot loop of fire, fail, reload; the failures are logged when they
// start, every 10 s while they last, and when they end. Loop thread only; owned by the
// Coordinator.
#pragma once

#include <uv.h>

#include <functional>
#include <memory>
#include <vector>

#include "base/status.h"
#include "store/log_store.h"
#include "store/store.h"
#include "uvx/handles.h"

namespace jobctl::coordinator {

class WriteBatch {
 public:
  WriteBatch(uv_loop_t* loop, store::Store* store, store::LogStore* logs);
  WriteBatch(const WriteBatch&) = delete;
  WriteBatch& operator=(const WriteBatch&) = delete;

  void Start();
  void Close();  // commits what is open, then closes the handles

  // Runs `write` (returning a Status or a Result) in this turn's transaction of the
  // scheduler database, opening it if needed. If opening or the write fails, the failure is
  // sticky: the whole turn rolls back instead of committing, its replies get the error, and
  // the failure is also returned for the caller to answer with. A failure with the code
  // `expected` (kConflict: the row is already there; kNotFound: it is gone) undoes only that
  // statement: it is returned and the turn goes on.
  template <typename F>
  auto Write(F&& write, Status::Code expected = Status::Code::kOk) -> decltype(write());
  // As Write, in the log database's transaction.
  template <typename F>
  auto WriteLogs(F&& write) -> decltype(write());
  // As WriteLogs, for writes that are done again if a crash loses them (retention's deletes
  // of output): while the turn's log transaction holds only such writes, its commit does not
  // wait for the disk (LogStore::BeginRedoable), so a retention slice adds no fsync to the
  // turn whose fires and claims wait for its commit. A durable write later in the same turn
  // commits them at once and opens a durable transaction: they may then be committed while
  // the rest of the turn rolls back, which leaves a run that retention is deleting with part
  // of its output gone, and retention deletes it again.
  template <typename F>
  auto WriteRedoableLogs(F&& write) -> decltype(write());
  // As Write, for a caller with nobody to answer: the turn's rollback, and the reload from
  // the store that follows it, is all the handling the failure needs.
  template <typename F>
  void Stage(F&& write) {
    if (const auto r = Write(std::forward<F>(write)); !r.ok()) return;
  }

  // Open the transaction of the scheduler (or log) database for this turn, if not yet open.
  // A failure to open is sticky, as in Write.
  Status Open();
  Status OpenLogs(bool durable = true);
  // Runs after this turn's commit with its outcome. Requires Open() or OpenLogs() first.
  void OnCommit(std::function<void(const Status&)> cb);
  // A write of this turn failed: roll the turn back instead of committing it.
  void Fail(const Status& status);
  // Commits now (the uv_check does this at the end of every turn).
  void Flush();

  std::function<void(const Status&)> on_failure;
  // Called with the duration of every commit that wrote something, in seconds.
  std::function<void(double)> on_commit_seconds;

  // How long to wait before writing again: 0 unless the last commit failed.
  int64_t RetryDelayMs() const;
  // The wait after `failures` commits in a row failed (pure; 0 for none).
  static int64_t BackoffMs(uint64_t failures);

  uint64_t commits() const { return commits_; }
  uint64_t last_commit_us() const { return last_commit_us_; }
  // CLOCK_MONOTONIC (ns) when the first transaction of the last commit began: its writes
  // were checked against the store's hold then (the event log's time of the commit).
  int64_t last_began_ns() const { return last_began_ns_; }

 private:
  void Arm();
  void NoteOutcome(const Status& result, bool wrote);

  uv_loop_t* loop_;
  store::Store* store_;
  store::LogStore* logs_;
  std::unique_ptr<uvx::Check> check_;
  std::unique_ptr<uvx::Idle> idle_;
  bool armed_ = false;
  bool logs_redoable_ = false;  // the turn's log transaction holds only redoable writes
  Status failed_;
  std::vector<std::function<void(const Status&)>> callbacks_;
  uint64_t commits_ = 0;
  uint64_t last_commit_us_ = 0;
  int64_t began_ns_ = 0;  // of the turn's first transaction; 0: none open
  int64_t last_began_ns_ = 0;
  uint64_t failures_in_a_row_ = 0;
  uint64_t last_failure_ms_ = 0;      // uv_now of the last failed commit
  uint64_t last_failure_log_ms_ = 0;  // uv_now of the last log line about failures
};

template <typename F>
auto WriteBatch::Write(F&& write, Status::Code expected) -> decltype(write()) {
  if (Status s = Open(); !s.ok()) return s;
  auto result = write();
  if (!result.ok() && StatusOf(result).code() != expected) Fail(StatusOf(result));
  return result;
}

template <typename F>
auto WriteBatch::WriteLogs(F&& write) -> decltype(write()) {
  if (Status s = OpenLogs(); !s.ok()) return s;
  auto result = write();
  if (!result.ok()) Fail(StatusOf(result));
  return result;
}

template <typename F>
auto WriteBatch::WriteRedoableLogs(F&& write) -> decltype(write()) {
  if (Status s = OpenLogs(/*durable=*/false); !s.ok()) return s;
  auto result = write();
  if (!result.ok()) Fail(StatusOf(result));
  return result;
}

}  // namespace jobctl::coordinator
