#include "coordinator/job_index.h"

namespace jobctl::coordinator {

void JobIndex::Clear() {
  jobs_.clear();
  by_name_.clear();
}

JobEntry& JobIndex::Put(JobEntry entry) {
  by_name_[entry.name] = entry.id;
  int64_t id = entry.id;
  auto [it, inserted] = jobs_.insert_or_assign(id, std::move(entry));
  (void)inserted;
  return it->second;
}

JobEntry* JobIndex::Find(int64_t id) {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

JobEntry* JobIndex::FindByName(std::string_view name) {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : Find(it->second);
}

Result<std::shared_ptr<const Schedule>> JobIndex::CompileSchedule(const Job& job) {
  // H values depend on the job's name; every other schedule is the same for everyone.
  const std::string& expr = job.schedule;
  bool hashed = expr.find('H') != std::string::npos || expr.find('h') != std::string::npos;
  std::string key = expr + '\x1f' + std::string(DialectName(job.dialect)) + '\x1f' +
                    job.timezone + '\x1f' + std::to_string(job.anchor_ms) +
                    (hashed ? '\x1f' + job.name : std::string());
  if (auto it = schedules_.find(key); it != schedules_.end()) {
    if (auto shared = it->second.lock()) return shared;
  }
  Result<Schedule> parsed = Schedule::Parse(ScheduleSpecOf(job));
  if (!parsed.ok()) return parsed.status();
  auto shared = std::make_shared<const Schedule>(std::move(*parsed));
  schedules_[key] = shared;
  return shared;
}

}  // namespace jobctl::coordinator
