// I10 (one holder's writes at a time) and I11 (a leader change ends no healthy agent's
// shard), for several coordinators on one database, from their event logs merged by
// monotonic time (MergeCoordinators); and the figures of each leader change. The epoch is
// the one the coordinator began when it took the database (0 for the embedded store, whose
// one coordinator always holds it).
#include <algorithm>
#include <climits>
#include <map>
#include <set>

#include "fault/checker.h"

namespace jobctl::fault {
namespace {

bool Killed(const CheckOptions& o, const std::string& agent) {
  return std::any_of(o.kills.begin(), o.kills.end(),
                     [&](const AgentKill& k) { return k.agent == agent; });
}

// An agent's own reasons to stop a shard that are not a fault: cancelled, or timed out.
bool ExpectedKill(const std::string& why) {
  return why.rfind("canceled", 0) == 0 || why.rfind("timed out", 0) == 0;
}

}  // namespace

void CheckLeaders(const History& h, const CheckOptions& o, Report* r) {
  // I10: in the order the commits began (MergeCoordinators), once a commit of a newer epoch
  // is seen no older epoch commits again (a transaction that began after a newer holder
  // committed must have failed its epoch check); and a coordinator only commits in the epoch
  // it loaded with.
  int64_t newest = -1;
  std::string newest_where;
  std::map<int64_t, int64_t> loaded_epoch;       // by pid
  std::map<int64_t, const Event*> first_commit;  // by epoch
  std::map<int64_t, const Event*> last_commit;   // by epoch
  std::vector<const Event*> changes;             // a "loaded" in another epoch than before
  int64_t current = -1, commits = 0;
  for (const Event& e : h.coordinator) {
    if (e.ev == "loaded" && e.Has("epoch")) {
      int64_t epoch = e.Int("epoch");
      loaded_epoch[e.pid] = epoch;
      if (current >= 0 && epoch != current) changes.push_back(&e);
      current = epoch;
      continue;
    }
    if (e.ev != "commit" || !e.Has("epoch")) continue;
    ++commits;
    int64_t epoch = e.Int("epoch");
    if (auto it = loaded_epoch.find(e.pid); it != loaded_epoch.end() && it->second != epoch) {
      r->Fail("I10", e.where + ": a commit of epoch " + std::to_string(epoch) +
                         " by a coordinator that loaded in epoch " + std::to_string(it->second));
    }
    if (epoch < newest) {
      r->Fail("I10", e.where + ": a commit of epoch " + std::to_string(epoch) + " (pid " +
                         std::to_string(e.pid) + ") after a commit of epoch " +
                         std::to_string(newest) + " at " + newest_where);
    } else if (epoch > newest) {
      newest = epoch;
      newest_where = e.where;
    }
    if (current < 0) current = epoch;
    first_commit.emplace(epoch, &e);
    last_commit[epoch] = &e;
  }
  r->Count("commits", commits);

  // The leader changes, each with the fault before it.
  for (const Event* loaded : changes) {
    LeaderChange c;
    c.epoch = loaded->Int("epoch");
    c.pid = loaded->pid;
    // The last commit of an older epoch.
    auto before = last_commit.lower_bound(c.epoch);
    if (before != last_commit.begin()) {
      --before;
      c.gap_ms = (loaded->mono_ns - before->second->mono_ns) / 1'000'000;
    }
    int64_t fault = -1;
    for (int64_t f : o.coordinator_faults) {
      if (f <= loaded->mono_ns) fault = std::max(fault, f);
    }
    if (fault >= 0) c.fault_ms = (loaded->mono_ns - fault) / 1'000'000;
    if (auto fc = first_commit.find(c.epoch); fc != first_commit.end())
      c.first_commit_ms = (fc->second->mono_ns - loaded->mono_ns) / 1'000'000;
    r->leader_changes.push_back(c);
  }
  r->Count("leader_changes", static_cast<int64_t>(changes.size()));

  // I11: the shards of agents that stayed healthy outlive every leader change.
  if (!o.leader_changes_end_no_shard) return;
  for (const Event& e : h.coordinator) {
    if (e.ev == "lease_end" && e.Str("why") == "expired" && !Killed(o, e.Str("agent"))) {
      r->Fail("I11", "run " + std::to_string(e.Int("run")) + " shard " +
                         std::to_string(e.Int("shard")) + " token " +
                         std::to_string(e.Int("token")) + ": the lease of healthy agent " +
                         e.Str("agent") + " expired at " + e.where);
    }
  }
  for (const auto& [agent, events] : h.agents) {
    if (Killed(o, agent)) continue;
    for (const Event& e : events) {
      if (e.ev == "kill" && !ExpectedKill(e.Str("why"))) {
        r->Fail("I11", "run " + std::to_string(e.Int("run")) + " shard " +
                           std::to_string(e.Int("shard")) + " attempt " +
                           std::to_string(e.Int("attempt")) + " token " +
                           std::to_string(e.Int("token")) + ": healthy agent " + agent +
                           " stopped it (" + e.Str("why") + ") at " + e.where);
      }
    }
  }
}

}  // namespace jobctl::fault
