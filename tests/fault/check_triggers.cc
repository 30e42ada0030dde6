// I1 (no lost trigger) and I2 (no duplicate trigger): the instants of each job's schedule
// against the runs and misses in the store, and the coordinator's fire events.
#include <algorithm>
#include <map>
#include <set>

#include "fault/checker.h"

namespace jobctl::fault {
namespace {

// A job with more instants than this in the window is checked up to it (and noted).
constexpr size_t kMaxInstants = 1'000'000;

std::string JobAt(const std::string& job, int64_t instant) {
  return "job " + job + " instant " + FormatInstant(instant) + " (" + std::to_string(instant) + ")";
}

// The window of a job: from the first instant the coordinator announced after the last
// change of its schedule.
std::map<std::string, int64_t> WindowStarts(const History& h) {
  std::map<std::string, int64_t> start;
  for (const Event& e : h.coordinator) {
    if (e.ev == "scheduled" && e.Int("next_fire_ms", -1) >= 0)
      start[e.Str("job")] = e.Int("next_fire_ms");
  }
  return start;
}

// Every next fire the coordinator announced for each job, as (wall_ms of the event, instant),
// in the order announced.
std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> Announced(const History& h) {
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> out;
  for (const Event& e : h.coordinator) {
    if (e.ev == "scheduled" && e.Int("next_fire_ms", -1) >= 0)
      out[e.Str("job")].emplace_back(e.wall_ms, e.Int("next_fire_ms"));
  }
  return out;
}

// A fixed-delay (@delay) job has no instants to compute: each comes from its previous run's
// end. I1: every announced next fire that no later announcement replaced before it came due
// has a run or a recorded miss (an announcement lost with a kill -9 between its commit and
// its event only means fewer instants are checked). I2: never two runs for one instant, and
// no run fired before the previous one ended plus the delay.
void CheckFixedDelayJob(const std::string& name, const JobView& job,
                        const std::vector<std::pair<int64_t, int64_t>>& announced,
                        int64_t last_wall_ms, const StoreView& s, Report* r,
                        int64_t* instants_checked) {
  const int64_t delay = job.schedule->delay()->count();
  const int64_t end = job.next_fire_ms.value_or(last_wall_ms + 1);
  std::vector<const RunRecord*> runs;
  std::map<int64_t, int> per_instant;
  for (const RunRecord& run : s.runs) {
    if (run.job_id != job.id) continue;
    if (run.reason == RunReason::kSchedule && run.state != RunState::kSkipped) {
      if (++per_instant[run.scheduled_ms] == 2) {
        r->Fail("I2", JobAt(name, run.scheduled_ms) + ": a second run " + std::to_string(run.id));
      }
    }
    if (run.state != RunState::kSkipped) runs.push_back(&run);
  }
  std::sort(runs.begin(), runs.end(),
            [](const RunRecord* a, const RunRecord* b) { return a->created_ms < b->created_ms; });
  for (size_t i = 1; i < runs.size(); ++i) {
    const RunRecord& prev = *runs[i - 1];
    const RunRecord& next = *runs[i];
    if (next.reason != RunReason::kSchedule) continue;
    if (!prev.finished_ms || *prev.finished_ms > next.created_ms) {
      r->Fail("I2", JobAt(name, next.scheduled_ms) + ": run " + std::to_string(next.id) +
                        " fired while run " + std::to_string(prev.id) + " was active");
    } else if (next.scheduled_ms < *prev.finished_ms + delay) {
      r->Fail("I2", JobAt(name, next.scheduled_ms) + ": run " + std::to_string(next.id) +
                        " fired " + std::to_string(next.scheduled_ms - *prev.finished_ms) +
                        " ms after run " + std::to_string(prev.id) + " ended, before its delay");
    }
  }
  for (size_t i = 0; i < announced.size(); ++i) {
    const int64_t t = announced[i].second;
    if (i + 1 < announced.size() && announced[i + 1].first < t) continue;  // replaced
    if (t >= end) continue;
    ++*instants_checked;
    size_t n = per_instant.count(t) ? static_cast<size_t>(per_instant[t]) : 0;
    for (const store::MissRow& m : s.misses)
      n += m.job_id == job.id && m.first_ms <= t && t <= m.last_ms;
    if (n == 0)
      r->Fail("I1", JobAt(name, t) + ": announced and due, but neither a run nor a recorded miss");
  }
}

void CheckJob(const std::string& name, const JobView& job, int64_t from, int64_t last_wall_ms,
              const StoreView& s, const CheckOptions& o, Report* r, int64_t* instants_checked) {
  const int64_t end = job.next_fire_ms.value_or(last_wall_ms + 1);
  std::vector<int64_t> instants;
  for (std::optional<WallTime> t = FromUnixMs(from); t && ToUnixMs(*t) < end;
       t = job.schedule->Next(*t)) {
    if (instants.size() == kMaxInstants) {
      r->notes.push_back("job " + name + ": only the first " + std::to_string(kMaxInstants) +
                         " instants checked");
      break;
    }
    instants.push_back(ToUnixMs(*t));
  }
  *instants_checked += static_cast<int64_t>(instants.size());
  std::map<int64_t, std::vector<const RunRecord*>> runs;
  for (const RunRecord& run : s.runs) {
    if (run.job_id == job.id && run.reason == RunReason::kSchedule)
      runs[run.scheduled_ms].push_back(&run);
  }
  std::vector<const store::MissRow*> misses;
  for (const store::MissRow& m : s.misses) {
    if (m.job_id == job.id) misses.push_back(&m);
  }
  std::set<int64_t> due(instants.begin(), instants.end());
  for (int64_t t : instants) {
    const auto it = runs.find(t);
    size_t n_runs = it == runs.end() ? 0 : it->second.size();
    size_t n_missed = 0;
    for (const store::MissRow* m : misses) n_missed += m->first_ms <= t && t <= m->last_ms;
    if (n_runs + n_missed == 0) {
      r->Fail("I1", JobAt(name, t) + ": due, but neither a run nor a recorded miss");
    } else if (n_runs > 1) {
      std::string ids;
      for (const RunRecord* run : it->second) ids += " " + std::to_string(run->id);
      r->Fail("I2", JobAt(name, t) + ": " + std::to_string(n_runs) + " runs:" + ids);
    } else if (n_runs + n_missed > 1) {
      r->Fail("I1", JobAt(name, t) + ": both run (" +
                        (n_runs ? std::to_string(it->second[0]->id) : std::string("none")) +
                        ") and recorded as missed " + std::to_string(n_missed) + " time(s)");
    }
  }
  for (const auto& [t, list] : runs) {
    if (t < from) continue;  // before the window (an older schedule)
    for (const RunRecord* run : list) {
      if (!due.count(t)) {
        r->Fail("I2",
                JobAt(name, t) + ": run " + std::to_string(run->id) +
                    (t >= end ? " fired at or after the stored next fire " + std::to_string(end)
                              : " is not an instant of the schedule"));
      }
    }
  }
  for (const store::MissRow* m : misses) {
    if (m->last_ms < from) continue;
    int64_t in_range = 0;
    for (int64_t t : instants) in_range += m->first_ms <= t && t <= m->last_ms;
    if (in_range == 0 || m->count < in_range) {
      r->Fail("I1", JobAt(name, m->first_ms) + ": miss record to " + FormatInstant(m->last_ms) +
                        " counts " + std::to_string(m->count) + " but covers " +
                        std::to_string(in_range) + " instant(s)");
    }
  }
  if (job.active && !job.paused && job.spec.enabled && job.next_fire_ms &&
      *job.next_fire_ms < last_wall_ms - o.behind_slack_ms) {
    r->Fail("I1", JobAt(name, *job.next_fire_ms) + ": still not fired " +
                      std::to_string(last_wall_ms - *job.next_fire_ms) +
                      " ms after it, at the coordinator's last event");
  }
}

}  // namespace

void CheckTriggers(const History& h, const StoreView& s, const CheckOptions& o, Report* r) {
  std::map<std::string, int64_t> starts = WindowStarts(h);
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> announced = Announced(h);
  int64_t last_wall = 0;
  for (const Event& e : h.coordinator) last_wall = std::max(last_wall, e.wall_ms);
  int64_t instants = 0, jobs = 0;
  for (const auto& [name, job] : s.jobs) {
    auto from = starts.find(name);
    if (from == starts.end()) {
      r->notes.push_back("job " + name + ": no \"scheduled\" event; its triggers are not checked");
      continue;
    }
    ++jobs;
    if (job.schedule && job.schedule->delay()) {
      CheckFixedDelayJob(name, job, announced[name], last_wall, s, r, &instants);
      if (job.active && !job.paused && job.spec.enabled && job.next_fire_ms &&
          *job.next_fire_ms < last_wall - o.behind_slack_ms) {
        r->Fail("I1", JobAt(name, *job.next_fire_ms) +
                          ": still not fired at the coordinator's last event");
      }
      continue;
    }
    CheckJob(name, job, from->second, last_wall, s, o, r, &instants);
  }
  // Fire events: one per (job, instant) over the whole history, and each one durable.
  std::map<std::pair<std::string, int64_t>, std::string> fired;
  int64_t fires = 0;
  for (const Event& e : h.coordinator) {
    if (e.ev != "fire" && e.ev != "skip") continue;
    if (e.ev == "fire" && e.Str("reason") != "schedule") continue;
    ++fires;
    auto key = std::make_pair(e.Str("job"), e.Int("scheduled_ms"));
    auto [it, fresh] = fired.emplace(key, e.where);
    if (!fresh) {
      r->Fail("I2", JobAt(key.first, key.second) + ": " + e.ev + " of run " +
                        std::to_string(e.Int("run")) + " at " + e.where + " after one at " +
                        it->second);
    }
  }
  r->Count("jobs", jobs);
  r->Count("instants", instants);
  r->Count("fires", fires);
  r->Count("misses", static_cast<int64_t>(s.misses.size()));
}

}  // namespace jobctl::fault
