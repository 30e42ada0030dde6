// The checker of the fault suite: reads what the coordinator, the agents and the probe jobs
// wrote to their event logs (History) and what the coordinator's stores hold afterwards
// (StoreView), and reports every violation of the invariants jobctl promises (README, "Fault
// tests"):
//
//   I1 no lost trigger: every due instant of a job, from the first instant the coordinator
//      announced ("scheduled") to the job's stored next fire, is one run or one recorded miss;
//   I2 no duplicate trigger: never two runs (or fire events) for one (job, instant);
//   I3 at most one live lease per (run, shard) on the coordinator's clock (grant..lease_end,
//      across restarts), and fencing tokens strictly increase;
//   I4 nothing accepted with a stale token: results and renewals only for the live lease,
//      log chunks only for the shard's newest token;
//   I5 at most one accepted result per (run, shard, attempt);
//   I6 nothing acknowledged is lost: every log chunk and result an agent saw acknowledged is
//      in the store, and each probe's output is stored byte for byte (a prefix while it ran,
//      all of it once its result was acknowledged);
//   I9 never twice at once: no attempt of a shard starts while an earlier one is alive (from
//      its probe's start to its probe's end, agentd's "exited" or the fence's "fenced");
//   I8 bounded failover: a lease held by a killed agent ends, and its shard is granted again
//      (on_lost = "rerun"), within TTL + heartbeat + 1 s of the kill;
//   I10 one holder at a time (several coordinators on one database): no commit of an epoch
//      that began after the first commit of a newer one began, and each coordinator commits
//      only in the epoch it loaded with;
//   I11 (when asked) a leader change ends no healthy agent's shard: no lease of an agent the
//      test did not kill expires, and no such agent stops a shard for a lost lease;
//   I12 flows: each step runs at most once per flow run, never before the steps it needs
//      ended, and a flow run starts, skips (with the reason) and ends exactly as its graph
//      says given how its steps ended (check_flows.cc).
//
// It also measures what is allowed but must be bounded: failover times, the overlaps I9 found
// (the old process still alive while the new holder runs), and how long each leader change
// took.
// Every violation names the job, instant, run, shard and token it is about. Pure; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fault/history.h"
#include "fault/store_view.h"

namespace jobctl::fault {

// The test killed (SIGKILL or SIGSTOP) this agent at this CLOCK_MONOTONIC instant.
struct AgentKill {
  std::string agent;
  int64_t mono_ns = 0;
};

struct CheckOptions {
  std::vector<AgentKill> kills;
  int64_t failover_slack_ms = 1000;  // I8: TTL + heartbeat + this
  // I1: at the end no active, unpaused job's next fire may lie further behind the
  // coordinator's last event than this.
  int64_t behind_slack_ms = 5000;
  // The test killed or stopped the serving coordinator at these CLOCK_MONOTONIC instants.
  std::vector<int64_t> coordinator_faults;
  bool leader_changes_end_no_shard = false;  // check I11
};

struct Violation {
  std::string invariant;  // "I1" ... "I8"
  std::string what;
};

struct Failover {
  std::string agent;
  int64_t run = 0;
  int shard = 0;
  int64_t token = 0;
  int64_t ended_ms = -1;      // kill -> lease_end; -1: never
  int64_t regranted_ms = -1;  // kill -> next grant of the shard; -1: never
  int64_t new_token = 0;
};

struct AttemptOverlap {
  int64_t run = 0;
  int shard = 0;
  int old_attempt = 0;
  int new_attempt = 0;
  int64_t ms = 0;             // both processes alive at once
  bool old_end_known = true;  // false: the old process was never seen ending
};

// A coordinator that began serving after another (a new epoch).
struct LeaderChange {
  int64_t epoch = 0;
  int64_t pid = 0;
  int64_t fault_ms = -1;         // the last coordinator fault before -> it loaded; -1: none
  int64_t gap_ms = -1;           // the previous epoch's last commit -> it loaded
  int64_t first_commit_ms = -1;  // it loaded -> its first commit; -1: none
};

struct Report {
  std::vector<Violation> violations;
  std::vector<Failover> failovers;
  std::vector<AttemptOverlap> overlaps;
  std::vector<LeaderChange> leader_changes;
  std::vector<std::string> notes;  // gaps in the history that are not violations
  // What was checked: instants, runs, misses, grants, restarts, results, chunks, probes.
  std::vector<std::pair<std::string, int64_t>> counts;

  bool ok() const { return violations.empty(); }
  bool Has(std::string_view invariant) const;
  void Count(const std::string& what, int64_t n) { counts.emplace_back(what, n); }
  void Fail(std::string invariant, std::string what) {
    violations.push_back({std::move(invariant), std::move(what)});
  }
  std::string ToString() const;
};

Report Check(const History& history, const StoreView& store, const CheckOptions& options);

// The parts of Check, each adding to `report`.
void CheckTriggers(const History& h, const StoreView& s, const CheckOptions& o, Report* report);
void CheckLeases(const History& h, const StoreView& s, const CheckOptions& o, Report* report);
void CheckAcknowledged(const History& h, const StoreView& s, Report* report);
void MeasureOverlaps(const History& h, Report* report);
void CheckLeaders(const History& h, const CheckOptions& o, Report* report);
void CheckFlows(const History& h, const StoreView& s, Report* report);

// "2024-06-01T12:00:03.250Z" for reports.
std::string FormatInstant(int64_t unix_ms);

}  // namespace jobctl::fault
