// I3 (one live lease per shard, tokens only grow), I4 (no stale token accepted), I5 (one
// accepted result per attempt) and I8 (bounded failover), by replaying the coordinator's
// event log in the order it was written. The coordinator writes a lease's grant and end right
// after the commit that made them true; a restart writes "loading", one "lease_loaded" per
// lease the store still holds, then "loaded", so leases that ended just before a kill -9
// (their lease_end unwritten) are closed at the restart and leases whose grant line was lost
// are opened there.
#include <algorithm>
#include <climits>
#include <map>
#include <set>

#include "fault/checker.h"
#include "model/ids.h"

namespace jobctl::fault {
namespace {

using Key = ShardKey;

struct Interval {
  Key key;
  int64_t token = 0;
  std::string agent;
  int64_t start_ns = 0;
  int64_t end_ns = LLONG_MAX;
  std::string why;    // how it ended
  std::string where;  // the line that opened it
  // When its TTL began to count: a lease granted ahead of its instant (early dispatch) counts
  // from the instant, one loaded at a restart from the load plus the early window.
  int64_t due_ns = 0;
};

std::string Shard(Key k) {
  return "run " + std::to_string(k.run) + " shard " + std::to_string(k.shard);
}

std::string JobOf(const StoreView& s, int64_t run) {
  const RunRecord* r = s.FindRun(run);
  return r != nullptr ? "job " + r->job + " instant " + FormatInstant(r->scheduled_ms) + " "
                      : std::string("job ? ");
}

class Replay {
 public:
  Replay(const StoreView& s, Report* r) : s_(s), r_(r) {}

  void Run(const std::vector<Event>& events) {
    // In the order the store saw the commits (MergeCoordinators).
    int64_t last_ns = 0;
    for (const Event& e : events) {
      int64_t at = CommitOrderNs(e);
      if (at < last_ns) {
        r_->Fail("I3", e.where + ": the coordinator's monotonic clock went back");
      }
      last_ns = std::max(last_ns, at);
      On(e);
    }
  }

  std::vector<Interval> intervals;
  int64_t ttl_ms = 0, heartbeat_ms = 0;
  int64_t grants = 0, restarts = 0, results = 0, renewals = 0, logs = 0, refusals = 0;
  int64_t early_grants = 0;  // granted ahead of their instant (early dispatch)
  // Leases granted ahead and still before their instant when a restart began loading.
  int64_t early_at_restart = 0;

 private:
  void On(const Event& e) {
    Key key{e.Int("run"), static_cast<int>(e.Int("shard"))};
    int64_t token = e.Int("token");
    if (e.ev == "loading") {
      loading_ns_ = e.mono_ns;
      loading_pid_ = e.pid;
      confirmed_.clear();
      ++restarts;
      for (const auto& [k, idx] : open_) early_at_restart += intervals[idx].due_ns > e.mono_ns;
    } else if (e.ev == "lease_loaded") {
      // Only the lines of the load in progress count: a standby on a shared database that
      // reads the store to keep its view current writes them too, while another serves.
      if (e.pid == loading_pid_) Loaded(e, key, token);
    } else if (e.ev == "loaded") {
      if (e.pid != loading_pid_) return;
      loading_pid_ = -1;
      for (auto it = open_.begin(); it != open_.end();) {
        if (confirmed_.count(it->first)) {
          ++it;
          continue;
        }
        Close(it->second, loading_ns_, "restart");
        it = open_.erase(it);
      }
      ttl_ms = e.Int("ttl_ms");
      heartbeat_ms = e.Int("heartbeat_ms");
      if (e.Int("last_token") < max_token_) {
        r_->Fail("I3", e.where + ": restarted with token counter " +
                           std::to_string(e.Int("last_token")) + " below token " +
                           std::to_string(max_token_) + " already granted");
      }
    } else if (e.ev == "grant") {
      Grant(e, key, token);
    } else if (e.ev == "lease_end") {
      End(e, key, token);
    } else if (e.ev == "renewed") {
      ++renewals;
      RequireLive(e, key, token, "renewal");
    } else if (e.ev == "result_accepted") {
      Result(e, key, token);
    } else if (e.ev == "log_accepted") {
      ++logs;
      auto latest = latest_.find(key);
      if (latest == latest_.end() || latest->second != token) {
        r_->Fail("I4", JobOf(s_, key.run) + Shard(key) + " token " + std::to_string(token) +
                           ": log chunk seq " + std::to_string(e.Int("seq")) + " accepted at " +
                           e.where + " but the newest token granted is " +
                           (latest == latest_.end() ? "none" : std::to_string(latest->second)));
      }
    } else if (e.ev == "refused") {
      ++refusals;
    }
  }

  void Open(Key key, int64_t token, const std::string& agent, int64_t at,
            const std::string& where) {
    open_[key] = intervals.size();
    intervals.push_back({key, token, agent, at, LLONG_MAX, "", where, at});
    latest_[key] = std::max(latest_[key], token);
    max_token_ = std::max(max_token_, token);
  }
  void Close(size_t idx, int64_t at, const std::string& why) {
    intervals[idx].end_ns = at;
    intervals[idx].why = why;
  }

  void Loaded(const Event& e, Key key, int64_t token) {
    confirmed_.insert(key);
    const int64_t due = e.mono_ns + e.Int("grace_ms") * 1'000'000;
    auto it = open_.find(key);
    if (it != open_.end() && intervals[it->second].token == token) {
      intervals[it->second].due_ns = std::max(intervals[it->second].due_ns, due);
      return;
    }
    if (it != open_.end()) Close(it->second, loading_ns_, "restart");
    r_->notes.push_back(Shard(key) + " token " + std::to_string(token) +
                        ": live at a restart without a grant line (the coordinator died between "
                        "the commit and the line)");
    Open(key, token, e.Str("agent"), loading_ns_, e.where);
    intervals.back().due_ns = std::max(intervals.back().due_ns, due);
  }

  void Grant(const Event& e, Key key, int64_t token) {
    ++grants;
    if (token <= max_token_) {
      r_->Fail("I3", JobOf(s_, key.run) + Shard(key) + ": token " + std::to_string(token) +
                         " granted at " + e.where + " after token " + std::to_string(max_token_) +
                         " (tokens must strictly increase)");
    }
    if (auto it = open_.find(key); it != open_.end()) {
      const Interval& live = intervals[it->second];
      r_->Fail("I3", JobOf(s_, key.run) + Shard(key) + ": token " + std::to_string(token) +
                         " granted to " + e.Str("agent") + " at " + e.where + " while token " +
                         std::to_string(live.token) + " of " + live.agent + " (granted at " +
                         live.where + ") was still live");
      Close(it->second, e.mono_ns, "overlapped");
    }
    Open(key, token, e.Str("agent"), e.mono_ns, e.where);
    intervals.back().due_ns = e.mono_ns + e.Int("start_in_us") * 1'000;
    if (e.Int("start_in_us") > 0) ++early_grants;
  }

  void End(const Event& e, Key key, int64_t token) {
    auto it = open_.find(key);
    if (it == open_.end()) {
      r_->notes.push_back(Shard(key) + " token " + std::to_string(token) + ": lease_end at " +
                          e.where + " without a live lease in the history");
      return;
    }
    if (intervals[it->second].token != token) {
      r_->Fail("I3", JobOf(s_, key.run) + Shard(key) + ": lease_end of token " +
                         std::to_string(token) + " at " + e.where +
                         " but the live lease is token " +
                         std::to_string(intervals[it->second].token));
      return;
    }
    Close(it->second, e.mono_ns, e.Str("why"));
    open_.erase(it);
  }

  void RequireLive(const Event& e, Key key, int64_t token, const char* what) {
    auto it = open_.find(key);
    if (it == open_.end() || intervals[it->second].token != token) {
      r_->Fail("I4",
               JobOf(s_, key.run) + Shard(key) + " token " + std::to_string(token) + ": " + what +
                   " accepted at " + e.where + " but the live lease is " +
                   (it == open_.end() ? std::string("none")
                                      : "token " + std::to_string(intervals[it->second].token)));
    }
  }

  void Result(const Event& e, Key key, int64_t token) {
    ++results;
    RequireLive(e, key, token, "result");
    int attempt = static_cast<int>(e.Int("attempt"));
    auto [by_token, fresh_token] = by_token_.emplace(std::make_pair(key, token), e.where);
    auto [by_attempt, fresh_attempt] = by_attempt_.emplace(std::make_pair(key, attempt), e.where);
    if (!fresh_token || !fresh_attempt) {
      r_->Fail("I5", JobOf(s_, key.run) + Shard(key) + " token " + std::to_string(token) +
                         " attempt " + std::to_string(attempt) + ": a second result accepted at " +
                         e.where + " after one at " +
                         (fresh_token ? by_attempt->second : by_token->second));
    }
  }

  const StoreView& s_;
  Report* r_;
  std::map<Key, size_t> open_;     // live lease -> index in intervals
  std::map<Key, int64_t> latest_;  // newest token granted per shard
  int64_t max_token_ = 0;
  int64_t loading_ns_ = 0;
  int64_t loading_pid_ = -1;  // of the coordinator between its "loading" and "loaded"
  std::set<Key> confirmed_;
  std::map<std::pair<Key, int64_t>, std::string> by_token_;
  std::map<std::pair<Key, int>, std::string> by_attempt_;
};

void CheckFailovers(const Replay& replay, const StoreView& s, const CheckOptions& o, Report* r) {
  const int64_t bound_ms = replay.ttl_ms + replay.heartbeat_ms + o.failover_slack_ms;
  int64_t early_at_kill = 0;  // leases of killed agents granted ahead, killed before the instant
  for (const AgentKill& kill : o.kills) {
    // Measured from the kill, or from when the lease's TTL began to count if that was later
    // (a shard granted ahead of its instant, a lease loaded at a restart).
    for (const Interval& held : replay.intervals) {
      if (held.agent != kill.agent || held.start_ns > kill.mono_ns || held.end_ns <= kill.mono_ns) {
        continue;
      }
      Failover f{kill.agent, held.key.run, held.key.shard, held.token};
      if (held.due_ns > kill.mono_ns) ++early_at_kill;
      const int64_t from_ns = std::max(kill.mono_ns, held.due_ns);
      if (held.end_ns != LLONG_MAX) f.ended_ms = (held.end_ns - from_ns) / 1'000'000;
      for (const Interval& next : replay.intervals) {
        if (next.key == held.key && next.token > held.token) {
          f.regranted_ms = (next.start_ns - from_ns) / 1'000'000;
          f.new_token = next.token;
          break;
        }
      }
      r->failovers.push_back(f);
      const RunRecord* run = s.FindRun(held.key.run);
      const JobView* job = run != nullptr ? s.FindJob(run->job_id) : nullptr;
      bool rerun = job == nullptr || job->spec.on_lost == OnLost::kRerun;
      std::string who = JobOf(s, held.key.run) + Shard(held.key) + " token " +
                        std::to_string(held.token) + " of killed agent " + kill.agent;
      if (f.ended_ms < 0 || f.ended_ms > bound_ms) {
        r->Fail("I8",
                who + ": lease ended " +
                    (f.ended_ms < 0 ? std::string("never") : std::to_string(f.ended_ms) + " ms") +
                    " after the kill or its instant (bound " + std::to_string(bound_ms) + " ms)");
      } else if (rerun && held.why == "expired" &&
                 (f.regranted_ms < 0 || f.regranted_ms > bound_ms)) {
        r->Fail("I8", who + ": granted again " +
                          (f.regranted_ms < 0 ? std::string("never")
                                              : std::to_string(f.regranted_ms) + " ms") +
                          " after the kill or its instant (bound " + std::to_string(bound_ms) +
                          " ms)");
      }
    }
  }
  if (!o.kills.empty()) r->Count("early_grants_at_a_kill", early_at_kill);
}

}  // namespace

void CheckLeases(const History& h, const StoreView& s, const CheckOptions& o, Report* r) {
  Replay replay(s, r);
  replay.Run(h.coordinator);
  CheckFailovers(replay, s, o, r);
  r->Count("restarts", replay.restarts);
  r->Count("grants", replay.grants);
  r->Count("early_grants", replay.early_grants);
  r->Count("early_grants_at_a_restart", replay.early_at_restart);
  r->Count("renewals", replay.renewals);
  r->Count("results", replay.results);
  r->Count("log_chunks", replay.logs);
  r->Count("refusals", replay.refusals);
}

}  // namespace jobctl::fault
