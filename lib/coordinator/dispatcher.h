// Dispatcher hands pending shards to agents under leases. Agents pull: each keeps one
// long-poll claim open (ClaimPoll), and the moment a matching shard is pending (or an agent
// with free slots arrives) the claim is answered with the shard, a fresh fencing token and the
// TTL. The Dispatcher holds the pending queue and matches it to the fleet (routing is
// model/routing.h); it owns the three parts that keep the rest:
//   Leases         grant, renewal by heartbeat, release and expiry; fencing tokens
//   AgentRegistry  the agents, their labels and slots, last seen, draining, expiry
//   ClaimPoll      the open long-poll claims and their answers
// It knows shards, agents and leases, never runs: what happens to a run when its shard is
// granted or its lease expires is the business of the owner of the runs (the RunBook), told
// through ShardEvents, so the calls go one way (RunBook -> Dispatcher).
// Loop thread only; owned by the Coordinator.
#pragma once

#include <uv.h>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "base/random.h"
#include "coordinator/agent_registry.h"
#include "coordinator/claim_poll.h"
#include "coordinator/context.h"
#include "coordinator/leases.h"
#include "http/server.h"
#include "model/job.h"
#include "model/routing.h"
#include "model/timing_wheel.h"
#include "uvx/handles.h"
#include "wire/agent_messages.h"

namespace jobctl::coordinator {

// What the Dispatcher tells the owner of the runs.
struct ShardEvents {
  // A shard was granted to `agent` under `token`: records it as running and returns the
  // assignment the agent receives (the Dispatcher adds the lease's ttl_ms and heartbeat_ms).
  std::function<wire::Grant(ShardKey key, const std::string& agent, int64_t token, int64_t now_ms)>
      granted;
  // Whether the lease `token` of the shard ended because its result arrived.
  std::function<bool(ShardKey key, int64_t token)> ended_by_result;
  // The lease `token` of the shard expired (or its agent was removed): the shard is lost.
  std::function<void(ShardKey key, int64_t token)> lease_expired;
};

// What a pending shard needs for routing.
struct PendingShard {
  ShardKey key;
  std::string job;
  std::vector<LabelSelector> on;
  Route route = Route::kSpread;
  std::string bound_agent;  // broadcast: only this agent
  // Wall clock: its child does not start before this (its run's instant, a retry's backoff,
  // a jitter delay). It is granted from EarlyDispatchMs() before, to agents that start it
  // on their own clock; to any other agent only from then on.
  int64_t not_before_ms = 0;
  int64_t since_mono = 0;
  bool step = false;  // a flow step's: only agents that run steps take it
  // Its job sets resource limits: only agents that read them take it (an older one would run
  // it without them).
  bool limits = false;
};

// A claim as the Dispatcher takes it: the agent's message, its "agent" replaced by the
// credential's (Api), and what the credential says besides.
struct ClaimRequest : wire::ClaimRequest {
  int64_t token_id = 0;
  std::optional<int64_t> token_expires_ms;  // the claim is not held open past it
};

using HeartbeatLease = wire::LeaseRef;

class Dispatcher {
 public:
  // `random` shuffles for the random route; nullptr: the Dispatcher's own SystemRandom.
  explicit Dispatcher(Context* ctx, Random* random = nullptr);
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;
  void set_shard_events(ShardEvents events) { events_ = std::move(events); }

  void Start();
  void Close();  // answers waiting claims (empty) and closes the timers

  // Rebuilding from the store: every live lease gets a fresh TTL before expiry is judged.
  void Clear();
  void LoadAgent(const store::AgentRow& row);
  // `start_ms` (wall clock): when the shard's child was due to start (a lease granted ahead
  // of its instant counts its TTL from then, if that is still to come).
  void LoadLease(ShardKey key, const std::string& agent, int64_t token, int64_t start_ms = 0);
  void SetNextToken(int64_t last_used) { leases_.SetLastToken(last_used); }

  void Enqueue(PendingShard shard);
  void RemovePending(ShardKey key);
  void Claim(ClaimRequest request, std::shared_ptr<http::Responder> responder);
  // The reply's JSON text.
  std::string Heartbeat(const std::string& agent, const std::vector<HeartbeatLease>& leases,
                        int free);
  // The live leases (where a lease is granted, renewed and expires).
  const Leases& leases() const { return leases_; }
  // Current token check for results and logs: kOk, or kConflict saying why (never which
  // token is current).
  Status CheckToken(ShardKey key, const std::string& agent, int64_t token) const {
    return leases_.CheckToken(key, agent, token);
  }
  bool Holds(ShardKey key, int64_t token) const { return leases_.Holds(key, token); }
  // That lease is live and held by this agent.
  bool HeldBy(ShardKey key, int64_t token, const std::string& agent) const {
    return leases_.HeldBy(key, token, agent);
  }
  // Answers the open claim that came with this credential (or, for the second form, this
  // agent's open claim) with 401 and `why`: a revoked credential is served nothing more.
  void CloseClaimsOfToken(int64_t token_id, const std::string& why) {
    claims_.CloseOfToken(token_id, why);
  }
  void CloseClaimOf(const std::string& agent, const std::string& why) {
    claims_.CloseOf(agent, why);
  }
  // `jobctl agents rm`: forgets the agent. kNotFound if unknown; kConflict while it holds
  // leases, unless `force`, when its leases end now as if they had expired.
  Status Forget(const std::string& agent, bool force);
  // The lease ends; `why` (result, expired, released) goes to the event log.
  void Release(ShardKey key, std::string_view why);
  // The lease's run was canceled: its holder is told in the answer to its open claim, if it
  // has one (at once, so that a child waiting for its instant never starts), and at its next
  // heartbeat.
  void MarkCanceled(ShardKey key);
  Status SetDraining(const std::string& agent, bool draining) {
    return registry_.SetDraining(agent, draining);
  }
  // The agents with the labels matching `on` that were seen within one TTL, by name; for a
  // flow step, only those that run steps.
  std::vector<std::string> EligibleAgents(const std::vector<LabelSelector>& on,
                                          bool step = false) const {
    return registry_.Eligible(on, step);
  }

  // The agent has a claim open now: it is alive and asking for work.
  bool Asking(const std::string& agent) const {
    auto it = registry_.all().find(agent);
    return it != registry_.all().end() && it->second.waiting != nullptr;
  }
  const std::map<std::string, AgentInfo>& agents() const { return registry_.all(); }
  size_t active_leases() const { return leases_.size(); }
  size_t pending() const { return pending_.size() + later_.size(); }
  bool AgentAlive(const AgentInfo& a) const { return registry_.Alive(a); }

 private:
  void TryDispatch();
  // `early`: the shard is granted before its not_before, so only to agents that start it on
  // their own clock.
  AgentInfo* Pick(const PendingShard& shard, int64_t now_mono, bool early, bool* hold);
  int FreeOf(const AgentInfo& a) const;
  void Grant(AgentInfo& agent, const PendingShard& shard, int64_t now_ms,
             std::vector<wire::Grant>* assignments);
  // A lease expired (Leases): the shard is lost to its holder.
  void OnLeaseExpired(const Lease& lease);
  void ArmTimers();
  void ArmLaterTimer();
  // Moves the shards of later_ whose time has come to the queue.
  void OnLaterTimer();

  Context* ctx_;
  ShardEvents events_;
  SystemRandom own_random_;
  Random* random_;  // own_random_ unless one was injected
  AgentRegistry registry_;
  ClaimPoll claims_;
  // Pick's scratch space, kept to spare an allocation per pick: the agents' views for
  // routing (model/routing.h) and the agent behind each.
  std::vector<AgentView> views_;
  std::vector<AgentInfo*> view_agents_;
  std::deque<PendingShard> pending_;
  // Shards not due yet, by the time they may be granted (not_before_ms less the early
  // dispatch window).
  std::multimap<int64_t, PendingShard> later_;
  Leases leases_;
  std::map<std::string, uint64_t> round_robin_;
  std::unique_ptr<uvx::Timer> retry_timer_;
  std::unique_ptr<uvx::Timer> later_timer_;
  bool started_ = false;
};

}  // namespace jobctl::coordinator
