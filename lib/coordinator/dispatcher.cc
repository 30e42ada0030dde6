#include "coordinator/dispatcher.h"

#include <algorithm>

#include "base/log.h"
#include "coordinator/http_errors.h"
#include "coordinator/metrics.h"
#include "wire/log_batch.h"

namespace jobctl::coordinator {
Dispatcher::Dispatcher(Context* ctx, Random* random)
    : ctx_(ctx),
      random_(random != nullptr ? random : &own_random_),
      registry_(ctx),
      claims_(ctx, &registry_),
      leases_(ctx) {
  leases_.set_on_expired([this](const Lease& lease) { OnLeaseExpired(lease); });
}

void Dispatcher::Start() {
  for (std::unique_ptr<uvx::Timer>* t : {&retry_timer_, &later_timer_}) {
    *t = std::make_unique<uvx::Timer>(ctx_->loop);
  }
  registry_.Start();
  claims_.Start();
  leases_.Start();
  started_ = true;
  ArmLaterTimer();
}

void Dispatcher::Close() {
  claims_.Close();
  if (!started_) return;
  for (std::unique_ptr<uvx::Timer>* t : {&retry_timer_, &later_timer_}) t->reset();
  leases_.Close();
  registry_.Close();
  started_ = false;
}

void Dispatcher::Clear() {
  pending_.clear();
  later_.clear();
  leases_.Clear();
  registry_.ClearHeld();
}

void Dispatcher::LoadAgent(const store::AgentRow& row) { registry_.Load(row); }

void Dispatcher::LoadLease(ShardKey key, const std::string& agent, int64_t token,
                           int64_t start_ms) {
  int64_t now_ms = ctx_->NowMs();
  leases_.Load(key, agent, token, start_ms > now_ms ? ctx_->MonoMs() + (start_ms - now_ms) : 0);
  AgentInfo& a = registry_.Get(agent);
  a.held.Add(key);
  if (a.last_seen_mono == 0) a.last_seen_mono = ctx_->MonoMs();
  ArmTimers();
}

void Dispatcher::Enqueue(PendingShard shard) {
  if (int64_t at = shard.not_before_ms - EarlyDispatchMs(ctx_->config); at > ctx_->NowMs()) {
    // Not due yet (a retry's backoff, a jitter delay, a deferred run): held aside, so that
    // no dispatch pass walks over it, and queued when its time comes.
    later_.emplace(at, std::move(shard));
    ArmLaterTimer();
    return;
  }
  shard.since_mono = ctx_->MonoMs();
  pending_.push_back(std::move(shard));
  // Dispatch on the next turn of the loop: the caller may still be creating the run's other
  // shards, and this keeps every grant out of the caller's stack. A retry timer armed for
  // later (a held or backed-off shard) must not delay this one.
  if (started_ && (!retry_timer_->active() || retry_timer_->due_in() > 0)) {
    retry_timer_->Once(0, [this] { TryDispatch(); });
  }
}

void Dispatcher::RemovePending(ShardKey key) {
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                [&](const PendingShard& p) { return p.key == key; }),
                 pending_.end());
  std::erase_if(later_, [&](const auto& entry) { return entry.second.key == key; });
}

void Dispatcher::ArmLaterTimer() {
  if (!started_ || later_.empty()) return;
  // At most a second, like the scheduler: not_before is on the wall clock, which may step.
  int64_t delay = std::clamp<int64_t>(later_.begin()->first - ctx_->NowMs(), 0, 1000);
  later_timer_->Once(static_cast<uint64_t>(delay), [this] { OnLaterTimer(); });
}

void Dispatcher::OnLaterTimer() {
  int64_t now_ms = ctx_->NowMs();
  bool queued = false;
  while (!later_.empty() && later_.begin()->first <= now_ms) {
    PendingShard shard = std::move(later_.begin()->second);
    later_.erase(later_.begin());
    shard.since_mono = ctx_->MonoMs();
    pending_.push_back(std::move(shard));
    queued = true;
  }
  ArmLaterTimer();
  if (queued) TryDispatch();
}

int Dispatcher::FreeOf(const AgentInfo& a) const {
  // A claim is never held open past its credential's expiry (Claim), so a waiting claim's
  // credential is live.
  return a.waiting && !a.draining ? a.waiting_free : 0;
}

AgentInfo* Dispatcher::Pick(const PendingShard& shard, int64_t now_mono, bool early, bool* hold) {
  // The views of the agents routing may choose from: a bound shard's own agent, else all of
  // them, in name order.
  views_.clear();
  view_agents_.clear();
  auto add = [this, &shard, early](AgentInfo& a) {
    // An agent that does not say it runs steps would run one without its context.
    if (shard.step && !a.step_output) return;
    if (shard.limits && !a.limits) return;
    if (early && !a.early_start) return;
    views_.push_back({.name = a.name,
                      .labels = &a.labels,
                      .draining = a.draining,
                      .alive = registry_.Alive(a),
                      .free = FreeOf(a),
                      .slots = a.slots,
                      .held = a.held.size(),
                      .held_in_run = a.held.InRun(shard.key.run)});
    view_agents_.push_back(&a);
  };
  if (!shard.bound_agent.empty()) {
    if (AgentInfo* a = registry_.Find(shard.bound_agent)) add(*a);
  } else {
    for (auto& [name, a] : registry_.all()) add(a);
  }
  uint64_t turn = shard.route == Route::kRoundRobin ? round_robin_[shard.job] : 0;
  RouteChoice choice = PickAgent({.job = shard.job,
                                  .run = shard.key.run,
                                  .index = shard.key.shard,
                                  .on = shard.on,
                                  .route = shard.route,
                                  .bound_agent = shard.bound_agent,
                                  .waited_ms = now_mono - shard.since_mono},
                                 views_, turn, *random_);
  *hold = choice.verdict == RouteVerdict::kHold;
  return choice.verdict == RouteVerdict::kGrant ? view_agents_[choice.agent] : nullptr;
}

void Dispatcher::TryDispatch() {
  if (pending_.empty()) return;
  int64_t now_mono = ctx_->MonoMs(), now_ms = ctx_->NowMs();
  const int64_t early_ms = EarlyDispatchMs(ctx_->config);
  std::map<std::string, std::vector<wire::Grant>> granted;
  int64_t retry_in = -1;
  auto want_retry = [&retry_in](int64_t in) {
    in = std::max<int64_t>(in, 1);
    if (retry_in < 0 || in < retry_in) retry_in = in;
  };
  // Only agents waiting in a claim can take a shard; when none has room left, the rest of
  // the queue waits for the next claim (which calls this again), so a long queue costs
  // nothing while every agent is busy.
  int room = 0;
  for (const auto& [name, a] : registry_.all()) room += FreeOf(a);
  for (auto it = pending_.begin(); it != pending_.end() && room > 0;) {
    if (it->not_before_ms - early_ms > now_ms) {
      want_retry(it->not_before_ms - early_ms - now_ms);
      ++it;
      continue;
    }
    bool early = it->not_before_ms > now_ms, hold = false;
    AgentInfo* agent = Pick(*it, now_mono, early, &hold);
    if (agent == nullptr) {
      if (hold) want_retry(it->since_mono + kPreferHoldMs - now_mono);
      // From its instant on, any agent may take it.
      if (early) want_retry(it->not_before_ms - now_ms);
      ++it;
      continue;
    }
    Grant(*agent, *it, now_ms, &granted[agent->name]);
    --room;
    it = pending_.erase(it);
  }
  if (!granted.empty()) leases_.SaveTokenCounter();
  for (auto& [name, list] : granted) claims_.Answer(registry_.Get(name), std::move(list));
  if (retry_in >= 0 && started_) {
    retry_timer_->Once(static_cast<uint64_t>(retry_in), [this] { TryDispatch(); });
  }
  ArmTimers();
}

void Dispatcher::Grant(AgentInfo& agent, const PendingShard& shard, int64_t now_ms,
                       std::vector<wire::Grant>* assignments) {
  int64_t now_mono = ctx_->MonoMs();
  // Granted ahead of its instant: the child starts then, and the lease counts from then.
  // The instant is on the wall clock; from here on it is kept on the monotonic one.
  int64_t start_mono_us = 0, start_mono = 0;
  if (shard.not_before_ms > now_ms) {
    start_mono_us =
        ctx_->clock->MonotonicUs() + (shard.not_before_ms * 1000 - ctx_->clock->NowUs());
    start_mono = (start_mono_us + 999) / 1000;
  }
  int64_t token = leases_.Grant(shard.key, agent.name, now_ms, start_mono);
  agent.held.Add(shard.key);
  --agent.waiting_free;
  if (shard.route == Route::kRoundRobin) ++round_robin_[shard.job];
  // The token counter is written once per dispatch pass, after its last grant.
  wire::Grant a = events_.granted(shard.key, agent.name, token, now_ms);
  ctx_->EventAfterCommit(
      "grant",
      {{"run", shard.key.run},
       {"shard", shard.key.shard},
       {"attempt", a.key.attempt},
       {"agent", agent.name},
       {"token", token},
       {"start_in_us", start_mono_us > 0 ? start_mono_us - ctx_->clock->MonotonicUs() : 0}});
  a.ttl_ms = ctx_->config.lease_ttl.count();
  a.heartbeat_ms = ctx_->config.heartbeat.count();
  a.start_mono_us = start_mono_us;  // start_in_us is set as the answer is sent (ClaimPoll)
  if (start_mono > 0) ++ctx_->metrics->early_grants_total;
  assignments->push_back(std::move(a));
  ++ctx_->metrics->grants_total;
  ctx_->metrics->claim_latency.Observe(static_cast<double>(now_mono - shard.since_mono) / 1000.0);
  if (shard.step && a.key.attempt == 1 && shard.key.shard == 0) {
    ctx_->metrics->step_handoff.Observe(static_cast<double>(now_mono - shard.since_mono) / 1000.0);
  }
  log::Debug("lease granted", {{"run", shard.key.run},
                               {"shard", shard.key.shard},
                               {"agent", agent.name},
                               {"token", token}});
}

void Dispatcher::Claim(ClaimRequest req, std::shared_ptr<http::Responder> responder) {
  ++ctx_->metrics->claims_total;
  AgentInfo& a = registry_.Get(req.agent);
  registry_.Seen(a);
  registry_.Describe(a, std::move(req.labels), req.slots, std::move(req.version));
  auto has = [&req](const char* feature) {
    return std::find(req.features.begin(), req.features.end(), feature) != req.features.end();
  };
  a.step_output = has(wire::kStepOutputFeature);
  a.limits = has(wire::kLimitsFeature);
  a.early_start = has(wire::kEarlyStartFeature);
  int64_t wait_ms = claims_.Open(a, std::move(responder), req.token_id, req.free, req.wait_ms,
                                 req.token_expires_ms);
  TryDispatch();
  if (a.waiting && (wait_ms <= 0 || !a.cancels.empty())) claims_.Answer(a, {});
  ArmTimers();
}

std::string Dispatcher::Heartbeat(const std::string& agent,
                                  const std::vector<HeartbeatLease>& leases, int free) {
  AgentInfo& a = registry_.Get(agent);
  registry_.Seen(a);
  (void)free;
  wire::HeartbeatReply reply;
  reply.ttl_ms = ctx_->config.lease_ttl.count();
  reply.heartbeat_ms = ctx_->config.heartbeat.count();
  auto revoke = [&reply](const HeartbeatLease& l, wire::Revocation why) {
    reply.revoked.push_back({l.key, l.token, why});
  };
  for (const HeartbeatLease& l : leases) {
    switch (leases_.Renew(l.key, l.token, agent, a.last_seen_mono)) {
      case Leases::Renewal::kRenewed: reply.renewed.push_back(l); break;
      case Leases::Renewal::kCanceled: revoke(l, wire::Revocation::kCanceled); break;
      case Leases::Renewal::kNotHeld: {
        // An agent keeps listing a lease until its result is acknowledged, so a heartbeat
        // crossing a result names a lease that just ended: not stale, and the agent is told
        // so. Only the rest is staleness (a lease that expired or was never this agent's).
        if (events_.ended_by_result && events_.ended_by_result(l.key, l.token)) {
          revoke(l, wire::Revocation::kFinished);
          break;
        }
        ++ctx_->metrics->stale_token_total;
        const Lease* current = leases_.Find(l.key);
        ctx_->events->Write("refused",
                            {{"what", "renew"},
                             {"run", l.key.run},
                             {"shard", l.key.shard},
                             {"token", l.token},
                             {"agent", agent},
                             {"current", current == nullptr ? int64_t{0} : current->token}});
        revoke(l, wire::Revocation::kStale);
        break;
      }
    }
  }
  if (!reply.renewed.empty()) leases_.Arm();
  return reply.ToJson();
}

Status Dispatcher::Forget(const std::string& agent, bool force) {
  AgentInfo* a = registry_.Find(agent);
  if (a == nullptr) return Status::NotFound("no such agent: " + agent);
  if (size_t held = a->held.size(); held > 0 && !force) {
    return Status::Conflict("agent " + agent + " holds " + std::to_string(held) +
                            " live lease(s); wait for them to end, or use --force to end them "
                            "now (their shards are handled as lost)");
  }
  // First the claim: a broadcast shard whose agent is not asking for work is lost, not
  // queued again for an agent that is gone.
  claims_.CloseOf(agent, "agent " + agent + " was removed");
  for (const Lease& lease : leases_.HeldByAgent(agent)) {
    Release(lease.key, "agent removed");
    events_.lease_expired(lease.key, lease.token);
  }
  return registry_.Remove(agent);
}

void Dispatcher::Release(ShardKey key, std::string_view why) {
  std::optional<Lease> ended = leases_.Release(key, why);
  if (!ended) return;
  if (AgentInfo* a = registry_.Find(ended->agent)) a->held.Remove(key);
}

void Dispatcher::MarkCanceled(ShardKey key) {
  leases_.MarkCanceled(key);
  const Lease* lease = leases_.Find(key);
  // Only a lease granted ahead whose instant has not come (a started child learns it at the
  // heartbeat), of an agent that reads "canceled" in a claim's answer.
  if (lease == nullptr || lease->start_mono <= ctx_->MonoMs()) return;
  AgentInfo* a = registry_.Find(lease->agent);
  if (a == nullptr || !a->early_start || a->cancels.size() >= wire::kMaxCanceledInReply) return;
  a->cancels.push_back({lease->key, lease->token});
  // Told now if its claim is open; else its next claim is answered at once (Claim).
  if (a->waiting) claims_.Answer(*a, {});
}

void Dispatcher::OnLeaseExpired(const Lease& lease) {
  if (AgentInfo* a = registry_.Find(lease.agent)) {
    a->held.Remove(lease.key);
    // The holder did not renew for a whole TTL: it may be cut off, and its long-poll claim,
    // received before that, proves nothing. Without this the shard just taken from it would
    // be granted straight back through that claim, into the void, and run elsewhere only a
    // TTL later. Answered empty, a live agent simply asks again.
    if (a->waiting) claims_.Answer(*a, {});
  }
  events_.lease_expired(lease.key, lease.token);
}

void Dispatcher::ArmTimers() {
  leases_.Arm();
  claims_.Arm();
}

}  // namespace jobctl::coordinator
