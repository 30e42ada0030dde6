// LeaseKeeper holds this agent's shard leases: it renews all of them in one heartbeat every
// TTL/3 and gives each one up at its local deadline (self-fencing, see lease_table.h), on a
// boot-time timer so that suspend or SIGSTOP cannot stretch a lease. Heartbeats are sent only
// while leases are held: an idle agent sends nothing but its claim.
//
// Loop thread only; owned by the Agent. on_lost fires exactly once per lost lease (revoked by
// the coordinator as stale, canceled or finished, or past its deadline), after which the
// lease is no longer held; Remove() after a result was accepted is silent.
#pragma once

#include <uv.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/clock.h"
#include "boot_timer.h"
#include "coordinator_link.h"
#include "lease_table.h"
#include "uvx/handles.h"
#include "wire/agent_messages.h"

namespace jobctl::agentd {

// kFinished: the coordinator already accepted a result for the lease (a heartbeat crossed
// the result): harmless, the lease simply ends.
enum class LeaseLoss { kStale, kCanceled, kExpired, kFinished };
std::string_view LeaseLossName(LeaseLoss l);

class LeaseKeeper {
 public:
  struct Callbacks {
    std::function<void(ShardKey, int64_t token)> on_renewed;
    std::function<void(ShardKey, int64_t token, LeaseLoss)> on_lost;
  };
  LeaseKeeper(uv_loop_t* loop, CoordinatorLink* link, const Clock* clock, std::string agent,
              std::function<int()> free_slots, Callbacks callbacks);

  Status Init();
  // A lease from a claim sent at `sent_ms` (monotonic). An unconfirmed one (see
  // LeaseTable::Add) is renewed at once, and on_renewed tells when it may start.
  void Add(ShardKey key, int64_t token, int64_t ttl_ms, int64_t heartbeat_ms, int64_t sent_ms);
  void Remove(ShardKey key, int64_t token);
  // Held, confirmed and before its deadline: its shard may run.
  bool MayRun(ShardKey key, int64_t token) const;
  // The local deadline of `token`'s lease (monotonic), while it is held and confirmed.
  std::optional<int64_t> DeadlineOf(ShardKey key, int64_t token) const;
  // Sends a heartbeat now (or right after the one in flight).
  void RenewSoon();
  void Close();

 private:
  void Heartbeat();
  void OnReply(int64_t sent_ms, Result<http::HttpResponse> r);
  void ApplyReply(int64_t sent_ms, const wire::HeartbeatReply& reply);
  void CheckDeadlines();
  void Rearm();

  CoordinatorLink* link_;
  const Clock* clock_;
  std::string agent_;
  std::function<int()> free_slots_;
  Callbacks cb_;
  LeaseTable table_;
  uvx::Timer heartbeat_timer_;
  BootTimer deadline_timer_;
  int64_t ttl_ms_ = 15'000;
  int64_t heartbeat_ms_ = 5'000;
  int64_t every_ms_ = 0;  // the heartbeat timer's current period; 0 = stopped
  bool in_flight_ = false;
  bool again_ = false;
  bool closed_ = false;
};

}  // namespace jobctl::agentd
