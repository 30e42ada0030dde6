#include "lease_keeper.h"

#include <nlohmann/json.hpp>

#include "base/log.h"

namespace jobctl::agentd {

std::string_view LeaseLossName(LeaseLoss l) {
  switch (l) {
    case LeaseLoss::kStale: return "stale";
    case LeaseLoss::kCanceled: return "canceled";
    case LeaseLoss::kExpired: return "expired";
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
  nlohmann::json leases = nlohmann::json::array();
  for (const HeldLease& l : table_.All()) {
    leases.push_back({{"run", l.key.run}, {"shard", l.key.shard}, {"token", l.token}});
  }
  nlohmann::json body = {{"agent", agent_}, {"free", free_slots_()}, {"leases", leases}};
  in_flight_ = true;
  int64_t sent = clock_->MonotonicMs();
  // A reply later than one period is useless: the next heartbeat is due.
  auto timeout = std::chrono::milliseconds(std::max<int64_t>(every_ms_, 1000));
  link_->Post("/v1/agent/heartbeat", body.dump(), "application/json", timeout,
              [this, sent](Result<http::HttpResponse> r) { OnReply(sent, std::move(r)); });
}

void LeaseKeeper::OnReply(int64_t sent_ms, Result<http::HttpResponse> r) {
  in_flight_ = false;
  if (closed_) return;
  if (Classify(r) == Reply::kOk) {
    nlohmann::json j = nlohmann::json::parse(r->body, nullptr, false);
    if (j.is_object()) {
      ttl_ms_ = j.value("ttl_ms", ttl_ms_);
      heartbeat_ms_ = j.value("heartbeat_ms", heartbeat_ms_);
      auto item = [](const nlohmann::json& e, ShardKey* key, int64_t* token) {
        if (!e.is_object()) return false;
        *key = {e.value("run", int64_t{0}), e.value("shard", 0)};
        *token = e.value("token", int64_t{0});
        return true;
      };
      ShardKey key;
      int64_t token = 0;
      for (const auto& e : j.value("renewed", nlohmann::json::array())) {
        if (item(e, &key, &token) && table_.Renewed(key, token, sent_ms, ttl_ms_) &&
            cb_.on_renewed) {
          cb_.on_renewed(key, token);
        }
      }
      for (const auto& e : j.value("revoked", nlohmann::json::array())) {
        if (!item(e, &key, &token) || !table_.Remove(key, token)) continue;
        LeaseLoss loss = e.value("reason", "") == "canceled" ? LeaseLoss::kCanceled
                                                             : LeaseLoss::kStale;
        log::Info("lease revoked", {{"run", key.run}, {"shard", key.shard}, {"token", token},
                                    {"reason", LeaseLossName(loss)}});
        cb_.on_lost(key, token, loss);
      }
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
