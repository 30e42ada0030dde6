#include "coordinator/flow_book.h"

#include <nlohmann/json.hpp>

#include "base/log.h"
#include "coordinator/metrics.h"
#include "wire/agent_messages.h"
#include "wire/job_json.h"

namespace jobctl::coordinator {

using nlohmann::json;

std::map<int, KeptStep> KeptStepsOf(const json& flow_json) {
  std::map<int, KeptStep> out;
  auto kept = flow_json.find("kept");
  if (kept == flow_json.end() || !kept->is_array()) return out;
  for (const json& k : *kept) {
    // Written by the coordinator itself; read with care all the same.
    if (!k.is_object()) continue;
    auto step = k.find("step"), run = k.find("run"), state = k.find("state");
    if (step == k.end() || !step->is_number_unsigned() || step->get<uint64_t>() >= kMaxFlowSteps ||
        run == k.end() || !run->is_number_integer() || state == k.end() || !state->is_string()) {
      continue;
    }
    KeptStep s;
    s.run = run->get<int64_t>();
    s.state = ParseRunState(state->get<std::string>()).value_or(RunState::kFailed);
    if (auto o = k.find("outputs"); o != k.end() && o->is_object()) {
      for (auto it = o->begin(); it != o->end(); ++it) {
        if (it.value().is_string()) s.outputs[it.key()] = it.value().get<std::string>();
      }
    }
    out[static_cast<int>(step->get<uint64_t>())] = std::move(s);
  }
  return out;
}

FlowBook::FlowBook(Context* ctx, JobIndex* jobs, RunBook* book)
    : ctx_(ctx), jobs_(jobs), book_(book) {}

RunBook::FlowHooks FlowBook::Hooks() {
  RunBook::FlowHooks h;
  h.graph = [this](JobEntry& flow) { return GraphOf(flow); };
  h.opened = [this](const RunRecord& run, bool loaded) { return OnOpened(run, loaded); };
  h.step_ended = [this](const RunRecord& run) { OnStepEnded(run); };
  h.cancel = [this](int64_t id, const std::string& why) { OnCancel(id, why); };
  h.step_outputs = [this](const RunRecord& step) -> StepOutputs {
    auto it = open_.find(step.flow_run_id);
    if (it == open_.end()) return {};
    Result<StepOutputs> needed = NeededBy(it->second, step.flow_step);
    return needed.ok() ? std::move(*needed) : StepOutputs{};
  };
  return h;
}

void FlowBook::Clear() { open_.clear(); }

Result<std::string> FlowBook::GraphOf(JobEntry& flow) {
  Result<store::JobRow> row = ctx_->store->GetJob(flow.id);
  if (!row.ok()) return row.status();
  // The definition as stored is the graph the run keeps, once it is known to read.
  Result<Flow> spec = wire::FlowFromJson(json::parse(row->spec_json, nullptr, false));
  if (!spec.ok()) return spec.status().WithContext("flow " + std::string(flow.name));
  return std::move(row->spec_json);
}

Result<NotifyPolicy> FlowBook::NotifyOf(JobEntry& flow) {
  Result<store::JobRow> row = ctx_->store->GetJob(flow.id);
  if (!row.ok()) return row.status();
  Result<Flow> spec = wire::FlowFromJson(json::parse(row->spec_json, nullptr, false));
  if (!spec.ok()) return spec.status().WithContext("flow " + std::string(flow.name));
  return std::move(spec->notify);
}

Result<RunRecord> FlowBook::Retry(JobEntry& flow, const RunRecord& old,
                                  std::vector<std::string> from) {
  const std::string of_run = "flow run " + std::to_string(old.id);
  json graph = json::parse(old.flow_json, nullptr, false);
  Result<Flow> spec = wire::FlowFromJson(graph);
  if (!spec.ok()) return spec.status().WithContext(of_run);
  std::vector<FlowNode> nodes = jobctl::GraphOf(*spec);
  const size_t n = spec->steps.size();
  // How each step ended in `old`: its own step runs, and what it kept itself.
  std::vector<StepState> ended(n, StepState::kWaiting);
  std::vector<KeptStep> was(n);
  for (auto& [i, kept] : KeptStepsOf(graph)) {
    if (i < 0 || i >= static_cast<int>(n)) continue;
    ended[static_cast<size_t>(i)] = StepStateOf(kept.state);
    was[static_cast<size_t>(i)] = std::move(kept);
  }
  Result<std::vector<RunRecord>> steps = ctx_->store->StepRuns(old.id);
  if (!steps.ok()) return steps.status();
  for (const RunRecord& step : *steps) {
    if (step.flow_step < 0 || step.flow_step >= static_cast<int>(n)) continue;
    ended[static_cast<size_t>(step.flow_step)] = StepStateOf(step.state);
    was[static_cast<size_t>(step.flow_step)] = {step.id, step.state, OutputsOf(step)};
  }
  std::vector<int> from_idx;
  if (from.empty()) {
    for (size_t i = 0; i < n; ++i) {
      if (ended[i] == StepState::kFailed) from_idx.push_back(static_cast<int>(i));
    }
    if (from_idx.empty()) return Status::Conflict("no step of " + of_run + " failed");
  }
  for (const std::string& name : from) {
    int at = -1;
    std::string names;
    for (size_t i = 0; i < n; ++i) {
      if (spec->steps[i].name == name) at = static_cast<int>(i);
      names += (names.empty() ? "" : ", ") + spec->steps[i].name;
    }
    if (at < 0) {
      return Status::InvalidArgument("\"" + name + "\" is no step of " + of_run +
                                     " (its steps: " + names + ")");
    }
    from_idx.push_back(at);
  }
  Result<std::vector<StepState>> start = RerunFrom(nodes, ended, from_idx);
  if (!start.ok()) return start.status().WithContext(of_run);
  json kept = json::array();
  for (size_t i = 0; i < n; ++i) {
    if ((*start)[i] == StepState::kWaiting) continue;
    kept.push_back({{"step", i},
                    {"run", was[i].run},
                    {"state", RunStateName(was[i].state)},
                    {"outputs", was[i].outputs}});
  }
  json frozen = wire::FlowToJson(*spec);
  frozen["kept"] = std::move(kept);
  Result<RunBook::Prepared> p =
      book_->Prepare(flow, RunReason::kRetry, old.scheduled_ms, "", "", 0, old.trace_id);
  if (!p.ok()) return p.status();
  p->rec.flow_json = frozen.dump();
  p->rec.note = "retry of " + of_run;
  std::vector<RunBook::Prepared> runs;
  runs.push_back(std::move(*p));
  std::vector<bool> created;
  if (Status s = book_->CreateAll(runs, created); !s.ok()) return s;
  if (!created[0]) return Status::Internal(of_run + ": its retry was not inserted");
  return std::move(runs[0].rec);
}

Status FlowBook::OnOpened(const RunRecord& rec, bool loaded) {
  OpenFlowRun& run = open_[rec.id];
  run.id = rec.id;
  run.job_id = rec.job_id;
  run.scheduled_ms = rec.scheduled_ms;
  run.not_before_ms = rec.not_before_ms;
  run.trace_id = rec.trace_id;
  Result<Flow> flow = wire::FlowFromJson(json::parse(rec.flow_json, nullptr, false));
  if (!flow.ok()) {
    // Ended by the holder's Reconcile (or at once, when new): never left waiting for ever.
    run.broken = "its graph does not read: " + flow.status().message();
  } else {
    run.flow = std::move(*flow);
    run.graph = jobctl::GraphOf(run.flow);
  }
  run.states.assign(run.flow.steps.size(), StepState::kWaiting);
  run.run_ids.assign(run.flow.steps.size(), 0);
  run.outputs.assign(run.flow.steps.size(), {});
  // A retry's kept steps ended in the earlier flow run: as they ended there.
  for (auto& [i, kept] : KeptStepsOf(json::parse(rec.flow_json, nullptr, false))) {
    if (i < 0 || i >= static_cast<int>(run.states.size())) continue;
    run.states[static_cast<size_t>(i)] = StepStateOf(kept.state);
    run.run_ids[static_cast<size_t>(i)] = kept.run;
    run.outputs[static_cast<size_t>(i)] = std::move(kept.outputs);
  }
  if (!loaded) {
    ++ctx_->metrics->flow_runs_started_total;
    Advance(run);
    return Status::Ok();
  }
  if (!run.broken.empty()) return Status::Ok();
  Result<std::vector<RunRecord>> steps = ctx_->store->StepRuns(rec.id);
  if (!steps.ok()) return steps.status().WithContext("flow run " + std::to_string(rec.id));
  for (const RunRecord& step : *steps) {
    if (step.flow_step < 0 || step.flow_step >= static_cast<int>(run.states.size())) {
      return Status::Corrupt("run " + std::to_string(step.id) + " is step " +
                             std::to_string(step.flow_step) + " of flow run " +
                             std::to_string(rec.id) + ", which has " +
                             std::to_string(run.states.size()) + " steps");
    }
    run.states[static_cast<size_t>(step.flow_step)] = StepStateOf(step.state);
    run.run_ids[static_cast<size_t>(step.flow_step)] = step.id;
    run.outputs[static_cast<size_t>(step.flow_step)] = OutputsOf(step);
  }
  return Status::Ok();
}

void FlowBook::Reconcile() {
  std::vector<int64_t> ids;
  for (const auto& [id, run] : open_) ids.push_back(id);
  for (int64_t id : ids) {
    auto it = open_.find(id);
    if (it != open_.end()) Advance(it->second);
  }
}

void FlowBook::OnStepEnded(const RunRecord& step) {
  auto it = open_.find(step.flow_run_id);
  if (it == open_.end()) {
    log::Warn("a step ended whose flow run is not open",
              {{"run", step.id}, {"flow_run", step.flow_run_id}, {"trace", step.trace_id}});
    return;
  }
  OpenFlowRun& run = it->second;
  if (step.flow_step < 0 || step.flow_step >= static_cast<int>(run.states.size())) return;
  run.states[static_cast<size_t>(step.flow_step)] = StepStateOf(step.state);
  run.run_ids[static_cast<size_t>(step.flow_step)] = step.id;
  run.outputs[static_cast<size_t>(step.flow_step)] = OutputsOf(step);
  if (run.canceling) return;  // OnCancel ends it once its steps have stopped
  Advance(run);
}

void FlowBook::OnCancel(int64_t id, const std::string& why) {
  auto it = open_.find(id);
  if (it == open_.end()) return;
  OpenFlowRun& run = it->second;
  run.canceling = true;
  for (size_t i = 0; i < run.states.size(); ++i) {
    if (run.states[i] != StepState::kRunning) continue;
    // Ends the step run, which comes back through OnStepEnded.
    if (Status s = book_->Cancel(run.run_ids[i], why); !s.ok()) {
      log::Warn("cannot cancel a step of a canceled flow run",
                {{"flow_run", id}, {"run", run.run_ids[i]}, {"error", s.ToString()}});
      run.states[i] = StepState::kFailed;
    }
  }
  std::vector<RunRecord> skipped;
  for (size_t i = 0; i < run.states.size(); ++i) {
    if (run.states[i] != StepState::kWaiting) continue;
    JobEntry* job = jobs_->FindByName(run.flow.steps[i].job);
    skipped.push_back(EndedStep(run, static_cast<int>(i), job ? job->id : run.job_id,
                                RunState::kSkipped, "flow run canceled"));
  }
  if (!InsertEnded(run, skipped)) return;
  End(run, why);
}

RunRecord FlowBook::EndedStep(const OpenFlowRun& run, int step, int64_t job_id, RunState state,
                              const std::string& note) const {
  RunRecord rec;
  rec.job_id = job_id;
  rec.job = run.flow.steps[static_cast<size_t>(step)].job;
  rec.reason = RunReason::kFlow;
  rec.scheduled_ms = run.scheduled_ms;
  rec.created_ms = ctx_->NowMs();
  rec.finished_ms = rec.created_ms;
  rec.state = state;
  rec.note = note;
  rec.trace_id = run.trace_id;
  rec.shard_total = 0;
  rec.flow_run_id = run.id;
  rec.flow_step = step;
  rec.flow_json = StepContextJson(run, step);
  return rec;
}

bool FlowBook::InsertEnded(OpenFlowRun& run, std::vector<RunRecord>& recs) {
  if (recs.empty()) return true;
  std::vector<bool> created;
  if (Status s = ctx_->batch->Write([&] { return ctx_->store->InsertRuns(recs, created); });
      !s.ok()) {
    return false;
  }
  for (size_t i = 0; i < recs.size(); ++i) {
    const RunRecord& rec = recs[i];
    if (!created[i]) {
      // Memory said the step had no run and the store has one: the turn is rolled back and
      // memory rebuilt from the store.
      ctx_->batch->Fail(Status::Internal("step " + std::to_string(rec.flow_step) + " of flow run " +
                                         std::to_string(run.id) + " already has a run"));
      return false;
    }
    run.states[static_cast<size_t>(rec.flow_step)] = StepStateOf(rec.state);
    run.run_ids[static_cast<size_t>(rec.flow_step)] = rec.id;
    const std::string& step = run.flow.steps[static_cast<size_t>(rec.flow_step)].name;
    if (rec.state == RunState::kSkipped) {
      ++ctx_->metrics->flow_steps_skipped_total;
      ctx_->EventAfterCommit(
          "step_skip", {{"flow_run", run.id}, {"step", step}, {"run", rec.id}, {"why", rec.note}});
    } else {
      log::Warn("flow step failed to start", {{"flow", run.flow.name},
                                              {"flow_run", run.id},
                                              {"step", step},
                                              {"why", rec.note},
                                              {"trace", run.trace_id}});
      ctx_->EventAfterCommit(
          "step_fail", {{"flow_run", run.id}, {"step", step}, {"run", rec.id}, {"why", rec.note}});
    }
  }
  return true;
}

StepOutputs FlowBook::OutputsOf(const RunRecord& step) {
  std::vector<StepOutputs> layers;
  for (const ShardRecord& shard : step.shards) {
    if (shard.outputs_json.empty()) continue;
    json j = json::parse(shard.outputs_json, nullptr, false);
    if (!j.is_object()) continue;
    StepOutputs o;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.value().is_string()) o[it.key()] = it.value().get<std::string>();
    }
    layers.push_back(std::move(o));
  }
  return MergeOutputs(layers);
}

Result<StepOutputs> FlowBook::NeededBy(const OpenFlowRun& run, int step) const {
  if (step < 0 || step >= static_cast<int>(run.flow.steps.size())) return StepOutputs{};
  std::vector<StepOutputs> needs;
  for (const std::string& need : run.flow.steps[static_cast<size_t>(step)].needs) {
    for (size_t i = 0; i < run.flow.steps.size(); ++i) {
      if (run.flow.steps[i].name == need) needs.push_back(run.outputs[i]);
    }
  }
  return NeededOutputs(needs);
}

std::string FlowBook::StepContextJson(const OpenFlowRun& run, int step) const {
  const FlowStep& s = run.flow.steps[static_cast<size_t>(step)];
  wire::StepContext c;
  c.flow = run.flow.name;
  c.flow_run = run.id;
  c.step = s.name;
  for (const std::string& need : s.needs) {
    for (size_t i = 0; i < run.flow.steps.size(); ++i) {
      if (run.flow.steps[i].name == need && run.run_ids[i] != 0) c.needs[need] = run.run_ids[i];
    }
  }
  json j = c.ToJson();
  j.erase("outputs");  // rebuilt from the needs' shards when granted
  return j.dump();
}

void FlowBook::Advance(OpenFlowRun& run) {
  if (!run.broken.empty()) {
    log::Error("flow run cannot go on", {{"flow_run", run.id}, {"why", run.broken}});
    End(run, run.broken);
    return;
  }
  // Each round applies one AdvanceFlow; a step that fails as it is made (its job left the
  // file, a broadcast with no agent) changes the states, and another round follows.
  for (size_t round = 0; round <= run.states.size(); ++round) {
    FlowAdvance next = AdvanceFlow(run.graph, run.states);
    // The skips first: a step started in the same round that needs one learns its run id.
    std::vector<RunRecord> ended;
    for (const StepSkip& skip : next.skip) {
      JobEntry* job = jobs_->FindByName(run.flow.steps[static_cast<size_t>(skip.step)].job);
      ended.push_back(
          EndedStep(run, skip.step, job ? job->id : run.job_id, RunState::kSkipped, skip.reason));
    }
    if (!InsertEnded(run, ended)) return;
    ended.clear();
    std::vector<RunBook::Prepared> starts;
    bool again = false;
    for (int i : next.start) {
      const FlowStep& step = run.flow.steps[static_cast<size_t>(i)];
      JobEntry* job = jobs_->FindByName(step.job);
      std::string why;
      if (job == nullptr || job->kind == JobKind::kFlow) {
        why = "job \"" + step.job + "\" does not exist";
      } else if (!job->active) {
        why = "job \"" + step.job + "\" is no longer in the job file";
      } else if (Result<StepOutputs> needed = NeededBy(run, i); !needed.ok()) {
        why = needed.status().message();
      } else {
        Result<RunBook::Prepared> p = book_->Prepare(*job, RunReason::kFlow, run.scheduled_ms, "",
                                                     "", run.not_before_ms, run.trace_id);
        if (p.ok()) {
          p->rec.flow_run_id = run.id;
          p->rec.flow_step = i;
          p->rec.flow_json = StepContextJson(run, i);
          starts.push_back(std::move(*p));
          continue;
        }
        why = p.status().message();
      }
      ended.push_back(EndedStep(run, i, job && job->kind != JobKind::kFlow ? job->id : run.job_id,
                                RunState::kFailed, "cannot start: " + why));
      again = true;
    }
    if (!InsertEnded(run, ended)) return;
    std::vector<bool> created;
    if (Status s = book_->CreateAll(starts, created); !s.ok()) return;  // the turn fails
    for (size_t k = 0; k < starts.size(); ++k) {
      const RunRecord& rec = starts[k].rec;
      if (!created[k]) {
        ctx_->batch->Fail(Status::Internal("step " + std::to_string(rec.flow_step) +
                                           " of flow run " + std::to_string(run.id) +
                                           " already has a run"));
        return;
      }
      run.run_ids[static_cast<size_t>(rec.flow_step)] = rec.id;
      ++ctx_->metrics->flow_steps_started_total;
      // A broadcast step with no eligible agent is made failed (RunBook::Prepare).
      run.states[static_cast<size_t>(rec.flow_step)] = StepStateOf(rec.state);
      if (IsTerminal(rec.state)) again = true;
    }
    if (!again) {
      if (next.ended) End(run);
      return;
    }
  }
  End(run, "its steps did not settle");  // unreachable: each round ends a step at least
}

void FlowBook::End(OpenFlowRun& run, const std::string& why) {
  std::vector<std::string> failed;
  int skipped = 0;
  for (size_t i = 0; i < run.states.size(); ++i) {
    if (run.states[i] == StepState::kFailed) failed.push_back(run.flow.steps[i].name);
    if (run.states[i] == StepState::kSkipped) ++skipped;
  }
  RunState state = run.canceling                          ? RunState::kCanceled
                   : failed.empty() && run.broken.empty() ? RunState::kSucceeded
                                                          : RunState::kFailed;
  std::string note = why;
  if (!failed.empty() && !run.canceling) {
    std::string names;
    for (const std::string& n : failed) names += (names.empty() ? "" : ", ") + n;
    note += (note.empty() ? "" : "; ") + names + " failed";
  }
  if (skipped > 0) {
    note += (note.empty() ? "" : "; ") + std::to_string(skipped) +
            (skipped == 1 ? " step skipped" : " steps skipped");
  }
  ++ctx_->metrics->flow_runs_finished_total[std::string(RunStateName(state))];
  ctx_->EventAfterCommit(
      "flow_end", {{"run", run.id}, {"flow", run.flow.name}, {"state", RunStateName(state)}});
  int64_t id = run.id;
  // One notification per flow run, to whom the flow tells now (a retry of an old run may
  // carry a graph whose targets are gone); its own graph's when the flow no longer reads.
  NotifyPolicy notify = run.flow.notify;
  if (JobEntry* flow = jobs_->Find(run.job_id); flow != nullptr && flow->kind == JobKind::kFlow) {
    if (Result<NotifyPolicy> now = NotifyOf(*flow); now.ok()) notify = std::move(*now);
  }
  open_.erase(id);  // before FinishFlowRun, whose hooks may look
  book_->FinishFlowRun(id, state, note, notify);
}

}  // namespace jobctl::coordinator
