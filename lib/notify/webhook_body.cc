// WebhookBody(): the JSON a webhook receives. Field values are the notification's own
// (text that is not UTF-8 is repaired by the serializer's replace handler, so dump() never
// throws); only `text`, which chat receivers render, is cleaned and escaped for them.
#include <nlohmann/json.hpp>
#include <string>

#include "notify/render.h"
#include "notify/text.h"

namespace jobctl::notify {
namespace {

using Json = nlohmann::ordered_json;

Json TimeOrNull(int64_t unix_ms) {
  return unix_ms > 0 ? Json(internal::Rfc3339(unix_ms)) : Json(nullptr);
}

template <typename T>
Json ValueOrNull(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

// Slack reads "<...>" as links and mentions (<!channel>) and "&" as an entity: its
// documentation asks for these three to be escaped in text that is not markup.
std::string EscapeForChat(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string LogsCommand(const Notification& n) {
  return n.run_id > 0 ? "jobctl logs " + std::to_string(n.run_id) : "";
}

// One paragraph: the subject, the run, the detail and where to look next.
std::string ChatText(const Notification& n) {
  std::string text = "jobctl: " + internal::Headline(n) + ".";
  if (n.run_id > 0) {
    text += " Run " + std::to_string(n.run_id);
    if (!n.run_reason.empty()) text += " (" + internal::OneLine(n.run_reason) + ")";
    if (!n.trace_id.empty()) text += ", trace " + internal::OneLine(n.trace_id);
    text += ".";
  }
  if (!n.detail.empty() && n.event != "overdue") text += " " + internal::OneLine(n.detail) + ".";
  if (std::string logs = LogsCommand(n); !logs.empty()) text += " See `" + logs + "`";
  if (std::string link = internal::RunLink(n); !link.empty()) text += " or " + link;
  if (n.run_id > 0) text += ".";
  return EscapeForChat(internal::Truncate(text, 2000));
}

Json ShardJson(const ShardFacts& s) {
  return Json{{"index", s.index},
              {"host", s.host},
              {"attempt", s.attempt},
              {"exit_code", ValueOrNull(s.exit_code)},
              {"signal", ValueOrNull(s.signal)},
              {"outcome", s.outcome},
              {"output_tail", s.output_tail},
              {"output_pruned", s.output_pruned}};
}

}  // namespace

std::string WebhookBody(const Notification& unbounded) {
  const Notification n = internal::Bounded(unbounded);
  Json shards = Json::array();
  for (const ShardFacts& s : n.shards) shards.push_back(ShardJson(s));
  std::string link = internal::RunLink(n);
  std::string logs = LogsCommand(n);
  Json links = {{"run", link.empty() ? Json(nullptr) : Json(link)},
                {"logs_command", logs.empty() ? Json(nullptr) : Json(logs)}};
  Json body = {
      {"delivery_id", n.delivery_id},
      {"created", TimeOrNull(n.created_ms)},
      {"event", n.event},
      {"reminder", n.reminder},
      {"failures_since", n.failures_since},
      {"failing_since", TimeOrNull(n.failing_since_ms)},
      {"job", n.job},
      {"run_id", n.run_id > 0 ? Json(n.run_id) : Json(nullptr)},
      {"reason", n.run_reason},
      {"state", n.run_state},
      {"trace_id", n.trace_id},
      {"scheduled", TimeOrNull(n.scheduled_ms)},
      {"started", TimeOrNull(n.started_ms)},
      {"finished", TimeOrNull(n.finished_ms)},
      {"detail", n.detail},
      {"shards", std::move(shards)},
      {"links", std::move(links)},
      {"text", ChatText(n)},
  };
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace jobctl::notify
