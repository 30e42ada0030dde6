#include "coordinator/leases.h"

#include <algorithm>

#include "base/log.h"
#include "coordinator/metrics.h"

namespace jobctl::coordinator {
namespace {

std::string LeaseRowKey(ShardKey k) {
  return "shard/" + std::to_string(k.run) + "/" + std::to_string(k.shard);
}

}  // namespace

Leases::Leases(Context* ctx) : ctx_(ctx), wheel_(ctx->MonoMs()) {}

void Leases::Start() {
  timer_ = std::make_unique<uvx::Timer>(ctx_->loop);
  Arm();
}

void Leases::Close() { timer_.reset(); }

void Leases::Clear() {
  leases_.clear();
  by_token_.clear();
  wheel_ = TimingWheel(ctx_->MonoMs());
}

void Leases::Load(ShardKey key, const std::string& agent, FencingToken token, int64_t start_mono) {
  // After a restart every lease gets a whole TTL: the coordinator's own downtime must not
  // expire healthy agents (they renew at their next heartbeat). One granted ahead of an
  // instant still to come counts it from the instant, as its holder does.
  int64_t now = ctx_->MonoMs();
  Put({key, agent, token, std::max(now, start_mono) + ctx_->config.lease_ttl.count(), false,
       start_mono});
  ctx_->events->Write("lease_loaded", {{"run", key.run},
                                       {"shard", key.shard},
                                       {"token", token},
                                       {"agent", agent},
                                       {"grace_ms", std::max<int64_t>(start_mono - now, 0)}});
  Arm();
}

FencingToken Leases::Grant(ShardKey key, const std::string& agent, int64_t now_ms,
                           int64_t start_mono) {
  FencingToken token = ++last_token_;
  Put({key, agent, token, std::max(ctx_->MonoMs(), start_mono) + ctx_->config.lease_ttl.count(),
       false, start_mono});
  ctx_->batch->Stage([&] {
    return ctx_->store->PutLease({LeaseRowKey(key), agent, token, now_ms});
  });
  return token;
}

void Leases::Put(Lease lease) {
  // A shard has one lease: one it replaces stops counting, and never expires later.
  if (auto old = leases_.find(lease.key); old != leases_.end()) {
    wheel_.Cancel(static_cast<uint64_t>(old->second.token));
    by_token_.erase(old->second.token);
  }
  by_token_[lease.token] = lease.key;
  wheel_.Schedule(static_cast<uint64_t>(lease.token), lease.expires_mono);
  leases_[lease.key] = std::move(lease);
}

void Leases::SaveTokenCounter() {
  ctx_->batch->Stage([&] { return ctx_->store->SetCounter("token", last_token_); });
}

Leases::Renewal Leases::Renew(ShardKey key, FencingToken token, const std::string& agent,
                              int64_t now_mono) {
  auto it = leases_.find(key);
  if (it == leases_.end() || it->second.token != token || it->second.agent != agent) {
    return Renewal::kNotHeld;
  }
  if (it->second.canceled) return Renewal::kCanceled;
  it->second.expires_mono =
      std::max(it->second.expires_mono, now_mono + ctx_->config.lease_ttl.count());
  ctx_->events->Write("renewed",
                      {{"run", key.run}, {"shard", key.shard}, {"token", token}, {"agent", agent}});
  wheel_.Schedule(static_cast<uint64_t>(token), it->second.expires_mono);
  return Renewal::kRenewed;
}

std::optional<Lease> Leases::Release(ShardKey key, std::string_view why) {
  auto it = leases_.find(key);
  if (it == leases_.end()) return std::nullopt;
  ctx_->EventAfterCommit("lease_end", {{"run", key.run},
                                       {"shard", key.shard},
                                       {"token", it->second.token},
                                       {"agent", it->second.agent},
                                       {"why", why}});
  wheel_.Cancel(static_cast<uint64_t>(it->second.token));
  by_token_.erase(it->second.token);
  Lease ended = std::move(it->second);
  leases_.erase(it);
  ctx_->batch->Stage([&] { return ctx_->store->DeleteLease(LeaseRowKey(key)); });
  return ended;
}

void Leases::MarkCanceled(ShardKey key) {
  if (auto it = leases_.find(key); it != leases_.end()) it->second.canceled = true;
}

const Lease* Leases::Find(ShardKey key) const {
  auto it = leases_.find(key);
  return it == leases_.end() ? nullptr : &it->second;
}

bool Leases::Holds(ShardKey key, FencingToken token) const {
  const Lease* l = Find(key);
  return l != nullptr && l->token == token;
}

bool Leases::HeldBy(ShardKey key, FencingToken token, const std::string& agent) const {
  const Lease* l = Find(key);
  return l != nullptr && l->token == token && l->agent == agent;
}

Status Leases::CheckToken(ShardKey key, const std::string& agent, FencingToken token) const {
  if (HeldBy(key, token, agent)) return Status::Ok();
  const Lease* l = Find(key);
  ++ctx_->metrics->stale_token_total;
  ctx_->events->Write("refused", {{"what", "result"},
                                  {"run", key.run},
                                  {"shard", key.shard},
                                  {"token", token},
                                  {"agent", agent},
                                  {"current", l == nullptr ? int64_t{0} : l->token}});
  // Neither token is told: the caller's own is no news, and the current one belongs to the
  // holder alone.
  return Status::Conflict("run " + std::to_string(key.run) + " shard " + std::to_string(key.shard) +
                          ": agent " + agent +
                          " holds no live lease on it under that token (it expired, ended, or "
                          "is another agent's)");
}

std::vector<Lease> Leases::HeldByAgent(const std::string& agent) const {
  std::vector<Lease> out;
  for (const auto& [key, lease] : leases_) {
    if (lease.agent == agent) out.push_back(lease);
  }
  return out;
}

void Leases::OnTimer() {
  int64_t now = ctx_->MonoMs();
  // A loop stall (or the whole process stopped) longer than TTL/3: agents could not have been
  // heard meanwhile, so every lease first gets a fresh TTL before any expiry is judged.
  // Every arming of this timer sets it at most TTL/3 ahead, so a longer gap is a stall.
  if (last_check_mono_ != 0 && now - last_check_mono_ > ctx_->config.lease_ttl.count() / 3 + 1000) {
    log::Warn("loop stalled; renewing every lease before judging expiry",
              {{"stall_ms", now - last_check_mono_}});
    for (auto& [key, lease] : leases_) {
      lease.expires_mono = now + ctx_->config.lease_ttl.count();
      wheel_.Schedule(static_cast<uint64_t>(lease.token), lease.expires_mono);
    }
  }
  std::vector<uint64_t> expired;
  wheel_.Advance(now, [&expired](uint64_t token, int64_t) { expired.push_back(token); });
  for (uint64_t token : expired) {
    auto kt = by_token_.find(static_cast<FencingToken>(token));
    if (kt == by_token_.end()) continue;
    std::optional<Lease> ended = Release(kt->second, "expired");
    if (!ended) continue;
    ++ctx_->metrics->leases_expired_total;
    log::Warn("lease expired", {{"run", ended->key.run},
                                {"shard", ended->key.shard},
                                {"agent", ended->agent},
                                {"token", ended->token}});
    if (on_expired_) on_expired_(*ended);
  }
  Arm();
}

void Leases::Arm() {
  if (!timer_) return;
  int64_t now = ctx_->MonoMs();
  if (leases_.empty()) {
    timer_->Stop();
    last_check_mono_ = 0;
    return;
  }
  int64_t due = now + ctx_->config.lease_ttl.count() / 3;
  if (std::optional<int64_t> next = wheel_.NextWakeup()) due = std::min(due, *next);
  last_check_mono_ = now;
  timer_->Once(static_cast<uint64_t>(std::max<int64_t>(due - now, 0)), [this] { OnTimer(); });
}

}  // namespace jobctl::coordinator
