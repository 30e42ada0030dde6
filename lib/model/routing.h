// The routing rule: which agent gets a pending shard, for every route of job.h. Pure: the
// Dispatcher describes each agent as an AgentView (its labels, whether it is draining or
// alive, the free slots of its open claim, how busy it is) and applies the choice.
//
// Eligible agents are those alive, not draining and matching every selector of the job's
// `on`. The route orders them: spread puts the least busy first (fewest shards of this run,
// then fewest shards per slot), ties broken by a stable hash of (job, shard, agent) so
// placements do not move while membership is unchanged; hash orders by that hash alone, so
// a shard stays on its agent however busy; round-robin rotates them by the job's turn;
// random shuffles them with the caller's Random; failover keeps them in name order. The
// first in that order gets the shard if its claim has room; else the shard is held up to
// kPreferHoldMs for it, then the first with room gets it. A broadcast shard is bound to
// its agent and goes nowhere else. Any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/random.h"
#include "model/job.h"

namespace jobctl {

// How long a shard waits for the agent its route prefers before any eligible agent may take
// it: long enough for that agent to send its next claim, short enough not to be noticed.
inline constexpr int64_t kPreferHoldMs = 300;

// Every selector holds: key=value is present, key!=value is not.
bool MatchesLabels(std::span<const LabelSelector> on,
                   const std::map<std::string, std::string>& labels);

// A stable hash of (job, shard index, agent): rendezvous hashing for the hash route and
// spread's ties.
uint64_t RendezvousHash(std::string_view job, int index, std::string_view agent);

struct ShardToRoute {
  std::string_view job;
  int64_t run = 0;
  int index = 0;
  std::span<const LabelSelector> on;
  Route route = Route::kSpread;
  std::string_view bound_agent;  // broadcast: only this agent ("" = any)
  int64_t waited_ms = 0;         // since it was queued
};

// What routing knows of one agent. Views point into the caller's registry.
struct AgentView {
  std::string_view name;
  const std::map<std::string, std::string>* labels = nullptr;  // never null
  bool draining = false;
  bool alive = false;  // asking for work now, or heard within a lease TTL
  int free = 0;        // shards its open claim takes now (0: no claim open, or draining)
  int slots = 1;
  size_t held = 0;      // shards it holds
  int held_in_run = 0;  // of those, shards of this shard's run
};

enum class RouteVerdict {
  kGrant,  // to `agent`
  kHold,   // the preferred agent has no room now: wait for it (kPreferHoldMs in all)
  kWait,   // no eligible agent has room: wait for a claim
};
struct RouteChoice {
  RouteVerdict verdict = RouteVerdict::kWait;
  size_t agent = 0;  // index into the views, for kGrant
};

// `agents`: in name order (failover takes the first eligible). `round_robin_turn`: how many
// shards of this job round-robin placed before.
RouteChoice PickAgent(const ShardToRoute& shard, std::span<const AgentView> agents,
                      uint64_t round_robin_turn, Random& random);

}  // namespace jobctl
