#include "coordinator/scheduler.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/log.h"
#include "coordinator/metrics.h"
#include "model/misfire.h"
#include "model/overlap.h"
#include "model/time_format.h"

namespace jobctl::coordinator {
namespace {

// Instants materialized per job per catch-up; beyond this they are counted, not listed.
constexpr size_t kMaxListed = 10'000;
constexpr int64_t kMaxCounted = 10'000'000;
constexpr int64_t kWallCheckMs = 1000;

}  // namespace

Scheduler::Scheduler(Context* ctx, JobIndex* jobs, RunBook* book)
    : ctx_(ctx), jobs_(jobs), book_(book), wheel_(ctx->NowMs()) {}

void Scheduler::Start() {
  timer_ = std::make_unique<uvx::Timer>(ctx_->loop);
  continue_ = std::make_unique<uvx::Idle>(ctx_->loop);
  started_ = true;
  Arm();
}

void Scheduler::Close() {
  if (!started_) return;
  timer_.reset();
  continue_.reset();
  started_ = false;
}

void Scheduler::Clear() {
  wheel_ = TimingWheel(ctx_->NowMs());
  early_.clear();
  due_.clear();
}

void Scheduler::Track(const JobEntry& job) {
  wheel_.Cancel(static_cast<uint64_t>(job.id));
  for (auto it = early_.begin(); it != early_.end();) {
    it = it->second == job.id ? early_.erase(it) : std::next(it);
  }
  if (job.schedulable() && job.next_fire_ms) {
    wheel_.Schedule(static_cast<uint64_t>(job.id), *job.next_fire_ms);
  }
  Arm();
}

void Scheduler::TrackAll() {
  jobs_->ForEach([this](const JobEntry& job) {
    if (job.schedulable() && job.next_fire_ms) {
      wheel_.Schedule(static_cast<uint64_t>(job.id), *job.next_fire_ms);
    }
  });
  Arm();
}

namespace {

std::optional<int64_t> Next(const Schedule& schedule, int64_t after_ms) {
  std::optional<WallTime> next = schedule.Next(FromUnixMs(after_ms));
  if (!next) return std::nullopt;
  return ToUnixMs(*next);
}

}  // namespace

std::optional<int64_t> Scheduler::NextAfter(const JobEntry& job, int64_t after_ms) const {
  Result<std::shared_ptr<const Schedule>> schedule = jobs_->ScheduleOf(job);
  if (!schedule.ok()) return std::nullopt;
  return Next(**schedule, after_ms);
}

void Scheduler::RunDue() {
  // The last commit failed (disk full): fire again only after the batch's backoff, or a due
  // instant would be fired, refused and reloaded in a hot loop. It fires late, not never.
  if (ctx_->batch->RetryDelayMs() > 0) return Arm();
  int64_t now = ctx_->NowMs();
  // Early dispatch: instants up to `lead` ahead are handed out now; FiresAhead decides which
  // are fired ahead, and the rest wait in early_ for their instant.
  const int64_t lead = EarlyDispatchMs(ctx_->config);
  wheel_.Advance(now + lead, [this](uint64_t id, int64_t at) {
    due_.emplace_back(static_cast<int64_t>(id), at);
  });
  while (!early_.empty() && early_.begin()->first <= now) {
    due_.emplace_back(early_.begin()->second, early_.begin()->first);
    early_.erase(early_.begin());
  }
  // The definitions of the slice's jobs, in one read rather than one per job's first fire.
  std::vector<JobEntry*> slice;
  // Only the entries this slice can reach: never a walk over a long catch-up's whole queue.
  for (size_t i = 0; i < due_.size() && i < kSlice; ++i) {
    JobEntry* job = jobs_->Find(due_[i].first);
    if (job != nullptr && !job->spec) slice.push_back(job);
  }
  // Read in the turn's transaction, which the slice's fires write in anyway: one snapshot
  // (the embedded store takes its lock once, not once a read).
  if (!slice.empty() && ctx_->batch->Open().ok()) {
    // A failed read fails the turn, as a failed write does: it is retried.
    if (Status s = book_->LoadSpecs(slice); !s.ok()) ctx_->batch->Fail(s);
  }
  slicing_ = true;
  for (size_t fired = 0; fired < kSlice && !due_.empty();) {
    auto [id, instant] = due_.front();
    due_.pop_front();
    JobEntry* job = jobs_->Find(id);
    if (job == nullptr || !job->schedulable() || job->next_fire_ms != instant) continue;
    ++fired;
    const bool ahead = *job->next_fire_ms > now;
    if (ahead && (*job->next_fire_ms > now + lead || !FiresAhead(*job))) {
      early_.insert({*job->next_fire_ms, job->id});  // never fire before the instant
      continue;
    }
    Result<std::shared_ptr<const Schedule>> schedule = jobs_->ScheduleOf(*job);
    if (!schedule.ok()) {
      // Stored and valid once, so its zone (or the tz data) went away: it stays out of the
      // wheel, with its next fire kept, until the job file or the machine is fixed.
      log::Error("a job's schedule no longer compiles; it does not fire",
                 {{"job", job->name}, {"error", schedule.status().ToString()}});
      continue;
    }
    if (ahead && (*schedule)->delay()) {
      early_.insert({*job->next_fire_ms, job->id});  // its next fire depends on its runs
      continue;
    }
    // Fired ahead, the run is created as at its instant: the instant is on time, and its
    // shards are granted early and start at it (RunBook::EnqueueShard, Dispatcher).
    FireDue(*job, **schedule, ahead ? *job->next_fire_ms : now, ctx_->config.misfire_grace.count());
  }
  FlushFires();
  slicing_ = false;
  Arm();
}

void Scheduler::CancelAhead(JobEntry& job, const std::string& why) {
  int64_t now = ctx_->NowMs();
  for (int64_t run : book_->OpenRunsOf(job.id)) {
    const RunRecord* open = book_->FindOpen(run);
    if (open == nullptr || open->reason != RunReason::kSchedule || open->scheduled_ms <= now) {
      continue;
    }
    if (Status s = book_->Cancel(run, why); !s.ok()) {
      log::Warn("cannot cancel a run created ahead of its instant",
                {{"job", job.name}, {"run", run}, {"error", s.ToString()}});
    }
  }
}

bool Scheduler::FiresAhead(const JobEntry& job) const {
  // Not a flow (its steps start as it is created), and only when the overlap policy fires
  // now (allow, or no run open): it is judged at creation, so a run opened inside the window
  // does not make this one skip or replace. The rest fire at the instant.
  return job.kind == JobKind::kJob &&
         DecideOverlap(job.overlap, job.open_runs) == OverlapAction::kFire;
}

void Scheduler::Resume(JobEntry& job) {
  int64_t now = ctx_->NowMs();
  if (job.schedulable() && job.next_fire_ms && *job.next_fire_ms <= now) {
    // A schedule that no longer compiles is left to RunDue, which says so.
    if (Result<std::shared_ptr<const Schedule>> schedule = jobs_->ScheduleOf(job); schedule.ok()) {
      FireDue(job, **schedule, now, /*grace_ms=*/0);
    }
  }
  Track(job);
}

void Scheduler::FireDue(JobEntry& job, const Schedule& schedule, int64_t now, int64_t grace_ms) {
  if (schedule.delay()) return FireDueAfterDelay(job, now, grace_ms);
  std::vector<int64_t> instants;
  std::optional<int64_t> t = job.next_fire_ms;
  while (t && *t <= now && instants.size() < kMaxListed) {
    instants.push_back(*t);
    t = Next(schedule, *t);
  }
  // A very long outage of a very frequent job: count the rest instead of listing them.
  int64_t extra = 0;
  while (t && *t <= now && extra < kMaxCounted) {
    ++extra;
    t = Next(schedule, *t);
  }
  if (t && *t <= now) t = Next(schedule, now);  // beyond counting: jump to the future

  MisfireDecision d = DecideMisfire(job.misfire, job.misfire_cap,
                                    {.listed = std::move(instants), .extra = extra}, now, grace_ms);
  if (d.reason != nullptr) RecordMisses(job, d.missed, d.extra_missed, d.reason, now);
  for (int64_t instant : d.fire) FireOne(job, instant, now, slicing_);
  job.next_fire_ms = t;
  SaveNextFire(job);
  if (t) wheel_.Schedule(static_cast<uint64_t>(job.id), *t);
}

void Scheduler::FireDueAfterDelay(JobEntry& job, int64_t now, int64_t grace_ms) {
  // A fixed-delay job has one fire pending at a time, so an outage leaves at most one
  // overdue instant; the misfire policy decides whether it still runs. Its next fire is set
  // when its runs have ended (OnRunsEnded); a skipped instant sets it from now.
  MisfireDecision d = DecideMisfire(job.misfire, job.misfire_cap,
                                    {.listed = {*job.next_fire_ms}, .extra = 0}, now, grace_ms);
  if (d.reason != nullptr) RecordMisses(job, d.missed, d.extra_missed, d.reason, now);
  // Not batched: whether its next fire is set now depends on the run being open.
  for (int64_t instant : d.fire) FireOne(job, instant, now, /*batched=*/false);
  std::optional<int64_t> t;
  if (job.open_runs == 0) {
    if (Result<std::shared_ptr<const Schedule>> s = jobs_->ScheduleOf(job); s.ok())
      t = Next(**s, now);
  }
  job.next_fire_ms = t;
  SaveNextFire(job);
  if (t) {
    ctx_->EventAfterCommit("scheduled", {{"job", job.name}, {"next_fire_ms", *t}});
    wheel_.Schedule(static_cast<uint64_t>(job.id), *t);
  }
}

void Scheduler::OnRunsEnded(JobEntry& job) {
  if (!jobs_->FiresAfterRuns(job) || !job.active || !job.enabled) return;
  Result<std::shared_ptr<const Schedule>> schedule = jobs_->ScheduleOf(job);
  if (!schedule.ok()) return;  // RunDue says so when the job comes due
  // In the write batch that ends the run: a restart finds either the run open or the next
  // fire set. A paused job keeps it until resumed (its misfire policy applies then).
  std::optional<int64_t> t = Next(**schedule, ctx_->NowMs());
  job.next_fire_ms = t;
  ctx_->batch->Stage([&] { return ctx_->store->SetNextFire(job.id, t); });
  ctx_->EventAfterCommit("scheduled", {{"job", job.name}, {"next_fire_ms", t.value_or(-1)}});
  Track(job);
}

void Scheduler::RecordMisses(JobEntry& job, const std::vector<int64_t>& instants, int64_t extra,
                             const char* why, int64_t now) {
  if (instants.empty() && extra == 0) return;
  store::MissRow row;
  row.job_id = job.id;
  row.first_ms = instants.empty() ? now : instants.front();
  row.last_ms = instants.empty() ? now : instants.back();
  row.count = static_cast<int64_t>(instants.size()) + extra;
  row.reason = why;
  row.at_ms = now;
  ctx_->metrics->missed_total += static_cast<uint64_t>(row.count);
  log::Warn("instants missed", {{"job", job.name},
                                {"count", row.count},
                                {"first", FormatUtc(FromUnixMs(row.first_ms))},
                                {"reason", why}});
  ctx_->batch->Stage([&] { return ctx_->store->InsertMiss(row); });
  if (on_missed) {
    on_missed(job,
              fmt::format("{} instant{} missed from {} ({})", row.count, row.count == 1 ? "" : "s",
                          FormatUtc(FromUnixMs(row.first_ms)), why));
  }
  ctx_->EventAfterCommit("miss", {{"job", job.name},
                                  {"first_ms", row.first_ms},
                                  {"last_ms", row.last_ms},
                                  {"count", row.count},
                                  {"why", why}});
}

void Scheduler::SaveNextFire(const JobEntry& job) {
  if (slicing_) {
    next_fires_.emplace_back(job.id, job.next_fire_ms);
    return;
  }
  std::optional<int64_t> t = job.next_fire_ms;
  ctx_->batch->Stage([&] { return ctx_->store->SetNextFire(job.id, t); });
}

void Scheduler::FlushFires() {
  if (!fires_.empty()) {
    std::vector<bool> created;
    if (Status s = book_->CreateAll(fires_, created); !s.ok()) {
      // The turn rolls back (next fire times with it) and the fires are retried.
      log::Error("cannot create runs", {{"runs", fires_.size()}, {"error", s.ToString()}});
    }
    for (size_t i = 0; i < fires_.size(); ++i) {
      if (created[i]) Fired(fires_[i].rec.scheduled_ms);  // else already fired (restart)
    }
  }
  if (!next_fires_.empty()) {
    ctx_->batch->Stage([&] { return ctx_->store->SetNextFires(next_fires_); });
  }
  fires_.clear();
  firing_.clear();
  next_fires_.clear();
}

void Scheduler::Fired(int64_t instant) {
  ++ctx_->metrics->fires_total;
  Metrics* metrics = ctx_->metrics;
  const Clock* clock = ctx_->clock;
  if (!fired_in_turn_) {
    fired_in_turn_ = true;
    ctx_->batch->OnCommit([this](const Status&) { fired_in_turn_ = false; });
  }
  ctx_->batch->OnCommit([metrics, clock, instant](const Status& s) {
    if (s.ok()) {
      // A run created ahead of its instant (early dispatch) is on time.
      metrics->fire_lateness.Observe(
          static_cast<double>(std::max<int64_t>(ToUnixMs(clock->Now()) - instant, 0)) / 1000);
    }
  });
}

void Scheduler::FireOne(JobEntry& job, int64_t instant, int64_t now, bool batched) {
  // Its runs prepared earlier in the slice go in first: the overlap policy counts them.
  if (firing_.count(job.id) > 0) FlushFires();
  switch (DecideOverlap(job.overlap, job.open_runs)) {
    case OverlapAction::kSkip: {
      std::vector<int64_t> open = book_->OpenRunsOf(job.id);
      std::string note = "overlap=forbid: run " +
                         (open.empty() ? std::string("?") : std::to_string(open.front())) +
                         " was still active";
      // A failed write rolls the turn back (RecordSkipped writes through the batch); a
      // conflict is an instant recorded before a restart.
      if (Status s = book_->RecordSkipped(job, instant, note); !s.ok()) {
        log::Debug("skip not recorded", {{"job", job.name}, {"error", s.ToString()}});
      }
      return;
    }
    case OverlapAction::kCancelAndFire:
      for (int64_t run : book_->OpenRunsOf(job.id)) {
        // A step of a flow run is the flow's: its job's own schedule does not replace it.
        if (const RunRecord* open = book_->FindOpen(run); open && open->flow_run_id != 0) continue;
        if (Status s =
                book_->Cancel(run, "replaced by the run for " + FormatUtc(FromUnixMs(instant)));
            !s.ok()) {
          log::Warn("cannot cancel the run being replaced",
                    {{"job", job.name}, {"run", run}, {"error", s.ToString()}});
        }
      }
      break;
    case OverlapAction::kFire: break;
  }
  if (batched) {
    Result<RunBook::Prepared> run = book_->Prepare(job, RunReason::kSchedule, instant, "", "");
    if (!run.ok()) {
      log::Error("cannot create run", {{"job", job.name}, {"error", run.status().ToString()}});
      ctx_->batch->Fail(run.status());
      return;
    }
    firing_.insert(job.id);
    fires_.push_back(std::move(*run));
    return;
  }
  Result<RunRecord> run = book_->Create(job, RunReason::kSchedule, instant, "", "");
  if (!run.ok()) {
    if (run.status().code() == Status::Code::kConflict) return;  // already fired (restart)
    // Whatever failed, the turn rolls back (next_fire_ms with it) and the fire is retried.
    log::Error("cannot create run", {{"job", job.name}, {"error", run.status().ToString()}});
    ctx_->batch->Fail(run.status());
    return;
  }
  Fired(instant);
  (void)now;
}

std::optional<int64_t> Scheduler::NextDueMs() const {
  if (!due_.empty()) return ctx_->NowMs();
  std::optional<int64_t> next = wheel_.NextWakeup();
  if (next) *next -= EarlyDispatchMs(ctx_->config);
  if (!early_.empty() && (!next || early_.begin()->first < *next)) next = early_.begin()->first;
  return next;
}

void Scheduler::Arm() {
  if (!started_) return;
  std::optional<int64_t> next = wheel_.NextWakeup();
  if (next) *next -= EarlyDispatchMs(ctx_->config);  // instants are handed out that early
  if (!early_.empty() && (!next || early_.begin()->first < *next)) next = early_.begin()->first;
  const int64_t hold = ctx_->batch->RetryDelayMs();
  if (!due_.empty() && hold == 0) {
    // The rest of a burst is fired only once this slice is durable. The commit runs in the
    // check phase; its callback starts the idle handle, so the next slice is created in the
    // idle phase of the next loop turn and committed at that turn's end. (Starting the idle
    // handle here instead would fire the next slice in this turn's idle phase, before this
    // turn's commit: two slices in one commit.) A failed commit holds the rest back instead.
    continue_->Stop();
    if (!waiting_for_commit_) {
      waiting_for_commit_ = true;
      ctx_->batch->OnCommit([this](const Status&) {
        waiting_for_commit_ = false;
        if (!started_) return;
        if (ctx_->batch->RetryDelayMs() > 0) return Arm();
        continue_->Start([this] { RunDue(); });
      });
    }
    return;
  }
  continue_->Stop();
  if (!due_.empty()) next = ctx_->NowMs();  // held back: the timer below waits out the hold
  if (!next) {
    timer_->Stop();
    return;
  }
  // Never asleep for more than a second: the timer runs on the monotonic clock, and a step of
  // the wall clock (NTP, an admin) must be noticed within a second, not when the old delay
  // ends (a job due at 03:00 would fire an hour late after a forward step of an hour, and
  // nothing would fire for an hour after a backward step was corrected).
  int64_t delay = std::min(std::max<int64_t>({*next - ctx_->NowMs(), hold, 0}), kWallCheckMs);
  timer_->Once(static_cast<uint64_t>(delay), [this] { RunDue(); });
}

}  // namespace jobctl::coordinator
