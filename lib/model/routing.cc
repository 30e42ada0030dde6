#include "model/routing.h"

#include <algorithm>
#include <tuple>

namespace jobctl {

bool MatchesLabels(std::span<const LabelSelector> on,
                   const std::map<std::string, std::string>& labels) {
  for (const LabelSelector& s : on) {
    auto it = labels.find(s.key);
    bool equal = it != labels.end() && it->second == s.value;
    if (equal == s.negated) return false;
  }
  return true;
}

uint64_t RendezvousHash(std::string_view job, int index, std::string_view agent) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](std::string_view s) {
    for (char c : s) {
      h ^= static_cast<unsigned char>(c);
      h *= 1099511628211ull;
    }
    h ^= 0xff;
    h *= 1099511628211ull;
  };
  mix(job);
  mix(std::to_string(index));
  mix(agent);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

namespace {

// Orders the eligible agents (indices into `agents`) as the route prefers them.
void Order(const ShardToRoute& shard, std::span<const AgentView> agents, uint64_t round_robin_turn,
           Random& random, std::vector<size_t>& eligible) {
  auto hash = [&](size_t i) { return RendezvousHash(shard.job, shard.index, agents[i].name); };
  switch (shard.route) {
    case Route::kHash:
      std::sort(eligible.begin(), eligible.end(),
                [&](size_t x, size_t y) { return hash(x) > hash(y); });
      break;
    case Route::kFailover: break;  // in name order: the first healthy agent wins
    case Route::kRoundRobin: {
      size_t start = round_robin_turn % eligible.size();
      std::rotate(eligible.begin(), eligible.begin() + static_cast<long>(start), eligible.end());
      break;
    }
    case Route::kRandom: std::shuffle(eligible.begin(), eligible.end(), random); break;
    case Route::kSpread:
    case Route::kBroadcast: {
      // Least busy first, and shards of one run on different agents where possible; ties
      // broken by a stable hash so assignments do not move while membership is unchanged.
      struct Ranked {
        int same_run;
        size_t busy;
        uint64_t hash;
        size_t agent;
      };
      std::vector<Ranked> ranked;
      ranked.reserve(eligible.size());
      for (size_t i : eligible) {
        const AgentView& a = agents[i];
        ranked.push_back(
            {a.held_in_run, a.held * 1000 / static_cast<size_t>(std::max(a.slots, 1)), hash(i), i});
      }
      std::sort(ranked.begin(), ranked.end(), [](const Ranked& x, const Ranked& y) {
        return std::tie(x.same_run, x.busy) != std::tie(y.same_run, y.busy)
                   ? std::tie(x.same_run, x.busy) < std::tie(y.same_run, y.busy)
                   : x.hash > y.hash;
      });
      for (size_t i = 0; i < ranked.size(); ++i) eligible[i] = ranked[i].agent;
      break;
    }
  }
}

}  // namespace

RouteChoice PickAgent(const ShardToRoute& shard, std::span<const AgentView> agents,
                      uint64_t round_robin_turn, Random& random) {
  if (!shard.bound_agent.empty()) {
    for (size_t i = 0; i < agents.size(); ++i) {
      if (agents[i].name != shard.bound_agent) continue;
      if (agents[i].free > 0) return {RouteVerdict::kGrant, i};
      break;
    }
    return {RouteVerdict::kWait, 0};
  }
  std::vector<size_t> eligible;
  for (size_t i = 0; i < agents.size(); ++i) {
    const AgentView& a = agents[i];
    if (!a.draining && a.alive && MatchesLabels(shard.on, *a.labels)) eligible.push_back(i);
  }
  if (eligible.empty()) return {RouteVerdict::kWait, 0};
  Order(shard, agents, round_robin_turn, random, eligible);
  if (agents[eligible[0]].free > 0) return {RouteVerdict::kGrant, eligible[0]};
  if (shard.waited_ms < kPreferHoldMs) return {RouteVerdict::kHold, 0};
  for (size_t i : eligible) {
    if (agents[i].free > 0) return {RouteVerdict::kGrant, i};
  }
  return {RouteVerdict::kWait, 0};
}

}  // namespace jobctl
