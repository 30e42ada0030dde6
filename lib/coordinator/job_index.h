// JobIndex is the coordinator's memory of its jobs: for each, what the fire loop needs (its
// timing, next fire, policies, open runs) and nothing more, so a million jobs fit in little
// memory. The full definition stays in the store and is loaded (and kept) only while a job
// has open runs.
//
// How a million stay small: ids are dense (SQLite row ids), so entries live in fixed-size
// chunks indexed by id (references stay valid as jobs are added); names are copied once into
// an append-only arena (a job's name never changes and entries are never removed: a job that
// left the file stays inactive with its history); the by-name index is an open-addressing
// table of ids; and each job refers to its (schedule, dialect, timezone) by the index of one
// shared copy. Schedules are compiled when a fire needs them, not at load: a schedule that is
// the same for every job using it is compiled once and kept; a hashed (H) or anchored one
// depends on the job and is compiled on each use (well under a microsecond).
// Loop thread only; owned by the Coordinator.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/flow_spec.h"
#include "model/health.h"
#include "model/job.h"
#include "model/run.h"
#include "model/schedule.h"

namespace jobctl::coordinator {

struct JobEntry {
  int64_t id = 0;                       // 0: the slot holds no job
  std::optional<int64_t> next_fire_ms;  // the next instant not yet fired
  int64_t anchor_ms = 0;                // @every grid origin (Unix ms)
  // Health (model/health.h, /metrics, `jobctl list`), loaded from the store at start and on
  // a standby's refresh, kept by the RunBook as runs finish. Unix ms, coordinator clock.
  int64_t last_finished_ms = 0;          // the last finished run's end (skipped instants aside)
  int64_t last_duration_ms = 0;          // its first shard's start to its end; 0 when none started
  int64_t last_success_ms = 0;           // the newest success's end; 0 = none known
  int64_t since_ms = 0;                  // created or its definition last changed (the store's)
  int64_t expect_success_within_ms = 0;  // the job's dead-man's switch; 0 = none
  std::shared_ptr<const Job> spec;       // loaded while the job has open runs
  std::string_view name;                 // held by the JobIndex
  uint32_t timing = 0;                   // the JobIndex's (schedule, dialect, zone); 0 = none
  uint32_t labels = 0;                   // the JobIndex's `on` selectors text; 0 = none
  int misfire_cap = 100;
  int open_runs = 0;
  Misfire misfire = Misfire::kFireOnce;
  Overlap overlap = Overlap::kForbid;
  // A [[flow]] fires flow runs (FlowBook); a step's own job runs only as a step of its flow.
  JobKind kind = JobKind::kJob;
  std::optional<RunState> last_state;
  bool active = true;  // in the current job file
  bool paused = false;
  bool enabled = true;

  // In the fire loop: active, enabled, not paused, and with a schedule.
  bool schedulable() const { return active && enabled && !paused && timing != 0; }
  // Its dead-man's switch as model/health.h reads it: paused or disabled is never overdue.
  SuccessWatch Watch() const;
  bool Overdue(int64_t now_ms) const { return active && IsOverdue(Watch(), now_ms); }
  // The last finished run failed, timed out or was lost (canceled is a person's choice).
  bool Failing() const;
};

// Names to ids: open addressing with linear probing over a power-of-two table of ids, the
// names themselves read from the entries. Names are only ever added.
class NameTable {
 public:
  // `name_of(id)` returns the name of a stored id.
  template <typename NameOf>
  int64_t Find(std::string_view name, const NameOf& name_of) const;
  template <typename NameOf>
  void Insert(std::string_view name, uint32_t id, const NameOf& name_of);
  void Clear();
  size_t size() const { return size_; }
  size_t capacity() const { return slots_.size(); }

 private:
  std::vector<uint32_t> slots_;  // 0 = empty
  size_t size_ = 0;
};

template <typename NameOf>
int64_t NameTable::Find(std::string_view name, const NameOf& name_of) const {
  if (slots_.empty()) return 0;
  size_t mask = slots_.size() - 1;
  for (size_t i = std::hash<std::string_view>{}(name)&mask;; i = (i + 1) & mask) {
    uint32_t id = slots_[i];
    if (id == 0) return 0;
    if (name_of(id) == name) return id;
  }
}

template <typename NameOf>
void NameTable::Insert(std::string_view name, uint32_t id, const NameOf& name_of) {
  if ((size_ + 1) * 2 > slots_.size()) {  // at most half full: probes stay short
    std::vector<uint32_t> old = std::move(slots_);
    slots_.assign(old.empty() ? 1024 : old.size() * 2, 0);
    size_ = 0;
    for (uint32_t kept : old) {
      if (kept != 0) Insert(name_of(kept), kept, name_of);
    }
  }
  size_t mask = slots_.size() - 1;
  size_t i = std::hash<std::string_view>{}(name)&mask;
  while (slots_[i] != 0) i = (i + 1) & mask;
  slots_[i] = id;
  ++size_;
}

class JobIndex {
 public:
  JobIndex();
  JobIndex(const JobIndex&) = delete;
  JobIndex& operator=(const JobIndex&) = delete;

  // Ids a JobIndex holds: 1 to kMaxId.
  static constexpr int64_t kMaxId = (int64_t{1} << 31) - 1;

  void Clear();
  // A new entry for `id` named `name`, or the existing one (same id, same name) to update.
  // Null when the id is out of range or the name belongs to another id.
  JobEntry* Add(int64_t id, std::string_view name);
  JobEntry* Find(int64_t id);
  JobEntry* FindByName(std::string_view name);
  size_t size() const { return size_; }
  // One past the largest id held: a bound for per-id flags.
  int64_t id_limit() const { return id_limit_; }
  // Every entry, in id order.
  template <typename Fn>
  void ForEach(Fn&& fn) {
    for (int64_t id = 1; id < id_limit_; ++id) {
      JobEntry& e = Slot(id);
      if (e.id != 0) fn(e);
    }
  }

  // Gives the job this schedule; an empty `expr` takes it away (the job cannot fire).
  void SetTiming(JobEntry& job, std::string_view expr, Dialect dialect, std::string_view timezone,
                 int64_t anchor_ms);
  // The job's compiled schedule (shared, or compiled now for hashed and anchored ones); an
  // error when it has none or it no longer compiles (e.g. its zone vanished).
  Result<std::shared_ptr<const Schedule>> ScheduleOf(const JobEntry& job);
  // Whether the job's next fire comes a delay after its last run ended (@delay).
  bool FiresAfterRuns(const JobEntry& job) const {
    return job.timing != 0 && job.timing < timings_.size() && timings_[job.timing].fixed_delay;
  }
  // The schedule text of a job, "" when it has none.
  std::string_view ScheduleText(const JobEntry& job) const;
  // Distinct (schedule, dialect, zone) triples held: for tests and metrics.
  size_t timings() const { return timings_.size() - 1; }

  // Gives the job its `on` selectors as store::JobTiming::on_labels holds them ("" = none).
  void SetLabels(JobEntry& job, std::string_view on_labels);
  // The job's `on` selectors, "role=web dc!=fra1"; "" when it has none.
  std::string_view LabelsText(const JobEntry& job) const {
    return job.labels < labels_.size() ? std::string_view(labels_[job.labels]) : "";
  }

 private:
  static constexpr int kChunkBits = 10;
  static constexpr int64_t kChunk = int64_t{1} << kChunkBits;
  struct Timing {
    std::string expr;
    Dialect dialect = Dialect::kCron;
    std::string timezone;
    bool hashed = false;                       // H fields: the job name changes the result
    bool fixed_delay = false;                  // @delay: a run's end decides the next fire
    std::shared_ptr<const Schedule> compiled;  // for jobs without an anchor, once compiled
  };

  JobEntry& Slot(int64_t id) {
    return chunks_[static_cast<size_t>(id >> kChunkBits)][id & (kChunk - 1)];
  }
  std::string_view Keep(std::string_view name);

  std::vector<std::unique_ptr<JobEntry[]>> chunks_;
  int64_t id_limit_ = 1;
  size_t size_ = 0;
  NameTable by_name_;
  // The name arena: blocks that are never moved or freed while the index lives.
  std::vector<std::unique_ptr<char[]>> blocks_;
  size_t block_used_ = 0;
  size_t block_size_ = 0;
  std::vector<Timing> timings_;  // [0] is "no schedule"
  std::unordered_map<std::string, uint32_t> timing_ids_;
  std::string key_;           // scratch for timing_ids_ lookups
  uint32_t last_timing_ = 0;  // the one SetTiming gave last
  // Distinct `on` texts: jobs mostly share a few. [0] is "".
  std::vector<std::string> labels_{std::string()};
  std::unordered_map<std::string, uint32_t> label_ids_{{std::string(), 0}};
};

}  // namespace jobctl::coordinator
