// jobctl apply, diff and pull: keep the coordinator's job file and the one in git in step.
// apply is revision-checked: it names the revision the local file started from (recorded by
// pull and apply in ~/.local/state/jobctl/revisions.json), and a newer one applied by
// someone else is refused until the file is pulled and merged.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "cli.h"
#include "client.h"
#include "config/job_file.h"
#include "exit_codes.h"
#include "output.h"
#include "wire/job_json.h"

namespace jobctl::cli {
namespace {

using nlohmann::json;

std::string StatePath() {
  const char* xdg = std::getenv("XDG_STATE_HOME");
  const char* home = std::getenv("HOME");
  std::string base = xdg && *xdg ? xdg : std::string(home ? home : "/tmp") + "/.local/state";
  return base + "/jobctl/revisions.json";
}

std::string StateKey(const Client& c, const std::string& file) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(file, ec);
  return c.url() + "|" + (ec ? file : abs.lexically_normal().string());
}

json LoadState() {
  std::ifstream in(StatePath());
  json j = in ? json::parse(in, nullptr, false) : json::object();
  return j.is_object() ? j : json::object();
}

std::optional<int64_t> RecordedRevision(const Client& c, const std::string& file) {
  json s = LoadState();
  std::string key = StateKey(c, file);
  if (s.contains(key) && s[key].is_number_integer()) return s[key].get<int64_t>();
  return std::nullopt;
}

void RecordRevision(const Client& c, const std::string& file, int64_t revision) {
  json s = LoadState();
  s[StateKey(c, file)] = revision;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(StatePath()).parent_path(), ec);
  std::string tmp = StatePath() + ".tmp";
  std::ofstream(tmp) << s.dump(2) << '\n';
  std::filesystem::rename(tmp, StatePath(), ec);
}

// Reads and checks a job file locally first, so errors are shown with the same locations
// `jobctl validate` gives, before anything is sent.
Result<std::string> ReadValid(const std::string& verb, const std::string& path, int* rc) {
  Result<std::string> text = ReadFileText(path);
  if (!text.ok()) {
    *rc = Fail(verb, path, text.status(), kExitNoInput);
    return text.status();
  }
  JobFileResult parsed = ParseJobFile(*text, path);
  if (!parsed.ok()) {
    for (const Diagnostic& d : parsed.errors)
      std::cerr << Shown(d.ToString(), STDERR_FILENO) << '\n';
    *rc = Fail(verb, path,
               Status::InvalidArgument(std::to_string(parsed.errors.size()) +
                                       " error(s); nothing was applied"));
    return Status::InvalidArgument("invalid");
  }
  return text;
}

struct SyncOptions {
  std::string file;
  bool force = false;
  std::string out;
};

}  // namespace

int ApplyFile(const std::string& path, const GlobalOptions& g, bool force) {
  int rc = kExitOk;
  Result<std::string> text = ReadValid("apply", path, &rc);
  if (!text.ok()) return rc;
  Result<std::unique_ptr<Client>> client = Client::Connect(g);
  if (!client.ok()) return Fail("apply", path, client.status(), kExitConfig);
  std::optional<int64_t> base = RecordedRevision(**client, path);
  json body = {{"text", *text},
               {"filename", std::filesystem::path(path).filename().string()},
               {"base_revision", force || !base ? -1 : *base}};
  if (const char* user = std::getenv("USER")) body["author"] = user;
  Result<json> r = (*client)->Post("/v1/jobfile", body);
  if (!r.ok()) {
    if (r.status().code() == Status::Code::kConflict) {
      return Fail("apply", path,
                  Status::Conflict(r.status().message() + " (or apply --force to overwrite it)"));
    }
    return Fail("apply", path, r.status());
  }
  Result<wire::ApplyReply> applied = ReplyAs<wire::ApplyReply>(*r);
  if (!applied.ok()) return Fail("apply", path, applied.status());
  RecordRevision(**client, path, applied->revision);
  if (g.format() == OutputFormat::kJson) {
    PrintJson(*r);
    return kExitOk;
  }
  for (const std::string& n : applied->created) std::cout << "created    " << Shown(n) << '\n';
  for (const wire::ApplyReply::Changed& c : applied->changed) {
    std::string fields;
    for (const std::string& f : c.fields) fields += (fields.empty() ? "" : ", ") + f;
    std::cout << "changed    " << Shown(c.name + " (" + fields + ")") << '\n';
  }
  for (const std::string& n : applied->removed) std::cout << "removed    " << Shown(n) << '\n';
  std::cout << "revision " << applied->revision << ": " << applied->created.size() << " created, "
            << applied->changed.size() << " changed, " << applied->removed.size() << " removed, "
            << applied->unchanged.size() << " unchanged\n";
  return kExitOk;
}

namespace {

int RunApply(const SyncOptions& opt, const GlobalOptions& g) {
  return ApplyFile(opt.file.empty() ? g.file : opt.file, g, opt.force);
}

// Field-by-field difference of two versions of a job, as "key: old -> new" lines.
std::vector<std::string> FieldDiff(const Job& a, const Job& b) {
  json ja = wire::JobToJson(a), jb = wire::JobToJson(b);
  std::vector<std::string> out;
  for (auto it = ja.begin(); it != ja.end(); ++it) {
    if (jb[it.key()] != it.value()) {
      out.push_back(it.key() + ": " + it.value().dump() + " -> " + jb[it.key()].dump());
    }
  }
  return out;
}

// The same for a flow: its keys as "key: old -> new", its steps added, removed or changed
// (`step "x".needs`), and what each step with its own command changed (`step "x".shell: ...`).
std::vector<std::string> FlowDiff(const Flow& a, const Flow& b, const JobFile& a_file,
                                  const JobFile& b_file) {
  json ja = wire::FlowToJson(a), jb = wire::FlowToJson(b);
  std::vector<std::string> out;
  for (const std::string& field : wire::FlowChangedFields(a, b)) {
    if (field.starts_with("step ")) {
      out.push_back(field);
    } else {
      out.push_back(field + ": " + ja[field].dump() + " -> " + jb[field].dump());
    }
  }
  auto step_job = [](const JobFile& file, const std::string& name) -> const Job* {
    for (const Job& j : file.step_jobs) {
      if (j.name == name) return &j;
    }
    return nullptr;
  };
  for (const FlowStep& step : b.steps) {
    const Job* before = step.own ? step_job(a_file, step.job) : nullptr;
    const Job* after = step.own ? step_job(b_file, step.job) : nullptr;
    if (before == nullptr || after == nullptr) continue;
    for (const std::string& line : FieldDiff(*before, *after)) {
      out.push_back("step \"" + step.name + "\"." + line);
    }
  }
  return out;
}

int RunDiff(const SyncOptions& opt, const GlobalOptions& g) {
  const std::string path = opt.file.empty() ? g.file : opt.file;
  int rc = kExitOk;
  Result<std::string> text = ReadValid("diff", path, &rc);
  if (!text.ok()) return rc;
  Result<std::unique_ptr<Client>> client = Client::Connect(g);
  if (!client.ok()) return Fail("diff", path, client.status(), kExitConfig);
  Result<json> reply = (*client)->Get("/v1/jobfile");
  if (!reply.ok()) return Fail("diff", path, reply.status());
  Result<wire::JobFileView> current = ReplyAs<wire::JobFileView>(*reply);
  if (!current.ok()) return Fail("diff", path, current.status());
  JobFileResult theirs = ParseJobFile(current->text, "coordinator");
  JobFileResult mine = ParseJobFile(*text, path);
  std::map<std::string, const Job*> before, after;
  for (const Job& j : theirs.file.jobs) before[j.name] = &j;
  for (const Job& j : mine.file.jobs) after[j.name] = &j;
  json out = {{"revision", current->revision},
              {"created", json::array()},
              {"changed", json::array()},
              {"removed", json::array()}};
  for (const auto& [name, job] : after) {
    if (!before.count(name)) {
      out["created"].push_back(name);
    } else if (auto d = FieldDiff(*before[name], *job); !d.empty()) {
      out["changed"].push_back({{"name", name}, {"fields", d}});
    }
  }
  for (const auto& [name, job] : before) {
    if (!after.count(name)) out["removed"].push_back(name);
  }
  std::map<std::string, const Flow*> flows_before, flows_after;
  for (const Flow& f : theirs.file.flows) flows_before[f.name] = &f;
  for (const Flow& f : mine.file.flows) flows_after[f.name] = &f;
  json flows = {{"created", json::array()}, {"changed", json::array()}, {"removed", json::array()}};
  for (const auto& [name, flow] : flows_after) {
    if (!flows_before.count(name)) {
      flows["created"].push_back(name);
    } else if (auto d = FlowDiff(*flows_before[name], *flow, theirs.file, mine.file); !d.empty()) {
      flows["changed"].push_back({{"name", name}, {"fields", d}});
    }
  }
  for (const auto& [name, flow] : flows_before) {
    if (!flows_after.count(name)) flows["removed"].push_back(name);
  }
  out["flows"] = flows;
  bool differs = !out["created"].empty() || !out["changed"].empty() || !out["removed"].empty() ||
                 !flows["created"].empty() || !flows["changed"].empty() ||
                 !flows["removed"].empty();
  if (g.format() == OutputFormat::kJson) {
    PrintJson(out);
  } else {
    for (const auto& n : out["created"]) std::cout << "+ " << Shown(n.get<std::string>()) << '\n';
    for (const auto& c : out["changed"]) {
      std::cout << "~ " << Shown(c["name"].get<std::string>()) << '\n';
      for (const auto& f : c["fields"]) std::cout << "    " << Shown(f.get<std::string>()) << '\n';
    }
    for (const auto& n : out["removed"]) std::cout << "- " << n.get<std::string>() << '\n';
    for (const auto& n : flows["created"]) {
      std::cout << "+ flow " << Shown(n.get<std::string>()) << '\n';
    }
    for (const auto& c : flows["changed"]) {
      std::cout << "~ flow " << Shown(c["name"].get<std::string>()) << '\n';
      for (const auto& f : c["fields"]) std::cout << "    " << Shown(f.get<std::string>()) << '\n';
    }
    for (const auto& n : flows["removed"]) {
      std::cout << "- flow " << Shown(n.get<std::string>()) << '\n';
    }
    if (!differs) std::cout << "no changes against revision " << current->revision << '\n';
  }
  return differs ? kExitFailed : kExitOk;
}

int RunPull(const SyncOptions& opt, const GlobalOptions& g) {
  const std::string path = !opt.out.empty() ? opt.out : (!opt.file.empty() ? opt.file : g.file);
  Result<std::unique_ptr<Client>> client = Client::Connect(g);
  if (!client.ok()) return Fail("pull", path, client.status(), kExitConfig);
  Result<json> reply = (*client)->Get("/v1/jobfile");
  if (!reply.ok()) return Fail("pull", path, reply.status());
  Result<wire::JobFileView> current = ReplyAs<wire::JobFileView>(*reply);
  if (!current.ok()) return Fail("pull", path, current.status());
  const int64_t revision = current->revision;
  if (revision == 0)
    return Fail("pull", path, Status::NotFound("no job file has been applied yet"));
  const std::string& text = current->text;
  if (path == "-") {
    std::cout << Shown(text);
    return kExitOk;
  }
  std::string tmp = path + ".jobctl-tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out) return Fail("pull", path, Status::Io("cannot write " + tmp), kExitCantCreate);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Fail("pull", path, Status::Io(ec.message()), kExitCantCreate);
  RecordRevision(**client, path, revision);
  std::cerr << "pulled revision " << revision << " (applied by "
            << Shown(current->author, STDERR_FILENO) << " at " << current->applied_at << ") into "
            << path << '\n';
  return kExitOk;
}

}  // namespace

void RegisterSync(CLI::App& app, GlobalOptions& g, int* rc) {
  auto apply = std::make_shared<SyncOptions>();
  auto* a = app.add_subcommand("apply", "Sync a job file to the coordinator");
  a->add_option("file", apply->file, "Job file (default --file / JOBCTL_FILE / ./jobs.toml)");
  a->add_flag("--force", apply->force, "Apply even if someone applied a newer revision");
  a->footer(
      "Example:\n  jobctl apply jobs.toml\nExit status: 0 applied, 65 invalid file, 75 a "
      "newer revision exists (pull, merge, apply again), 69 coordinator unreachable.");
  a->callback([apply, &g, rc] { *rc = RunApply(*apply, g); });

  auto diff = std::make_shared<SyncOptions>();
  auto* d = app.add_subcommand("diff", "Show what apply would change, field by field");
  d->add_option("file", diff->file, "Job file (default ./jobs.toml)");
  d->footer(
      "Example:\n  jobctl diff jobs.toml\nExit status: 0 no changes, 1 changes, 65 invalid "
      "file, 69 coordinator unreachable.");
  d->callback([diff, &g, rc] { *rc = RunDiff(*diff, g); });

  auto pull = std::make_shared<SyncOptions>();
  auto* p = app.add_subcommand("pull", "Fetch the coordinator's current job file");
  p->add_option("-o,--out", pull->out, "Write it here (default --file / ./jobs.toml; - = stdout)");
  p->footer("Example:\n  jobctl pull -o jobs.toml && git diff jobs.toml");
  p->callback([pull, &g, rc] { *rc = RunPull(*pull, g); });
}

}  // namespace jobctl::cli
