// LeaseTable is the agent's view of the leases it holds and of when each one must be given up
// (self-fencing). Time is the monotonic boot-time clock (Clock::MonotonicMs), measured from
// when the claim or the renewal was SENT, never from when its answer arrived: the coordinator
// may have granted or renewed at any moment after that, so the send time is the only instant
// the agent knows to be no later. Pure; loop thread (not thread-safe).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "assignment.h"

namespace jobctl::agentd {

// The local deadline of a lease renewed by a request sent at `sent_ms`: TTL × 0.99 (the two
// clocks may drift apart by up to 1%) less 1 s (to kill and be sure), from the send.
int64_t LeaseDeadline(int64_t sent_ms, int64_t ttl_ms);

// How often to renew: every TTL/3, so two lost heartbeats still leave time for a third, or
// more often if the coordinator asks for it.
int64_t HeartbeatEvery(int64_t ttl_ms, int64_t heartbeat_ms);

// A lease whose claim-based deadline leaves less than this is unconfirmed: its shard must not
// start before a renewal (sent after the claim's answer arrived) sets a real deadline.
inline constexpr int64_t kMinStartMs = 500;

struct HeldLease {
  ShardKey key;
  int64_t token = 0;
  int64_t deadline_ms = 0;  // monotonic; for an unconfirmed lease, when to give up waiting
  bool confirmed = true;
};

class LeaseTable {
 public:
  // A lease granted by the answer (received at `now_ms`) to a claim sent at `sent_ms`. A claim
  // held open for long may leave no time at all: such a lease is unconfirmed, and waits at
  // most one TTL for a renewal. Returns whether it is confirmed.
  bool Add(ShardKey key, int64_t token, int64_t sent_ms, int64_t ttl_ms, int64_t now_ms);
  // A renewal of `token` sent at `sent_ms` was acknowledged: the lease is confirmed and its
  // deadline moves later (never earlier, once confirmed). False: no longer held.
  bool Renewed(ShardKey key, int64_t token, int64_t sent_ms, int64_t ttl_ms);
  // Removes the lease if it is still `token`'s.
  bool Remove(ShardKey key, int64_t token);
  // Removes and returns the leases whose deadline is at or before `now_ms`, earliest first.
  std::vector<HeldLease> TakeExpired(int64_t now_ms);

  // The earliest deadline. Add, Renewed, Remove and this take O(log n): an agent with
  // thousands of leases changes them at every grant and every end.
  std::optional<int64_t> NextDeadline() const;
  std::optional<HeldLease> Find(ShardKey key) const;
  std::vector<HeldLease> All() const;
  bool empty() const { return leases_.empty(); }
  size_t size() const { return leases_.size(); }

 private:
  void Index(const HeldLease& l) { by_deadline_.emplace(l.deadline_ms, l.key); }
  void Unindex(const HeldLease& l) { by_deadline_.erase({l.deadline_ms, l.key}); }

  std::map<ShardKey, HeldLease> leases_;
  std::set<std::pair<int64_t, ShardKey>> by_deadline_;  // (deadline_ms, key) of each lease
};

}  // namespace jobctl::agentd
