// The identities that cross between the coordinator, agentd and jobctl: a run, a shard of a
// run, an attempt of a shard, and a lease's fencing token. One definition for all three
// programs (and the fault checker), so that a shard is named the same way everywhere.
// Value types; pure, any thread.
#pragma once

#include <compare>
#include <cstdint>
#include <string>

namespace jobctl {

using JobId = std::string;     // a job's name
using RunId = int64_t;         // runs.id, from 1
using FencingToken = int64_t;  // a lease's token, from 1; strictly increasing per coordinator

// One shard of one run; shards count from 0.
struct ShardKey {
  RunId run = 0;
  int shard = 0;
  friend auto operator<=>(const ShardKey&, const ShardKey&) = default;
};

// One attempt of one shard; attempts count from 1 (a retry is the next attempt).
struct AttemptKey {
  RunId run = 0;
  int shard = 0;
  int attempt = 0;
  ShardKey shard_key() const { return {run, shard}; }
  friend auto operator<=>(const AttemptKey&, const AttemptKey&) = default;
};

}  // namespace jobctl
