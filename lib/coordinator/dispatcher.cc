#include "coordinator/dispatcher.h"

#include <algorithm>

#include "base/log.h"
#include "coordinator/http_errors.h"
#include "coordinator/metrics.h"
#include "wire/log_batch.h"

namespace jobctl::coordinator {
namespace {

// Every claim answer says that this coordinator takes log batches (wire/log_batch.h) and
// batches of results (POST /v1/agent/results).
std::string ClaimReply(std::vector<wire::Grant> assignments = {}) {
  wire::ClaimReply r;
  r.assignments = std::move(assignments);
  r.log_batch_bytes = static_cast<int64_t>(wire::kMaxLogBatchBytes);
  r.result_batch_max = static_cast<int64_t>(wire::kMaxResultBatch);
  return r.ToJson();
}

constexpr int64_t kMaxClaimWaitMs = 60'000;

std::string LeaseKey(ShardKey k) {
  return "shard/" + std::to_string(k.run) + "/" + std::to_string(k.shard);
}

}  // namespace

Dispatcher::Dispatcher(Context* ctx, Random* random)
    : ctx_(ctx), random_(random != nullptr ? random : &own_random_), lease_wheel_(ctx->MonoMs()) {}

void Dispatcher::Start() {
  for (std::unique_ptr<uvx::Timer>* t :
       {&lease_timer_, &claim_timer_, &retry_timer_, &expiry_timer_, &later_timer_}) {
    *t = std::make_unique<uvx::Timer>(ctx_->loop);
  }
  started_ = true;
  ArmLaterTimer();
  // The registry is swept a few times per expiry period, at most hourly.
  uint64_t every = static_cast<uint64_t>(
      std::clamp<int64_t>(ctx_->config.agent_expiry.count() / 4, 1000, 3'600'000));
  expiry_timer_->Every(every, [this] { OnExpiryTimer(); });
  expiry_timer_->Unref();
}

void Dispatcher::Close() {
  for (auto& [name, a] : agents_) {
    if (a.waiting) {
      a.waiting->Send({200, "application/json", ClaimReply(), {}});
      a.waiting.reset();
    }
  }
  if (!started_) return;
  for (std::unique_ptr<uvx::Timer>* t :
       {&lease_timer_, &claim_timer_, &retry_timer_, &expiry_timer_, &later_timer_}) {
    t->reset();
  }
  started_ = false;
}

void Dispatcher::Clear() {
  pending_.clear();
  later_.clear();
  leases_.clear();
  lease_by_token_.clear();
  lease_wheel_ = TimingWheel(ctx_->MonoMs());
  for (auto& [name, a] : agents_) a.held.Clear();
}

void Dispatcher::LoadAgent(const store::AgentRow& row) {
  AgentInfo& a = agents_[row.name];
  a.name = row.name;
  a.slots = row.slots;
  a.version = row.version;
  a.draining = row.draining;
  a.last_seen_ms = row.last_seen_ms;
  nlohmann::json labels = nlohmann::json::parse(row.labels_json, nullptr, false);
  if (labels.is_object()) {
    for (auto it = labels.begin(); it != labels.end(); ++it) {
      if (it.value().is_string()) a.labels[it.key()] = it.value().get<std::string>();
    }
  }
}

void Dispatcher::LoadLease(ShardKey key, const std::string& agent, int64_t token) {
  // After a restart every lease gets a whole TTL: the coordinator's own downtime must not
  // expire healthy agents (they renew at their next heartbeat).
  int64_t now = ctx_->MonoMs();
  Lease lease{key, agent, token, now + ctx_->config.lease_ttl.count(), false};
  leases_[key] = lease;
  lease_by_token_[token] = key;
  lease_wheel_.Schedule(static_cast<uint64_t>(token), lease.expires_mono);
  ctx_->events->Write("lease_loaded",
                      {{"run", key.run}, {"shard", key.shard}, {"token", token}, {"agent", agent}});
  AgentInfo& a = agents_[agent];
  a.name = agent;
  a.held.Add(key);
  if (a.last_seen_mono == 0) a.last_seen_mono = now;
  ArmTimers();
}

bool Dispatcher::AgentAlive(const AgentInfo& a) const {
  return a.waiting != nullptr || (a.last_seen_mono != 0 && ctx_->MonoMs() - a.last_seen_mono <=
                                                               ctx_->config.lease_ttl.count());
}

std::vector<std::string> Dispatcher::EligibleAgents(const std::vector<LabelSelector>& on) const {
  std::vector<std::string> out;
  for (const auto& [name, a] : agents_) {
    if (!a.draining && AgentAlive(a) && MatchesLabels(on, a.labels)) out.push_back(name);
  }
  return out;
}

void Dispatcher::Enqueue(PendingShard shard) {
  if (shard.not_before_ms > ctx_->NowMs()) {
    // Not due yet (a retry's backoff, a jitter delay, a deferred run): held aside, so that
    // no dispatch pass walks over it, and queued when its time comes.
    int64_t at = shard.not_before_ms;
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

AgentInfo* Dispatcher::Pick(const PendingShard& shard, int64_t now_mono, bool* hold) {
  // The views of the agents routing may choose from: a bound shard's own agent, else all of
  // them, in name order.
  views_.clear();
  view_agents_.clear();
  auto add = [this, &shard](AgentInfo& a) {
    views_.push_back({.name = a.name,
                      .labels = &a.labels,
                      .draining = a.draining,
                      .alive = AgentAlive(a),
                      .free = FreeOf(a),
                      .slots = a.slots,
                      .held = a.held.size(),
                      .held_in_run = a.held.InRun(shard.key.run)});
    view_agents_.push_back(&a);
  };
  if (!shard.bound_agent.empty()) {
    if (auto it = agents_.find(shard.bound_agent); it != agents_.end()) add(it->second);
  } else {
    for (auto& [name, a] : agents_) add(a);
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
  for (const auto& [name, a] : agents_) room += FreeOf(a);
  for (auto it = pending_.begin(); it != pending_.end() && room > 0;) {
    if (it->not_before_ms > now_ms) {
      want_retry(it->not_before_ms - now_ms);
      ++it;
      continue;
    }
    bool hold = false;
    AgentInfo* agent = Pick(*it, now_mono, &hold);
    if (agent == nullptr) {
      if (hold) want_retry(it->since_mono + kPreferHoldMs - now_mono);
      ++it;
      continue;
    }
    Grant(*agent, *it, &granted[agent->name]);
    --room;
    it = pending_.erase(it);
  }
  if (!granted.empty())
    ctx_->batch->Stage([&] { return ctx_->store->SetCounter("token", last_token_); });
  for (auto& [name, list] : granted) AnswerClaim(agents_[name], std::move(list));
  if (retry_in >= 0 && started_) {
    retry_timer_->Once(static_cast<uint64_t>(retry_in), [this] { TryDispatch(); });
  }
  ArmTimers();
}

void Dispatcher::Grant(AgentInfo& agent, const PendingShard& shard,
                       std::vector<wire::Grant>* assignments) {
  int64_t now_mono = ctx_->MonoMs(), now_ms = ctx_->NowMs();
  int64_t token = ++last_token_;
  Lease lease{shard.key, agent.name, token, now_mono + ctx_->config.lease_ttl.count(), false};
  leases_[shard.key] = lease;
  lease_by_token_[token] = shard.key;
  lease_wheel_.Schedule(static_cast<uint64_t>(token), lease.expires_mono);
  agent.held.Add(shard.key);
  --agent.waiting_free;
  if (shard.route == Route::kRoundRobin) ++round_robin_[shard.job];
  // The token counter is written once per dispatch pass, after its last grant.
  ctx_->batch->Stage([&] {
    return ctx_->store->PutLease({LeaseKey(shard.key), agent.name, token, now_ms});
  });
  wire::Grant a = events_.granted(shard.key, agent.name, token, now_ms);
  ctx_->EventAfterCommit("grant", {{"run", shard.key.run},
                                   {"shard", shard.key.shard},
                                   {"attempt", a.key.attempt},
                                   {"agent", agent.name},
                                   {"token", token}});
  a.ttl_ms = ctx_->config.lease_ttl.count();
  a.heartbeat_ms = ctx_->config.heartbeat.count();
  assignments->push_back(std::move(a));
  ++ctx_->metrics->grants_total;
  ctx_->metrics->claim_latency.Observe(static_cast<double>(now_mono - shard.since_mono) / 1000.0);
  log::Debug("lease granted", {{"run", shard.key.run},
                               {"shard", shard.key.shard},
                               {"agent", agent.name},
                               {"token", token}});
}

void Dispatcher::AnswerClaim(AgentInfo& agent, std::vector<wire::Grant> assignments) {
  std::shared_ptr<http::Responder> responder = std::move(agent.waiting);
  agent.waiting.reset();
  ++agent.claim_seq;
  if (!responder) return;
  auto body = std::make_shared<std::string>(ClaimReply(std::move(assignments)));
  ctx_->batch->OnCommit([responder, body](const Status& s) {
    if (s.ok()) {
      responder->Send({200, "application/json", *body, {}});
    } else {
      responder->Send(ErrorResponseFor(s));
    }
  });
}

void Dispatcher::Claim(ClaimRequest req, std::shared_ptr<http::Responder> responder) {
  ++ctx_->metrics->claims_total;
  AgentInfo& a = agents_[req.agent];
  bool changed =
      a.name.empty() || a.labels != req.labels || a.slots != req.slots || a.version != req.version;
  a.name = req.agent;
  a.labels = std::move(req.labels);
  a.slots = std::max(req.slots, 1);
  a.version = std::move(req.version);
  a.last_seen_mono = ctx_->MonoMs();
  a.last_seen_ms = ctx_->NowMs();
  if (changed) {
    ctx_->batch->Stage([&] {
      return ctx_->store->PutAgent({a.name, nlohmann::json(a.labels).dump(), a.slots, a.version,
                                    a.last_seen_ms, a.draining});
    });
  }
  if (a.waiting) a.waiting->Send({200, "application/json", ClaimReply(), {}});
  a.waiting = std::move(responder);
  a.waiting_token_id = req.token_id;
  a.waiting_free = std::max(req.free, 0);
  int64_t wait_ms = std::clamp<int64_t>(req.wait_ms, 0, kMaxClaimWaitMs);
  if (req.token_expires_ms) {
    wait_ms = std::clamp<int64_t>(*req.token_expires_ms - a.last_seen_ms, 0, wait_ms);
  }
  a.wait_deadline_mono = a.last_seen_mono + wait_ms;
  uint64_t seq = ++a.claim_seq;
  std::string name = a.name;
  a.waiting->OnClose([this, name, seq] {
    auto it = agents_.find(name);
    if (it != agents_.end() && it->second.claim_seq == seq) it->second.waiting.reset();
  });
  TryDispatch();
  if (a.waiting && wait_ms <= 0) AnswerClaim(a, {});
  ArmTimers();
}

std::string Dispatcher::Heartbeat(const std::string& agent,
                                  const std::vector<HeartbeatLease>& leases, int free) {
  AgentInfo& a = agents_[agent];
  if (a.name.empty()) a.name = agent;
  a.last_seen_mono = ctx_->MonoMs();
  a.last_seen_ms = ctx_->NowMs();
  (void)free;
  wire::HeartbeatReply reply;
  reply.ttl_ms = ctx_->config.lease_ttl.count();
  reply.heartbeat_ms = ctx_->config.heartbeat.count();
  auto revoke = [&reply](const HeartbeatLease& l, wire::Revocation why) {
    reply.revoked.push_back({l.key, l.token, why});
  };
  for (const HeartbeatLease& l : leases) {
    auto it = leases_.find(l.key);
    if (it == leases_.end() || it->second.token != l.token || it->second.agent != agent) {
      // An agent keeps listing a lease until its result is acknowledged, so a heartbeat
      // crossing a result names a lease that just ended: not stale, and the agent is told
      // so. Only the rest is staleness (a lease that expired or was never this agent's).
      if (events_.ended_by_result && events_.ended_by_result(l.key, l.token)) {
        revoke(l, wire::Revocation::kFinished);
        continue;
      }
      ++ctx_->metrics->stale_token_total;
      ctx_->events->Write("refused",
                          {{"what", "renew"},
                           {"run", l.key.run},
                           {"shard", l.key.shard},
                           {"token", l.token},
                           {"agent", agent},
                           {"current", it == leases_.end() ? int64_t{0} : it->second.token}});
      revoke(l, wire::Revocation::kStale);
    } else if (it->second.canceled) {
      revoke(l, wire::Revocation::kCanceled);
    } else {
      it->second.expires_mono = a.last_seen_mono + ctx_->config.lease_ttl.count();
      ctx_->events->Write(
          "renewed",
          {{"run", l.key.run}, {"shard", l.key.shard}, {"token", l.token}, {"agent", agent}});
      lease_wheel_.Schedule(static_cast<uint64_t>(l.token), it->second.expires_mono);
      reply.renewed.push_back(l);
    }
  }
  if (!reply.renewed.empty()) ArmLeaseTimer();
  return reply.ToJson();
}

Status Dispatcher::CheckToken(ShardKey key, const std::string& agent, int64_t token) const {
  auto it = leases_.find(key);
  if (it != leases_.end() && it->second.token == token && it->second.agent == agent) {
    return Status::Ok();
  }
  ++ctx_->metrics->stale_token_total;
  ctx_->events->Write("refused",
                      {{"what", "result"},
                       {"run", key.run},
                       {"shard", key.shard},
                       {"token", token},
                       {"agent", agent},
                       {"current", it == leases_.end() ? int64_t{0} : it->second.token}});
  // Neither token is told: the caller's own is no news, and the current one belongs to the
  // holder alone.
  return Status::Conflict("run " + std::to_string(key.run) + " shard " + std::to_string(key.shard) +
                          ": agent " + agent +
                          " holds no live lease on it under that token (it expired, ended, or "
                          "is another agent's)");
}

bool Dispatcher::Holds(ShardKey key, int64_t token) const {
  auto it = leases_.find(key);
  return it != leases_.end() && it->second.token == token;
}

bool Dispatcher::HeldBy(ShardKey key, int64_t token, const std::string& agent) const {
  auto it = leases_.find(key);
  return it != leases_.end() && it->second.token == token && it->second.agent == agent;
}

void Dispatcher::CloseClaimsOfToken(int64_t token_id, const std::string& why) {
  for (auto& [name, a] : agents_) {
    if (a.waiting && a.waiting_token_id == token_id) CloseClaimOf(name, why);
  }
}

void Dispatcher::CloseClaimOf(const std::string& agent, const std::string& why) {
  auto it = agents_.find(agent);
  if (it == agents_.end() || !it->second.waiting) return;
  AgentInfo& a = it->second;
  a.waiting->Send({401,
                   "application/json",
                   nlohmann::json{{"error", "unauthenticated"}, {"message", why}}.dump(),
                   {}});
  a.waiting.reset();
  ++a.claim_seq;
  ArmClaimTimer();
}

Status Dispatcher::Forget(const std::string& agent, bool force) {
  auto it = agents_.find(agent);
  if (it == agents_.end()) return Status::NotFound("no such agent: " + agent);
  if (size_t held = it->second.held.size(); held > 0 && !force) {
    return Status::Conflict("agent " + agent + " holds " + std::to_string(held) +
                            " live lease(s); wait for them to end, or use --force to end them "
                            "now (their shards are handled as lost)");
  }
  // First the claim: a broadcast shard whose agent is not asking for work is lost, not
  // queued again for an agent that is gone.
  CloseClaimOf(agent, "agent " + agent + " was removed");
  std::vector<std::pair<ShardKey, int64_t>> ending;
  for (const auto& [key, lease] : leases_) {
    if (lease.agent == agent) ending.emplace_back(key, lease.token);
  }
  for (const auto& [key, token] : ending) {
    Release(key, "agent removed");
    events_.lease_expired(key, token);
  }
  agents_.erase(agent);
  Status s =
      ctx_->batch->Write([&] { return ctx_->store->DeleteAgent(agent); }, Status::Code::kNotFound);
  return s.code() == Status::Code::kNotFound ? Status::Ok() : s;
}

void Dispatcher::OnExpiryTimer() {
  int64_t now_ms = ctx_->NowMs();
  std::vector<std::string> gone;
  for (const auto& [name, a] : agents_) {
    if (!a.waiting && a.held.size() == 0 && !AgentAlive(a) &&
        now_ms - a.last_seen_ms >= ctx_->config.agent_expiry.count()) {
      gone.push_back(name);
    }
  }
  for (const std::string& name : gone) {
    log::Info("agent expired from the registry", {{"agent", name}});
    agents_.erase(name);
    Status s =
        ctx_->batch->Write([&] { return ctx_->store->DeleteAgent(name); }, Status::Code::kNotFound);
    if (!s.ok() && s.code() != Status::Code::kNotFound) return;
  }
}

void Dispatcher::Release(ShardKey key, std::string_view why) {
  auto it = leases_.find(key);
  if (it == leases_.end()) return;
  ctx_->EventAfterCommit("lease_end", {{"run", key.run},
                                       {"shard", key.shard},
                                       {"token", it->second.token},
                                       {"agent", it->second.agent},
                                       {"why", why}});
  lease_wheel_.Cancel(static_cast<uint64_t>(it->second.token));
  lease_by_token_.erase(it->second.token);
  if (auto a = agents_.find(it->second.agent); a != agents_.end()) a->second.held.Remove(key);
  leases_.erase(it);
  ctx_->batch->Stage([&] { return ctx_->store->DeleteLease(LeaseKey(key)); });
}

void Dispatcher::MarkCanceled(ShardKey key) {
  if (auto it = leases_.find(key); it != leases_.end()) it->second.canceled = true;
}

Status Dispatcher::SetDraining(const std::string& agent, bool draining) {
  auto it = agents_.find(agent);
  if (it == agents_.end()) return Status::NotFound("no such agent");
  AgentInfo& a = it->second;
  a.draining = draining;
  return ctx_->batch->Write([&] {
    return ctx_->store->PutAgent(
        {a.name, nlohmann::json(a.labels).dump(), a.slots, a.version, a.last_seen_ms, a.draining});
  });
}

void Dispatcher::OnLeaseTimer() {
  int64_t now = ctx_->MonoMs();
  // A loop stall (or the whole process stopped) longer than TTL/3: agents could not have been
  // heard meanwhile, so every lease first gets a fresh TTL before any expiry is judged.
  // Every arming of this timer sets it at most TTL/3 ahead, so a longer gap is a stall.
  if (last_lease_check_mono_ != 0 &&
      now - last_lease_check_mono_ > ctx_->config.lease_ttl.count() / 3 + 1000) {
    log::Warn("loop stalled; renewing every lease before judging expiry",
              {{"stall_ms", now - last_lease_check_mono_}});
    for (auto& [key, lease] : leases_) {
      lease.expires_mono = now + ctx_->config.lease_ttl.count();
      lease_wheel_.Schedule(static_cast<uint64_t>(lease.token), lease.expires_mono);
    }
  }
  std::vector<uint64_t> expired;
  lease_wheel_.Advance(now, [&expired](uint64_t token, int64_t) { expired.push_back(token); });
  for (uint64_t token : expired) {
    auto kt = lease_by_token_.find(static_cast<int64_t>(token));
    if (kt == lease_by_token_.end()) continue;
    ShardKey key = kt->second;
    std::string agent = leases_[key].agent;
    Release(key, "expired");
    ++ctx_->metrics->leases_expired_total;
    log::Warn("lease expired", {{"run", key.run},
                                {"shard", key.shard},
                                {"agent", agent},
                                {"token", static_cast<int64_t>(token)}});
    // The holder did not renew for a whole TTL: it may be cut off, and its long-poll claim,
    // received before that, proves nothing. Without this the shard just taken from it would
    // be granted straight back through that claim, into the void, and run elsewhere only a
    // TTL later. Answered empty, a live agent simply asks again.
    if (auto it = agents_.find(agent); it != agents_.end() && it->second.waiting) {
      AnswerClaim(it->second, {});
    }
    events_.lease_expired(key, static_cast<int64_t>(token));
  }
  ArmTimers();
}

void Dispatcher::OnClaimTimer() {
  int64_t now = ctx_->MonoMs();
  for (auto& [name, a] : agents_) {
    if (a.waiting && a.wait_deadline_mono <= now) {
      a.waiting->Send({200, "application/json", ClaimReply(), {}});
      a.waiting.reset();
      ++a.claim_seq;
    }
  }
  ArmTimers();
}

void Dispatcher::ArmTimers() {
  ArmLeaseTimer();
  ArmClaimTimer();
}

void Dispatcher::ArmLeaseTimer() {
  if (!started_) return;
  int64_t now = ctx_->MonoMs();
  // The lease timer also runs every TTL/3 while leases exist, which is how a stall shows.
  if (!leases_.empty()) {
    int64_t due = now + ctx_->config.lease_ttl.count() / 3;
    if (std::optional<int64_t> next = lease_wheel_.NextWakeup()) due = std::min(due, *next);
    last_lease_check_mono_ = now;
    lease_timer_->Once(static_cast<uint64_t>(std::max<int64_t>(due - now, 0)),
                       [this] { OnLeaseTimer(); });
  } else {
    lease_timer_->Stop();
    last_lease_check_mono_ = 0;
  }
}

// Scans every agent: called when claims come and go, not per heartbeat.
void Dispatcher::ArmClaimTimer() {
  if (!started_) return;
  int64_t now = ctx_->MonoMs();
  int64_t earliest = -1;
  for (const auto& [name, a] : agents_) {
    if (a.waiting && (earliest < 0 || a.wait_deadline_mono < earliest))
      earliest = a.wait_deadline_mono;
  }
  if (earliest >= 0) {
    claim_timer_->Once(static_cast<uint64_t>(std::max<int64_t>(earliest - now, 0)),
                       [this] { OnClaimTimer(); });
  } else {
    claim_timer_->Stop();
  }
}

}  // namespace jobctl::coordinator
