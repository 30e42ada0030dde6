// jobctl notifications: the coordinator's notification outbox, newest first (what was sent,
// what is still being retried and why, what was given up). jobctl notify test CHANNEL: sends
// a test notification through one channel of coordinator.toml now.
#include <iostream>
#include <memory>

#include "cli.h"
#include "client.h"
#include "exit_codes.h"
#include "output.h"

namespace jobctl::cli {
namespace {

using nlohmann::json;

struct NotificationsOptions {
  std::string job;
  std::string state;
  int limit = 50;
};

std::string Text(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

int RunNotifications(const NotificationsOptions& opt, const GlobalOptions& g) {
  Result<std::unique_ptr<Client>> client = Client::Connect(g);
  if (!client.ok()) return Fail("notifications", "", client.status(), kExitConfig);
  std::string path = "/v1/notifications?limit=" + std::to_string(opt.limit);
  if (!opt.job.empty()) path += "&job=" + UrlEncode(opt.job);
  if (!opt.state.empty()) path += "&state=" + UrlEncode(opt.state);
  Result<json> reply = (*client)->Get(path);
  if (!reply.ok()) return Fail("notifications", opt.job, reply.status());
  if (!reply->is_object() || !reply->contains("items") || !(*reply)["items"].is_array()) {
    return Fail("notifications", "", Status::Internal("unexpected reply from the coordinator"));
  }
  const json& items = (*reply)["items"];
  if (g.format() == OutputFormat::kJson) {
    PrintJson(items);
    return kExitOk;
  }
  Table t({"ID", "CREATED", "JOB", "EVENT", "RUN", "TARGET", "STATE", "TRIES", "DETAIL"});
  for (const json& n : items) {
    std::string event = Text(n, "event");
    if (n.value("reminder", false)) event += " (reminder)";
    std::string state = Text(n, "state");
    std::string detail = Text(n, "detail");
    if (state == "pending" && !Text(n, "next_attempt").empty() && n.value("attempts", 0) > 0) {
      state += ", next " + LocalTime(Text(n, "next_attempt"));
    }
    if (!Text(n, "last_error").empty()) detail = Text(n, "last_error");
    t.Add({std::to_string(n.value("id", 0)), LocalTime(Text(n, "created")), Text(n, "job"), event,
           n.contains("run_id") && n["run_id"].is_number()
               ? std::to_string(n["run_id"].get<int64_t>())
               : "-",
           Text(n, "target"), state, std::to_string(n.value("attempts", 0)),
           detail.empty() ? "-" : detail});
  }
  t.Print(std::cout);
  return kExitOk;
}

int RunNotifyTest(const std::string& channel, const GlobalOptions& g) {
  Result<std::unique_ptr<Client>> client = Client::Connect(g);
  if (!client.ok()) return Fail("notify test", channel, client.status(), kExitConfig);
  // A delivery may take the channel's whole timeout (at most 5 min).
  Result<json> reply =
      (*client)->Post("/v1/notify/test", {{"channel", channel}}, std::chrono::minutes(6));
  if (!reply.ok()) return Fail("notify test", channel, reply.status());
  if (g.format() == OutputFormat::kJson) PrintJson(*reply);
  if (!reply->value("delivered", false)) {
    if (g.format() != OutputFormat::kJson) {
      Fail("notify test", channel, Status::Unavailable(Text(*reply, "error")));
    }
    return kExitFailed;
  }
  if (g.format() != OutputFormat::kJson) {
    std::cout << "test notification delivered through channel " << channel << "\n";
  }
  return kExitOk;
}

}  // namespace

void RegisterNotify(CLI::App& app, GlobalOptions& g, int* rc) {
  auto opt = std::make_shared<NotificationsOptions>();
  auto* list = app.add_subcommand("notifications",
                                  "Show notifications: sent, being retried (and why), given up");
  list->add_option("--job", opt->job, "Only this job's notifications");
  list->add_option("--state", opt->state, "Only those pending, sent or failed (given up)")
      ->check(CLI::IsMember({"pending", "sent", "failed"}));
  list->add_option("--limit", opt->limit, "At most this many, newest first (default 50)")
      ->check(CLI::Range(1, 1000));
  list->footer(
      "Example:\n  jobctl notifications --job backup\n  jobctl notifications --state pending\n"
      "JSON: array, newest first: id, created, job, run_id (null when none), event, reminder,\n"
      "failures, detail, target, state (pending, sent, failed), attempts, next_attempt, done,\n"
      "last_error.");
  list->callback([opt, &g, rc] { *rc = RunNotifications(*opt, g); });

  auto channel = std::make_shared<std::string>();
  auto* notify = app.add_subcommand("notify", "Notification channels (admin)");
  notify->require_subcommand(1);
  auto* test = notify->add_subcommand(
      "test", "Send a test notification through a channel of coordinator.toml now");
  test->add_option("channel", *channel, "The channel's name ([notify.NAME])")->required();
  test->footer(
      "Example:\n  jobctl notify test ops-mail\n"
      "Exit status: 0 when the channel took the message, 1 when it did not (the error says\n"
      "why), 65 for a channel the coordinator does not have.\n"
      "JSON: {channel, delivered, error (when not delivered)}.");
  test->callback([channel, &g, rc] { *rc = RunNotifyTest(*channel, g); });
}

}  // namespace jobctl::cli
