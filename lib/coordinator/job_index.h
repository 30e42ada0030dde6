// JobIndex is the coordinator's memory of its jobs: for each, what the fire loop needs
// (compiled schedule, next fire, policies, open runs) and nothing more, so a million jobs
// fit in little memory. The full definition stays in the store and is loaded (and kept)
// only while a job has open runs. Identical schedules are compiled once and shared.
// Loop thread only; owned by the Coordinator.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "model/job.h"
#include "model/run.h"
#include "model/schedule.h"

namespace jobctl::coordinator {

struct JobEntry {
  int64_t id = 0;
  std::string name;
  std::shared_ptr<const Schedule> schedule;  // null when the job can no longer fire
  std::optional<int64_t> next_fire_ms;       // the next instant not yet fired
  bool active = true;                        // in the current job file
  bool paused = false;
  bool enabled = true;
  Misfire misfire = Misfire::kFireOnce;
  Overlap overlap = Overlap::kForbid;
  int misfire_cap = 100;
  int open_runs = 0;
  std::optional<RunState> last_state;
  int64_t last_finished_ms = 0;
  std::shared_ptr<const Job> spec;  // loaded while the job has open runs

  // In the fire loop: active, enabled, not paused, and with a schedule.
  bool schedulable() const { return active && enabled && !paused && schedule != nullptr; }
};

class JobIndex {
 public:
  void Clear();
  JobEntry& Put(JobEntry entry);  // replaces an entry with the same id
  JobEntry* Find(int64_t id);
  JobEntry* FindByName(std::string_view name);
  const std::unordered_map<int64_t, JobEntry>& all() const { return jobs_; }
  size_t size() const { return jobs_.size(); }

  // Compiles (or reuses) the schedule of a job; hashed (H) schedules are per job name,
  // anchored @every schedules per anchor.
  Result<std::shared_ptr<const Schedule>> CompileSchedule(const Job& job);

 private:
  std::unordered_map<int64_t, JobEntry> jobs_;
  std::map<std::string, int64_t, std::less<>> by_name_;
  std::unordered_map<std::string, std::weak_ptr<const Schedule>> schedules_;
};

}  // namespace jobctl::coordinator
