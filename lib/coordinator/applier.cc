#include "coordinator/applier.h"

#include <algorithm>
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

Status Applier::Upsert(const Job& job, JobEntry* existing, int64_t revision, int64_t now) {
  Result<Schedule> schedule = Schedule::Parse(ScheduleSpecOf(job));
  if (!schedule.ok()) return schedule.status();
  store::JobTiming timing = store::JobTiming::Of(job);
  std::string spec = wire::JobToJson(job).dump();
  // Keep the next fire unless something that decides it changed.
  bool timing_changed = true;
  if (existing != nullptr) {
    const Job* before = existing->spec.get();
    timing_changed = !existing->active || existing->timing == 0 || before == nullptr ||
                     before->schedule != job.schedule || before->dialect != job.dialect ||
                     before->timezone != job.timezone || before->anchor_ms != job.anchor_ms ||
                     before->enabled != job.enabled;
    if (Status s = ctx_->store->UpdateJobSpec(existing->id, spec, timing, revision, now); !s.ok()) {
      return s;
    }
  }
  std::optional<int64_t> next_fire;
  bool reschedule = timing_changed || !existing->next_fire_ms;
  if (reschedule && schedule->delay() && existing != nullptr && existing->open_runs > 0) {
    // A fixed-delay job's next fire is set when its open runs end.
  } else if (reschedule) {
    std::optional<WallTime> next = schedule->Next(FromUnixMs(now));
    if (next) next_fire = ToUnixMs(*next);
  } else {
    next_fire = existing->next_fire_ms;
  }
  JobEntry* entry = existing;
  if (existing == nullptr) {
    Result<int64_t> id =
        ctx_->store->InsertJob({0, job.name, spec, true, false, next_fire, revision, timing}, now);
    if (!id.ok()) return id.status();
    entry = jobs_->Add(*id, job.name);
    if (entry == nullptr) {
      return Status::Corrupt("job " + job.name + " got id " + std::to_string(*id) +
                             ", which the coordinator cannot hold");
    }
  } else if (Status s = ctx_->store->SetNextFire(entry->id, next_fire); !s.ok()) {
    return s;
  }
  entry->next_fire_ms = next_fire;
  entry->active = true;
  entry->enabled = job.enabled;
  entry->misfire = job.misfire;
  entry->overlap = job.overlap;
  entry->misfire_cap = job.misfire_cap;
  entry->expect_success_within_ms = timing.expect_success_within_ms;
  entry->since_ms = now;  // the store's updated_ms, as Insert/UpdateJobSpec wrote it
  jobs_->SetTiming(*entry, job.schedule, job.dialect, job.timezone, job.anchor_ms);
  // Open runs keep the definition they started with; new runs load the new one.
  if (entry->open_runs > 0) {
    entry->spec = std::make_shared<const Job>(job);
  } else {
    entry->spec.reset();
  }
  if (reschedule) {
    ctx_->EventAfterCommit("scheduled",
                           {{"job", job.name}, {"next_fire_ms", next_fire.value_or(-1)}});
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
  for (size_t i = 0; target_problem && parsed.ok() && i < parsed.file.jobs.size(); ++i) {
    const Job& job = parsed.file.jobs[i];
    for (const std::string& target : job.notify.to) {
      std::string why = target_problem(target);
      if (why.empty()) continue;
      size_t from = req.text.find("\"" + job.name + "\"");
      auto [line, column] = Locate(req.text, target, from == std::string::npos ? 0 : from);
      if (line == 0) std::tie(line, column) = Locate(req.text, target, 0);
      parsed.errors.push_back({req.filename, line, column, job.name, "notify: " + why});
    }
  }
  // Flows are read and checked, not yet run: refused rather than dropped.
  for (size_t i = 0; i < parsed.file.flows.size(); ++i) {
    const Flow& flow = parsed.file.flows[i];
    const JobFileResult::Place& at = parsed.flow_places[i];
    parsed.errors.push_back({req.filename, at.line, at.column, "",
                             "this coordinator does not run flows yet; remove the [[flow]] "
                             "to apply the file",
                             flow.name});
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
  // Diff against the jobs the coordinator has now.
  wire::ApplyReply reply;
  reply.dry_run = req.dry_run;
  reply.revision = current->id;
  std::vector<bool> in_file(static_cast<size_t>(jobs_->id_limit()));  // by job id
  std::vector<std::pair<const Job*, JobEntry*>> upserts;
  for (const Job& job : parsed.file.jobs) {
    JobEntry* entry = jobs_->FindByName(job.name);
    if (entry != nullptr) in_file[static_cast<size_t>(entry->id)] = true;
    if (entry == nullptr || !entry->active) {
      reply.created.push_back(job.name);
      upserts.push_back({&job, entry});
      continue;
    }
    Result<store::JobRow> row = ctx_->store->GetJob(entry->id);
    Result<Job> before = row.ok() ? wire::JobFromJson(json::parse(row->spec_json, nullptr, false))
                                  : Result<Job>(row.status());
    std::vector<std::string> fields =
        before.ok() ? wire::ChangedFields(*before, job) : std::vector<std::string>{"(unreadable)"};
    if (fields.empty()) {
      reply.unchanged.push_back(job.name);
    } else {
      reply.changed.push_back({job.name, fields});
      if (before.ok()) entry->spec = std::make_shared<const Job>(*before);
      upserts.push_back({&job, entry});
    }
  }
  std::vector<JobEntry*> removals;
  jobs_->ForEach([&](JobEntry& entry) {
    if (entry.active && !in_file[static_cast<size_t>(entry.id)]) removals.push_back(&entry);
  });
  for (JobEntry* e : removals) reply.removed.push_back(std::string(e->name));
  bool no_change = reply.created.empty() && reply.changed.empty() && reply.removed.empty() &&
                   current->text == req.text;
  if (req.dry_run || no_change) return ApplyOutcome{200, reply.ToJson()};

  int64_t now = ctx_->NowMs();
  std::string summary = std::to_string(reply.created.size()) + " created, " +
                        std::to_string(reply.changed.size()) + " changed, " +
                        std::to_string(reply.removed.size()) + " removed";
  // Everything below is one write: any failure rolls the whole file back.
  Result<int64_t> revision = ctx_->batch->Write([&]() -> Result<int64_t> {
    Result<int64_t> id = ctx_->store->InsertRevision(req.text, req.author, now, summary);
    if (!id.ok()) return id;
    for (auto& [job, entry] : upserts) {
      if (Status s = Upsert(*job, entry, *id, now); !s.ok()) return s;
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
  return Status::Ok();
}

}  // namespace jobctl::coordinator
