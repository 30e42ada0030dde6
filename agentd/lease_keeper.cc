#include "lease_keeper.h"

#include <optional>

#include "base/log.h"
#include "wire/agent_messages.h"

namespace jobctl::agentd {

std::string_view LeaseLossName(LeaseLoss l) {
  switch (l) {
    case LeaseLoss::kStale: return "stale";
    case LeaseLoss::kCanceled: return "canceled";
    case LeaseLoss::kExpired: return "expired";
    case LeaseLoss::kFinished: return "finished";
  }
  return "expired";
}

LeaseKeeper::LeaseKeeper(uv_loop_t* loop, CoordinatorLink* link, const Clock* clock,
                         std::string agent, std::function<int()> free_slots, Callbacks callbacks)
    : link_(link),
      clock_(clock),
      agent_(std::move(agent)),
      free_slots_(std::move(free_slots)),
      cb_(std::move(callbacks)),
      heartbeat_timer_(loop),
      deadline_timer_(loop) {}

Status LeaseKeeper::Init() { return deadline_timer_.Init(); }

void LeaseKeeper::Add(ShardKey key, int64_t token, int64_t ttl_ms, int64_t heartbeat_ms,
                      int64_t sent_ms) {
  ttl_ms_ = ttl_ms;
  if (heartbeat_ms > 0) heartbeat_ms_ = heartbeat_ms;
  int64_t now = clock_->MonotonicMs();
  bool confirmed = table_.Add(key, token, sent_ms, ttl_ms, now);
  // A claim held open for long leaves little of its lease (or nothing we can count on):
  // renew at once rather than at the next tick.
  int64_t left = LeaseDeadline(sent_ms, ttl_ms) - now;
  Rearm();
  if (!confirmed || left < 2 * HeartbeatEvery(ttl_ms_, heartbeat_ms_)) RenewSoon();
}

void LeaseKeeper::Remove(ShardKey key, int64_t token) {
  if (table_.Remove(key, token)) Rearm();
}

bool LeaseKeeper::MayRun(ShardKey key, int64_t token) const {
  std::optional<HeldLease> l = table_.Find(key);
  return l && l->token == token && l->confirmed && l->deadline_ms > clock_->MonotonicMs();
}

std::optional<int64_t> LeaseKeeper::DeadlineOf(ShardKey key, int64_t token) const {
  std::optional<HeldLease> l = table_.Find(key);
  if (!l || l->token != token || !l->confirmed) return std::nullopt;
  return l->deadline_ms;
}

void LeaseKeeper::RenewSoon() {
  if (in_flight_) {
    again_ = true;
    return;
  }
  Heartbeat();
}

void LeaseKeeper::Rearm() {
  if (closed_) return;
  if (table_.empty()) {
    heartbeat_timer_.Stop();
    deadline_timer_.Disarm();
    every_ms_ = 0;
    return;
  }
  int64_t every = HeartbeatEvery(ttl_ms_, heartbeat_ms_);
  if (every != every_ms_ || !heartbeat_timer_.active()) {
    every_ms_ = every;
    heartbeat_timer_.Every(static_cast<uint64_t>(every), [this] {
      if (!in_flight_) Heartbeat();
    });
  }
  deadline_timer_.ArmAt(*table_.NextDeadline(), [this] { CheckDeadlines(); });
}

void LeaseKeeper::Heartbeat() {
  if (closed_ || table_.empty()) return;
  // Expired leases are given up before asking: a late renewal must not revive them.
  CheckDeadlines();
  if (table_.empty()) return;
  wire::HeartbeatRequest body{agent_, free_slots_(), {}};
  for (const HeldLease& l : table_.All()) body.leases.push_back({l.key, l.token});
  in_flight_ = true;
  int64_t sent = clock_->MonotonicMs();
  // A reply later than one period is useless: the next heartbeat is due.
  auto timeout = std::chrono::milliseconds(std::max<int64_t>(every_ms_, 1000));
  link_->Post("/v1/agent/heartbeat", body.ToJson().dump(), "application/json", timeout,
              [this, sent](Result<http::HttpResponse> r) { OnReply(sent, std::move(r)); });
}

// Applies a heartbeat reply: renewed leases get new deadlines, revoked ones are lost.
void LeaseKeeper::ApplyReply(int64_t sent_ms, const wire::HeartbeatReply& reply) {
  if (reply.ttl_ms > 0) ttl_ms_ = reply.ttl_ms;
  if (reply.heartbeat_ms > 0) heartbeat_ms_ = reply.heartbeat_ms;
  for (const wire::LeaseRef& l : reply.renewed) {
    if (table_.Renewed(l.key, l.token, sent_ms, ttl_ms_) && cb_.on_renewed) {
      cb_.on_renewed(l.key, l.token);
    }
  }
  for (const wire::RevokedLease& l : reply.revoked) {
    if (!table_.Remove(l.key, l.token)) continue;
    LeaseLoss loss = l.reason == wire::Revocation::kCanceled   ? LeaseLoss::kCanceled
                     : l.reason == wire::Revocation::kFinished ? LeaseLoss::kFinished
                                                               : LeaseLoss::kStale;
    // A finished lease is the normal end of a shard whose result is still being
    // acknowledged: not worth a line at the default level.
    (loss == LeaseLoss::kFinished ? log::Debug : log::Info)("lease revoked",
                                                            {{"run", l.key.run},
                                                             {"shard", l.key.shard},
                                                             {"token", l.token},
                                                             {"reason", LeaseLossName(loss)}});
    cb_.on_lost(l.key, l.token, loss);
  }
}

void LeaseKeeper::OnReply(int64_t sent_ms, Result<http::HttpResponse> r) {
  in_flight_ = false;
  if (closed_) return;
  if (Classify(r) == Reply::kOk) {
    // A reply that does not decode renews nothing; the deadlines stay as they were. An item
    // that does not decode is left out alone: the others still apply.
    std::vector<std::string> skipped;
    Result<wire::HeartbeatReply> reply = wire::HeartbeatReply::FromJson(r->body, &skipped);
    for (const std::string& why : skipped) {
      log::Warn("heartbeat reply item not understood", {{"error", why}});
    }
    if (reply.ok()) {
      ApplyReply(sent_ms, *reply);
    } else {
      log::Warn("heartbeat reply not understood", {{"error", reply.status().message()}});
    }
  } else if (Classify(r) == Reply::kRejected) {
    log::Warn("heartbeat rejected", {{"error", Describe(r)}});
  }
  Rearm();
  if (std::exchange(again_, false)) RenewSoon();
}

void LeaseKeeper::CheckDeadlines() {
  if (closed_) return;
  for (const HeldLease& l : table_.TakeExpired(clock_->MonotonicMs())) {
    log::Debug(l.confirmed ? "lease deadline passed without renewal"
                           : "new lease never confirmed by a renewal",
               {{"run", l.key.run}, {"shard", l.key.shard}, {"token", l.token}});
    cb_.on_lost(l.key, l.token, LeaseLoss::kExpired);
  }
  Rearm();
}

void LeaseKeeper::Close() {
  closed_ = true;
  heartbeat_timer_.Stop();
  deadline_timer_.Disarm();
}

}  // namespace jobctl::agentd
