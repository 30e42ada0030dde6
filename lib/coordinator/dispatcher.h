// Dispatcher hands pending shards to agents under leases. Agents pull: each keeps one
// long-poll claim open, and the moment a matching shard is pending (or an agent with free
// slots arrives) the claim is answered with the shard, a fresh fencing token and the TTL.
// Heartbeats renew an agent's leases in memory (soft state: grants, results and logs are
// the durable facts); a lease that is not renewed in time expires and its shard goes back
// to the runs' owner as lost. Tokens come from one counter that only grows, saved with every
// grant. The Dispatcher knows shards, agents and leases, never runs: what happens to a run
// when its shard is granted or its lease expires is the business of the owner of the runs
// (the RunBook), told through ShardEvents, so the calls go one way (RunBook -> Dispatcher).
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
#include "coordinator/context.h"
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

// The shards an agent holds, with a count per run: routing asks how many shards of a run an
// agent already has for every shard it places, so that answer must not cost a walk.
class HeldShards {
 public:
  void Add(ShardKey key) {
    if (keys_.insert(key).second) ++per_run_[key.run];
  }
  void Remove(ShardKey key) {
    if (keys_.erase(key) == 0) return;
    auto it = per_run_.find(key.run);
    if (--it->second == 0) per_run_.erase(it);
  }
  void Clear() {
    keys_.clear();
    per_run_.clear();
  }
  size_t size() const { return keys_.size(); }
  int InRun(int64_t run) const {
    auto it = per_run_.find(run);
    return it == per_run_.end() ? 0 : it->second;
  }

 private:
  std::set<ShardKey> keys_;
  std::map<int64_t, int> per_run_;
};

struct AgentInfo {
  std::string name;
  std::map<std::string, std::string> labels;
  int slots = 1;
  std::string version;
  int64_t last_seen_mono = 0;
  int64_t last_seen_ms = 0;
  bool draining = false;
  HeldShards held;
  // The open long-poll claim, if any.
  std::shared_ptr<http::Responder> waiting;
  int64_t waiting_token_id = 0;  // the credential the open claim came with
  int waiting_free = 0;
  int64_t wait_deadline_mono = 0;
  uint64_t claim_seq = 0;  // tells a stale OnClose from the current claim
};

struct Lease {
  ShardKey key;
  std::string agent;
  int64_t token = 0;
  int64_t expires_mono = 0;
  bool canceled = false;  // the run was canceled: the agent is told to kill at its heartbeat
};

// What a pending shard needs for routing.
struct PendingShard {
  ShardKey key;
  std::string job;
  std::vector<LabelSelector> on;
  Route route = Route::kSpread;
  std::string bound_agent;    // broadcast: only this agent
  int64_t not_before_ms = 0;  // wall clock (retry backoff)
  int64_t since_mono = 0;
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
  void LoadLease(ShardKey key, const std::string& agent, int64_t token);
  void SetNextToken(int64_t last_used) { last_token_ = last_used; }

  void Enqueue(PendingShard shard);
  void RemovePending(ShardKey key);
  void Claim(ClaimRequest request, std::shared_ptr<http::Responder> responder);
  // The reply's JSON text.
  std::string Heartbeat(const std::string& agent, const std::vector<HeartbeatLease>& leases,
                        int free);
  // Current token check for results and logs: kOk, or kConflict saying why (never which
  // token is current).
  Status CheckToken(ShardKey key, const std::string& agent, int64_t token) const;
  bool Holds(ShardKey key, int64_t token) const;  // that lease is live
  // That lease is live and held by this agent.
  bool HeldBy(ShardKey key, int64_t token, const std::string& agent) const;
  // Answers the open claim that came with this credential (or, for the second form, this
  // agent's open claim) with 401 and `why`: a revoked credential is served nothing more.
  void CloseClaimsOfToken(int64_t token_id, const std::string& why);
  void CloseClaimOf(const std::string& agent, const std::string& why);
  // `jobctl agents rm`: forgets the agent. kNotFound if unknown; kConflict while it holds
  // leases, unless `force`, when its leases end now as if they had expired.
  Status Forget(const std::string& agent, bool force);
  // The lease ends; `why` (result, expired, released) goes to the event log.
  void Release(ShardKey key, std::string_view why);
  void MarkCanceled(ShardKey key);  // tell the holder at its next heartbeat
  Status SetDraining(const std::string& agent, bool draining);
  // The agents with the labels matching `on` that were seen within one TTL, by name.
  std::vector<std::string> EligibleAgents(const std::vector<LabelSelector>& on) const;

  // The agent has a claim open now: it is alive and asking for work.
  bool Asking(const std::string& agent) const {
    auto it = agents_.find(agent);
    return it != agents_.end() && it->second.waiting != nullptr;
  }
  const std::map<std::string, AgentInfo>& agents() const { return agents_; }
  size_t active_leases() const { return leases_.size(); }
  size_t pending() const { return pending_.size() + later_.size(); }
  bool AgentAlive(const AgentInfo& a) const;

 private:
  void TryDispatch();
  AgentInfo* Pick(const PendingShard& shard, int64_t now_mono, bool* hold);
  int FreeOf(const AgentInfo& a) const;
  void Grant(AgentInfo& agent, const PendingShard& shard, std::vector<wire::Grant>* assignments);
  void AnswerClaim(AgentInfo& agent, std::vector<wire::Grant> assignments);
  void OnLeaseTimer();
  void OnClaimTimer();
  // Forgets agents neither seen nor holding a lease within agent_expiry.
  void OnExpiryTimer();
  void ArmTimers();
  void ArmLeaseTimer();
  void ArmClaimTimer();
  void ArmLaterTimer();
  // Moves the shards of later_ whose time has come to the queue.
  void OnLaterTimer();

  Context* ctx_;
  ShardEvents events_;
  SystemRandom own_random_;
  Random* random_;  // own_random_ unless one was injected
  std::map<std::string, AgentInfo> agents_;
  // Pick's scratch space, kept to spare an allocation per pick: the agents' views for
  // routing (model/routing.h) and the agent behind each.
  std::vector<AgentView> views_;
  std::vector<AgentInfo*> view_agents_;
  std::deque<PendingShard> pending_;
  // Shards not due yet, by not_before_ms.
  std::multimap<int64_t, PendingShard> later_;
  std::map<ShardKey, Lease> leases_;
  std::map<int64_t, ShardKey> lease_by_token_;
  TimingWheel lease_wheel_;  // by token, due = expiry on the monotonic clock
  std::map<std::string, uint64_t> round_robin_;
  int64_t last_token_ = 0;
  int64_t last_lease_check_mono_ = 0;  // when the lease timer was last armed
  std::unique_ptr<uvx::Timer> lease_timer_;
  std::unique_ptr<uvx::Timer> claim_timer_;
  std::unique_ptr<uvx::Timer> retry_timer_;
  std::unique_ptr<uvx::Timer> expiry_timer_;
  std::unique_ptr<uvx::Timer> later_timer_;
  bool started_ = false;
};

}  // namespace jobctl::coordinator
