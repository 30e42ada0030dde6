// Scheduler is the fire loop: every schedulable job's next fire sits in a timing wheel, and
// the loop sleeps until the next occupied slot, but at most a second, so that a step of the
// wall clock is noticed within a second whichever way it goes. When instants come due it
// creates their runs in the current write batch and advances each job's next fire in the
// same transaction. Instants overdue by more than misfire_grace (a restart, a stall, a
// forward clock jump) go through the job's misfire policy and are always recorded; an
// instant is never fired before it (wall clock), and a backward clock jump re-fires nothing.
// Loop thread only; owned by the Coordinator.
#pragma once

#include <uv.h>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <unordered_set>
#include <utility>
#include <vector>

#include "coordinator/context.h"
#include "coordinator/job_index.h"
#include "coordinator/run_book.h"
#include "model/timing_wheel.h"
#include "uvx/handles.h"

namespace jobctl::coordinator {

class Scheduler {
 public:
  Scheduler(Context* ctx, JobIndex* jobs, RunBook* book);
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  void Start();
  void Close();
  void Clear();

  // Puts the job in the wheel at its next_fire_ms if it is schedulable, else takes it out.
  void Track(const JobEntry& job);
  // A job was resumed: every instant that came due while it was paused goes through its
  // misfire policy at once, however short the pause (misfire_grace is for late fires, and
  // these were held back on purpose), in the current write batch; then it is tracked again.
  void Resume(JobEntry& job);
  // Cancels the job's runs created ahead of their instants (early dispatch) whose instants
  // have not come: a pause (or anything that stops the job firing) takes them back.
  void CancelAhead(JobEntry& job, const std::string& why);
  // The job's last open run has ended (in the current write batch): a fixed-delay job's next
  // fire is now one delay away.
  void OnRunsEnded(JobEntry& job);
  // Puts every schedulable job of the index in the (empty) wheel: the load at start.
  void TrackAll();
  // The first instant strictly after `after_ms` for this job (nullopt when it has ended or
  // its schedule no longer compiles).
  std::optional<int64_t> NextAfter(const JobEntry& job, int64_t after_ms) const;
  // Fires what is due now, at most kSlice jobs per call; the rest follow slice by slice,
  // each fired only after the previous one committed, so a burst commits in slices (the
  // first runs are durable within milliseconds, not after the whole burst) and requests
  // are served in between. The timer calls this;
  // tests and restarts may too.
  void RunDue();
  size_t tracked() const { return wheel_.size() + early_.size() + due_.size(); }
  static constexpr size_t kSlice = 512;
  // When the next fire may be due (wall clock, ms): now while a burst is still being fired,
  // nullopt when nothing is scheduled. Never later than the instant itself (the wheel's
  // coarser levels answer with their slot's start).
  std::optional<int64_t> NextDueMs() const;
  // This turn fired something, not committed yet.
  bool FiredInTurn() const { return fired_in_turn_; }

  // Called in the write batch that recorded missed instants: how many, from when, why.
  std::function<void(JobEntry& job, const std::string& detail)> on_missed;

 private:
  // Whether the job's next instant is fired ahead of it (early dispatch).
  bool FiresAhead(const JobEntry& job) const;
  // Instants overdue by more than `grace_ms` go through the job's misfire policy.
  void FireDue(JobEntry& job, const Schedule& schedule, int64_t now, int64_t grace_ms);
  void FireDueAfterDelay(JobEntry& job, int64_t now, int64_t grace_ms);
  // `batched`: the run is prepared and inserted with the slice's others (FlushFires).
  void FireOne(JobEntry& job, int64_t instant, int64_t now, bool batched);
  // A fire whose run was inserted: counted, and timed once committed.
  void Fired(int64_t instant);
  void SaveNextFire(const JobEntry& job);
  // Inserts the slice's prepared runs and writes its next fire times.
  void FlushFires();
  void RecordMisses(JobEntry& job, const std::vector<int64_t>& instants, int64_t extra,
                    const char* why, int64_t now);
  void Arm();

  Context* ctx_;
  JobIndex* jobs_;
  RunBook* book_;
  TimingWheel wheel_;
  // Jobs the wheel handed out before their instant (the wall clock went back): held here
  // until the clock reaches them.
  std::multimap<int64_t, int64_t> early_;
  // (job, instant) handed out by the wheel and not yet fired, oldest first. An entry whose
  // job's next_fire_ms moved on since (re-tracked by an apply) is dropped when reached.
  std::deque<std::pair<int64_t, int64_t>> due_;
  std::unique_ptr<uvx::Timer> timer_;
  // Runs the rest of a burst on the loop turn after the previous slice's commit. An idle
  // handle, not a 0 ms timer: libuv runs a timer re-armed for "now" again within the same
  // timer phase, before any commit.
  std::unique_ptr<uvx::Idle> continue_;
  bool waiting_for_commit_ = false;  // a slice's commit will start continue_
  // While RunDue fires a slice, its runs are prepared here and inserted together at its end,
  // with its jobs' next fire times: one write each instead of one per job. A job that fires
  // again in the slice (catching up) has its runs inserted first, so that its overlap policy
  // sees them.
  bool slicing_ = false;
  std::vector<RunBook::Prepared> fires_;
  std::unordered_set<int64_t> firing_;  // the jobs of fires_
  std::vector<std::pair<int64_t, std::optional<int64_t>>> next_fires_;
  bool started_ = false;
  bool fired_in_turn_ = false;
};

}  // namespace jobctl::coordinator
