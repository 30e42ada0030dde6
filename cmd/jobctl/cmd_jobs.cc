// jobctl list, show, pause, resume: the jobs the coordinator knows and their state.
#include <iostream>
#include <memory>

#include "cli.h"
#include "client.h"
#include "exit_codes.h"
#include "output.h"
#include "base/duration.h"
#include "model/time_format.h"

namespace jobctl::cli {
namespace {

using nlohmann::json;

std::string ShardSummary(const json& run) {
  int ok = 0, total = 0;
  for (const auto& s : run["shards"]) {
    ++total;
    ok += s["state"] == "succeeded";
  }
  return total == 0 ? "-" : std::to_string(ok) + "/" + std::to_string(total);
}

int RunList(const GlobalOptions& g) {
  Result<std::unique_ptr<Client>> client = Client::Connect(g);
  if (!client.ok()) return Fail("list", "", client.status(), kExitConfig);
  Result<json> jobs = (*client)->Get("/v1/jobs");
  if (!jobs.ok()) return Fail("list", "", jobs.status());
  if (g.format() == OutputFormat::kJson) {
    PrintJson(*jobs);
    return kExitOk;
  }
  Table t({"NAME", "SCHEDULE", "NEXT FIRE", "LAST RESULT", "PAUSED"});
  for (const auto& j : *jobs) {
    std::string last = JsonString(j, "last_state");
    std::string when = JsonString(j, "last_finished_at");
    t.Add({JsonString(j, "name"), JsonString(j, "schedule"),
           j["paused"].get<bool>() ? "-" : LocalTime(JsonString(j, "next_fire")),
           last.empty() ? "-" : Colored(last, g) + " " + LocalTime(when),
           j["paused"].get<bool>() ? "yes" : "no"});
  }
  t.Print(std::cout);
  return kExitOk;
}

int RunShow(const std::string& name, const GlobalOptions& g) {
  Result<std::unique_ptr<Client>> client = Client::Connect(g);
  if (!client.ok()) return Fail("show", name, client.status(), kExitConfig);
  Result<json> job = (*client)->Get("/v1/jobs/" + UrlEncode(name));
  if (!job.ok()) return Fail("show", name, job.status());
  if (g.format() == OutputFormat::kJson) {
    PrintJson(*job);
    return kExitOk;
  }
  const json& d = (*job)["definition"];
  std::cout << "Name:      " << Shown(name) << '\n'
            << "Schedule:  "
            << Shown(JsonString(d, "schedule") +
                     (JsonString(d, "timezone").empty() ? "" : " (" + JsonString(d, "timezone") + ")"))
            << '\n';
  std::string cmd = JsonString(d, "shell");
  if (cmd.empty()) {
    for (const auto& a : d["command"]) cmd += (cmd.empty() ? "" : " ") + a.get<std::string>();
  }
  std::cout << "Command:   " << Shown(cmd) << '\n'
            << "Shards:    " << d["shards"] << "  route "
            << Shown(JsonString(d, "route") + "  overlap " + JsonString(d, "overlap") +
                     "  misfire " + JsonString(d, "misfire"))
            << '\n'
            << "Paused:    " << ((*job)["paused"].get<bool>() ? "yes" : "no") << '\n'
            << "Next fires:\n";
  for (const auto& f : (*job)["next_fires"]) std::cout << "  " << Shown(f.get<std::string>()) << '\n';
  std::cout << "Recent runs:\n";
  Table t({"RUN", "REASON", "SCHEDULED", "STATE", "SHARD", "HOST", "EXIT", "DURATION"});
  for (const auto& r : (*job)["recent_runs"]) {
    bool first = true;
    for (const auto& s : r["shards"]) {
      std::string dur = "-";
      Result<WallTime> a = ParseInstant(JsonString(s, "started_at")),
                       b = ParseInstant(JsonString(s, "finished_at"));
      if (a.ok() && b.ok()) dur = FormatDuration(*b - *a);
      t.Add({first ? std::to_string(r["id"].get<int64_t>()) : "", first ? JsonString(r, "reason") : "",
             first ? LocalTime(JsonString(r, "scheduled_at")) : "",
             first ? Colored(JsonString(r, "state"), g) : "", std::to_string(s["index"].get<int>()),
             JsonString(s, "agent").empty() ? "-" : JsonString(s, "agent"),
             JsonString(s, "exit_code").empty() ? "-" : JsonString(s, "exit_code"), dur});
      first = false;
    }
    if (first) {
      t.Add({std::to_string(r["id"].get<int64_t>()), JsonString(r, "reason"),
             LocalTime(JsonString(r, "scheduled_at")), Colored(JsonString(r, "state"), g), "-", "-",
             "-", JsonString(r, "note")});
    }
  }
  t.Print(std::cout);
  return kExitOk;
}

int RunPause(const std::string& verb, const std::string& name, const GlobalOptions& g) {
  Result<std::unique_ptr<Client>> client = Client::Connect(g);
  if (!client.ok()) return Fail(verb, name, client.status(), kExitConfig);
  Result<json> r = (*client)->Post("/v1/jobs/" + UrlEncode(name) + "/" + verb, json::object());
  if (!r.ok()) return Fail(verb, name, r.status());
  if (g.format() == OutputFormat::kJson) {
    PrintJson(*r);
  } else {
    std::cout << Shown(name) << (verb == "pause" ? " paused" : " resumed") << '\n';
  }
  return kExitOk;
}

}  // namespace

std::string ShardCount(const nlohmann::json& run) { return ShardSummary(run); }

void RegisterJobs(CLI::App& app, GlobalOptions& g, int* rc) {
  auto* list = app.add_subcommand("list", "List jobs: schedule, next fire, last result");
  list->footer("Example:\n  jobctl list\n  jobctl list -o json | jq '.[] | select(.paused)'\n"
               "JSON fields: name, schedule, timezone, next_fire, paused, enabled, last_state,\n"
               "last_finished_at, open_runs, description.");
  list->callback([&g, rc] { *rc = RunList(g); });

  auto name = std::make_shared<std::string>();
  auto* show = app.add_subcommand("show", "Show a job: definition, next 5 fires, recent runs");
  show->add_option("name", *name, "Job name")->required();
  show->footer("Example:\n  jobctl show nightly-backup");
  show->callback([name, &g, rc] { *rc = RunShow(*name, g); });

  for (const char* verb : {"pause", "resume"}) {
    auto job = std::make_shared<std::string>();
    auto* sub = app.add_subcommand(verb, std::string(verb) == "pause"
                                             ? "Stop a job from firing (runs already started go on)"
                                             : "Let a paused job fire again (missed instants follow "
                                               "its misfire policy)");
    sub->add_option("name", *job, "Job name")->required();
    sub->footer(std::string("Example:\n  jobctl ") + verb + " nightly-backup");
    std::string v = verb;
    sub->callback([job, v, &g, rc] { *rc = RunPause(v, *job, g); });
  }
}

}  // namespace jobctl::cli
