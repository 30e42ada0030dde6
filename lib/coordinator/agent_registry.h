// AgentRegistry: the agents this coordinator knows, what each said of itself in its last
// claim (labels, slots, version), when it was last heard from, whether it is draining and
// which shards it holds. Rows are kept in the store so that a restart knows the fleet;
// agents neither heard from nor holding a lease within agent_expiry are forgotten. An
// agent's open long-poll claim sits in its entry (ClaimPoll keeps it). Loop thread only;
// owned by the Dispatcher.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "coordinator/context.h"
#include "http/server.h"
#include "model/ids.h"
#include "model/job.h"
#include "model/routing.h"
#include "uvx/handles.h"
#include "wire/agent_messages.h"

namespace jobctl::coordinator {

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
  bool described = false;  // its labels, slots and version came from a claim or the store
  // Its last claim said it runs flow steps (wire::kStepOutputFeature); not stored: an agent
  // says so again with its first claim to a restarted coordinator.
  bool step_output = false;
  // Likewise for wire::kLimitsFeature: it enforces (or refuses) a grant's resource limits.
  bool limits = false;
  // Its claim says kEarlyStartFeature: it may be granted shards before their instant.
  bool early_start = false;
  // Its leases granted ahead whose runs were canceled before their instant: named in the
  // next answer to its claim (ClaimPoll::Answer), at most wire::kMaxCanceledInReply.
  std::vector<wire::LeaseRef> cancels;
  HeldShards held;
  // The open long-poll claim, if any.
  std::shared_ptr<http::Responder> waiting;
  int64_t waiting_token_id = 0;  // the credential the open claim came with
  int waiting_free = 0;
  int64_t wait_deadline_mono = 0;
  uint64_t claim_seq = 0;  // tells a stale OnClose from the current claim
};

class AgentRegistry {
 public:
  explicit AgentRegistry(Context* ctx);
  AgentRegistry(const AgentRegistry&) = delete;
  AgentRegistry& operator=(const AgentRegistry&) = delete;

  void Start();  // the expiry sweep
  void Close();

  void Load(const store::AgentRow& row);
  // The agent's entry, created empty when it is new.
  AgentInfo& Get(const std::string& name);
  AgentInfo* Find(const std::string& name);
  // The agent was heard from (a claim or a heartbeat) now.
  void Seen(AgentInfo& a);
  // What a claim says of the agent; its row is staged when any of it changed.
  void Describe(AgentInfo& a, std::map<std::string, std::string> labels, int slots,
                std::string version);
  Status SetDraining(const std::string& name, bool draining);
  // Forgets the agent and deletes its row.
  Status Remove(const std::string& name);
  void ClearHeld();

  // Has a claim open, or was heard from within one lease TTL.
  bool Alive(const AgentInfo& a) const;
  // The agents with the labels matching `on` that are alive and not draining, by name; for a
  // flow step (`step`), only those that run steps.
  std::vector<std::string> Eligible(const std::vector<LabelSelector>& on, bool step) const;
  std::map<std::string, AgentInfo>& all() { return agents_; }
  const std::map<std::string, AgentInfo>& all() const { return agents_; }

 private:
  // Forgets agents neither seen nor holding a lease within agent_expiry.
  void OnExpiryTimer();
  void Stage(const AgentInfo& a);

  Context* ctx_;
  std::map<std::string, AgentInfo> agents_;
  std::unique_ptr<uvx::Timer> expiry_timer_;
};

}  // namespace jobctl::coordinator
