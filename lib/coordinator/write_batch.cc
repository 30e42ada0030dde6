#include "coordinator/write_batch.h"

#include <algorithm>

#include "base/event_log.h"
#include "base/log.h"
#include "model/backoff.h"

namespace jobctl::coordinator {
namespace {

// From a tenth of a second to two, unjittered: there is one writer.
constexpr BackoffPolicy kCommitBackoff{.base_ms = 100, .cap_ms = 2000, .jitter = Jitter::kNone};
constexpr uint64_t kFailureLogEveryMs = 10'000;

}  // namespace

int64_t WriteBatch::BackoffMs(uint64_t failures) {
  if (failures == 0) return 0;
  int64_t doublings = static_cast<int64_t>(std::min<uint64_t>(failures - 1, 64));
  return BackoffCeilingMs(kCommitBackoff, doublings);
}

int64_t WriteBatch::RetryDelayMs() const {
  if (failures_in_a_row_ == 0) return 0;
  int64_t until = static_cast<int64_t>(last_failure_ms_) + BackoffMs(failures_in_a_row_);
  return std::max<int64_t>(until - static_cast<int64_t>(uv_now(loop_)), 0);
}

WriteBatch::WriteBatch(uv_loop_t* loop, store::Store* store, store::LogStore* logs)
    : loop_(loop), store_(store), logs_(logs) {}

void WriteBatch::Start() {
  check_ = std::make_unique<uvx::Check>(loop_);
  idle_ = std::make_unique<uvx::Idle>(loop_);
  check_->Start([this] { Flush(); });
  // The check handle alone must not keep the loop alive.
  check_->Unref();
}

void WriteBatch::Close() {
  Flush();
  check_.reset();
  idle_.reset();
}

void WriteBatch::Arm() {
  if (armed_) return;
  armed_ = true;
  // An active idle handle makes this turn's poll return at once, so the commit at the end of
  // the turn is never delayed by waiting for I/O.
  if (idle_) idle_->Start([] {});
}

Status WriteBatch::Open() {
  Arm();
  if (store_->in_transaction()) return Status::Ok();
  if (began_ns_ == 0) began_ns_ = MonotonicNs();
  Status s = store_->Begin();
  if (!s.ok()) Fail(s);
  return s;
}

Status WriteBatch::OpenLogs(bool durable) {
  Arm();
  if (logs_->in_transaction()) {
    if (!durable || !logs_redoable_) return Status::Ok();
    // A durable write after redoable ones: they are committed now (a failed turn's are
    // not: the turn rolls back), and a durable transaction takes over.
    if (!failed_.ok()) return failed_;
    if (Status s = logs_->Commit(); !s.ok()) {
      logs_->Rollback();
      logs_redoable_ = false;
      Fail(s);
      return s;
    }
  }
  if (began_ns_ == 0) began_ns_ = MonotonicNs();
  Status s = durable ? logs_->Begin() : logs_->BeginRedoable();
  logs_redoable_ = s.ok() && !durable;
  if (!s.ok()) Fail(s);
  return s;
}

void WriteBatch::OnCommit(std::function<void(const Status&)> cb) {
  Arm();
  callbacks_.push_back(std::move(cb));
}

void WriteBatch::Fail(const Status& status) {
  if (failed_.ok()) failed_ = status;
}

void WriteBatch::Flush() {
  if (!armed_) return;
  armed_ = false;
  if (idle_) idle_->Stop();
  uint64_t start = uv_hrtime();
  Status result = failed_;
  bool wrote = store_->in_transaction() || logs_->in_transaction();
  // The scheduler database first: a log chunk is only acknowledged together with it.
  if (result.ok() && store_->in_transaction()) result = store_->Commit();
  if (result.ok() && logs_->in_transaction()) result = logs_->Commit();
  if (!result.ok()) {
    store_->Rollback();
    logs_->Rollback();
  } else {
    ++commits_;
  }
  logs_redoable_ = false;
  last_commit_us_ = (uv_hrtime() - start) / 1000;
  last_began_ns_ = began_ns_;
  began_ns_ = 0;
  if (wrote && result.ok() && on_commit_seconds) {
    on_commit_seconds(static_cast<double>(last_commit_us_) / 1e6);
  }
  failed_ = Status::Ok();
  std::vector<std::function<void(const Status&)>> callbacks;
  callbacks.swap(callbacks_);
  NoteOutcome(result, wrote);
  for (auto& cb : callbacks) cb(result);
  if (!result.ok() && on_failure) on_failure(result);
}

void WriteBatch::NoteOutcome(const Status& result, bool wrote) {
  uint64_t now = uv_now(loop_);
  if (result.ok()) {
    if (wrote && failures_in_a_row_ > 0) {
      log::Info("commits succeed again", {{"failed", failures_in_a_row_}});
      failures_in_a_row_ = 0;
    }
    return;
  }
  ++failures_in_a_row_;
  last_failure_ms_ = now;
  // One line when the failures start and one every 10 s while they last, not one per turn.
  if (failures_in_a_row_ == 1 || now - last_failure_log_ms_ >= kFailureLogEveryMs) {
    last_failure_log_ms_ = now;
    log::Error("commit failed; reloading state from the store",
               {{"error", result.ToString()}, {"failed_in_a_row", failures_in_a_row_}});
  }
}

}  // namespace jobctl::coordinator
