#include "fault/store_view.h"

#include <nlohmann/json.hpp>

#include "wire/job_json.h"

namespace jobctl::fault {

const RunRecord* StoreView::FindRun(int64_t id) const {
  // Runs are read in id order; hand-made views may not be, hence the fallback scan.
  auto it = std::lower_bound(runs.begin(), runs.end(), id,
                             [](const RunRecord& r, int64_t v) { return r.id < v; });
  if (it != runs.end() && it->id == id) return &*it;
  for (const RunRecord& r : runs) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

const JobView* StoreView::FindJob(int64_t id) const {
  for (const auto& [name, job] : jobs) {
    if (job.id == id) return &job;
  }
  return nullptr;
}

std::string StoreView::Output(AttemptId attempt, store::LogStream stream) const {
  std::string out;
  auto it = chunks.find(attempt);
  if (it == chunks.end()) return out;
  for (const auto& [seq, chunk] : it->second) {
    if (chunk.stream == stream) out += chunk.data;
  }
  return out;
}

Result<JobView> MakeJobView(int64_t id, Job spec, std::optional<int64_t> next_fire_ms) {
  JobView v;
  v.id = id;
  v.spec = std::move(spec);
  v.next_fire_ms = next_fire_ms;
  Result<Schedule> schedule = Schedule::Parse(ScheduleSpecOf(v.spec));
  if (!schedule.ok()) return schedule.status().WithContext("job " + v.spec.name);
  v.schedule = std::make_shared<const Schedule>(std::move(*schedule));
  return v;
}

namespace {

// What the fire checks read of a flow: its timing keys, as a job's.
Result<Job> FlowTiming(const nlohmann::json& j) {
  Result<Flow> flow = wire::FlowFromJson(j);
  if (!flow.ok()) return flow.status();
  Job job;
  job.name = flow->name;
  job.schedule = flow->schedule;
  job.anchor_ms = flow->anchor_ms;
  job.dialect = flow->dialect;
  job.timezone = flow->timezone;
  job.overlap = flow->overlap;
  job.misfire = flow->misfire;
  job.misfire_cap = flow->misfire_cap;
  job.enabled = flow->enabled;
  return job;
}

Result<StoreView> Read(store::Store* db, store::LogStore* logs) {
  StoreView view;
  Status bad;
  Status s = db->ForEachJob([&](store::JobRow&& row) {
    // The jobs that run only as steps fire nothing on a schedule of their own: the checks of
    // fires are not about them. A flow fires as a job does: its timing, as a Job.
    if (row.timing.kind == JobKind::kStep || row.timing.schedule.empty()) return;
    nlohmann::json j = nlohmann::json::parse(row.spec_json, nullptr, false);
    Result<Job> spec = row.timing.kind == JobKind::kFlow ? FlowTiming(j) : wire::JobFromJson(j);
    if (!spec.ok()) {
      if (bad.ok()) bad = spec.status().WithContext("job " + row.name);
      return;
    }
    Result<JobView> v = MakeJobView(row.id, std::move(*spec), row.next_fire_ms);
    if (!v.ok()) {
      if (bad.ok()) bad = v.status();
      return;
    }
    v->active = row.active;
    v->paused = row.paused;
    view.jobs[row.name] = std::move(*v);
  });
  if (!s.ok()) return s;
  if (!bad.ok()) return bad;
  s = db->ForEachRun([&](RunRecord&& run) { view.runs.push_back(std::move(run)); });
  if (!s.ok()) return s;
  for (const auto& [name, job] : view.jobs) {
    Result<std::vector<store::MissRow>> misses = db->ListMisses(job.id, 0);
    if (!misses.ok()) return misses.status();
    view.misses.insert(view.misses.end(), misses->begin(), misses->end());
  }
  for (const RunRecord& run : view.runs) {
    store::LogQuery q;
    q.run_id = run.id;
    while (true) {
      Result<std::vector<store::LogChunk>> page = logs->Read(q);
      if (!page.ok()) return page.status();
      if (page->empty()) break;
      for (store::LogChunk& c : *page) {
        q.after_id = c.id;
        view.chunks[{c.run_id, c.shard, c.attempt}][c.seq] = std::move(c);
      }
    }
  }
  return view;
}

}  // namespace

Result<StoreView> ReadStores(const std::string& data_dir) {
  Result<std::unique_ptr<store::Store>> db = store::OpenStore({.path = data_dir + "/jobctl.db"});
  if (!db.ok()) return db.status();
  Result<std::unique_ptr<store::LogStore>> logs =
      store::OpenLogStore({.path = data_dir + "/logs.db", .run_cap_bytes = int64_t{1} << 40});
  if (!logs.ok()) return logs.status();
  return Read(db->get(), logs->get());
}

Result<StoreView> ReadStoreAt(const std::string& url) {
  // Opening takes the hold (a new epoch): free once every coordinator has stopped; while
  // one still holds it, this waits.
  Result<std::unique_ptr<store::Store>> db =
      store::OpenStore({.url = url, .holder = "fault_check", .hold_ttl_ms = 10000});
  if (!db.ok()) return db.status();
  Result<std::unique_ptr<store::LogStore>> logs =
      store::OpenLogStore({.url = url, .run_cap_bytes = int64_t{1} << 40});
  if (!logs.ok()) return logs.status();
  return Read(db->get(), logs->get());
}

}  // namespace jobctl::fault
