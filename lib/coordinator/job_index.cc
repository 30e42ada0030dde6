#include "coordinator/job_index.h"

#include <algorithm>
#include <cstring>

namespace jobctl::coordinator {

void NameTable::Clear() {
  slots_.clear();
  size_ = 0;
}

SuccessWatch JobEntry::Watch() const {
  SuccessWatch w;
  if (expect_success_within_ms > 0) w.expect_success_within = Millis(expect_success_within_ms);
  if (last_success_ms > 0) w.last_success_ms = last_success_ms;
  w.since_ms = since_ms;
  w.paused = paused || !enabled;
  return w;
}

bool JobEntry::Failing() const {
  return last_state == RunState::kFailed || last_state == RunState::kTimedOut ||
         last_state == RunState::kLost;
}

JobIndex::JobIndex() { timings_.emplace_back(); }

void JobIndex::Clear() {
  chunks_.clear();
  id_limit_ = 1;
  size_ = 0;
  by_name_.Clear();
  blocks_.clear();
  block_used_ = block_size_ = 0;
  timings_.resize(1);
  timing_ids_.clear();
  last_timing_ = 0;
  labels_.resize(1);
  label_ids_ = {{std::string(), 0}};
}

std::string_view JobIndex::Keep(std::string_view name) {
  constexpr size_t kBlock = 64 << 10;
  if (name.empty()) return {};
  if (block_used_ + name.size() > block_size_) {
    block_size_ = std::max(kBlock, name.size());
    blocks_.push_back(std::make_unique<char[]>(block_size_));
    block_used_ = 0;
  }
  char* at = blocks_.back().get() + block_used_;
  std::memcpy(at, name.data(), name.size());
  block_used_ += name.size();
  return {at, name.size()};
}

JobEntry* JobIndex::Add(int64_t id, std::string_view name) {
  if (id <= 0 || id > kMaxId) return nullptr;
  auto name_of = [this](uint32_t i) { return Slot(i).name; };
  if (JobEntry* e = Find(id)) return e->name == name ? e : nullptr;
  if (by_name_.Find(name, name_of) != 0) return nullptr;  // held by another id
  while (static_cast<int64_t>(chunks_.size()) <= (id >> kChunkBits)) {
    chunks_.push_back(std::make_unique<JobEntry[]>(kChunk));
  }
  JobEntry& e = Slot(id);
  e = JobEntry{};
  e.id = id;
  e.name = Keep(name);
  by_name_.Insert(e.name, static_cast<uint32_t>(id), name_of);
  id_limit_ = std::max(id_limit_, id + 1);
  ++size_;
  return &e;
}

JobEntry* JobIndex::Find(int64_t id) {
  if (id <= 0 || id >= id_limit_) return nullptr;
  JobEntry& e = Slot(id);
  return e.id == id ? &e : nullptr;
}

JobEntry* JobIndex::FindByName(std::string_view name) {
  int64_t id = by_name_.Find(name, [this](uint32_t i) { return Slot(i).name; });
  return id == 0 ? nullptr : Find(id);
}

void JobIndex::SetTiming(JobEntry& job, std::string_view expr, Dialect dialect,
                         std::string_view timezone, int64_t anchor_ms) {
  job.anchor_ms = anchor_ms;
  if (expr.empty()) {
    job.timing = 0;
    return;
  }
  // Rows of a load come in id order and neighbours mostly share their timing.
  if (const Timing& last = timings_[last_timing_]; last_timing_ != 0 && last.expr == expr &&
                                                   last.dialect == dialect &&
                                                   last.timezone == timezone) {
    job.timing = last_timing_;
    return;
  }
  key_.assign(expr);
  key_ += '\x1f';
  key_ += DialectName(dialect);
  key_ += '\x1f';
  key_ += timezone;
  auto [it, inserted] = timing_ids_.try_emplace(key_, static_cast<uint32_t>(timings_.size()));
  if (inserted) {
    Timing t;
    t.expr = std::string(expr);
    t.dialect = dialect;
    t.timezone = std::string(timezone);
    // H values depend on the job's name; macros (@hourly, @every 1h) have none. A false
    // positive (a CRON_TZ= zone with an h) only costs a compile per use.
    t.hashed = expr.front() != '@' && expr.find_first_of("Hh") != std::string_view::npos;
    t.fixed_delay = IsFixedDelay(expr);
    timings_.push_back(std::move(t));
  }
  job.timing = last_timing_ = it->second;
}

void JobIndex::SetLabels(JobEntry& job, std::string_view on_labels) {
  if (job.labels < labels_.size() && labels_[job.labels] == on_labels) return;
  key_.assign(on_labels);
  auto [it, inserted] = label_ids_.try_emplace(key_, static_cast<uint32_t>(labels_.size()));
  if (inserted) labels_.emplace_back(on_labels);
  job.labels = it->second;
}

std::string_view JobIndex::ScheduleText(const JobEntry& job) const {
  return job.timing < timings_.size() ? std::string_view(timings_[job.timing].expr) : "";
}

Result<std::shared_ptr<const Schedule>> JobIndex::ScheduleOf(const JobEntry& job) {
  if (job.timing == 0 || job.timing >= timings_.size()) {
    return Status::NotFound("job " + std::string(job.name) + " has no schedule");
  }
  Timing& t = timings_[job.timing];
  bool shared = !t.hashed && job.anchor_ms == 0;
  if (shared && t.compiled) return t.compiled;
  Result<Schedule> parsed = Schedule::Parse({.expr = t.expr,
                                             .dialect = t.dialect,
                                             .timezone = t.timezone,
                                             .hash_key = job.name,
                                             .anchor = FromUnixMs(job.anchor_ms)});
  if (!parsed.ok()) return parsed.status();
  auto compiled = std::make_shared<const Schedule>(std::move(*parsed));
  if (shared) t.compiled = compiled;
  return compiled;
}

}  // namespace jobctl::coordinator
