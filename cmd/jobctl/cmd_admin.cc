// jobctl agents and jobctl token: the hosts that run jobs, and who may talk to the
// coordinator.
#include <iostream>
#include <memory>

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
  Result<json> agents = (*client)->Get("/v1/agents");
  if (!agents.ok()) return Fail("agents", "", agents.status());
  if (g.format() == OutputFormat::kJson) {
    PrintJson(*agents);
    return kExitOk;
  }
  Table t({"NAME", "LABELS", "SLOTS USED/FREE", "LAST SEEN", "STATE", "VERSION"});
  for (const auto& a : *agents) {
    std::string labels;
    for (auto it = a["labels"].begin(); it != a["labels"].end(); ++it) {
      labels += (labels.empty() ? "" : ",") + it.key() + "=" + it.value().get<std::string>();
    }
    int used = a["running"].get<int>(), slots = a["slots"].get<int>();
    std::string state = a["draining"].get<bool>() ? "draining"
                        : a["connected"].get<bool>() ? "connected" : "gone";
    t.Add({JsonString(a, "name"), labels.empty() ? "-" : labels,
           std::to_string(used) + "/" + std::to_string(std::max(slots - used, 0)),
           LocalTime(JsonString(a, "last_seen")), state, JsonString(a, "version")});
  }
  t.Print(std::cout);
  return kExitOk;
}

int RunDrain(const std::string& name, bool undo, const GlobalOptions& g) {
  Result<std::unique_ptr<Client>> client = Client::Connect(g);
  if (!client.ok()) return Fail("agents drain", name, client.status(), kExitConfig);
  Result<json> r = (*client)->Post("/v1/agents/" + UrlEncode(name) + "/drain", {{"draining", !undo}});
  if (!r.ok()) return Fail("agents drain", name, r.status());
  std::cout << Shown(name) << (undo ? " takes shards again" : " draining: no new shards; running ones finish") << '\n';
  return kExitOk;
}

struct TokenOptions {
  std::string role;
  std::string jobs;
  std::string name;
  std::string id;
};

int RunTokenCreate(const TokenOptions& o, const GlobalOptions& g) {
  Result<std::unique_ptr<Client>> client = Client::Connect(g);
  if (!client.ok()) return Fail("token create", o.role, client.status(), kExitConfig);
  json body = {{"role", o.role}, {"name", o.name}};
  if (!o.jobs.empty()) body["jobs"] = o.jobs;
  Result<json> r = (*client)->Post("/v1/tokens", body);
  if (!r.ok()) return Fail("token create", o.role, r.status());
  if (g.format() == OutputFormat::kJson) {
    PrintJson(*r);
  } else {
    // The secret on stdout alone, so `jobctl token create ... > file` just works.
    std::cout << JsonString(*r, "token") << '\n';
    std::cerr << "token " << (*r)["id"] << " (" << Shown(JsonString(*r, "name"), STDERR_FILENO)
              << ", role " << o.role << ") created; it is shown only now\n";
  }
  return kExitOk;
}

int RunTokenList(const GlobalOptions& g) {
  Result<std::unique_ptr<Client>> client = Client::Connect(g);
  if (!client.ok()) return Fail("token list", "", client.status(), kExitConfig);
  Result<json> r = (*client)->Get("/v1/tokens");
  if (!r.ok()) return Fail("token list", "", r.status());
  if (g.format() == OutputFormat::kJson) {
    PrintJson(*r);
    return kExitOk;
  }
  Table t({"ID", "NAME", "ROLE", "JOBS", "CREATED", "REVOKED"});
  for (const auto& tok : *r) {
    t.Add({JsonString(tok, "id"), JsonString(tok, "name"), JsonString(tok, "role"),
           JsonString(tok, "jobs").empty() ? "*" : JsonString(tok, "jobs"),
           LocalTime(JsonString(tok, "created_at")),
           JsonString(tok, "revoked_at").empty() ? "-" : LocalTime(JsonString(tok, "revoked_at"))});
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
  auto* drain = agents->add_subcommand("drain", "Stop giving an agent new shards; running ones finish");
  drain->add_option("name", *drain_name, "Agent name")->required();
  drain->add_flag("--undo", *undo, "Let it take shards again");
  drain->callback([drain_name, undo, &g, rc] { *rc = RunDrain(*drain_name, *undo, g); });

  auto* token = app.add_subcommand("token", "Create, list and revoke API tokens");
  token->require_subcommand(1);
  auto create = std::make_shared<TokenOptions>();
  auto* c = token->add_subcommand("create", "Create a token (printed once)");
  c->add_option("--role", create->role, "admin, read, trigger or agent")
      ->required()
      ->check(CLI::IsMember({"admin", "read", "trigger", "agent"}));
  c->add_option("--jobs", create->jobs, "trigger role: only jobs matching this glob");
  c->add_option("--name", create->name, "A name to recognize it by");
  c->footer("Example:\n  jobctl token create --role trigger --jobs 'deploy-*' --name ci > ci.token");
  c->callback([create, &g, rc] { *rc = RunTokenCreate(*create, g); });
  auto* l = token->add_subcommand("list", "List tokens (never their secrets)");
  l->callback([&g, rc] { *rc = RunTokenList(g); });
  auto revoke = std::make_shared<TokenOptions>();
  auto* r = token->add_subcommand("revoke", "Revoke a token by id");
  r->add_option("id", revoke->id, "Token id (see token list)")->required();
  r->callback([revoke, &g, rc] { *rc = RunTokenRevoke(*revoke, g); });
}

}  // namespace jobctl::cli
