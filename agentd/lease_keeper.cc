#include "lease_keeper.h"

#include <nlohmann/json.hpp>
#include <optional>

#include "base/log.h"
#include "wire/bounded_json.h"
#include "wire/json_number.h"

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

// Applies a heartbeat reply: renewed leases get new deadlines, revoked ones are lost. Reads
// the lists in place (no copies: a deeply nested value must not recurse); throws
// nlohmann::json::exception on values of the wrong type.
void LeaseKeeper::ApplyReply(int64_t sent_ms, const std::string& body) {
  nlohmann::json j = wire::ParseJson(body);
  if (!j.is_object()) return;
  // A positive integer that fits, or nothing.
  auto number = [](const nlohmann::json& obj, const char* name) -> std::optional<int64_t> {
    auto it = obj.find(name);
    if (it == obj.end() || !it->is_number_integer() || !wire::JsonNumberFits<int>(*it))
      return std::nullopt;
    return it->get<int64_t>();
  };
  if (auto t = number(j, "ttl_ms"); t && *t > 0) ttl_ms_ = *t;
  if (auto h = number(j, "heartbeat_ms"); h && *h > 0) heartbeat_ms_ = *h;
  auto item = [](const nlohmann::json& e, ShardKey* key, int64_t* token) {
    if (!e.is_object()) return false;
    auto run = e.find("run"), shard = e.find("shard"), tok = e.find("token");
    if (run == e.end() || shard == e.end() || tok == e.end() || !run->is_number_integer() ||
        !shard->is_number_integer() || !tok->is_number_integer() ||
        !wire::JsonNumberFits<int64_t>(*run) || !wire::JsonNumberFits<int>(*shard) ||
        !wire::JsonNumberFits<int64_t>(*tok)) {
      return false;
    }
    *key = {run->get<int64_t>(), shard->get<int>()};
    *token = tok->get<int64_t>();
    return true;
  };
  ShardKey key;
  int64_t token = 0;
  if (auto renewed = j.find("renewed"); renewed != j.end() && renewed->is_array()) {
    for (const auto& e : *renewed) {
      if (item(e, &key, &token) && table_.Renewed(key, token, sent_ms, ttl_ms_) && cb_.on_renewed) {
        cb_.on_renewed(key, token);
      }
    }
  }
  if (auto revoked = j.find("revoked"); revoked != j.end() && revoked->is_array()) {
    for (const auto& e : *revoked) {
      if (!item(e, &key, &token) || !table_.Remove(key, token)) continue;
      auto reason = e.find("reason");
      std::string_view why = reason != e.end() && reason->is_string()
                                 ? std::string_view(reason->get_ref<const std::string&>())
                                 : std::string_view("stale");
      LeaseLoss loss = why == "canceled"   ? LeaseLoss::kCanceled
                       : why == "finished" ? LeaseLoss::kFinished
                                           : LeaseLoss::kStale;
      // A finished lease is the normal end of a shard whose result is still being
      // acknowledged: not worth a line at the default level.
      (loss == LeaseLoss::kFinished ? log::Debug : log::Info)("lease revoked",
                                                              {{"run", key.run},
                                                               {"shard", key.shard},
                                                               {"token", token},
                                                               {"reason", LeaseLossName(loss)}});
      cb_.on_lost(key, token, loss);
    }
  }
}

void LeaseKeeper::OnReply(int64_t sent_ms, Result<http::HttpResponse> r) {
  in_flight_ = false;
  if (closed_) return;
  if (Classify(r) == Reply::kOk) {
    try {
      ApplyReply(sent_ms, r->body);
    } catch (const nlohmann::json::exception& e) {
      // A reply that does not decode renews nothing; the deadlines stay as they were.
      log::Warn("heartbeat reply not understood", {{"error", e.what()}});
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
