// jobctl audit: the coordinator's audit trail (who changed what, when, with which token, and
// the requests it refused), newest first. Admin tokens only.
#include <iostream>
#include <memory>

#include "base/duration.h"
#include "cli.h"
#include "client.h"
#include "exit_codes.h"
#include "model/time_format.h"
#include "output.h"

namespace jobctl::cli {
namespace {

using nlohmann::json;

// The coordinator answers at most this many events per request; more are read page by page.
constexpr int kPage = 1000;

struct AuditOptions {
  std::string since;
  std::string action;
  std::string actor;
  int limit = 50;
};

int RunAudit(const AuditOptions& opt, const GlobalOptions& g) {
  Result<std::unique_ptr<Client>> client = Client::Connect(g);
  if (!client.ok()) return Fail("audit", "", client.status(), kExitConfig);
  std::string filter;
  if (!opt.action.empty()) filter += "&action=" + UrlEncode(opt.action);
  if (!opt.actor.empty()) filter += "&actor=" + UrlEncode(opt.actor);
  if (!opt.since.empty()) {
    // A duration back from now ("24h"), or an instant ("2026-11-22T00:00:00Z").
    Result<Millis> d = ParseDuration(opt.since);
    Result<WallTime> at =
        d.ok() ? Result<WallTime>(SystemClock().Now() - *d) : ParseInstant(opt.since);
    if (!at.ok()) {
      return Fail("audit", "--since",
                  Status::InvalidArgument("expected a duration (24h) or an RFC 3339 time, got \"" +
                                          opt.since + "\""),
                  kExitUsage);
    }
    filter += "&since=" + UrlEncode(FormatUtc(*at));
  }
  // Printed as sent with -o json; read through the typed event for the table and paging.
  json sent = json::array();
  std::vector<wire::AuditEvent> events;
  std::optional<int64_t> before;
  while (static_cast<int>(events.size()) < opt.limit) {
    int want = std::min(kPage, opt.limit - static_cast<int>(events.size()));
    std::string path = "/v1/audit?limit=" + std::to_string(want) + filter;
    if (before) path += "&before=" + std::to_string(*before);
    Result<json> reply = (*client)->Get(path);
    if (!reply.ok()) return Fail("audit", "", reply.status());
    Result<std::vector<wire::AuditEvent>> page = ReplyListAs<wire::AuditEvent>(*reply);
    if (!page.ok()) return Fail("audit", "", page.status());
    for (auto& e : *reply) sent.push_back(std::move(e));
    events.insert(events.end(), page->begin(), page->end());
    if (static_cast<int>(page->size()) < want || page->empty()) break;
    before = events.back().id;
  }
  if (g.format() == OutputFormat::kJson) {
    PrintJson(sent);
    return kExitOk;
  }
  Table t({"ID", "TIME", "ACTION", "ACTOR", "TOKEN", "SUBJECT", "DETAIL"});
  for (const wire::AuditEvent& e : events) {
    t.Add({std::to_string(e.id), LocalTime(e.at), e.action, e.actor.empty() ? "-" : e.actor,
           e.token_id ? std::to_string(*e.token_id) : "-", e.subject.empty() ? "-" : e.subject,
           e.detail.empty() ? "-" : e.detail});
  }
  t.Print(std::cout);
  return kExitOk;
}

}  // namespace

void RegisterAudit(CLI::App& app, GlobalOptions& g, int* rc) {
  auto opt = std::make_shared<AuditOptions>();
  auto* audit = app.add_subcommand(
      "audit", "Show the audit trail: who changed what, when, with which token (admin)");
  audit->add_option("--since", opt->since,
                    "Only events within this duration (24h) or after this time (RFC 3339)");
  audit->add_option("--action", opt->action,
                    "Only this action: apply, trigger, cancel, retry, pause, resume, drain, "
                    "undrain, token-create, token-revoke, auth-failure");
  audit->add_option("--actor", opt->actor, "Only changes made with tokens of this name");
  audit->add_option("--limit", opt->limit, "At most this many, newest first (default 50)")
      ->check(CLI::Range(1, 1'000'000));
  audit->footer(
      "Example:\n  jobctl audit --since 24h\n  jobctl audit --action trigger --actor ci -o json\n"
      "JSON: array of events, newest first: id, at, action, actor (the token's name; \"\" for a\n"
      "request with no valid token), token_id (null then), subject, detail.");
  audit->callback([opt, &g, rc] { *rc = RunAudit(*opt, g); });
}

}  // namespace jobctl::cli
