// I12, flows: per flow run in the store, (a) at most one run per step; (b) no step run made
// before every step it needs had ended; (c) replaying AdvanceFlow over how the steps ended
// gives exactly the steps that ran and those recorded as skipped (every step whose needs were
// met has a run, every skip is one the graph calls for, with the reason it gives); (d) the flow
// run ended no earlier than its last step and, unless canceled, in the state the graph says:
// succeeded exactly when no step failed; a canceled one has each step that never started
// recorded as skipped, "flow run canceled"; (e) after the test no flow run is left open.
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "fault/checker.h"
#include "model/flow.h"
#include "model/flow_spec.h"
#include "wire/job_json.h"

namespace jobctl::fault {
namespace {

std::string FlowRunName(const RunRecord& run) {
  return "flow " + run.job + " run " + std::to_string(run.id);
}

void CheckFlowRun(const RunRecord& flow_run, const std::vector<const RunRecord*>& steps,
                  Report* r) {
  const std::string name = FlowRunName(flow_run);
  nlohmann::json graph_json = nlohmann::json::parse(flow_run.flow_json, nullptr, false);
  Result<Flow> flow = wire::FlowFromJson(graph_json);
  if (!flow.ok()) {
    r->Fail("I12", name + ": its graph does not read: " + flow.status().message());
    return;
  }
  const std::vector<FlowNode> graph = GraphOf(*flow);
  const size_t n = graph.size();
  // (a) one run per step.
  std::vector<const RunRecord*> by_step(n, nullptr);
  for (const RunRecord* step : steps) {
    if (step->flow_step < 0 || step->flow_step >= static_cast<int>(n)) {
      r->Fail("I12", name + ": run " + std::to_string(step->id) + " names step " +
                         std::to_string(step->flow_step) + ", which it does not have");
      continue;
    }
    const RunRecord*& slot = by_step[static_cast<size_t>(step->flow_step)];
    if (slot != nullptr) {
      r->Fail("I12", name + ": step \"" + graph[static_cast<size_t>(step->flow_step)].name +
                         "\" ran twice: runs " + std::to_string(slot->id) + " and " +
                         std::to_string(step->id));
      continue;
    }
    slot = step;
  }
  // (b) no step before its needs ended.
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < n; ++i) index[graph[i].name] = i;
  for (size_t i = 0; i < n; ++i) {
    const RunRecord* step = by_step[i];
    if (step == nullptr) continue;
    for (const std::string& need : graph[i].needs) {
      const RunRecord* before = by_step[index[need]];
      if (before == nullptr || !before->finished_ms || *before->finished_ms > step->created_ms) {
        r->Fail("I12", name + ": step \"" + graph[i].name + "\" (run " + std::to_string(step->id) +
                           ") was made before \"" + need + "\", which it needs, had ended");
      }
    }
  }
  const bool canceled = flow_run.state == RunState::kCanceled;
  // (d) the flow run ends after its steps.
  for (const RunRecord* step : steps) {
    if (flow_run.finished_ms && step->finished_ms && *step->finished_ms > *flow_run.finished_ms) {
      r->Fail("I12", name + ": ended before its step run " + std::to_string(step->id));
    }
  }
  if (canceled) {
    // Which steps ran depends on when the cancel came; each one is recorded either way.
    for (size_t i = 0; i < n; ++i) {
      if (by_step[i] == nullptr) {
        r->Fail("I12", name + ": canceled with step \"" + graph[i].name + "\" not recorded");
      }
    }
    return;
  }
  // (c) replay: from every step waiting, each round's starts must have runs that are not
  // skips, and its skips skipped runs with the same reason; how a started step ended feeds
  // the next round.
  std::vector<StepState> states(n, StepState::kWaiting);
  for (size_t round = 0; round <= n; ++round) {
    FlowAdvance next = AdvanceFlow(graph, states);
    if (next.start.empty() && next.skip.empty()) {
      if (!next.ended) {
        r->Fail("I12", name + ": steps neither ran nor were skipped while the flow run " +
                           std::string(RunStateName(flow_run.state)));
      } else if (IsTerminal(flow_run.state) &&
                 (flow_run.state == RunState::kSucceeded) != next.succeeded) {
        r->Fail("I12", name + ": ended " + std::string(RunStateName(flow_run.state)) +
                           " but its steps say " + (next.succeeded ? "succeeded" : "failed"));
      }
      break;
    }
    for (const StepSkip& skip : next.skip) {
      const RunRecord* step = by_step[static_cast<size_t>(skip.step)];
      const std::string& s = graph[static_cast<size_t>(skip.step)].name;
      if (step == nullptr || step->state != RunState::kSkipped) {
        r->Fail("I12", name + ": step \"" + s + "\" should have been skipped (" + skip.reason +
                           ") but " +
                           (step ? "ran as run " + std::to_string(step->id) : "has no run"));
      } else if (step->note != skip.reason) {
        r->Fail("I12", name + ": step \"" + s + "\" skipped as \"" + step->note +
                           "\" where its graph says \"" + skip.reason + "\"");
      }
      states[static_cast<size_t>(skip.step)] = StepState::kSkipped;
    }
    for (int i : next.start) {
      const RunRecord* step = by_step[static_cast<size_t>(i)];
      const std::string& s = graph[static_cast<size_t>(i)].name;
      if (step == nullptr || step->state == RunState::kSkipped) {
        r->Fail("I12", name + ": step \"" + s + "\" had its needs met but " +
                           (step ? "was skipped: " + step->note : std::string("never ran")));
        states[static_cast<size_t>(i)] = StepState::kFailed;
        continue;
      }
      StepState ended = StepStateOf(step->state);
      if (ended == StepState::kRunning && IsTerminal(flow_run.state)) {
        r->Fail("I12", name + ": ended with step \"" + s + "\" (run " + std::to_string(step->id) +
                           ") still " + std::string(RunStateName(step->state)));
      }
      states[static_cast<size_t>(i)] = ended;
    }
    if (std::find(states.begin(), states.end(), StepState::kRunning) != states.end()) break;
  }
}

}  // namespace

void CheckFlows(const History& h, const StoreView& s, Report* r) {
  (void)h;
  std::map<int64_t, std::vector<const RunRecord*>> steps;
  for (const RunRecord& run : s.runs) {
    if (run.flow_run_id != 0) steps[run.flow_run_id].push_back(&run);
  }
  int64_t flow_runs = 0, step_runs = 0;
  for (const RunRecord& run : s.runs) {
    if (run.flow_run_id != 0 || run.flow_json.empty()) continue;
    ++flow_runs;
    const std::vector<const RunRecord*>& mine = steps[run.id];
    step_runs += static_cast<int64_t>(mine.size());
    // (e) nothing left open once the test quiesced.
    if (!IsTerminal(run.state)) {
      r->Fail("I12", FlowRunName(run) + ": still " + std::string(RunStateName(run.state)) +
                         " after the test");
    }
    CheckFlowRun(run, mine, r);
  }
  for (const auto& [id, list] : steps) {
    const RunRecord* flow_run = s.FindRun(id);
    if (flow_run == nullptr) {
      r->Fail("I12", "flow run " + std::to_string(id) + " of step run " +
                         std::to_string(list.front()->id) + " is not in the store");
    }
  }
  r->Count("flow runs", flow_runs);
  r->Count("step runs", step_runs);
}

}  // namespace jobctl::fault
