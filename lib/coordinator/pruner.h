// Pruner keeps the stores bounded: the retention of coordinator.toml (runs_for, keep_last,
// logs_for, logs_max). Every prune_every it deletes one small slice of what retention
// allows (and every kCatchUpMs while a slice used its whole budget or left a scan midway, so
// that it keeps up with a busy store). A slice runs at the end of a loop turn, right before
// the turn's commit, and between fires (Plan): never in a turn that fired (its fires would
// wait for the slice), and only when the next fire is far enough away for the slice and its
// commit to end before it, with half of that gap (at most kSliceWorkUs) as its work's budget;
// otherwise it looks again at the end of the next turn (a timer makes sure there is one just
// after the next fire). Where fires leave no such gap for kMaxWaitMs (hundreds of durable fires
// a second keep the loop busy most of the time) a slice of kMinWorkUs runs anyway, so that the
// store stays bounded: such a slice may hold up a fire by about that and its commit. The budget
// is kept by estimate, not enforced: a step once begun runs to its end, the slice's first step
// runs whatever the time, and PruneRuns, PruneQueuedOutput and Reclaim size their work to the
// time left from what the same work cost lately (with floors: kMinRuns runs, one call, 64 KiB),
// while the sweep, the logs_for scan and the logs_max check are bounded lookups that are not
// sized. A slice that ran out of time resumes at the step it did not reach:
//   - at most kRunsPerSlice runs (Store::PruneRuns: never a run still pending or running,
//     never one of the keep_last newest of its job), with their shards, output ends and
//     the misses of that age;
//   - at most kChunksPerSlice chunks and about kOutputBytesPerSlice bytes of output (the chunks
//     asked for at a time are sized by the last ones deleted: a deleted chunk's pages
//     are what a slice pays for) (LogStore::PruneOutput): of the runs just
//     deleted, then of ended runs last written before logs_for, then of the oldest ended
//     runs of a job whose output is over logs_max. A run whose output was deleted is marked
//     pruned with the reason ("logs_for 7d"), which readers show; a deleted run's output
//     goes with its accounting, leaving nothing;
//   - then gives about kReclaimBytesPerSlice of freed space back to the file system
//     (ReclaimSpace): the scheduler database's first, the log database's with what is left
//     of it (at least 64 KiB).
// The slice's writes go into the loop turn's group commit (WriteBatch), like every other
// write, and the Pruner's own state (where its scans resume, which runs' output is still to
// go) changes only once that commit succeeded. Nothing is done while commits fail. Its deletes
// of output are redoable writes (WriteRedoableLogs): the log database's commit does not wait
// for the disk for them, so a slice adds no fsync to the turn whose fires wait for it.
// The output of the runs a slice deleted is queued in memory. What a kill (or a power cut that
// lost a redoable commit) left of it is found by a sweep after every start: the log store's
// runs, a page per slice (kSweepPage) in run id order, looked up in the store (MissingRuns);
// the output of a run that is gone is queued as above, whatever logs_for says.
// Loop thread only; owned by the Coordinator.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/context.h"
#include "uvx/handles.h"

namespace jobctl::coordinator {

class Pruner {
 public:
  static constexpr int kRunsPerSlice = 100;
  static constexpr int kChunksPerSlice = 256;
  static constexpr int64_t kOutputBytesPerSlice = 1LL << 20;
  static constexpr int64_t kReclaimBytesPerSlice = 1LL << 20;
  static constexpr int64_t kCatchUpMs = 10;
  // A slice's work (its commit apart): at most kSliceWorkUs, at least kMinWorkUs (less is
  // not worth a turn), and a slice waits at most kMaxWaitMs for a gap between fires.
  static constexpr int64_t kSliceWorkUs = 2000;
  static constexpr int64_t kMinWorkUs = 250;
  static constexpr int64_t kMaxWaitMs = 50;

  // `is_open(run)`: the run is pending or running (its output is never pruned).
  // `next_fire()`: when the next fire may be due (Scheduler::NextDueMs); `fired_in_turn()`:
  // this turn's commit holds fires (Scheduler::FiredInTurn).
  Pruner(Context* ctx, std::function<bool(int64_t)> is_open,
         std::function<std::optional<int64_t>()> next_fire, std::function<bool()> fired_in_turn);
  void Start();  // the first slice after prune_every
  void Close();

  // One slice, now if it fits between fires (else at the end of a later turn); the next is
  // armed once its commit is done. Runs in the check phase, at the end of a turn, right
  // before that turn's commit, so that nothing else waits in the turn behind its work.
  void Slice();

  // Where a slice due at `now_us` (wall clock, microseconds) fits (pure): now with `work_us` of
  // work, or after `defer_ms` (just past the next fire). `turn_fired`: this turn commits fires,
  // which the slice's work would hold up; `waited_ms`: how long the slice has waited for a gap
  // already.
  struct Window {
    int64_t work_us = 0;  // 0: not now
    int64_t defer_ms = 0;
  };
  static Window Plan(int64_t now_us, std::optional<int64_t> next_fire_ms, bool turn_fired,
                     int64_t waited_ms);

  // "logs_for 7d" and "logs_max 1GiB": the reasons a run's output is marked with.
  static std::string AgeReason(const char* key, Millis age);
  static std::string SizeReason(const char* key, int64_t bytes);

 private:
  struct Pending {
    int64_t run_id = 0;
    std::string reason;
  };
  // Each step adds to `next` (the state after this slice) and returns false after a failed
  // write (the turn will roll back).
  struct Next;
  enum class More { kNo, kYes };  // whether the last slice left work for the next
  void Arm(More more);
  // A slice is due: it runs at the end of this turn (or waits there for a gap).
  void Due();
  bool PruneRuns(Next& next);
  bool SweepOrphans(Next& next);
  bool FindOldOutput(Next& next);
  bool FindOutputOverMax(Next& next);
  bool PruneQueuedOutput(Next& next);
  bool Reclaim(Next& next);
  // This slice's work time left (may be negative).
  int64_t LeftUs() const;

  Context* ctx_;
  std::function<bool(int64_t)> is_open_;
  std::function<std::optional<int64_t>()> next_fire_;
  std::function<bool()> fired_in_turn_;
  std::chrono::steady_clock::time_point deadline_;  // of the slice's work
  int first_step_ = 0;          // the step the next slice starts with (the one not reached)
  int64_t waiting_since_ = -1;  // monotonic ms since the due slice waits for a gap; -1: none
  // What the steps cost lately (moving averages): per run asked of PruneRuns, per MiB of
  // output deleted and per MiB given back to the file system.
  double run_us_ = 10;
  double output_us_per_mib_ = 1000;
  double reclaim_us_per_mib_ = 1000;
  std::unique_ptr<uvx::Timer> timer_;
  std::unique_ptr<uvx::Check> gap_;  // runs Slice at the end of every turn while one is due
  int64_t runs_after_ = 0;           // Store::PruneRuns resumes after this run id
  int64_t output_after_ = 0;         // the logs_for scan resumes after this run id
  int64_t last_max_check_ms_ = 0;    // the last look for jobs over logs_max (monotonic)
  std::deque<Pending> queue_;        // runs whose output is to be deleted, oldest first
  bool sweeping_ = true;             // the sweep for output of deleted runs is not done yet
  int64_t sweep_after_ = 0;          // the sweep resumes after this run id
  uint64_t orphans_ = 0;             // runs the sweep found
  bool busy_ = false;                // a slice's commit is outstanding
  // The last slice gave space back: there may be more. At start too: a coordinator killed
  // after a slice's deletes and before the space was given back left free pages, and no
  // delete might come to free more.
  bool reclaim_more_ = true;
  // The size of the chunks the last slice deleted, on average; at first agentd's largest.
  int64_t chunk_bytes_ = 64 << 10;
};

}  // namespace jobctl::coordinator
