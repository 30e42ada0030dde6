// The notification routes: GET /v1/notifications (the outbox, newest first) and
// POST /v1/notify/test (deliver a test notification through one channel now).
#include <algorithm>
#include <charconv>

#include "coordinator/api.h"
#include "coordinator/request_json.h"
#include "model/time_format.h"

namespace jobctl::coordinator {
namespace {

using nlohmann::json;

std::optional<int64_t> Number(const std::map<std::string, std::string>& q, const char* key,
                              bool* bad) {
  auto it = q.find(key);
  if (it == q.end() || it->second.empty()) return std::nullopt;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc() || end != it->second.data() + it->second.size()) *bad = true;
  return v;
}

std::string Instant(int64_t ms) { return ms > 0 ? FormatUtc(FromUnixMs(ms)) : std::string(); }

}  // namespace

// GET /v1/notifications?job=NAME&state=pending|sent|failed&before=ID&limit=N
void Api::ListNotifications(Call& c) {
  static constexpr int64_t kMaxPage = 1000;
  const auto& q = c.req.query;
  store::NotificationFilter f;
  if (auto it = q.find("job"); it != q.end() && !it->second.empty()) {
    if (!IsValidJobName(it->second)) {
      return FailWith(c, 400, "bad_request", "job: expected a job name");
    }
    if (!Auth::Allows(c.who, Role::kRead, it->second)) return FailOutOfScope(c, "");
    f.job = it->second;
  }
  if (auto it = q.find("state"); it != q.end() && !it->second.empty()) {
    if (it->second != "pending" && it->second != "sent" && it->second != "failed") {
      return FailWith(c, 400, "bad_request", "state: expected pending, sent or failed");
    }
    f.state = it->second;
  }
  bool bad = false;
  f.before_id = Number(q, "before", &bad);
  std::optional<int64_t> limit = Number(q, "limit", &bad);
  if (bad) return FailWith(c, 400, "bad_request", "before and limit are numbers");
  f.limit = static_cast<int>(std::clamp<int64_t>(limit.value_or(100), 1, kMaxPage));
  Result<std::vector<store::NotificationRow>> rows = ctx_->store->ListNotifications(f);
  if (!rows.ok()) return Fail(c, rows.status());
  json items = json::array();
  for (const store::NotificationRow& n : *rows) {
    if (!Auth::Allows(c.who, Role::kRead, n.job)) continue;  // a token scoped to some jobs
    items.push_back({{"id", n.id},
                     {"created", Instant(n.created_ms)},
                     {"job", n.job},
                     {"run_id", n.run_id ? json(n.run_id) : json(nullptr)},
                     {"event", n.event},
                     {"reminder", n.reminder},
                     {"failures", n.failures},
                     {"detail", n.detail},
                     {"target", n.target},
                     {"state", n.state},
                     {"attempts", n.attempts},
                     {"next_attempt", n.state == "pending" ? Instant(n.next_ms) : ""},
                     {"done", Instant(n.done_ms)},
                     {"last_error", n.last_error}});
  }
  Json(c, 200, {{"items", items}});
}

// POST /v1/notify/test {"channel": "ops-mail"}: 200 with "delivered" true once the channel
// took the test message, false with the channel's "error" when it did not; 404 for a channel
// coordinator.toml lacks.
void Api::TestNotify(Call& c) {
  Result<json> body = Body(c);
  if (!body.ok()) return Fail(c, body.status());
  Result<std::string> name = NotifyTestChannelFromJson(*body);
  if (!name.ok()) return FailWith(c, 400, "bad_request", name.status().message());
  std::string channel = *name;
  if (p_.notifier == nullptr) return FailWith(c, 404, "not_found", "no notification channels");
  Audit(c, "notify_test", channel, "");
  std::shared_ptr<http::Responder> res = c.res;
  p_.notifier->Test(channel, [this, res, channel, who = c.who](Status s) {
    if (!res->alive()) return;
    Call reply{{}, res, {}, who};
    if (s.code() == Status::Code::kNotFound) return FailWith(reply, 404, "not_found", s.message());
    json out = {{"channel", channel}, {"delivered", s.ok()}};
    if (!s.ok()) out["error"] = s.message();
    Json(reply, 200, out);
  });
}

}  // namespace jobctl::coordinator
