// The read routes: job file, jobs, runs (and waiting for one), output, agents, misses, and
// the audit trail.
#include <algorithm>
#include <limits>

#include "base/base64.h"
#include "coordinator/api.h"
#include "model/time_format.h"
#include "model/trace_context.h"
#include "wire/job_json.h"

namespace jobctl::coordinator {
namespace {

using nlohmann::json;

// What one ?before= read of output returns at most.
constexpr size_t kTailBytes = 1 << 20;

std::optional<int64_t> IntParam(const std::map<std::string, std::string>& m, const char* key) {
  auto it = m.find(key);
  if (it == m.end() || it->second.empty()) return std::nullopt;
  char* end = nullptr;
  long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (*end != '\0') return std::nullopt;
  return v;
}

// The words of a ?label= filter or of a job's `on` text: split at spaces and tabs, which no
// selector holds.
std::vector<std::string_view> LabelTerms(std::string_view text) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    size_t end = text.find_first_of(" \t", i);
    if (end == std::string_view::npos) end = text.size();
    if (end > i) out.push_back(text.substr(i, end - i));
    i = end + 1;
  }
  return out;
}

// Whether a job's `on` text ("role=web dc!=fra1") has every term: a selector as written
// ("role=web", "dc!=fra1") or a key alone ("role": any selector on it).
bool HasLabels(std::string_view on, const std::vector<std::string_view>& terms) {
  std::vector<std::string_view> have = LabelTerms(on);
  return std::all_of(terms.begin(), terms.end(), [&have](std::string_view term) {
    bool key_only = term.find('=') == std::string_view::npos;
    return std::any_of(have.begin(), have.end(), [&](std::string_view s) {
      if (s == term) return true;
      if (!key_only || s.size() <= term.size() || s.substr(0, term.size()) != term) return false;
      char next = s[term.size()];
      return next == '=' || next == '!';
    });
  });
}

}  // namespace

void Api::GetJobFile(Call& c) {
  Result<store::RevisionRow> rev = ctx_->store->CurrentRevision();
  if (!rev.ok()) return Fail(c, rev.status());
  wire::JobFileView file{rev->id, rev->text, rev->author,
                         rev->id ? FormatUtc(FromUnixMs(rev->at_ms)) : ""};
  Json(c, 200, file.ToJson());
}

void Api::ListJobs(Call& c) {
  const auto& q = c.req.query;
  // ?limit=L[&offset=N][&order=name|health][&q=TEXT][&label=TERMS]: one page of the list,
  // its length in X-Total-Count. Without limit, every job by name (as jobctl list reads it).
  std::optional<int64_t> limit = IntParam(q, "limit");
  if (q.count("limit") && (!limit || *limit < 1 || *limit > 1000)) {
    return FailWith(c, 400, "bad_request", "limit: expected 1 to 1000");
  }
  std::optional<int64_t> offset = IntParam(q, "offset");
  if (q.count("offset") && (!offset || *offset < 0)) {
    return FailWith(c, 400, "bad_request", "offset: expected a number of 0 or more");
  }
  bool by_health = false;
  if (auto it = q.find("order"); it != q.end() && !it->second.empty()) {
    if (it->second != "name" && it->second != "health") {
      return FailWith(c, 400, "bad_request", "order: expected name or health");
    }
    by_health = it->second == "health";
  }
  std::string_view text;
  if (auto it = q.find("q"); it != q.end()) text = it->second;
  if (text.size() > 256) return FailWith(c, 400, "bad_request", "q: longer than 256 bytes");
  std::vector<std::string_view> labels;
  if (auto it = q.find("label"); it != q.end()) {
    if (it->second.size() > 256) {
      return FailWith(c, 400, "bad_request", "label: longer than 256 bytes");
    }
    labels = LabelTerms(it->second);
  }
  // Jobs share a few `on` texts: each is matched once.
  std::vector<int8_t> label_match;
  std::vector<const JobEntry*> jobs;
  p_.jobs->ForEach([&](const JobEntry& j) {
    // A step's own job is shown with its flow.
    if (!j.active || j.kind == JobKind::kStep || !Auth::Allows(c.who, Role::kRead, j.name) ||
        (!text.empty() && j.name.find(text) == std::string_view::npos)) {
      return;
    }
    if (!labels.empty()) {
      if (j.labels >= label_match.size()) label_match.resize(j.labels + 1, -1);
      int8_t& m = label_match[j.labels];
      if (m < 0) m = HasLabels(p_.jobs->LabelsText(j), labels) ? 1 : 0;
      if (m == 0) return;
    }
    jobs.push_back(&j);
  });
  const int64_t now = ctx_->NowMs();
  // Health: failing jobs first, then overdue ones, then the rest; by name within each.
  auto rank = [now](const JobEntry* j) { return j->Failing() ? 0 : j->Overdue(now) ? 1 : 2; };
  auto before = [&](const JobEntry* a, const JobEntry* b) {
    if (by_health) {
      int ra = rank(a), rb = rank(b);
      if (ra != rb) return ra < rb;
    }
    return a->name < b->name;
  };
  const size_t total = jobs.size();
  size_t first = std::min(total, static_cast<size_t>(offset.value_or(0)));
  size_t last = limit ? std::min(total, first + static_cast<size_t>(*limit)) : total;
  // Only the page is put in order: what comes before it is only separated from it.
  if (!limit) {
    std::sort(jobs.begin(), jobs.end(), before);
  } else {
    if (first > 0) std::nth_element(jobs.begin(), jobs.begin() + first, jobs.end(), before);
    std::partial_sort(jobs.begin() + first, jobs.begin() + last, jobs.end(), before);
  }
  std::vector<wire::JobSummaryView> out;
  out.reserve(last - first);
  for (size_t i = first; i < last; ++i) {
    const JobEntry* j = jobs[i];
    wire::JobSummaryView item = JobSummaryOf(*j);
    Result<store::JobRow> row = ctx_->store->GetJob(j->id);
    if (row.ok()) {
      json spec = json::parse(row->spec_json, nullptr, false);
      item.schedule = spec.value("schedule", "");
      item.timezone = spec.value("timezone", "");
      item.description = spec.value("description", "");
    }
    std::string_view on = p_.jobs->LabelsText(*j);
    item.on.emplace();
    for (std::string_view s : LabelTerms(on)) item.on->emplace_back(s);
    out.push_back(std::move(item));
  }
  http::Response r{200,
                   "application/json",
                   wire::ListToJson(out).dump(-1, ' ', false, json::error_handler_t::replace),
                   {{"X-Total-Count", std::to_string(total)}}};
  c.res->Send(std::move(r));
}

void Api::ShowJob(Call& c) {
  JobEntry* job = JobOr404(c);
  if (job == nullptr) return;
  Result<store::JobRow> row = ctx_->store->GetJob(job->id);
  if (!row.ok()) return Fail(c, row.status());
  wire::JobView out;
  out.summary = JobSummaryOf(*job);
  std::optional<Flow> flow;
  if (job->kind == JobKind::kFlow) {
    Result<Flow> f = wire::FlowFromJson(json::parse(row->spec_json, nullptr, false));
    if (!f.ok()) {
      return Fail(c, Status::Corrupt("flow " + out.summary.name + ": " + f.status().message()));
    }
    flow = std::move(*f);
  } else {
    Result<Job> definition = wire::JobFromJson(json::parse(row->spec_json, nullptr, false));
    if (!definition.ok())
      return Fail(
          c, Status::Corrupt("job " + out.summary.name + ": " + definition.status().message()));
    out.definition = std::move(definition).value();
  }
  // Environment values may be secrets: only an admin reads them (as in the job file).
  if (c.who.role != Role::kAdmin) {
    for (auto& [name, value] : out.definition.env) value = "(hidden)";
  }
  std::optional<int64_t> t = job->next_fire_ms;
  Result<std::shared_ptr<const Schedule>> schedule = p_.jobs->ScheduleOf(*job);
  // A fixed delay's later fires depend on when its runs end: only the next one is known.
  // ?fires=N asks for up to 50 (the console shows 10); 5 by default.
  const int asked =
      static_cast<int>(std::clamp<int64_t>(IntParam(c.req.query, "fires").value_or(5), 1, 50));
  const int known = schedule.ok() && (*schedule)->delay() ? 1 : asked;
  for (int i = 0; i < known && t && job->schedulable() && schedule.ok(); ++i) {
    out.next_fires.push_back(*FormatInZone(FromUnixMs(*t), (*schedule)->zone().name()));
    std::optional<WallTime> after = (*schedule)->Next(FromUnixMs(*t));
    t = after ? std::optional<int64_t>(ToUnixMs(*after)) : std::nullopt;
  }
  store::RunFilter filter;
  filter.job_id = job->id;
  filter.limit = 10;
  Result<std::vector<RunRecord>> runs = ctx_->store->ListRuns(filter);
  if (!runs.ok()) return Fail(c, runs.status());
  for (const RunRecord& r : *runs) out.recent_runs.push_back(RunViewOf(r, c.who));
  out.flow = std::move(flow);
  Json(c, 200, out.ToJson());
}

void Api::ListRuns(Call& c) {
  store::RunFilter f;
  const auto& q = c.req.query;
  if (auto it = q.find("job"); it != q.end() && !it->second.empty()) {
    JobEntry* job = p_.jobs->FindByName(it->second);
    if (job == nullptr) return FailWith(c, 404, "not_found", "no such job: " + it->second);
    if (!ReadsJob(c.who, std::string(job->name))) return FailOutOfScope(c, "");
    f.job_id = job->id;
  } else if (c.who.role != Role::kAdmin && !c.who.jobs_glob.empty() &&
             (q.find("trace") == q.end() || q.find("trace")->second.empty())) {
    // A trace's runs are listed to such a token too: only those of the jobs it may read.
    return FailOutOfScope(c, ": name one with job=");
  }
  if (auto it = q.find("state"); it != q.end() && !it->second.empty()) {
    f.state = ParseRunState(it->second);
    if (!f.state) return FailWith(c, 400, "bad_request", "unknown state \"" + it->second + "\"");
  }
  if (auto it = q.find("since"); it != q.end() && !it->second.empty()) {
    Result<WallTime> since = ParseInstant(it->second);
    if (!since.ok()) return Fail(c, since.status());
    f.since_ms = ToUnixMs(*since);
  }
  if (auto it = q.find("trace"); it != q.end() && !it->second.empty()) {
    if (!IsTraceId(it->second)) {
      return FailWith(c, 400, "bad_request", "trace: expected 32 lowercase hex digits");
    }
    f.trace_id = it->second;
  }
  f.limit = static_cast<int>(std::clamp<int64_t>(IntParam(q, "limit").value_or(50), 1, 10'000));
  f.before_id = IntParam(q, "before");
  Result<std::vector<RunRecord>> runs = ctx_->store->ListRuns(f);
  if (!runs.ok()) return Fail(c, runs.status());
  std::vector<wire::RunView> out;
  // Each flow run's steps are a read of the store: a long list has them for its first
  // kListedFlowRuns flow runs only (GET /v1/runs/ID has them always).
  constexpr int kListedFlowRuns = 100;
  int flow_runs = 0;
  for (const RunRecord& r : *runs) {
    if (!f.job_id && !ReadsJob(c.who, r.job)) continue;
    // Open runs are current in memory; the store has them as of the last commit.
    const RunRecord* open = p_.book->FindOpen(r.id);
    const bool with_steps = RunBook::IsFlowRun(r) && flow_runs++ < kListedFlowRuns;
    out.push_back(RunViewOf(open ? *open : r, c.who, with_steps));
    if (!open) {
      if (Status s = MarkPruned(out.back()); !s.ok()) return Fail(c, s);
    }
  }
  Json(c, 200, wire::ListToJson(out));
}

void Api::GetRun(Call& c) {
  std::optional<int64_t> id = IntParam(c.params, "id");
  if (!id) return FailWith(c, 400, "bad_request", "run ids are numbers");
  if (!RunReadable(c, *id)) return;
  if (const RunRecord* open = p_.book->FindOpen(*id)) {
    return Json(c, 200, RunViewOf(*open, c.who).ToJson());
  }
  Result<std::optional<RunRecord>> run = ctx_->store->GetRun(*id);
  if (!run.ok()) return Fail(c, run.status());
  if (!*run) return FailWith(c, 404, "not_found", "no such run: " + c.params["id"]);
  wire::RunView out = RunViewOf(**run, c.who);
  if (Status s = MarkPruned(out); !s.ok()) return Fail(c, s);
  Json(c, 200, out.ToJson());
}

Status Api::MarkPruned(wire::RunView& v) {
  Result<std::optional<store::RunOutput>> output = ctx_->logs->OutputOf(v.id);
  if (!output.ok()) return output.status();
  if (*output && (*output)->pruned_ms) v.output_pruned = (*output)->pruned_reason;
  return Status::Ok();
}

void Api::WaitRun(Call& c) {
  std::optional<int64_t> id = IntParam(c.params, "id");
  if (!id) return FailWith(c, 400, "bad_request", "run ids are numbers");
  if (!RunReadable(c, *id)) return;
  int64_t timeout =
      std::clamp<int64_t>(IntParam(c.req.query, "timeout_ms").value_or(30'000), 0, 300'000);
  int64_t run_id = *id;
  if (p_.book->FindOpen(run_id) == nullptr || timeout == 0) return AnswerWait(c.res, run_id, c.who);
  // Answer at the end of the run (the run book wakes -run after its commit) or with the
  // current state at the deadline. Only the responder waits: the request and whatever body
  // came with it are released when this returns, and a client that hangs up takes its
  // waiter with it.
  std::shared_ptr<http::Responder> res = c.res;
  LogHub* hub = p_.log_hub;
  LogHub::WaiterId parked =
      hub->Park(-run_id, ctx_->MonoMs() + timeout,
                [this, res, run_id, who = c.who] { AnswerWait(res, run_id, who); });
  res->OnClose([hub, parked] { hub->Cancel(parked); });
}

void Api::AnswerWait(std::shared_ptr<http::Responder> res, int64_t run_id, const Principal& who) {
  if (!res->alive()) return;
  Call c{{}, std::move(res), {{"id", std::to_string(run_id)}}, who};
  if (const RunRecord* open = p_.book->FindOpen(run_id)) {
    wire::RunView out = RunViewOf(*open, c.who);
    out.done = false;
    return Json(c, 200, out.ToJson());
  }
  Result<std::optional<RunRecord>> run = ctx_->store->GetRun(run_id);
  if (!run.ok()) return Fail(c, run.status());
  if (!*run) return FailWith(c, 404, "not_found", "no such run: " + std::to_string(run_id));
  wire::RunView out = RunViewOf(**run, c.who);
  out.done = true;
  Json(c, 200, out.ToJson());
}

void Api::ReadLogs(Call& c) {
  std::optional<int64_t> id = IntParam(c.params, "id");
  if (!id) return FailWith(c, 400, "bad_request", "run ids are numbers");
  if (!RunReadable(c, *id)) return;
  int64_t after = IntParam(c.req.query, "after").value_or(0);
  int64_t wait = std::clamp<int64_t>(IntParam(c.req.query, "wait_ms").value_or(0), 0, 60'000);
  // ?before=ID|end: the last MiB of output stored before that chunk id (read backwards by
  // the console); never waits.
  if (auto it = c.req.query.find("before"); it != c.req.query.end()) {
    std::optional<int64_t> before = IntParam(c.req.query, "before");
    if (it->second != "end" && (!before || *before < 1)) {
      return FailWith(c, 400, "bad_request", "before: expected a chunk id or end");
    }
    if (wait > 0) return FailWith(c, 400, "bad_request", "before and wait_ms exclude each other");
  }
  // A follower keeps its query while it waits, nothing else of the request.
  c.req.body = std::string();
  c.req.headers.clear();
  auto parked = std::make_shared<LogHub::WaiterId>(0);
  c.res->OnClose([hub = p_.log_hub, parked] {
    if (*parked != 0) hub->Cancel(*parked);
  });
  SendLogs(std::make_shared<Call>(std::move(c)), parked, *id, after, ctx_->MonoMs() + wait);
}

void Api::SendLogs(std::shared_ptr<Call> c, std::shared_ptr<LogHub::WaiterId> parked,
                   int64_t run_id, int64_t after, int64_t deadline) {
  *parked = 0;
  if (!c->res->alive()) return;
  store::LogQuery q;
  q.run_id = run_id;
  q.after_id = after;
  q.shard = IntParam(c->req.query, "shard");
  if (auto it = c->req.query.find("before"); it != c->req.query.end()) {
    q.before_id = it->second == "end" ? std::numeric_limits<int64_t>::max()
                                      : IntParam(c->req.query, "before").value_or(0);
    q.max_bytes = kTailBytes;
  }
  if (auto it = c->req.query.find("stream"); it != c->req.query.end() && !it->second.empty()) {
    if (it->second == "stdout")
      q.stream = store::LogStream::kStdout;
    else if (it->second == "stderr")
      q.stream = store::LogStream::kStderr;
    else
      return FailWith(*c, 400, "bad_request", "stream is stdout or stderr");
  }
  Result<std::vector<store::LogChunk>> chunks = ctx_->logs->Read(q);
  if (!chunks.ok()) return Fail(*c, chunks.status());
  bool open = p_.book->FindOpen(run_id) != nullptr;
  // Done: the run has ended, this reader has everything stored for it, and everything its
  // attempts declared with their results is stored (output may trail a result).
  bool done = false;
  if (!open && chunks->empty()) {
    Result<std::optional<RunRecord>> run = ctx_->store->GetRun(run_id);
    if (!run.ok()) return Fail(*c, run.status());
    if (!*run) return FailWith(*c, 404, "not_found", "no such run: " + std::to_string(run_id));
    Result<bool> complete = OutputComplete(**run, q.shard);
    if (!complete.ok()) return Fail(*c, complete.status());
    done = *complete;
  }
  // Nothing left to read of an ended run whose output retention deleted: say why.
  std::optional<std::string> pruned;
  if (!open && chunks->empty()) {
    Result<std::optional<store::RunOutput>> output = ctx_->logs->OutputOf(run_id);
    if (!output.ok()) return Fail(*c, output.status());
    if (*output && (*output)->pruned_ms) {
      pruned = (*output)->pruned_reason;
      done = true;
    }
  }
  if (chunks->empty() && !done && ctx_->MonoMs() < deadline) {
    // Follow: wait for the next commit of this run's output, or for the run's end.
    *parked = p_.log_hub->Park(run_id, deadline, [this, c, parked, run_id, after, deadline] {
      SendLogs(c, parked, run_id, after, deadline);
    });
    return;
  }
  wire::LogPage page;
  page.next = after;
  page.done = done;
  page.pruned = pruned;
  for (const store::LogChunk& ch : *chunks) {
    const char* stream = ch.stream == store::LogStream::kStdout   ? "stdout"
                         : ch.stream == store::LogStream::kStderr ? "stderr"
                                                                  : "marker";
    page.chunks.push_back({ch.id, ch.shard, ch.attempt, ch.seq, stream,
                           FormatUtc(FromUnixMs(ch.at_ms)), Base64Encode(ch.data)});
    page.next = ch.id;
  }
  Json(*c, 200, page.ToJson());
}

Result<bool> Api::OutputComplete(const RunRecord& run, std::optional<int64_t> shard) {
  // An agent that declared more than it delivers does not hold readers forever.
  if (ctx_->NowMs() - run.finished_ms.value_or(0) > kTrailingOutputMs) return true;
  Result<std::vector<store::OutputEndRow>> ends = ctx_->store->OutputEnds(run.id);
  if (!ends.ok()) return ends.status();
  if (ends->empty()) return true;
  Result<std::vector<store::LogStore::AttemptSeq>> stored = ctx_->logs->LastSeqs(run.id);
  if (!stored.ok()) return stored.status();
  for (const store::OutputEndRow& end : *ends) {
    if (shard && end.shard != *shard) continue;
    // A shard granted again since: what its earlier attempt did not deliver never will be
    // taken (Api::CheckTrailingOutput), so it is not waited for.
    if (end.shard < 0 || end.shard >= static_cast<int>(run.shards.size()) ||
        run.shards[static_cast<size_t>(end.shard)].token != end.token) {
      continue;
    }
    auto reached = std::find_if(stored->begin(), stored->end(), [&end](const auto& s) {
      return s.shard == end.shard && s.attempt == end.attempt && s.max_seq >= end.last_seq;
    });
    if (reached == stored->end()) return false;
  }
  return true;
}

void Api::ListAgents(Call& c) {
  std::vector<wire::AgentView> out;
  for (const auto& [name, a] : p_.dispatcher->agents()) {
    out.push_back({name, a.labels, a.slots, static_cast<int>(a.held.size()), a.version, a.draining,
                   p_.dispatcher->AgentAlive(a),
                   a.last_seen_ms ? FormatUtc(FromUnixMs(a.last_seen_ms)) : ""});
  }
  Json(c, 200, wire::ListToJson(out));
}

// GET /v1/audit?action=&actor=&since=&before=&limit=: the audit trail, newest first, one
// bounded page at a time (the next page: before=<the last id>).
void Api::ListAudit(Call& c) {
  static constexpr int64_t kMaxPage = 1000;
  static constexpr size_t kMaxFilter = 256;
  const auto& q = c.req.query;
  store::EventFilter f;
  for (auto [key, slot] : {std::pair{"action", &f.kind}, std::pair{"actor", &f.actor}}) {
    auto it = q.find(key);
    if (it == q.end() || it->second.empty()) continue;
    if (it->second.size() > kMaxFilter) {
      return FailWith(c, 400, "bad_request", std::string(key) + " is too long");
    }
    *slot = it->second;
  }
  if (auto it = q.find("since"); it != q.end() && !it->second.empty()) {
    Result<WallTime> since = ParseInstant(it->second);
    if (!since.ok()) return Fail(c, since.status());
    f.since_ms = ToUnixMs(*since);
  }
  if (q.count("before") && !IntParam(q, "before")) {
    return FailWith(c, 400, "bad_request", "before is an event id");
  }
  if (q.count("limit") && !IntParam(q, "limit")) {
    return FailWith(c, 400, "bad_request", "limit is a number");
  }
  f.before_id = IntParam(q, "before");
  f.limit = static_cast<int>(std::clamp<int64_t>(IntParam(q, "limit").value_or(100), 1, kMaxPage));
  Result<std::vector<store::EventRow>> events = ctx_->store->ListEvents(f);
  if (!events.ok()) return Fail(c, events.status());
  std::vector<wire::AuditEvent> out;
  for (const store::EventRow& e : *events) {
    out.push_back(
        {e.id, FormatUtc(FromUnixMs(e.at_ms)), e.kind, e.actor, e.token_id, e.subject, e.detail});
  }
  Json(c, 200, wire::ListToJson(out));
}

// GET /v1/store/stats?top=N: the size of the store's files, its runs and the jobs with the
// most output kept (N, 10 by default, at most 100).
void Api::StoreStats(Call& c) {
  if (c.req.query.count("top") && !IntParam(c.req.query, "top")) {
    return FailWith(c, 400, "bad_request", "top is a number");
  }
  int top =
      static_cast<int>(std::clamp<int64_t>(IntParam(c.req.query, "top").value_or(10), 1, 100));
  Result<store::StoreStats> runs = ctx_->store->Stats();
  if (!runs.ok()) return Fail(c, runs.status());
  Result<store::LogStoreStats> logs = ctx_->logs->Stats();
  if (!logs.ok()) return Fail(c, logs.status());
  Result<std::vector<store::JobOutput>> jobs = ctx_->logs->OutputByJob(top);
  if (!jobs.ok()) return Fail(c, jobs.status());
  wire::StoreStatsView out;
  out.store_bytes = runs->file_bytes;
  out.store_free_bytes = runs->free_bytes;
  out.logs_bytes = logs->file_bytes;
  out.logs_free_bytes = logs->free_bytes;
  out.reclaims_space = runs->reclaims_space && logs->reclaims_space;
  out.runs = runs->runs;
  if (runs->oldest_run_ms) out.oldest_run = FormatUtc(FromUnixMs(*runs->oldest_run_ms));
  out.output_bytes = logs->stored_bytes;
  out.backend = ctx_->config.store.empty() ? "sqlite" : "postgresql";
  for (const store::JobOutput& j : *jobs) {
    const JobEntry* e = j.job_id != 0 ? p_.jobs->Find(j.job_id) : nullptr;
    std::string name;
    if (e != nullptr) {
      name = std::string(e->name);
    } else if (j.job_id != 0) {
      name = "#" + std::to_string(j.job_id);  // a job no longer known
    }
    out.top_jobs.push_back({std::move(name), j.stored_bytes, j.runs});
  }
  Json(c, 200, out.ToJson());
}

void Api::ListMisses(Call& c) {
  auto it = c.req.query.find("job");
  if (it == c.req.query.end()) return FailWith(c, 400, "bad_request", "job= is required");
  JobEntry* job = p_.jobs->FindByName(it->second);
  if (job == nullptr) return FailWith(c, 404, "not_found", "no such job: " + it->second);
  if (!Auth::Allows(c.who, Role::kRead, job->name)) {
    return FailOutOfScope(c, "");
  }
  Result<std::vector<store::MissRow>> misses =
      ctx_->store->ListMisses(job->id, IntParam(c.req.query, "since_ms").value_or(0));
  if (!misses.ok()) return Fail(c, misses.status());
  std::vector<wire::MissView> out;
  for (const store::MissRow& m : *misses) {
    out.push_back({FormatUtc(FromUnixMs(m.first_ms)), m.first_ms, FormatUtc(FromUnixMs(m.last_ms)),
                   m.last_ms, m.count, m.reason});
  }
  Json(c, 200, wire::ListToJson(out));
}

}  // namespace jobctl::coordinator
