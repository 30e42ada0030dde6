// jobctl agents and jobctl token: the hosts that run jobs, and who may talk to the
// coordinator.
#include <iostream>
#include <memory>

#include "base/duration.h"
#include "cli.h"
#include "client.h"
#include "exit_codes.h"
#include "output.h"

namespace jobctl::cli {
namespace {

using nlohmann::json;

int RunAgents(const GlobalOptions& g) {
  Result<std::unique_ptr<Client>> client = Client::Connect(g);
  if (!client.ok()) return Fail("agents", "", client.status(), kExitConfig);
  Result<json> reply = (*client)->Get("/v1/agents");
  if (!reply.ok()) return Fail("agents", "", reply.status());
  Result<std::vector<wire::AgentView>> agents = ReplyListAs<wire::AgentView>(*reply);
  if (!agents.ok()) return Fail("agents", "", agents.status());
  if (g.format() == OutputFormat::kJson) {
    PrintJson(*reply);
    return kExitOk;
  }
  Table t({"NAME", "LABELS", "SLOTS USED/FREE", "LAST SEEN", "STATE", "VERSION"});
  for (const wire::AgentView& a : *agents) {
    std::string labels;
    for (const auto& [key, value] : a.labels) {
      labels += (labels.empty() ? "" : ",") + key + "=" + value;
    }
    std::string state = a.draining ? "draining" : a.connected ? "connected" : "gone";
    t.Add({a.name, labels.empty() ? "-" : labels,
           std::to_string(a.running) + "/" + std::to_string(std::max(a.slots - a.running, 0)),
           LocalTime(a.last_seen), state, a.version});
  }
  t.Print(std::cout);
  return kExitOk;
}

int RunDrain(const std::string& name, bool undo, const GlobalOptions& g) {
  Result<std::unique_ptr<Client>> client = Client::Connect(g);
  if (!client.ok()) return Fail("agents drain", name, client.status(), kExitConfig);
  Result<json> r =
      (*client)->Post("/v1/agents/" + UrlEncode(name) + "/drain", {{"draining", !undo}});
  if (!r.ok()) return Fail("agents drain", name, r.status());
  std::cout << Shown(name)
            << (undo ? " takes shards again" : " draining: no new shards; running ones finish")
            << '\n';
  return kExitOk;
}

int RunRemoveAgent(const std::string& name, bool force, const GlobalOptions& g) {
  Result<std::unique_ptr<Client>> client = Client::Connect(g);
  if (!client.ok()) return Fail("agents rm", name, client.status(), kExitConfig);
  Result<json> r = (*client)->Delete("/v1/agents/" + UrlEncode(name) + (force ? "?force=1" : ""));
  if (!r.ok()) return Fail("agents rm", name, r.status());
  Result<wire::AgentRemoved> removed = ReplyAs<wire::AgentRemoved>(*r);
  if (!removed.ok()) return Fail("agents rm", name, removed.status());
  if (g.format() == OutputFormat::kJson) {
    PrintJson(*r);
    return kExitOk;
  }
  std::cout << "agent " << name << " removed; " << removed->credentials_revoked
            << " credential(s) revoked\n";
  return kExitOk;
}

struct TokenOptions {
  std::string role;
  std::string jobs;
  std::string name;
  std::string agent;
  std::string labels;   // k=v[,k=v...], values may be globs
  std::string expires;  // a duration: "30d", "12h"
  std::string id;
};

int RunTokenCreate(const TokenOptions& o, const GlobalOptions& g) {
  json body = {{"role", o.role}, {"name", o.name}};
  if (!o.jobs.empty()) body["jobs"] = o.jobs;
  if (!o.agent.empty()) body["agent"] = o.agent;
  if (!o.labels.empty()) {
    json labels = json::object();
    size_t start = 0;
    while (start <= o.labels.size()) {
      size_t end = std::min(o.labels.find(',', start), o.labels.size());
      std::string item = o.labels.substr(start, end - start);
      size_t eq = item.find('=');
      if (eq == std::string::npos || eq == 0) {
        return Fail(
            "token create", o.role,
            Status::InvalidArgument("--labels: expected k=v[,k=v...], got \"" + item + "\""),
            kExitUsage);
      }
      labels[item.substr(0, eq)] = item.substr(eq + 1);
      start = end + 1;
    }
    body["labels"] = labels;
  }
  if (!o.expires.empty()) {
    Result<Millis> d = ParseDuration(o.expires);
    if (!d.ok() || d->count() <= 0) {
      return Fail("token create", o.role,
                  Status::InvalidArgument("--expires: expected a duration like 30d or 12h"),
                  kExitUsage);
    }
    body["expires_in_ms"] = d->count();
  }
  Result<std::unique_ptr<Client>> client = Client::Connect(g);
  if (!client.ok()) return Fail("token create", o.role, client.status(), kExitConfig);
  Result<json> r = (*client)->Post("/v1/tokens", body);
  if (!r.ok()) return Fail("token create", o.role, r.status());
  Result<wire::TokenCreated> created = ReplyAs<wire::TokenCreated>(*r);
  if (!created.ok()) return Fail("token create", o.role, created.status());
  if (g.format() == OutputFormat::kJson) {
    PrintJson(*r);
  } else {
    // The secret on stdout alone, so `jobctl token create ... > file` just works.
    std::cout << created->token << '\n';
    std::cerr << "token " << created->id << " (" << Shown(created->name, STDERR_FILENO) << ", role "
              << o.role << ") created; it is shown only now\n";
  }
  return kExitOk;
}

int RunTokenList(const GlobalOptions& g) {
  Result<std::unique_ptr<Client>> client = Client::Connect(g);
  if (!client.ok()) return Fail("token list", "", client.status(), kExitConfig);
  Result<json> r = (*client)->Get("/v1/tokens");
  if (!r.ok()) return Fail("token list", "", r.status());
  Result<std::vector<wire::TokenView>> tokens = ReplyListAs<wire::TokenView>(*r);
  if (!tokens.ok()) return Fail("token list", "", tokens.status());
  if (g.format() == OutputFormat::kJson) {
    PrintJson(*r);
    return kExitOk;
  }
  Table t({"ID", "NAME", "ROLE", "JOBS", "AGENT", "CREATED", "EXPIRES", "REVOKED"});
  for (const wire::TokenView& tok : *tokens) {
    t.Add({std::to_string(tok.id), tok.name, tok.role, tok.jobs.empty() ? "*" : tok.jobs,
           tok.agent.empty() ? "-" : tok.agent, LocalTime(tok.created_at),
           tok.expires_at.empty() ? "never" : LocalTime(tok.expires_at),
           tok.revoked_at.empty() ? "-" : LocalTime(tok.revoked_at)});
  }
  t.Print(std::cout);
  return kExitOk;
}

int RunTokenRevoke(const TokenOptions& o, const GlobalOptions& g) {
  Result<std::unique_ptr<Client>> client = Client::Connect(g);
  if (!client.ok()) return Fail("token revoke", o.id, client.status(), kExitConfig);
  Result<json> r = (*client)->Delete("/v1/tokens/" + UrlEncode(o.id));
  if (!r.ok()) return Fail("token revoke", o.id, r.status());
  std::cout << "token " << Shown(o.id) << " revoked\n";
  return kExitOk;
}

}  // namespace

void RegisterAdmin(CLI::App& app, GlobalOptions& g, int* rc) {
  auto* agents = app.add_subcommand("agents", "List agents: labels, slots, last seen, version");
  agents->footer("Example:\n  jobctl agents\n  jobctl agents drain web-03");
  agents->callback([agents, &g, rc] {
    if (agents->get_subcommands().empty()) *rc = RunAgents(g);
  });
  auto drain_name = std::make_shared<std::string>();
  auto undo = std::make_shared<bool>(false);
  auto* drain =
      agents->add_subcommand("drain", "Stop giving an agent new shards; running ones finish");
  drain->add_option("name", *drain_name, "Agent name")->required();
  drain->add_flag("--undo", *undo, "Let it take shards again");
  drain->callback([drain_name, undo, &g, rc] { *rc = RunDrain(*drain_name, *undo, g); });
  auto rm_name = std::make_shared<std::string>();
  auto force = std::make_shared<bool>(false);
  auto* rm = agents->add_subcommand("rm", "Forget an agent and revoke its credentials");
  rm->add_option("name", *rm_name, "Agent name")->required();
  rm->add_flag("--force", *force,
               "Also while it holds leases: they end now and their shards are handled as lost");
  rm->footer(
      "Refused while the agent holds live leases, unless --force.\n"
      "Example:\n  jobctl agents rm web-03");
  rm->callback([rm_name, force, &g, rc] { *rc = RunRemoveAgent(*rm_name, *force, g); });

  auto* token = app.add_subcommand("token", "Create, list and revoke API tokens");
  token->require_subcommand(1);
  auto create = std::make_shared<TokenOptions>();
  auto* c = token->add_subcommand("create", "Create a token (printed once)");
  c->add_option("--role", create->role, "admin, read, trigger, agent or join")
      ->required()
      ->check(CLI::IsMember({"admin", "read", "trigger", "agent", "join"}));
  c->add_option("--jobs", create->jobs, "read and trigger roles: only jobs matching this glob");
  c->add_option("--name", create->name, "A name to recognize it by");
  c->add_option("--agent", create->agent,
                "agent role: the one agent name it speaks for (required)");
  c->add_option(
      "--labels", create->labels,
      "agent and join roles: the only labels it may claim with, k=v[,k=v...] (v may be a glob)");
  c->add_option("--expires", create->expires,
                "Refused after this long, e.g. 30d or 12h (default never)");
  c->footer(
      "Examples:\n  jobctl token create --role trigger --jobs 'deploy-*' --name ci > ci.token\n"
      "  jobctl token create --role agent --agent web-03 --labels role=web > web-03.token\n"
      "  jobctl token create --role join --expires 1d > join.token");
  c->callback([create, &g, rc] { *rc = RunTokenCreate(*create, g); });
  auto* l = token->add_subcommand("list", "List tokens (never their secrets)");
  l->callback([&g, rc] { *rc = RunTokenList(g); });
  auto revoke = std::make_shared<TokenOptions>();
  auto* r = token->add_subcommand("revoke", "Revoke a token by id");
  r->add_option("id", revoke->id, "Token id (see token list)")->required();
  r->callback([revoke, &g, rc] { *rc = RunTokenRevoke(*revoke, g); });
}

}  // namespace jobctl::cli
