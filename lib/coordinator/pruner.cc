#include "coordinator/pruner.h"

#include <algorithm>
#include <chrono>
#include <unordered_set>

#include "base/log.h"
#include "coordinator/metrics.h"

namespace jobctl::coordinator {

// What one slice changes: the Pruner's state after it and what it deleted, applied when
// the slice's commit succeeded.
struct Pruner::Next {
  int64_t runs_after = 0;
  int64_t output_after = 0;
  int64_t last_max_check_ms = 0;
  bool sweeping = false;
  int64_t sweep_after = 0;
  std::deque<Pending> queue;
  bool wrote = false;
  uint64_t runs = 0;
  uint64_t rows = 0;
  uint64_t chunks = 0;
  uint64_t bytes = 0;
  uint64_t reclaimed_bytes = 0;
  uint64_t orphans = 0;     // runs found by the sweep: gone, with output left
  int64_t chunk_bytes = 0;  // the average size of the chunks deleted (0: none deleted)
};

namespace {

// Output looked up per step: enough to fill a slice's chunk budget with small runs.
constexpr int kOutputPage = 64;
// The queue of runs whose output is to go is filled only while shorter than this.
constexpr size_t kQueueLow = 64;
// Runs the sweep looks at per slice: one page of the log store and one lookup per run.
constexpr int kSweepPage = 256;
constexpr int64_t kMiB = 1 << 20;
// The fewest runs a slice asks PruneRuns for, whatever the time left.
constexpr int kMinRuns = 8;

// A moving average of a step's cost, from one more measurement.
void Learn(double& average, double sample) {
  if (sample > 0) average = 0.75 * average + 0.25 * sample;
}

double MicrosSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

std::string Pruner::AgeReason(const char* key, Millis age) {
  return std::string(key) + " " + FormatDuration(age);
}

std::string Pruner::SizeReason(const char* key, int64_t bytes) {
  struct Unit {
    int64_t size;
    const char* name;
  };
  for (Unit u : {Unit{1LL << 30, "GiB"}, Unit{1LL << 20, "MiB"}, Unit{1LL << 10, "KiB"}}) {
    if (bytes >= u.size && bytes % u.size == 0) {
      return std::string(key) + " " + std::to_string(bytes / u.size) + u.name;
    }
  }
  return std::string(key) + " " + std::to_string(bytes) + "B";
}

Pruner::Pruner(Context* ctx, std::function<bool(int64_t)> is_open,
               std::function<std::optional<int64_t>()> next_fire,
               std::function<bool()> fired_in_turn)
    : ctx_(ctx),
      is_open_(std::move(is_open)),
      next_fire_(std::move(next_fire)),
      fired_in_turn_(std::move(fired_in_turn)) {}

Pruner::Window Pruner::Plan(int64_t now_us, std::optional<int64_t> next_fire_ms, bool turn_fired,
                            int64_t waited_ms) {
  const bool waited_enough = waited_ms >= kMaxWaitMs;
  // This turn's commit holds fires: a slice would make them wait for its work.
  if (turn_fired) return waited_enough ? Window{kMinWorkUs, 0} : Window{0, 1};
  if (!next_fire_ms) return {kSliceWorkUs, 0};
  // Half of the gap is the slice's work, the other half is for its commit (about as long) and
  // the loop.
  int64_t gap_us = std::max<int64_t>(*next_fire_ms * 1000 - now_us, 0);
  int64_t work_us = std::min(kSliceWorkUs, gap_us / 2);
  if (work_us >= kMinWorkUs) return {work_us, 0};
  if (waited_enough) return {kMinWorkUs, 0};
  // Just after the fire (the timer's milliseconds are whole): its turn is then over.
  return {0, (gap_us + 999) / 1000 + 1};
}

int64_t Pruner::LeftUs() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(deadline_ -
                                                               std::chrono::steady_clock::now())
      .count();
}

void Pruner::Start() {
  timer_ = std::make_unique<uvx::Timer>(ctx_->loop);
  gap_ = std::make_unique<uvx::Check>(ctx_->loop);
  // Pruning alone must not keep the loop alive.
  timer_->Unref();
  gap_->Unref();
  // Every start (a takeover too) sweeps once for output that runs deleted before it left.
  sweeping_ = true;
  sweep_after_ = 0;
  orphans_ = 0;
  Arm(More::kNo);
}

void Pruner::Arm(More more) {
  if (!timer_) return;  // closed
  waiting_since_ = -1;  // a new slice is due later: it waits afresh
  int64_t every = ctx_->config.prune_every.count();
  int64_t ms = more == More::kYes ? std::min<int64_t>(every, kCatchUpMs) : every;
  timer_->Once(static_cast<uint64_t>(ms), [this] { Due(); });
}

void Pruner::Due() {
  // Started after the WriteBatch's check handle, this one runs before it in the check phase
  // (libuv runs the last started first): at the end of the turn, just before its commit.
  if (gap_ && !gap_->active()) gap_->Start([this] { Slice(); });
}

void Pruner::Close() {
  timer_.reset();
  gap_.reset();
}

void Pruner::Slice() {
  if (!gap_) return;  // not started, or closed
  // One slice at a time, and none while commits fail: a failing disk is not made busier.
  gap_->Stop();
  if (busy_) return;  // the outstanding commit arms the next slice
  if (ctx_->batch->RetryDelayMs() > 0) return Arm(More::kNo);
  const int64_t mono = ctx_->MonoMs();
  Window w =
      Plan(ctx_->clock->NowUs(), next_fire_ ? next_fire_() : std::nullopt,
           fired_in_turn_ && fired_in_turn_(), waiting_since_ < 0 ? 0 : mono - waiting_since_);
  if (w.work_us == 0) {
    // Looked at again at the end of every turn, and the timer makes sure there is one.
    if (waiting_since_ < 0) waiting_since_ = mono;
    Due();
    timer_->Once(static_cast<uint64_t>(w.defer_ms), [this] { Due(); });
    return;
  }
  waiting_since_ = -1;
  Next next{runs_after_, output_after_, last_max_check_ms_, sweeping_, sweep_after_, queue_};
  auto began = std::chrono::steady_clock::now();
  deadline_ = began + std::chrono::microseconds(w.work_us);
  // The steps in this order, from the one the last slice did not reach; a step is begun only
  // while time is left (the first always). The sweep skips the runs already queued, so it
  // never takes those deleted by an earlier step of the same slice (uncommitted, so gone to
  // its reads) for ones deleted before.
  constexpr int kNumSteps = 6;
  auto run_step = [this, &next](int step) {
    switch (step) {
      case 0: return SweepOrphans(next);
      case 1: return PruneRuns(next);
      case 2: return FindOldOutput(next);
      case 3: return FindOutputOverMax(next);
      case 4: return PruneQueuedOutput(next);
      default: return Reclaim(next);
    }
  };
  bool ok = true;
  int not_reached = -1;
  for (int i = 0; i < kNumSteps && ok; ++i) {
    int step = (first_step_ + i) % kNumSteps;
    if (i > 0 && LeftUs() <= 0) {
      not_reached = step;
      break;
    }
    ok = run_step(step);
  }
  first_step_ = not_reached < 0 ? 0 : not_reached;
  ctx_->metrics->prune_slice.Observe(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
  if (!ok) return Arm(More::kNo);  // the turn rolls back; the state stays as it was
  // A slice that used its whole budget or time, or stopped a scan midway, is followed soon: a
  // store that grows faster than one slice per prune_every is still kept bounded.
  More more = next.runs >= static_cast<uint64_t>(kRunsPerSlice) || next.runs_after != 0 ||
                      next.output_after != 0 || !next.queue.empty() || next.sweeping ||
                      not_reached >= 0
                  ? More::kYes
                  : More::kNo;
  auto apply = [this](Next&& n) {
    runs_after_ = n.runs_after;
    output_after_ = n.output_after;
    last_max_check_ms_ = n.last_max_check_ms;
    orphans_ += n.orphans;
    if (sweeping_ && !n.sweeping && orphans_ > 0) {
      log::Info("output left by runs deleted before this start was found; it is deleted",
                {{"runs", static_cast<int64_t>(orphans_)}});
    }
    sweeping_ = n.sweeping;
    sweep_after_ = n.sweep_after;
    queue_ = std::move(n.queue);
    Metrics& m = *ctx_->metrics;
    m.pruned_runs_total += n.runs;
    m.pruned_rows_total += n.rows;
    m.pruned_log_chunks_total += n.chunks;
    m.pruned_log_bytes_total += n.bytes;
    m.reclaimed_bytes_total += n.reclaimed_bytes;
    if (n.chunk_bytes > 0) chunk_bytes_ = n.chunk_bytes;
    // Deletes free pages, which a later slice gives back (a slice may run out of time first).
    if (n.rows > 0 || n.chunks > 0) reclaim_more_ = true;
    if (n.runs > 0 || n.chunks > 0) {
      log::Debug("pruned", {{"runs", static_cast<int64_t>(n.runs)},
                            {"rows", static_cast<int64_t>(n.rows)},
                            {"chunks", static_cast<int64_t>(n.chunks)},
                            {"bytes", static_cast<int64_t>(n.bytes)}});
    }
  };
  if (!next.wrote) {
    apply(std::move(next));
    return Arm(more);
  }
  busy_ = true;
  ctx_->batch->OnCommit([this, apply, more, next = std::move(next)](const Status& s) mutable {
    busy_ = false;
    if (s.ok()) apply(std::move(next));
    Arm(s.ok() ? more : More::kNo);
  });
}

bool Pruner::PruneRuns(Next& next) {
  const CoordinatorConfig& c = ctx_->config;
  if (c.runs_for.count() == 0) return true;
  // As many runs as the time left allows, from what a run asked for cost lately.
  int limit = static_cast<int>(
      std::clamp<double>(static_cast<double>(LeftUs()) / run_us_, kMinRuns, kRunsPerSlice));
  store::RunRetention r{.ended_before_ms = ctx_->NowMs() - c.runs_for.count(),
                        .keep_last = static_cast<int>(c.keep_last),
                        .limit = limit,
                        .after_id = next.runs_after};
  next.wrote = true;
  auto began = std::chrono::steady_clock::now();
  Result<store::PrunedRuns> pruned = ctx_->batch->Write([&] { return ctx_->store->PruneRuns(r); });
  if (!pruned.ok()) return false;
  // Notifications delivered or given up before the same bound go too (a slice's worth).
  Result<int64_t> notes =
      ctx_->batch->Write([&] { return ctx_->store->PruneNotifications(r.ended_before_ms, limit); });
  if (!notes.ok()) return false;
  // Per run deleted, and a scan that deleted none costs as if it had deleted a quarter of
  // what it was asked for (it read four times that).
  Learn(run_us_, MicrosSince(began) / static_cast<double>(std::max<size_t>(
                                          pruned->run_ids.size(), static_cast<size_t>(limit / 4))));
  next.rows += static_cast<uint64_t>(*notes);
  next.runs_after = pruned->next_after_id;
  next.runs += pruned->run_ids.size();
  next.rows += static_cast<uint64_t>(pruned->rows);
  // Their output goes first, ahead of what is only old, with its accounting (no reason):
  // there is no run left to mark.
  for (auto it = pruned->run_ids.rbegin(); it != pruned->run_ids.rend(); ++it) {
    next.queue.push_front({*it, ""});
  }
  return true;
}

bool Pruner::SweepOrphans(Next& next) {
  if (!next.sweeping || next.queue.size() >= kQueueLow) return true;
  Result<std::vector<store::RunOutput>> page = ctx_->logs->ListOutput(
      {.after_run_id = next.sweep_after, .limit = kSweepPage, .with_pruned = true});
  if (!page.ok()) {
    log::Warn("cannot list output to sweep; the sweep ends", {{"error", page.status().ToString()}});
    next.sweeping = false;
    return true;
  }
  std::vector<int64_t> ids;
  for (const store::RunOutput& o : *page) ids.push_back(o.run_id);
  Result<std::vector<int64_t>> gone = ctx_->store->MissingRuns(ids);
  if (!gone.ok()) {
    log::Warn("cannot look up runs to sweep; the sweep ends",
              {{"error", gone.status().ToString()}});
    next.sweeping = false;
    return true;
  }
  // Runs deleted by earlier slices whose output is still queued are not news.
  std::unordered_set<int64_t> queued;
  for (const Pending& p : next.queue) queued.insert(p.run_id);
  for (int64_t id : *gone) {
    if (queued.contains(id)) continue;
    // No reason: there is no run left to mark, and the accounting goes with the chunks.
    next.queue.push_back({id, ""});
    ++next.orphans;
  }
  if (!ids.empty()) next.sweep_after = ids.back();
  // The end of the log store: the sweep is done until the next start.
  if (page->size() < static_cast<size_t>(kSweepPage)) next.sweeping = false;
  return true;
}

bool Pruner::FindOldOutput(Next& next) {
  const CoordinatorConfig& c = ctx_->config;
  if (c.logs_for.count() == 0 || next.queue.size() >= kQueueLow) return true;
  store::OutputFilter f{.after_run_id = next.output_after,
                        .last_before_ms = ctx_->NowMs() - c.logs_for.count(),
                        .limit = kOutputPage};
  Result<std::vector<store::RunOutput>> old = ctx_->logs->ListOutput(f);
  if (!old.ok()) {
    log::Warn("cannot list output to prune", {{"error", old.status().ToString()}});
    return true;
  }
  std::string reason = AgeReason("logs_for", c.logs_for);
  for (const store::RunOutput& o : *old) {
    next.output_after = o.run_id;
    if (!is_open_(o.run_id)) next.queue.push_back({o.run_id, reason});
  }
  // The end of the scan: the next one starts again from the oldest output.
  if (old->size() < static_cast<size_t>(kOutputPage)) next.output_after = 0;
  return true;
}

bool Pruner::FindOutputOverMax(Next& next) {
  const CoordinatorConfig& c = ctx_->config;
  if (c.logs_max_bytes == 0 || !next.queue.empty()) return true;
  // Summing output per job reads every run's accounting: a few times a minute at most.
  int64_t now = ctx_->MonoMs();
  int64_t every = std::max<int64_t>(6 * c.prune_every.count(), 1000);
  if (next.last_max_check_ms != 0 && now - next.last_max_check_ms < every) return true;
  next.last_max_check_ms = now;
  Result<std::vector<store::JobOutput>> jobs = ctx_->logs->OutputByJob(16);
  if (!jobs.ok()) {
    log::Warn("cannot sum output per job", {{"error", jobs.status().ToString()}});
    return true;
  }
  std::string reason = SizeReason("logs_max", c.logs_max_bytes);
  for (const store::JobOutput& j : *jobs) {
    if (j.job_id == 0 || j.stored_bytes <= c.logs_max_bytes) continue;
    int64_t excess = j.stored_bytes - c.logs_max_bytes;
    int64_t after = 0;
    // The job's oldest runs first, a bounded number of pages: the rest waits for next time.
    for (int page = 0; excess > 0 && page < 4; ++page) {
      Result<std::vector<store::RunOutput>> runs =
          ctx_->logs->ListOutput({.after_run_id = after, .job_id = j.job_id, .limit = kOutputPage});
      if (!runs.ok() || runs->empty()) break;
      for (const store::RunOutput& o : *runs) {
        after = o.run_id;
        if (is_open_(o.run_id)) continue;
        next.queue.push_back({o.run_id, reason});
        excess -= o.stored_bytes;
        if (excess <= 0) break;
      }
    }
  }
  return true;
}

bool Pruner::PruneQueuedOutput(Next& next) {
  // Both budgets bound the slice: 256 small chunks are cheap to delete, 256 of agentd's
  // largest (16 MiB) held up the fires behind the slice by tenths of a second. The chunks
  // asked for at a time are what the byte budget leaves at the last slice's chunk size.
  int budget = kChunksPerSlice;
  int64_t bytes_left = kOutputBytesPerSlice;
  int64_t chunk_bytes = std::max<int64_t>(chunk_bytes_, 1);
  int64_t now = ctx_->NowMs();
  int calls = 0;
  while (!next.queue.empty() && budget > 0 && bytes_left > 0) {
    // The first call goes whatever the time (the slice makes progress); after it, only while
    // time is left (a run with no output costs a call and deletes no chunk), each asking for
    // what the time left deletes at the cost of the last ones.
    int64_t left_us = LeftUs();
    if (calls > 0 && left_us <= 0) break;
    ++calls;
    int64_t in_time = static_cast<int64_t>(
        std::min(static_cast<double>(std::max<int64_t>(left_us, 0)) / output_us_per_mib_ * kMiB,
                 static_cast<double>(kOutputBytesPerSlice)));
    const Pending& p = next.queue.front();
    int ask = static_cast<int>(
        std::clamp<int64_t>(std::min(bytes_left, in_time) / chunk_bytes, 1, budget));
    next.wrote = true;
    auto began = std::chrono::steady_clock::now();
    Result<store::LogStore::Pruned> r = ctx_->batch->WriteRedoableLogs(
        [&] { return ctx_->logs->PruneOutput(p.run_id, now, p.reason, ask); });
    if (!r.ok()) return false;
    if (r->bytes > 0) {
      Learn(output_us_per_mib_, MicrosSince(began) * kMiB / static_cast<double>(r->bytes));
    }
    budget -= static_cast<int>(r->chunks);
    bytes_left -= r->bytes;
    next.chunks += static_cast<uint64_t>(r->chunks);
    next.bytes += static_cast<uint64_t>(r->bytes);
    if (r->chunks > 0) chunk_bytes = std::max<int64_t>(r->bytes / r->chunks, 1);
    if (!r->done) break;
    next.queue.pop_front();
  }
  if (next.chunks > 0) next.chunk_bytes = chunk_bytes;
  return true;
}

bool Pruner::Reclaim(Next& next) {
  // Free pages come from deletes: after a slice that deleted, and after one that gave some
  // back (there may be more).
  if (next.rows == 0 && next.chunks == 0 && !reclaim_more_) return true;
  next.wrote = true;
  // What the time left gives back at the cost of the last slices, at least a page or so.
  int64_t bytes = std::clamp<int64_t>(
      static_cast<int64_t>(
          std::min(static_cast<double>(std::max<int64_t>(LeftUs(), 0)) / reclaim_us_per_mib_ * kMiB,
                   static_cast<double>(kReclaimBytesPerSlice))),
      64 << 10, kReclaimBytesPerSlice);
  auto began = std::chrono::steady_clock::now();
  Result<int64_t> store = ctx_->batch->Write([&] { return ctx_->store->ReclaimSpace(bytes); });
  if (!store.ok()) return false;
  Result<int64_t> logs = ctx_->batch->WriteRedoableLogs(
      [&] { return ctx_->logs->ReclaimSpace(std::max<int64_t>(bytes - *store, 64 << 10)); });
  if (!logs.ok()) return false;
  if (*store + *logs > 0) {
    Learn(reclaim_us_per_mib_, MicrosSince(began) * kMiB / static_cast<double>(*store + *logs));
  }
  next.reclaimed_bytes += static_cast<uint64_t>(*store + *logs);
  reclaim_more_ = *store + *logs > 0;
  return true;
}

}  // namespace jobctl::coordinator
