#include "coordinator/applier.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "base/log.h"
#include "config/job_file.h"
#include "model/time_format.h"
#include "wire/job_json.h"
#include "wire/views.h"

namespace jobctl::coordinator {

using nlohmann::json;

Status Applier::Upsert(Item& item, int64_t revision, int64_t now) {
  JobEntry* existing = item.entry;
  store::JobTiming& t = item.timing;
  if (!item.flow.empty()) {
    // A step's own job: its flow was upserted before it, in this write.
    JobEntry* flow = jobs_->FindByName(item.flow);
    if (flow == nullptr) return Status::Internal("flow " + item.flow + " of " + item.name);
    t.flow_id = flow->id;
  }
  // A job that only runs as a step has no schedule, and never fires on its own.
  std::optional<Schedule> schedule;
  if (!t.schedule.empty()) {
    Result<Schedule> parsed = Schedule::Parse({.expr = t.schedule,
                                               .dialect = t.dialect,
                                               .timezone = t.timezone,
                                               .hash_key = item.name,
                                               .anchor = FromUnixMs(t.anchor_ms)});
    if (!parsed.ok()) return parsed.status();
    schedule.emplace(std::move(*parsed));
  }
  // Keep the next fire unless something that decides it changed.
  bool timing_changed = true;
  if (existing != nullptr) {
    const std::optional<store::JobTiming>& b = item.before;
    timing_changed = !existing->active || existing->timing == 0 || !b ||
                     b->schedule != t.schedule || b->dialect != t.dialect ||
                     b->timezone != t.timezone || b->anchor_ms != t.anchor_ms ||
                     b->enabled != t.enabled;
    if (Status s = ctx_->store->UpdateJobSpec(existing->id, item.spec_json, t, revision, now);
        !s.ok()) {
      return s;
    }
  }
  std::optional<int64_t> next_fire;
  bool reschedule = timing_changed || !existing->next_fire_ms;
  if (!schedule) {
    // Nothing to fire.
  } else if (reschedule && schedule->delay() && existing != nullptr && existing->open_runs > 0) {
    // A fixed-delay job's next fire is set when its open runs end.
  } else if (reschedule) {
    std::optional<WallTime> next = schedule->Next(FromUnixMs(now));
    if (next) next_fire = ToUnixMs(*next);
  } else {
    next_fire = existing->next_fire_ms;
  }
  JobEntry* entry = existing;
  if (existing == nullptr) {
    Result<int64_t> id = ctx_->store->InsertJob(
        {0, item.name, item.spec_json, true, false, next_fire, revision, t}, now);
    if (!id.ok()) return id.status();
    entry = jobs_->Add(*id, item.name);
    if (entry == nullptr) {
      return Status::Corrupt("job " + item.name + " got id " + std::to_string(*id) +
                             ", which the coordinator cannot hold");
    }
  } else if (Status s = ctx_->store->SetNextFire(entry->id, next_fire); !s.ok()) {
    return s;
  }
  entry->next_fire_ms = next_fire;
  entry->active = true;
  entry->kind = t.kind;
  entry->enabled = t.enabled;
  entry->misfire = t.misfire;
  entry->overlap = t.overlap;
  entry->misfire_cap = t.misfire_cap;
  entry->expect_success_within_ms = t.expect_success_within_ms;
  entry->since_ms = now;  // the store's updated_ms, as Insert/UpdateJobSpec wrote it
  jobs_->SetTiming(*entry, t.schedule, t.dialect, t.timezone, t.anchor_ms);
  jobs_->SetLabels(*entry, t.on_labels);
  // Open runs keep the definition they started with; new runs load the new one.
  if (item.job != nullptr && entry->open_runs > 0) {
    entry->spec = std::make_shared<const Job>(*item.job);
  } else {
    entry->spec.reset();
  }
  if (reschedule && schedule) {
    ctx_->EventAfterCommit("scheduled",
                           {{"job", item.name}, {"next_fire_ms", next_fire.value_or(-1)}});
  }
  scheduler_->Track(*entry);
  return Status::Ok();
}

namespace {

// Where `needle` first appears in `text` as a quoted string at or after `from`, as a line and
// column (1-based); 0, 0 when it does not.
std::pair<int, int> Locate(std::string_view text, const std::string& needle, size_t from) {
  size_t at = text.find('"' + needle + '"', from);
  if (at == std::string_view::npos) return {0, 0};
  int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + at, '\n'));
  size_t bol = text.rfind('\n', at);
  return {line, static_cast<int>(at - (bol == std::string_view::npos ? 0 : bol + 1)) + 1};
}

}  // namespace

Result<ApplyOutcome> Applier::Apply(const ApplyRequest& req) {
  JobFileResult parsed = ParseJobFile(req.text, req.filename);
  // What the file cannot know: whether this coordinator has the channels its jobs name.
  auto check_targets = [&](const std::string& name, const NotifyPolicy& notify, bool is_flow) {
    for (const std::string& target : notify.to) {
      std::string why = target_problem(target);
      if (why.empty()) continue;
      size_t from = req.text.find("\"" + name + "\"");
      auto [line, column] = Locate(req.text, target, from == std::string::npos ? 0 : from);
      if (line == 0) std::tie(line, column) = Locate(req.text, target, 0);
      parsed.errors.push_back(
          {req.filename, line, column, is_flow ? "" : name, "notify: " + why, is_flow ? name : ""});
    }
  };
  if (target_problem && parsed.ok()) {
    for (const Job& job : parsed.file.jobs) check_targets(job.name, job.notify, false);
    for (const Flow& flow : parsed.file.flows) check_targets(flow.name, flow.notify, true);
    for (const Job& job : parsed.file.step_jobs) check_targets(job.name, job.notify, false);
  }
  if (!parsed.ok()) {
    json errors = json::array();
    for (const Diagnostic& d : parsed.errors) {
      errors.push_back({{"file", d.file},
                        {"line", d.line},
                        {"column", d.column},
                        {"job", d.job},
                        {"flow", d.flow},
                        {"step", d.step},
                        {"message", d.message},
                        {"text", d.ToString()}});
    }
    return ApplyOutcome{
        400,
        {{"error", "invalid_job_file"},
         {"message", std::to_string(parsed.errors.size()) + " error(s) in " + req.filename},
         {"errors", errors}}};
  }
  Result<store::RevisionRow> current = ctx_->store->CurrentRevision();
  if (!current.ok()) return current.status();
  if (req.base_revision >= 0 && req.base_revision != current->id) {
    return ApplyOutcome{
        409,
        {{"error", "conflict"},
         {"message", "the job file changed since revision " + std::to_string(req.base_revision) +
                         ": revision " + std::to_string(current->id) + " was applied by " +
                         current->author + " at " + FormatUtc(FromUnixMs(current->at_ms)) +
                         "; run `jobctl pull` to get it, then apply again"},
         {"revision", current->id},
         {"author", current->author},
         {"applied_at", FormatUtc(FromUnixMs(current->at_ms))}}};
  }
  // Diff against the jobs and flows the coordinator has now. A step's own job is part of its
  // flow: what changed in it is listed as the flow's ("step \"x\".command").
  wire::ApplyReply reply;
  reply.dry_run = req.dry_run;
  reply.revision = current->id;
  std::vector<bool> in_file(static_cast<size_t>(jobs_->id_limit()));  // by job id
  std::vector<Item> upserts, steps, flows;
  // The entry named `name`, and whether it is new (absent or removed); marks it in the file.
  auto find = [&](const std::string& name, Item& item) {
    item.entry = jobs_->FindByName(name);
    if (item.entry != nullptr) in_file[static_cast<size_t>(item.entry->id)] = true;
    return item.entry == nullptr || !item.entry->active;
  };
  // The stored definition of an existing entry: its timing, and its JSON when it reads.
  auto stored = [&](Item& item) -> std::optional<json> {
    Result<store::JobRow> row = ctx_->store->GetJob(item.entry->id);
    if (!row.ok()) return std::nullopt;
    item.before = row->timing;
    if (row->timing.kind != item.timing.kind) return std::nullopt;
    json j = json::parse(row->spec_json, nullptr, false);
    if (j.is_discarded()) return std::nullopt;
    return j;
  };
  auto job_changes = [&](Item& item, const Job& job) -> std::vector<std::string> {
    std::optional<json> j = stored(item);
    if (item.before && item.before->kind != item.timing.kind) return {"kind"};
    Result<Job> before = j ? wire::JobFromJson(*j) : Result<Job>(Status::Corrupt(""));
    return before.ok() ? wire::ChangedFields(*before, job)
                       : std::vector<std::string>{"(unreadable)"};
  };
  std::map<std::string, std::vector<std::string>> step_changes;  // by flow
  for (const Job& job : parsed.file.step_jobs) {
    Item item{job.name, wire::JobToJson(job).dump(), store::JobTiming::Of(job), &job};
    item.timing.kind = JobKind::kStep;
    item.flow = job.name.substr(0, job.name.find(':'));
    const std::string step = job.name.substr(job.name.find(':') + 1);
    if (find(job.name, item)) {
      steps.push_back(std::move(item));
      continue;
    }
    std::vector<std::string> fields = job_changes(item, job);
    if (fields.empty()) continue;
    for (const std::string& f : fields) {
      step_changes[item.flow].push_back("step \"" + step + "\"." + f);
    }
    steps.push_back(std::move(item));
  }
  for (const Job& job : parsed.file.jobs) {
    Item item{job.name, wire::JobToJson(job).dump(), store::JobTiming::Of(job), &job};
    if (find(job.name, item)) {
      reply.created.push_back(job.name);
      upserts.push_back(std::move(item));
      continue;
    }
    std::vector<std::string> fields = job_changes(item, job);
    if (fields.empty()) {
      reply.unchanged.push_back(job.name);
    } else {
      reply.changed.push_back({job.name, fields});
      upserts.push_back(std::move(item));
    }
  }
  for (const Flow& flow : parsed.file.flows) {
    Item item{flow.name, wire::FlowToJson(flow).dump(), store::JobTiming::Of(flow), nullptr};
    if (find(flow.name, item)) {
      reply.created.push_back(flow.name);
      flows.push_back(std::move(item));
      continue;
    }
    std::optional<json> j = stored(item);
    Result<Flow> before = j ? wire::FlowFromJson(*j) : Result<Flow>(Status::Corrupt(""));
    std::vector<std::string> fields = before.ok() ? wire::FlowChangedFields(*before, flow)
                                                  : std::vector<std::string>{"(unreadable)"};
    if (item.before && item.before->kind != item.timing.kind) fields = {"kind"};
    // What changed in its steps' own jobs is listed with the flow.
    for (const std::string& f : step_changes[flow.name]) fields.push_back(f);
    if (fields.empty()) {
      reply.unchanged.push_back(flow.name);
    } else {
      reply.changed.push_back({flow.name, fields});
      flows.push_back(std::move(item));
    }
  }
  // A job that becomes a flow (or a flow a job) keeps its name and its history, but its open
  // runs were made as the other kind: it changes once they have ended.
  for (const std::vector<Item>* items : {&upserts, &flows}) {
    for (const Item& item : *items) {
      if (item.entry == nullptr || item.entry->kind == item.timing.kind ||
          item.entry->open_runs == 0) {
        continue;
      }
      return ApplyOutcome{
          409,
          {{"error", "conflict"},
           {"message", item.name + " has " + std::to_string(item.entry->open_runs) +
                           " open run(s) as a " + std::string(JobKindName(item.entry->kind)) +
                           "; it can become a " + std::string(JobKindName(item.timing.kind)) +
                           " once they have ended (wait, or cancel them), and nothing of the "
                           "file was applied"}}};
    }
  }
  // Jobs, then flows, then the steps' own jobs (which name their flows).
  for (std::vector<Item>* more : {&flows, &steps}) {
    for (Item& item : *more) upserts.push_back(std::move(item));
  }
  std::vector<JobEntry*> removals;
  jobs_->ForEach([&](JobEntry& entry) {
    if (entry.active && !in_file[static_cast<size_t>(entry.id)]) removals.push_back(&entry);
  });
  for (JobEntry* e : removals) {
    if (e->kind != JobKind::kStep) reply.removed.push_back(std::string(e->name));
  }
  bool no_change = reply.created.empty() && reply.changed.empty() && reply.removed.empty() &&
                   upserts.empty() && removals.empty() && current->text == req.text;
  if (req.dry_run || no_change) return ApplyOutcome{200, reply.ToJson()};

  int64_t now = ctx_->NowMs();
  std::string summary = std::to_string(reply.created.size()) + " created, " +
                        std::to_string(reply.changed.size()) + " changed, " +
                        std::to_string(reply.removed.size()) + " removed";
  // Everything below is one write: any failure rolls the whole file back.
  Result<int64_t> revision = ctx_->batch->Write([&]() -> Result<int64_t> {
    Result<int64_t> id = ctx_->store->InsertRevision(req.text, req.author, now, summary);
    if (!id.ok()) return id;
    for (Item& item : upserts) {
      if (Status s = Upsert(item, *id, now); !s.ok()) return s;
    }
    for (JobEntry* e : removals) {
      if (Status s = ctx_->store->DeactivateJob(e->id, *id, now); !s.ok()) return s;
      e->active = false;
      scheduler_->Track(*e);
    }
    // The actor is the credential; an author named in the body is only what it claims.
    const Credential& who = req.credential;
    std::string detail = summary;
    if (!who.name.empty() && req.author != who.name) detail += "; author " + req.author;
    if (Status s = ctx_->store->InsertEvent(
            store::EventRow{0, now, "apply", who.name.empty() ? req.author : who.name,
                            who.token_id != 0 ? std::optional<int64_t>(who.token_id) : std::nullopt,
                            "revision " + std::to_string(*id), detail});
        !s.ok()) {
      return s;
    }
    return id;
  });
  if (!revision.ok()) return revision.status();
  log::Info("job file applied",
            {{"revision", *revision}, {"author", req.author}, {"summary", summary}});
  reply.revision = *revision;
  return ApplyOutcome{200, reply.ToJson(), true};
}

Status Applier::SetPaused(JobEntry& job, bool paused, const Credential& actor) {
  int64_t now = ctx_->NowMs();
  store::EventRow event{
      0, now, paused ? "pause" : "resume", actor.name, std::nullopt, std::string(job.name), ""};
  if (actor.token_id != 0) event.token_id = actor.token_id;
  if (Status s = ctx_->batch->Write([&] {
        Status w = ctx_->store->SetJobPaused(job.id, paused);
        return w.ok() ? ctx_->store->InsertEvent(event) : w;
      });
      !s.ok()) {
    return s;
  }
  bool was_paused = std::exchange(job.paused, paused);
  // Resuming keeps the next fire it had: instants missed while paused come due at once and
  // go through the misfire policy.
  if (was_paused && !paused) {
    scheduler_->Resume(job);
  } else {
    scheduler_->Track(job);
  }
  // A run created ahead of its instant (early dispatch) is one the pause would have held
  // back: it is canceled, and its granted shards never start.
  if (paused)
    scheduler_->CancelAhead(job, "canceled: the job was paused before this run's instant");
  return Status::Ok();
}

}  // namespace jobctl::coordinator
