#include "coordinator/run_book.h"

#include <sys/random.h>

#include <algorithm>
#include <random>
#include <unordered_map>

#include "base/log.h"
#include "coordinator/dispatcher.h"
#include "coordinator/metrics.h"
#include "model/backoff.h"
#include "model/result_rules.h"
#include "model/time_format.h"
#include "wire/job_json.h"

namespace jobctl::coordinator {
namespace {

// The run's stored parameters ({"NAME": "value"}); nothing from a malformed or foreign value.
std::map<std::string, std::string> RunParams(const std::string& env_json) {
  std::map<std::string, std::string> out;
  if (env_json.empty()) return out;
  nlohmann::json j = nlohmann::json::parse(env_json, nullptr, false);
  if (!j.is_object()) return out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.value().is_string()) out[it.key()] = it.value().get<std::string>();
  }
  return out;
}

}  // namespace

std::string NewTraceId() {
  unsigned char bytes[16];
  if (getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
    std::random_device rd;
    for (unsigned char& b : bytes) b = static_cast<unsigned char>(rd());
  }
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

RunBook::RunBook(Context* ctx, JobIndex* jobs, Dispatcher* dispatcher, Random* random)
    : ctx_(ctx), jobs_(jobs), dispatcher_(dispatcher), random_(random ? random : &own_random_) {}

void RunBook::Start() {
  deadline_timer_ = std::make_unique<uvx::Timer>(ctx_->loop);
  started_ = true;
}

void RunBook::Close() {
  if (!started_) return;
  deadline_timer_.reset();
  started_ = false;
}

void RunBook::Clear() {
  open_.clear();
  answered_.clear();
  deadlines_.clear();
}

Result<std::shared_ptr<const Job>> RunBook::SpecOf(JobEntry& job) {
  if (job.spec) return job.spec;
  Result<store::JobRow> row = ctx_->store->GetJob(job.id);
  if (!row.ok()) return row.status();
  nlohmann::json j = nlohmann::json::parse(row->spec_json, nullptr, false);
  Result<Job> spec = wire::JobFromJson(j);
  if (!spec.ok()) return spec.status().WithContext("job " + std::string(job.name));
  job.spec = std::make_shared<const Job>(std::move(*spec));
  return job.spec;
}

Status RunBook::Load(RunRecord run) {
  JobEntry* job = jobs_->Find(run.job_id);
  if (job == nullptr) return Status::Corrupt("run " + std::to_string(run.id) + " of unknown job");
  if (IsFlowRun(run)) {
    OpenRun& open = open_[run.id];
    open.rec = std::move(run);
    ++job->open_runs;
    return flow_hooks_.opened ? flow_hooks_.opened(open.rec, /*loaded=*/true) : Status::Ok();
  }
  Result<std::shared_ptr<const Job>> spec = SpecOf(*job);
  if (!spec.ok()) return spec.status();
  OpenRun& open = open_[run.id];
  open.rec = std::move(run);
  open.spec = *spec;
  ++job->open_runs;
  for (ShardRecord& shard : open.rec.shards) {
    if (shard.state == RunState::kPending) {
      EnqueueShard(open, shard);
    } else if (shard.state == RunState::kRunning) {
      // Granted ahead of its instant, its started_ms is the instant: its TTL counts from it.
      dispatcher_->LoadLease({shard.run_id, shard.index}, shard.agent, shard.token,
                             shard.started_ms.value_or(0));
      if (open.spec->timeout && shard.started_ms) {
        int64_t deadline = *shard.started_ms + open.spec->timeout->count() +
                           open.spec->kill_grace.count() + ctx_->config.timeout_grace.count();
        deadlines_.insert({deadline, ShardKey{shard.run_id, shard.index}});
      }
    }
  }
  ArmDeadlines();
  return Status::Ok();
}

Status RunBook::LoadSpecs(const std::vector<JobEntry*>& jobs) {
  std::vector<int64_t> ids;
  std::unordered_map<int64_t, JobEntry*> by_id;
  for (JobEntry* job : jobs) {
    if (job->kind == JobKind::kFlow) continue;  // a flow run's graph is the FlowBook's
    if (job->spec || !by_id.emplace(job->id, job).second) continue;
    ids.push_back(job->id);
  }
  if (ids.empty()) return Status::Ok();
  return ctx_->store->GetJobs(ids, [&](store::JobRow&& row) {
    JobEntry* job = by_id[row.id];
    if (job == nullptr) return;
    nlohmann::json j = nlohmann::json::parse(row.spec_json, nullptr, false);
    // A definition that does not read is left to SpecOf, which says why.
    if (Result<Job> spec = wire::JobFromJson(j); spec.ok()) {
      job->spec = std::make_shared<const Job>(std::move(*spec));
    }
  });
}

Result<RunBook::Prepared> RunBook::Prepare(JobEntry& job, RunReason reason, int64_t scheduled_ms,
                                           const std::string& env_json, const std::string& key,
                                           int64_t not_before_ms, const std::string& trace_id) {
  int64_t now = ctx_->NowMs();
  RunRecord rec;
  rec.job_id = job.id;
  rec.job = job.name;
  rec.reason = reason;
  rec.scheduled_ms = scheduled_ms;
  rec.created_ms = now;
  rec.trace_id = trace_id.empty() ? NewTraceId() : trace_id;
  rec.idempotency_key = key;
  rec.env_json = env_json;
  rec.not_before_ms = not_before_ms;
  if (job.kind == JobKind::kFlow) {
    // A flow run has no shards: it runs from the moment it exists, through its steps.
    if (!flow_hooks_.graph) return Status::Internal("this coordinator runs no flows");
    Result<std::string> graph = flow_hooks_.graph(job);
    if (!graph.ok()) return graph.status();
    rec.flow_json = std::move(*graph);
    rec.shard_total = 0;
    rec.state = RunState::kRunning;
    return Prepared{&job, std::move(rec), nullptr};
  }
  Result<std::shared_ptr<const Job>> spec = SpecOf(job);
  if (!spec.ok()) return spec.status();
  if (reason == RunReason::kSchedule && (*spec)->jitter.count() > 0) {
    // A random delay of [0, jitter] for this fire, on the run for all to see.
    uint64_t span = static_cast<uint64_t>((*spec)->jitter.count()) + 1;
    rec.not_before_ms = scheduled_ms + static_cast<int64_t>(random_->Next() % span);
  }
  std::vector<std::string> bound;
  if ((*spec)->route == Route::kBroadcast) {
    // One shard per eligible agent at fire time, each bound to its agent.
    bound = dispatcher_->EligibleAgents((*spec)->on, /*step=*/reason == RunReason::kFlow);
    rec.shard_total = static_cast<int>(bound.size());
  } else {
    rec.shard_total = (*spec)->shards;
  }
  for (int i = 0; i < rec.shard_total; ++i) {
    ShardRecord s;
    s.index = i;
    s.not_before_ms = rec.not_before_ms;
    if (!bound.empty()) s.agent = bound[static_cast<size_t>(i)];
    rec.shards.push_back(std::move(s));
  }
  if (rec.shard_total == 0) {
    rec.state = RunState::kFailed;
    rec.finished_ms = now;
    rec.note = "broadcast: no eligible agent was connected";
  }
  return Prepared{&job, std::move(rec), *spec};
}

void RunBook::Open(Prepared& run) {
  RunRecord& rec = run.rec;
  ctx_->EventAfterCommit("fire", {{"job", rec.job},
                                  {"run", rec.id},
                                  {"scheduled_ms", rec.scheduled_ms},
                                  {"reason", RunReasonName(rec.reason)},
                                  {"shards", rec.shard_total}});
  if (IsFlowRun(rec)) {
    OpenRun& open = open_[rec.id];
    open.rec = rec;
    ++run.job->open_runs;
    // Its first steps start in this batch; a failure there fails the turn.
    if (flow_hooks_.opened) (void)flow_hooks_.opened(open.rec, /*loaded=*/false);
    return;
  }
  if (rec.shard_total == 0) return;
  OpenRun& open = open_[rec.id];
  open.rec = rec;
  open.spec = run.spec;
  ++run.job->open_runs;
  for (ShardRecord& shard : open.rec.shards) {
    if (!IsTerminal(shard.state)) EnqueueShard(open, shard);  // a retry's kept shards are not
  }
}

Result<RunRecord> RunBook::Create(JobEntry& job, RunReason reason, int64_t scheduled_ms,
                                  const std::string& env_json, const std::string& key,
                                  int64_t not_before_ms, const std::string& trace_id) {
  Result<Prepared> run = Prepare(job, reason, scheduled_ms, env_json, key, not_before_ms, trace_id);
  if (!run.ok()) return run.status();
  // kConflict: this instant has its run already (fired before a restart); the turn goes on.
  if (Status s = ctx_->batch->Write([&] { return ctx_->store->InsertRun(run->rec); },
                                    Status::Code::kConflict);
      !s.ok()) {
    return s;
  }
  Open(*run);
  return std::move(run->rec);
}

Result<RunRecord> RunBook::RetryFailedShards(JobEntry& job, const RunRecord& old) {
  Result<Prepared> run =
      Prepare(job, RunReason::kRetry, old.scheduled_ms, old.env_json, "", 0, old.trace_id);
  if (!run.ok()) return run.status();
  RunRecord& rec = run->rec;
  const std::string of_run = "run " + std::to_string(old.id);
  const bool broadcast = run->spec->route == Route::kBroadcast;
  if (old.shard_total == 0) {
    return Status::Conflict(of_run + " had no shard (no agent was eligible); retry the whole run");
  }
  if (!broadcast && rec.shard_total != old.shard_total) {
    return Status::Conflict(of_run + " had " + std::to_string(old.shard_total) +
                            " shards and job \"" + std::string(job.name) + "\" has " +
                            std::to_string(rec.shard_total) + " now; retry the whole run instead");
  }
  if (static_cast<int>(old.shards.size()) != old.shard_total) {
    return Status::Internal(of_run + " has " + std::to_string(old.shards.size()) + " shards of " +
                            std::to_string(old.shard_total));
  }
  // A broadcast run is retried on the agents it was bound to, not on those connected now: each
  // must still be there, or its shard would wait for it for ever.
  if (broadcast) {
    std::vector<std::string> eligible = dispatcher_->EligibleAgents(run->spec->on);
    for (const ShardRecord& was : old.shards) {
      if (was.state == RunState::kSucceeded) continue;
      if (was.agent.empty()) {
        return Status::Conflict("shard " + std::to_string(was.index) + " of " + of_run +
                                " never had an agent; retry the whole run");
      }
      if (std::find(eligible.begin(), eligible.end(), was.agent) == eligible.end()) {
        return Status::Conflict("shard " + std::to_string(was.index) + " of " + of_run +
                                " ran on agent \"" + was.agent +
                                "\", which is not connected or no longer eligible; retry the "
                                "whole run");
      }
    }
  }
  rec.shard_total = old.shard_total;
  rec.state = RunState::kPending;
  rec.finished_ms.reset();
  rec.note.clear();
  rec.shards.resize(static_cast<size_t>(old.shard_total));
  int kept = 0;
  for (size_t i = 0; i < rec.shards.size(); ++i) {
    const ShardRecord& was = old.shards[i];
    ShardRecord& shard = rec.shards[i];
    shard.index = static_cast<int>(i);
    shard.not_before_ms = rec.not_before_ms;
    shard.agent = broadcast ? was.agent : "";
    if (was.state != RunState::kSucceeded) continue;
    ++kept;
    shard.state = RunState::kSucceeded;
    shard.agent = was.agent;
    shard.attempt = was.attempt;
    shard.exit_code = was.exit_code;
    shard.peak_rss_bytes = was.peak_rss_bytes;
    shard.cpu_ms = was.cpu_ms;
    shard.outcome = std::string(kKeptOutcome);
    // Kept again by a retry of a retry: the run it ran in stays the one named.
    shard.message = was.outcome == kKeptOutcome ? was.message : "succeeded in " + of_run;
    shard.started_ms = was.started_ms;
    shard.finished_ms = was.finished_ms;
  }
  if (kept == rec.shard_total) return Status::Conflict("every shard of " + of_run + " succeeded");
  if (Status s = ctx_->batch->Write([&] { return ctx_->store->InsertRun(rec); }); !s.ok()) {
    return s;
  }
  // InsertRun writes new shards; the kept ones get the rest of their columns in the same
  // commit, and so do a broadcast run's bound ones, so that a restart keeps their agents.
  for (ShardRecord& shard : rec.shards) {
    if (shard.state == RunState::kSucceeded || !shard.agent.empty()) Save(shard);
  }
  Open(*run);
  return std::move(rec);
}

Status RunBook::CreateAll(std::vector<Prepared>& runs, std::vector<bool>& created) {
  created.assign(runs.size(), false);
  if (runs.empty()) return Status::Ok();
  std::vector<RunRecord> recs;
  recs.reserve(runs.size());
  for (Prepared& run : runs) recs.push_back(std::move(run.rec));
  Status s = ctx_->batch->Write([&] { return ctx_->store->InsertRuns(recs, created); });
  for (size_t i = 0; i < runs.size(); ++i) runs[i].rec = std::move(recs[i]);
  if (!s.ok()) {
    created.assign(runs.size(), false);
    return s;
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    if (created[i]) Open(runs[i]);
  }
  return Status::Ok();
}

Status RunBook::RecordSkipped(JobEntry& job, int64_t scheduled_ms, const std::string& note) {
  RunRecord rec;
  rec.job_id = job.id;
  rec.job = job.name;
  rec.scheduled_ms = scheduled_ms;
  rec.created_ms = ctx_->NowMs();
  rec.state = RunState::kSkipped;
  rec.finished_ms = rec.created_ms;
  rec.trace_id = NewTraceId();
  rec.note = note;
  rec.shard_total = 0;
  if (Status s =
          ctx_->batch->Write([&] { return ctx_->store->InsertRun(rec); }, Status::Code::kConflict);
      !s.ok()) {
    return s;
  }
  ++ctx_->metrics->skipped_total;
  if (on_skipped) on_skipped(job, rec);
  ctx_->EventAfterCommit(
      "skip", {{"job", rec.job}, {"run", rec.id}, {"scheduled_ms", scheduled_ms}, {"why", note}});
  return Status::Ok();
}

void RunBook::EnqueueShard(OpenRun& run, ShardRecord& shard) {
  PendingShard p;
  p.key = {run.rec.id, shard.index};
  p.job = run.rec.job;
  p.on = run.spec->on;
  p.route = run.spec->route;
  if (run.spec->route == Route::kBroadcast) p.bound_agent = shard.agent;
  // Never before its run's instant: a run created ahead of it (early dispatch) waits for it.
  p.not_before_ms = std::max(shard.not_before_ms, run.rec.scheduled_ms);
  p.step = run.rec.flow_run_id != 0;
  p.limits = !run.spec->limits.empty();
  dispatcher_->Enqueue(std::move(p));
}

void RunBook::Save(ShardRecord& shard) {
  // Granted ahead, it was due to start at its instant (started_ms): ended before it (canceled,
  // refused, given back), it never started.
  if (shard.finished_ms && shard.started_ms && *shard.started_ms > *shard.finished_ms) {
    shard.started_ms.reset();
  }
  ctx_->batch->Stage([&] { return ctx_->store->UpdateShard(shard); });
}

wire::Grant RunBook::Grant(ShardKey key, const std::string& agent, int64_t token, int64_t now_ms) {
  OpenRun& run = open_.at(key.run);
  ShardRecord& shard = run.rec.shards.at(static_cast<size_t>(key.shard));
  // Granted ahead of its instant (early dispatch), it starts at the instant: its start and
  // its timeout count from there.
  now_ms = std::max({now_ms, shard.not_before_ms, run.rec.scheduled_ms});
  shard.state = RunState::kRunning;
  shard.agent = agent;
  shard.token = token;
  shard.started_ms = now_ms;
  shard.finished_ms.reset();
  shard.exit_code.reset();
  shard.peak_rss_bytes.reset();
  shard.cpu_ms.reset();
  shard.outcome.clear();
  shard.message.clear();
  Save(shard);
  const Job& spec = *run.spec;
  if (spec.timeout) {
    int64_t deadline = now_ms + spec.timeout->count() + spec.kill_grace.count() +
                       ctx_->config.timeout_grace.count();
    deadlines_.insert({deadline, key});
    ArmDeadlines();
  }
  // pending -> running. Once running, a grant cannot change the run's state (the shard it
  // starts is open), so the O(shards) derivation is skipped: a wide run's grants stay O(1).
  if (run.rec.state != RunState::kRunning) MaybeFinish(run);
  wire::Grant g;
  g.key = {key.run, key.shard, shard.attempt};
  g.shard_total = run.rec.shard_total;
  g.token = token;
  g.job = run.rec.job;
  g.scheduled_at = FormatUtc(FromUnixMs(run.rec.scheduled_ms));
  g.trace_id = run.rec.trace_id;
  g.command = spec.command;
  g.shell = spec.shell;
  g.env = ShardEnv(spec, RunParams(run.rec.env_json));
  g.secrets = spec.secrets;  // names only: the agent reads them
  g.run_as = spec.run_as;
  g.cwd = spec.cwd;
  if (spec.timeout) g.timeout_ms = spec.timeout->count();
  g.kill_grace_ms = spec.kill_grace.count();
  g.limits = spec.limits;
  if (run.rec.flow_run_id != 0) {
    // A step: what it learns of its flow run, as FlowBook recorded it when it started it.
    Result<wire::StepContext> step =
        wire::StepContext::FromJson(nlohmann::json::parse(run.rec.flow_json, nullptr, false));
    if (step.ok()) {
      if (flow_hooks_.step_outputs) step->outputs = flow_hooks_.step_outputs(run.rec);
      g.step = std::move(*step);
    }
  }
  return g;
}

int64_t RunBook::BackoffMs(const Job& spec, int attempt) const {
  return RetryDelayMs(spec.retry, attempt, *random_);
}

void RunBook::Requeue(OpenRun& run, ShardRecord& shard, int64_t not_before_ms) {
  EraseDeadline({run.rec.id, shard.index});
  ++shard.attempt;
  shard.state = RunState::kPending;
  // A broadcast shard belongs to its agent: it keeps it, and its retries go back there.
  if (run.spec->route != Route::kBroadcast) shard.agent.clear();
  shard.token = 0;
  shard.started_ms.reset();
  shard.finished_ms.reset();
  shard.not_before_ms = not_before_ms;
  Save(shard);
  EnqueueShard(run, shard);
}

void RunBook::EraseDeadline(ShardKey key) {
  for (auto it = deadlines_.begin(); it != deadlines_.end();) {
    it = it->second == key ? deadlines_.erase(it) : std::next(it);
  }
}

void RunBook::EndAttempt(OpenRun& run, ShardRecord& shard, RunState state, int64_t now_ms) {
  EraseDeadline({run.rec.id, shard.index});
  shard.state = state;
  shard.finished_ms = now_ms;
  Save(shard);
  MaybeFinish(run);
}

ResultFacts RunBook::FactsOf(const ShardRecord& s, const ResultReport& r, bool run_open) const {
  ResultFacts f;
  f.run_open = run_open;
  f.holder_ended = s.token == r.token && IsTerminal(s.state) && s.agent == r.agent;
  f.lease_held = dispatcher_->HeldBy(r.key.shard_key(), r.token, r.agent);
  f.ended_by_result = EndedByResultOf(s, r.token);
  if (run_open) {
    auto a = answered_.find(r.key.shard_key());
    f.answered = a != answered_.end() && a->second.token == r.token && a->second.agent == r.agent;
  }
  f.current_attempt = s.attempt == r.key.attempt && s.state == RunState::kRunning;
  return f;
}

Result<RunState> RunBook::OnResult(const ResultReport& r) {
  const ShardKey key = r.key.shard_key();
  auto it = open_.find(r.key.run);
  std::optional<RunRecord> finished;
  if (it == open_.end()) {
    // Finished already: a repeat of the accepted result gets the same answer.
    Result<std::optional<RunRecord>> stored = ctx_->store->GetRun(r.key.run);
    if (!stored.ok()) return stored.status();
    if (!*stored) return Status::NotFound("no run " + std::to_string(r.key.run));
    finished = std::move(**stored);
  }
  RunRecord& rec = finished ? *finished : it->second.rec;
  if (r.key.shard < 0 || r.key.shard >= static_cast<int>(rec.shards.size())) {
    return Status::NotFound("no shard " + std::to_string(r.key.shard));
  }
  ShardRecord& shard = rec.shards[static_cast<size_t>(r.key.shard)];
  switch (JudgeResult(FactsOf(shard, r, !finished))) {
    case ResultVerdict::kReleaseAndAnswerEnded:
      dispatcher_->Release(key, "released");
      return shard.state;
    case ResultVerdict::kAnswerEnded: return shard.state;
    case ResultVerdict::kAnswerAgain: return answered_.at(key).state;
    case ResultVerdict::kRefuseStale:
      // CheckToken refuses it, counts the stale token and writes the event.
      if (Status s = dispatcher_->CheckToken(key, r.agent, r.token); !s.ok()) return s;
      return Status::Conflict("run " + std::to_string(r.key.run) + " shard " +
                              std::to_string(r.key.shard) + ": stale token");
    case ResultVerdict::kRefuseRunEnded:
      return Status::Conflict("run " + std::to_string(r.key.run) + " has ended");
    case ResultVerdict::kRefuseWrongAttempt:
      ctx_->events->Write("refused", {{"what", "result"},
                                      {"run", r.key.run},
                                      {"shard", r.key.shard},
                                      {"token", r.token},
                                      {"agent", r.agent},
                                      {"current", shard.token}});
      return Status::Conflict("result for attempt " + std::to_string(r.key.attempt) +
                              " but the shard is at attempt " + std::to_string(shard.attempt));
    case ResultVerdict::kAccept: break;
  }
  if (r.output_seq && *r.output_seq > 0) {
    // Readers of the run's output wait for this chunk (api_read.cc), and the agent may still
    // deliver up to it after its lease ended (Api::AppendLog).
    ctx_->batch->Stage([&] {
      return ctx_->store->PutOutputEnd(
          {r.key.run, r.key.shard, r.key.attempt, *r.output_seq, r.agent, r.token});
    });
  }
  return Accept(it->second, shard, r);
}

RunState RunBook::Accept(OpenRun& run, ShardRecord& shard, const ResultReport& r) {
  int64_t now = ctx_->NowMs();
  ResultDisposition d = DisposeResult(r.outcome, r.exit_code, shard, *run.spec);
  RunState state = ResultState(r.outcome, r.exit_code);
  ctx_->EventAfterCommit("result_accepted", {{"run", r.key.run},
                                             {"shard", r.key.shard},
                                             {"attempt", r.key.attempt},
                                             {"token", r.token},
                                             {"agent", r.agent},
                                             {"outcome", OutcomeName(r.outcome)},
                                             {"state", RunStateName(state)}});
  dispatcher_->Release(r.key.shard_key(), "result");
  EraseDeadline(r.key.shard_key());
  answered_[r.key.shard_key()] = {r.token, r.agent, state};
  shard.exit_code = r.exit_code;
  shard.peak_rss_bytes = r.peak_rss_bytes;
  shard.cpu_ms = r.cpu_ms;
  shard.outcome = std::string(OutcomeName(r.outcome));
  shard.message = r.message;
  // A flow step's: what it wrote to $JOB_OUTPUT (the agent sends it for an exit 0 only).
  shard.outputs_json = r.outputs.empty() ? "" : nlohmann::json(r.outputs).dump();
  switch (d.action) {
    case ResultAction::kRerunLost:
      ++shard.lost_count;
      Requeue(run, shard, now);
      break;
    case ResultAction::kRetry: {
      int64_t delay = BackoffMs(*run.spec, shard.attempt);
      log::Info("shard failed; retrying", {{"job", run.rec.job},
                                           {"run", run.rec.id},
                                           {"shard", shard.index},
                                           {"attempt", shard.attempt},
                                           {"delay_ms", delay},
                                           {"trace", run.rec.trace_id}});
      Requeue(run, shard, now + delay);
      break;
    }
    case ResultAction::kEnd: EndAttempt(run, shard, d.state, now); break;
  }
  return d.state;
}

bool RunBook::EndedByResult(ShardKey key, int64_t token) {
  if (token <= 0) return false;
  if (open_.contains(key.run)) {
    // Every accepted result of an open run is in answered_, retried attempts included.
    auto a = answered_.find(key);
    return a != answered_.end() && a->second.token == token;
  }
  // A finished run: its shard row keeps the last attempt's token and outcome.
  Result<std::optional<ShardRecord>> shard = ctx_->store->GetShard(key.run, key.shard);
  return shard.ok() && *shard && EndedByResultOf(**shard, token);
}

void RunBook::NoteRefusedLog(ShardKey key, int64_t token, const std::string& agent) {
  ++ctx_->metrics->stale_token_total;
  ctx_->events->Write("refused", {{"what", "log"},
                                  {"run", key.run},
                                  {"shard", key.shard},
                                  {"token", token},
                                  {"agent", agent}});
}

Status RunBook::CheckLogToken(ShardKey key, int attempt, int64_t token, const std::string& agent) {
  if (!dispatcher_->HeldBy(key, token, agent)) {
    NoteRefusedLog(key, token, agent);
    return Status::Conflict("run " + std::to_string(key.run) + " shard " +
                            std::to_string(key.shard) + ": agent " + agent +
                            " holds no live lease on it under that token (the attempt ended, "
                            "its lease expired, or it is another agent's); output is taken "
                            "only from the holder of a live lease");
  }
  // The lease is live, so its run is open, or was canceled with the lease still held.
  const ShardRecord* shard = nullptr;
  std::optional<RunRecord> stored;
  if (auto it = open_.find(key.run); it != open_.end()) {
    shard = &it->second.rec.shards.at(static_cast<size_t>(key.shard));
  } else {
    Result<std::optional<RunRecord>> r = ctx_->store->GetRun(key.run);
    if (!r.ok()) return r.status();
    stored = std::move(*r);
    if (stored && key.shard >= 0 && key.shard < static_cast<int>(stored->shards.size())) {
      shard = &stored->shards[static_cast<size_t>(key.shard)];
    }
  }
  if (shard == nullptr) return Status::NotFound("no such run or shard");
  if (shard->attempt == attempt) return Status::Ok();
  return Status::Conflict("run " + std::to_string(key.run) + " shard " + std::to_string(key.shard) +
                          ": that lease is not of attempt " + std::to_string(attempt));
}

void RunBook::OnLeaseExpired(ShardKey key, int64_t token) {
  auto it = open_.find(key.run);
  if (it == open_.end()) return;
  OpenRun& run = it->second;
  ShardRecord& shard = run.rec.shards.at(static_cast<size_t>(key.shard));
  if (shard.token != token || shard.state != RunState::kRunning) return;
  int64_t now = ctx_->NowMs();
  shard.outcome = "lease_lost";
  shard.message = "lease of agent " + shard.agent + " expired";
  // A broadcast shard is its agent's. An agent whose lease expired has gone quiet, and
  // unless it is asking for work right now the shard is lost: not run on another agent
  // (which has a shard of its own), nor left pending for an agent that may never return.
  if (on_agent_lost) {
    if (JobEntry* job = jobs_->Find(run.rec.job_id)) on_agent_lost(*job, *run.spec, run.rec, shard);
  }
  bool holder_gone = run.spec->route == Route::kBroadcast && !dispatcher_->Asking(shard.agent);
  if (holder_gone) shard.message += "; a broadcast shard runs only on its own agent";
  if (!holder_gone && run.spec->on_lost == OnLost::kRerun && shard.lost_count < kMaxLostReruns) {
    ++shard.lost_count;
    Requeue(run, shard, now);
  } else {
    EndAttempt(run, shard, RunState::kLost, now);
  }
}

Status RunBook::Cancel(int64_t run_id, const std::string& why) {
  auto it = open_.find(run_id);
  if (it == open_.end()) {
    Result<std::optional<RunRecord>> stored = ctx_->store->GetRun(run_id);
    if (!stored.ok()) return stored.status();
    if (!*stored) return Status::NotFound("no run " + std::to_string(run_id));
    return Status::Conflict("run " + std::to_string(run_id) + " already " +
                            std::string(RunStateName((*stored)->state)));
  }
  OpenRun& run = it->second;
  if (IsFlowRun(run.rec)) {
    if (!flow_hooks_.cancel) return Status::Internal("this coordinator runs no flows");
    flow_hooks_.cancel(run_id, why);
    return Status::Ok();
  }
  int64_t now = ctx_->NowMs();
  run.rec.note = why;
  for (ShardRecord& shard : run.rec.shards) {
    if (IsTerminal(shard.state)) continue;
    ShardKey key{run_id, shard.index};
    if (shard.state == RunState::kPending) dispatcher_->RemovePending(key);
    if (shard.state == RunState::kRunning) dispatcher_->MarkCanceled(key);
    shard.state = RunState::kCanceled;
    shard.finished_ms = now;
    shard.message = why;
    Save(shard);
  }
  MaybeFinish(run);
  return Status::Ok();
}

void RunBook::MaybeFinish(OpenRun& run) {
  RunState state = DeriveRunState(run.rec.shards);
  if (!IsTerminal(state)) {
    if (state != run.rec.state) {
      run.rec.state = state;
      ctx_->batch->Stage(
          [&] { return ctx_->store->UpdateRunState(run.rec.id, state, std::nullopt, ""); });
    }
    return;
  }
  Finish(run, state);
}

void RunBook::FinishFlowRun(int64_t run_id, RunState state, const std::string& note,
                            const NotifyPolicy& notify) {
  auto it = open_.find(run_id);
  if (it == open_.end()) return;
  if (!note.empty()) it->second.rec.note = note;
  Finish(it->second, state, &notify);
}

void RunBook::Finish(OpenRun& run, RunState state, const NotifyPolicy* notify) {
  int64_t now = ctx_->NowMs();
  run.rec.state = state;
  run.rec.finished_ms = now;
  ctx_->batch->Stage(
      [&] { return ctx_->store->UpdateRunState(run.rec.id, state, now, run.rec.note); });
  if (JobEntry* job = jobs_->Find(run.rec.job_id)) {
    if (run.spec) notify = &run.spec->notify;
    if (on_run_ended && notify != nullptr) on_run_ended(*job, *notify, run.rec);
    job->last_state = state;
    job->last_finished_ms = now;
    job->last_duration_ms = RunDurationMs(run.rec);
    if (state == RunState::kSucceeded) job->last_success_ms = now;
    if (--job->open_runs <= 0) {
      job->open_runs = 0;
      job->spec.reset();
      if (on_runs_ended) on_runs_ended(*job);
    }
  }
  ++ctx_->metrics->runs_finished_total[std::string(RunStateName(state))];
  // Successes are the common case and are in the store and /metrics: at thousands of runs
  // a second, a line each would flood the journal. Everything else is worth a line.
  (state == RunState::kSucceeded ? log::Debug : log::Info)("run finished",
                                                           {{"job", run.rec.job},
                                                            {"run", run.rec.id},
                                                            {"state", RunStateName(state)},
                                                            {"trace", run.rec.trace_id}});
  auto waiters = std::move(run.waiters);
  auto rec = std::make_shared<RunRecord>(run.rec);
  ctx_->batch->OnCommit([this, waiters = std::move(waiters), rec](const Status&) {
    for (const auto& w : waiters) w(*rec);
    if (on_finished) on_finished(rec->id);
  });
  for (const ShardRecord& shard : run.rec.shards) answered_.erase({run.rec.id, shard.index});
  open_.erase(run.rec.id);
  // Last: the FlowBook may start the next steps (and end the flow run) from here.
  if (rec->flow_run_id != 0 && flow_hooks_.step_ended) flow_hooks_.step_ended(*rec);
}

void RunBook::Wait(int64_t run_id, std::function<void(std::optional<RunRecord>)> cb) {
  if (auto it = open_.find(run_id); it != open_.end()) {
    it->second.waiters.push_back(std::move(cb));
    return;
  }
  Result<std::optional<RunRecord>> stored = ctx_->store->GetRun(run_id);
  cb(stored.ok() ? *stored : std::nullopt);
}

const RunRecord* RunBook::FindOpen(int64_t run_id) const {
  auto it = open_.find(run_id);
  return it == open_.end() ? nullptr : &it->second.rec;
}

const Job* RunBook::OpenSpec(int64_t run_id) const {
  auto it = open_.find(run_id);
  return it == open_.end() ? nullptr : it->second.spec.get();
}

std::vector<int64_t> RunBook::OpenRunsOf(int64_t job_id) const {
  std::vector<int64_t> out;
  for (const auto& [id, run] : open_) {
    if (run.rec.job_id == job_id) out.push_back(id);
  }
  return out;
}

void RunBook::ArmDeadlines() {
  if (!started_) return;
  if (deadlines_.empty()) {
    deadline_timer_->Stop();
    return;
  }
  int64_t in = std::max<int64_t>(deadlines_.begin()->first - ctx_->NowMs(), 0);
  deadline_timer_->Once(static_cast<uint64_t>(std::min<int64_t>(in, 60'000)),
                        [this] { OnDeadlineTimer(); });
}

void RunBook::OnDeadlineTimer() {
  int64_t now = ctx_->NowMs();
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    ShardKey key = deadlines_.begin()->second;
    deadlines_.erase(deadlines_.begin());
    auto it = open_.find(key.run);
    if (it == open_.end()) continue;
    ShardRecord& shard = it->second.rec.shards.at(static_cast<size_t>(key.shard));
    if (shard.state != RunState::kRunning) continue;
    log::Warn("shard past its timeout without a result; failing it",
              {{"job", it->second.rec.job},
               {"run", key.run},
               {"shard", key.shard},
               {"agent", shard.agent},
               {"trace", it->second.rec.trace_id}});
    ResultReport r;
    r.key = {key.run, key.shard, shard.attempt};
    r.token = shard.token;
    r.agent = shard.agent;
    r.outcome = Outcome::kTimedOut;
    r.message = "no result from the agent within the timeout (coordinator backstop)";
    if (Result<RunState> ended = OnResult(r); !ended.ok()) {
      log::Error("cannot fail a shard past its timeout",
                 {{"run", key.run}, {"shard", key.shard}, {"error", ended.status().ToString()}});
    }
  }
  ArmDeadlines();
}

}  // namespace jobctl::coordinator
