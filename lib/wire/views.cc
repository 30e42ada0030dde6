#include "wire/views.h"

#include "wire/fields.h"
#include "wire/job_json.h"

namespace jobctl::wire {
namespace {

using nlohmann::json;

template <typename T>
json Nullable(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

// One Read per message: the fields in the order ToJson writes them.
void Read(FieldReader& r, ShardView* v) {
  r.Need("index", &v->index)
      .Need("agent", &v->agent)
      .Need("state", &v->state)
      .Need("attempt", &v->attempt)
      .Opt("token", &v->token)
      .Opt("exit_code", &v->exit_code)
      .Need("outcome", &v->outcome)
      .Need("message", &v->message)
      .Need("started_at", &v->started_at)
      .Need("finished_at", &v->finished_at)
      .Opt("peak_rss_bytes", &v->peak_rss_bytes)
      .Opt("cpu_ms", &v->cpu_ms);
}

void Read(FieldReader& r, StepView* v) {
  r.Need("name", &v->name)
      .Need("job", &v->job)
      .Need("needs", &v->needs)
      .Need("when", &v->when)
      .Need("state", &v->state)
      .Need("run", &v->run)
      .Need("kept", &v->kept)
      .Need("note", &v->note)
      .Need("shard_total", &v->shard_total)
      .Need("shards_ok", &v->shards_ok)
      .Need("hosts", &v->hosts)
      .Need("created_at", &v->created_at)
      .Need("finished_at", &v->finished_at);
}

void Read(FieldReader& r, RunView* v) {
  r.Need("id", &v->id)
      .Need("job", &v->job)
      .Need("reason", &v->reason)
      .Need("scheduled_at", &v->scheduled_at)
      .Need("created_at", &v->created_at)
      .Need("not_before", &v->not_before)
      .Opt("jitter_ms", &v->jitter_ms)
      .Need("finished_at", &v->finished_at)
      .Need("state", &v->state)
      .Need("trace_id", &v->trace_id)
      .Need("note", &v->note)
      .Need("idempotency_key", &v->idempotency_key)
      .Need("shard_total", &v->shard_total)
      .List("shards", &v->shards, [](FieldReader& item, ShardView* s) { Read(item, s); })
      .Opt("existing", &v->existing)
      .Opt("done", &v->done)
      .Opt("output_pruned", &v->output_pruned)
      .Opt("flow_run", &v->flow_run)
      .Opt("step", &v->step)
      .OptList("steps", &v->steps, [](FieldReader& item, StepView* s) { Read(item, s); });
}

void Read(FieldReader& r, JobSummaryView* v) {
  std::optional<bool> overdue;
  std::optional<std::string> kind;
  r.Need("name", &v->name)
      .Need("next_fire", &v->next_fire)
      .Need("paused", &v->paused)
      .Need("enabled", &v->enabled)
      .Need("open_runs", &v->open_runs)
      .Opt("last_state", &v->last_state)
      .Need("last_finished_at", &v->last_finished_at)
      .Opt("last_success", &v->last_success)
      .Opt("overdue", &overdue)
      .Opt("kind", &kind)
      .Opt("schedule", &v->schedule)
      .Opt("timezone", &v->timezone)
      .Opt("description", &v->description)
      .Opt("on", &v->on);
  v->overdue = overdue.value_or(false);
  v->kind = kind.value_or("job");
}

void Read(FieldReader& r, JobFileView* v) {
  r.Need("revision", &v->revision)
      .Need("text", &v->text)
      .Need("author", &v->author)
      .Need("applied_at", &v->applied_at);
}

void Read(FieldReader& r, ApplyReply::Changed* v) {
  r.Need("name", &v->name).Need("fields", &v->fields);
}

void Read(FieldReader& r, ApplyReply* v) {
  r.Need("dry_run", &v->dry_run)
      .Need("created", &v->created)
      .List("changed", &v->changed,
            [](FieldReader& item, ApplyReply::Changed* c) { Read(item, c); })
      .Need("removed", &v->removed)
      .Need("unchanged", &v->unchanged)
      .Need("revision", &v->revision);
}

void Read(FieldReader& r, AgentView* v) {
  r.Need("name", &v->name)
      .Need("labels", &v->labels)
      .Need("slots", &v->slots)
      .Need("running", &v->running)
      .Need("version", &v->version)
      .Need("draining", &v->draining)
      .Need("connected", &v->connected)
      .Need("last_seen", &v->last_seen);
}

void Read(FieldReader& r, AgentRemoved* v) {
  r.Need("name", &v->name)
      .Need("removed", &v->removed)
      .Need("credentials_revoked", &v->credentials_revoked);
}

void Read(FieldReader& r, TokenCreated* v) {
  r.Need("id", &v->id)
      .Need("name", &v->name)
      .Need("role", &v->role)
      .Need("jobs", &v->jobs)
      .Need("agent", &v->agent)
      .Need("labels", &v->labels)
      .Need("expires_at", &v->expires_at)
      .Need("token", &v->token);
}

void Read(FieldReader& r, TokenView* v) {
  r.Need("id", &v->id)
      .Need("name", &v->name)
      .Need("role", &v->role)
      .Need("jobs", &v->jobs)
      .Need("agent", &v->agent)
      .Need("labels", &v->labels)
      .Need("created_at", &v->created_at)
      .Need("expires_at", &v->expires_at)
      .Need("revoked_at", &v->revoked_at);
}

void Read(FieldReader& r, AuditEvent* v) {
  r.Need("id", &v->id)
      .Need("at", &v->at)
      .Need("action", &v->action)
      .Need("actor", &v->actor)
      .Opt("token_id", &v->token_id)
      .Need("subject", &v->subject)
      .Need("detail", &v->detail);
}

void Read(FieldReader& r, MissView* v) {
  r.Need("first", &v->first)
      .Need("first_ms", &v->first_ms)
      .Need("last", &v->last)
      .Need("last_ms", &v->last_ms)
      .Need("count", &v->count)
      .Need("reason", &v->reason);
}

void Read(FieldReader& r, LogChunkView* v) {
  r.Need("id", &v->id)
      .Need("shard", &v->shard)
      .Need("attempt", &v->attempt)
      .Need("seq", &v->seq)
      .Need("stream", &v->stream)
      .Need("at", &v->at)
      .Need("data", &v->data);
}

void Read(FieldReader& r, LogPage* v) {
  r.List("chunks", &v->chunks, [](FieldReader& item, LogChunkView* c) { Read(item, c); })
      .Need("next", &v->next)
      .Need("done", &v->done)
      .Opt("pruned", &v->pruned);
}

void Read(FieldReader& r, JobBytesView* v) {
  r.Need("job", &v->job).Need("bytes", &v->bytes).Need("runs", &v->runs);
}

void Read(FieldReader& r, StoreStatsView* v) {
  r.Need("store_bytes", &v->store_bytes)
      .Need("store_free_bytes", &v->store_free_bytes)
      .Need("logs_bytes", &v->logs_bytes)
      .Need("logs_free_bytes", &v->logs_free_bytes)
      .Need("reclaims_space", &v->reclaims_space)
      .Need("runs", &v->runs)
      .Need("oldest_run", &v->oldest_run)
      .Need("output_bytes", &v->output_bytes)
      .List("top_jobs", &v->top_jobs, [](FieldReader& item, JobBytesView* j) { Read(item, j); })
      .Opt("backend", &v->backend);
}

template <typename T>
Result<T> Decode(const json& j) {
  FieldReader r(j);
  T v;
  Read(r, &v);
  if (Status s = r.Finish(T::kName); !s.ok()) return s;
  return v;
}

json Strings(const std::vector<std::string>& v) { return v; }

}  // namespace

template <typename T>
json ListToJson(const std::vector<T>& items) {
  json out = json::array();
  for (const T& item : items) out.push_back(item.ToJson());
  return out;
}

template <typename T>
Result<std::vector<T>> ListFromJson(const json& j) {
  const std::string name = std::string(T::kName) + " list";
  if (!j.is_array()) {
    return Status::InvalidArgument(name + ": not a list " + std::string(kVersionSkewHint));
  }
  // The reader of an empty object carries the first bad item's place out of ReadElements.
  const json none = json::object();
  FieldReader r(none);
  std::vector<T> out;
  r.ReadElements(j, "", &out, [](FieldReader& item, T* v) { Read(item, v); });
  if (Status s = r.Finish(name); !s.ok()) return s;
  return out;
}

json ShardView::ToJson() const {
  return {{"index", index},
          {"agent", agent},
          {"state", state},
          {"attempt", attempt},
          {"token", Nullable(token)},
          {"exit_code", Nullable(exit_code)},
          {"outcome", outcome},
          {"message", message},
          {"started_at", started_at},
          {"finished_at", finished_at},
          {"peak_rss_bytes", Nullable(peak_rss_bytes)},
          {"cpu_ms", Nullable(cpu_ms)}};
}
Result<ShardView> ShardView::FromJson(const json& j) { return Decode<ShardView>(j); }

json StepView::ToJson() const {
  return {{"name", name},
          {"job", job},
          {"needs", needs},
          {"when", when},
          {"state", state},
          {"run", run},
          {"kept", kept},
          {"note", note},
          {"shard_total", shard_total},
          {"shards_ok", shards_ok},
          {"hosts", hosts},
          {"created_at", created_at},
          {"finished_at", finished_at}};
}

json RunView::ToJson() const {
  json out = {{"id", id},
              {"job", job},
              {"reason", reason},
              {"scheduled_at", scheduled_at},
              {"created_at", created_at},
              {"not_before", not_before},
              {"jitter_ms", Nullable(jitter_ms)},
              {"finished_at", finished_at},
              {"state", state},
              {"trace_id", trace_id},
              {"note", note},
              {"idempotency_key", idempotency_key},
              {"shard_total", shard_total},
              {"shards", ListToJson(shards)}};
  if (existing) out["existing"] = *existing;
  if (done) out["done"] = *done;
  if (output_pruned) out["output_pruned"] = *output_pruned;
  if (flow_run) out["flow_run"] = *flow_run;
  if (step) out["step"] = *step;
  if (steps) out["steps"] = ListToJson(*steps);
  return out;
}
Result<RunView> RunView::FromJson(const json& j) { return Decode<RunView>(j); }

json JobSummaryView::ToJson() const {
  json out = {{"name", name},
              {"next_fire", next_fire},
              {"paused", paused},
              {"enabled", enabled},
              {"open_runs", open_runs},
              {"last_state", Nullable(last_state)},
              {"last_finished_at", last_finished_at},
              {"last_success", Nullable(last_success)},
              {"overdue", overdue},
              {"kind", kind}};
  if (schedule) out["schedule"] = *schedule;
  if (timezone) out["timezone"] = *timezone;
  if (description) out["description"] = *description;
  if (on) out["on"] = *on;
  return out;
}
Result<JobSummaryView> JobSummaryView::FromJson(const json& j) { return Decode<JobSummaryView>(j); }

json JobView::ToJson() const {
  json out = summary.ToJson();
  if (flow) {
    out["flow"] = FlowToJson(*flow);
  } else {
    out["definition"] = JobToJson(definition);
  }
  out["next_fires"] = Strings(next_fires);
  out["recent_runs"] = ListToJson(recent_runs);
  return out;
}
Result<JobView> JobView::FromJson(const json& j) {
  FieldReader r(j);
  JobView v;
  json definition;
  Read(r, &v.summary);
  const bool is_flow = v.summary.kind == "flow";
  if (is_flow) {
    r.Need("flow", &definition);
  } else {
    r.Need("definition", &definition);
  }
  r.Need("next_fires", &v.next_fires)
      .List("recent_runs", &v.recent_runs,
            [](FieldReader& item, RunView* run) { Read(item, run); });
  if (Status s = r.Finish(kName); !s.ok()) return s;
  if (is_flow) {
    Result<Flow> flow = FlowFromJson(definition);
    if (!flow.ok()) {
      return Status::InvalidArgument(std::string(kName) + ": field \"flow\" is not a flow (" +
                                     flow.status().message() + ") " +
                                     std::string(kVersionSkewHint));
    }
    v.flow = std::move(*flow);
    return v;
  }
  Result<Job> job = JobFromJson(definition);
  if (!job.ok()) {
    return Status::InvalidArgument(std::string(kName) + ": field \"definition\" is not a job (" +
                                   job.status().message() + ") " + std::string(kVersionSkewHint));
  }
  v.definition = std::move(job).value();
  return v;
}

json JobFileView::ToJson() const {
  return {{"revision", revision}, {"text", text}, {"author", author}, {"applied_at", applied_at}};
}
Result<JobFileView> JobFileView::FromJson(const json& j) { return Decode<JobFileView>(j); }

json ApplyReply::ToJson() const {
  json changes = json::array();
  for (const Changed& c : changed) changes.push_back({{"name", c.name}, {"fields", c.fields}});
  return {{"dry_run", dry_run},          {"created", Strings(created)},     {"changed", changes},
          {"removed", Strings(removed)}, {"unchanged", Strings(unchanged)}, {"revision", revision}};
}
Result<ApplyReply> ApplyReply::FromJson(const json& j) { return Decode<ApplyReply>(j); }

json AgentView::ToJson() const {
  return {{"name", name},           {"labels", labels},      {"slots", slots},
          {"running", running},     {"version", version},    {"draining", draining},
          {"connected", connected}, {"last_seen", last_seen}};
}
Result<AgentView> AgentView::FromJson(const json& j) { return Decode<AgentView>(j); }

json AgentRemoved::ToJson() const {
  return {{"name", name}, {"removed", removed}, {"credentials_revoked", credentials_revoked}};
}
Result<AgentRemoved> AgentRemoved::FromJson(const json& j) { return Decode<AgentRemoved>(j); }

json TokenCreated::ToJson() const {
  return {{"id", id},
          {"name", name},
          {"role", role},
          {"jobs", jobs},
          {"agent", agent},
          {"labels", labels},
          {"expires_at", expires_at},
          {"token", token}};
}
Result<TokenCreated> TokenCreated::FromJson(const json& j) { return Decode<TokenCreated>(j); }

json TokenView::ToJson() const {
  return {{"id", id},
          {"name", name},
          {"role", role},
          {"jobs", jobs},
          {"agent", agent},
          {"labels", labels},
          {"created_at", created_at},
          {"expires_at", expires_at},
          {"revoked_at", revoked_at}};
}
Result<TokenView> TokenView::FromJson(const json& j) { return Decode<TokenView>(j); }

json AuditEvent::ToJson() const {
  return {{"id", id},
          {"at", at},
          {"action", action},
          {"actor", actor},
          {"token_id", Nullable(token_id)},
          {"subject", subject},
          {"detail", detail}};
}
Result<AuditEvent> AuditEvent::FromJson(const json& j) { return Decode<AuditEvent>(j); }

json MissView::ToJson() const {
  return {{"first", first},     {"first_ms", first_ms}, {"last", last},
          {"last_ms", last_ms}, {"count", count},       {"reason", reason}};
}
Result<MissView> MissView::FromJson(const json& j) { return Decode<MissView>(j); }

json LogChunkView::ToJson() const {
  return {{"id", id},         {"shard", shard}, {"attempt", attempt}, {"seq", seq},
          {"stream", stream}, {"at", at},       {"data", data}};
}
Result<LogChunkView> LogChunkView::FromJson(const json& j) { return Decode<LogChunkView>(j); }

json LogPage::ToJson() const {
  json out = {{"chunks", ListToJson(chunks)}, {"next", next}, {"done", done}};
  if (pruned) out["pruned"] = *pruned;
  return out;
}
Result<LogPage> LogPage::FromJson(const json& j) { return Decode<LogPage>(j); }

json JobBytesView::ToJson() const { return {{"job", job}, {"bytes", bytes}, {"runs", runs}}; }

json StoreStatsView::ToJson() const {
  json j = {{"store_bytes", store_bytes},       {"store_free_bytes", store_free_bytes},
            {"logs_bytes", logs_bytes},         {"logs_free_bytes", logs_free_bytes},
            {"reclaims_space", reclaims_space}, {"runs", runs},
            {"oldest_run", oldest_run},         {"output_bytes", output_bytes},
            {"top_jobs", ListToJson(top_jobs)}};
  if (backend) j["backend"] = *backend;
  return j;
}
Result<StoreStatsView> StoreStatsView::FromJson(const json& j) { return Decode<StoreStatsView>(j); }

#define JOBCTL_WIRE_LIST(T)                                 \
  template json ListToJson<T>(const std::vector<T>& items); \
  template Result<std::vector<T>> ListFromJson<T>(const json& j);
JOBCTL_WIRE_LIST(ShardView)
JOBCTL_WIRE_LIST(RunView)
JOBCTL_WIRE_LIST(JobSummaryView)
JOBCTL_WIRE_LIST(AgentView)
JOBCTL_WIRE_LIST(TokenView)
JOBCTL_WIRE_LIST(AuditEvent)
JOBCTL_WIRE_LIST(MissView)
JOBCTL_WIRE_LIST(LogChunkView)
#undef JOBCTL_WIRE_LIST

}  // namespace jobctl::wire
