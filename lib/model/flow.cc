// The graph is small (kMaxFlowSteps), so both rules rebuild what they need on every call: a
// name index, the needs as indices, and an order in which every step comes after the steps
// it needs. CheckFlowGraph finds cycles as strongly connected components (Tarjan), which
// also yields that order for the rest of the graph.
#include "model/flow.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <tuple>

namespace jobctl {

std::string_view StepWhenName(StepWhen w) {
  switch (w) {
    case StepWhen::kSuccess: return "success";
    case StepWhen::kFailure: return "failure";
    case StepWhen::kAlways: return "always";
  }
  return "success";
}

std::optional<StepWhen> ParseStepWhen(std::string_view s) {
  for (StepWhen w : {StepWhen::kSuccess, StepWhen::kFailure, StepWhen::kAlways}) {
    if (StepWhenName(w) == s) return w;
  }
  return std::nullopt;
}

std::string_view StepStateName(StepState s) {
  switch (s) {
    case StepState::kWaiting: return "waiting";
    case StepState::kRunning: return "running";
    case StepState::kSucceeded: return "succeeded";
    case StepState::kFailed: return "failed";
    case StepState::kSkipped: return "skipped";
  }
  return "waiting";
}

StepState StepStateOf(RunState run) {
  switch (run) {
    case RunState::kPending:
    case RunState::kRunning: return StepState::kRunning;
    case RunState::kSucceeded: return StepState::kSucceeded;
    case RunState::kSkipped: return StepState::kSkipped;
    case RunState::kFailed:
    case RunState::kTimedOut:
    case RunState::kCanceled:
    case RunState::kLost: return StepState::kFailed;
  }
  return StepState::kFailed;
}

namespace {

using Kind = FlowGraphProblem::Kind;

// The needs of each step as indices of the steps they name (the first step of a name), with
// needs that name no step, the step itself or a need already listed left out.
std::vector<std::vector<int>> NeedIndices(std::span<const FlowNode> steps) {
  std::map<std::string_view, int> index;
  for (int i = 0; i < static_cast<int>(steps.size()); ++i) index.emplace(steps[i].name, i);
  std::vector<std::vector<int>> needs(steps.size());
  for (int i = 0; i < static_cast<int>(steps.size()); ++i) {
    for (const std::string& name : steps[i].needs) {
      auto it = index.find(name);
      if (it == index.end() || it->second == i) continue;
      if (std::find(needs[i].begin(), needs[i].end(), it->second) != needs[i].end()) continue;
      needs[i].push_back(it->second);
    }
  }
  return needs;
}

// Tarjan's strongly connected components over "needs" edges. Components come out needs
// first: every component after those it needs.
std::vector<std::vector<int>> Components(const std::vector<std::vector<int>>& needs) {
  const int n = static_cast<int>(needs.size());
  std::vector<int> order(n, -1), low(n, 0), stack;
  std::vector<bool> on_stack(n, false);
  std::vector<std::vector<int>> out;
  int next = 0;
  std::function<void(int)> visit = [&](int v) {
    order[v] = low[v] = next++;
    stack.push_back(v);
    on_stack[v] = true;
    for (int w : needs[v]) {
      if (order[w] < 0) {
        visit(w);
        low[v] = std::min(low[v], low[w]);
      } else if (on_stack[w]) {
        low[v] = std::min(low[v], order[w]);
      }
    }
    if (low[v] != order[v]) return;
    std::vector<int> component;
    int w;
    do {
      w = stack.back();
      stack.pop_back();
      on_stack[w] = false;
      component.push_back(w);
    } while (w != v);
    out.push_back(std::move(component));
  };
  for (int v = 0; v < n; ++v) {
    if (order[v] < 0) visit(v);
  }
  return out;
}

// A cycle through `from` inside one component: "a" -> "b" -> "a", each needing the next.
std::string CyclePath(std::span<const FlowNode> steps, const std::vector<std::vector<int>>& needs,
                      const std::set<int>& component, int from) {
  // Breadth-first from `from` over needs inside the component, back to `from`: the shortest.
  std::map<int, int> came_from;
  std::vector<int> queue{from};
  for (size_t q = 0; q < queue.size(); ++q) {
    int v = queue[q];
    for (int w : needs[v]) {
      if (!component.contains(w)) continue;
      if (w == from) {
        std::vector<int> path{from};
        for (int at = v; at != from; at = came_from[at]) path.push_back(at);
        path.push_back(from);
        std::reverse(path.begin() + 1, path.end() - 1);
        std::string out;
        for (size_t i = 0; i < path.size(); ++i) {
          out += fmt::format("{}\"{}\"", i ? " -> " : "", steps[path[i]].name);
        }
        return out;
      }
      if (came_from.contains(w)) continue;
      came_from[w] = v;
      queue.push_back(w);
    }
  }
  return fmt::format("\"{}\"", steps[from].name);  // not reached: a component of 2+ is a cycle
}

enum class Reach { kRuns, kNever, kBroken };

}  // namespace

std::vector<FlowGraphProblem> CheckFlowGraph(std::span<const FlowNode> steps) {
  const int n = static_cast<int>(steps.size());
  std::vector<FlowGraphProblem> problems;
  // Broken: the step has a problem of its own, or is in a cycle. Steps that need a broken
  // step are not reported as never running: fixing the first problem may fix them.
  std::vector<bool> broken(n, false);
  std::map<std::string_view, int> index;
  for (int i = 0; i < n; ++i) {
    auto [it, fresh] = index.emplace(steps[i].name, i);
    if (!fresh) {
      broken[i] = true;
      problems.push_back(
          {Kind::kDuplicateStep, i, -1, fmt::format("a second step named \"{}\"", steps[i].name)});
    }
  }
  for (int i = 0; i < n; ++i) {
    std::set<std::string_view> seen;
    for (int j = 0; j < static_cast<int>(steps[i].needs.size()); ++j) {
      const std::string& need = steps[i].needs[j];
      if (need == steps[i].name) {
        broken[i] = true;
        problems.push_back({Kind::kSelfNeed, i, j, "a step cannot need itself"});
      } else if (!index.contains(need)) {
        broken[i] = true;
        problems.push_back({Kind::kUnknownNeed, i, j,
                            fmt::format("needs \"{}\", which is not a step of this flow", need)});
      } else if (!seen.insert(need).second) {
        problems.push_back({Kind::kRepeatedNeed, i, j, fmt::format("names \"{}\" twice", need)});
      }
    }
  }
  std::vector<std::vector<int>> needs = NeedIndices(steps);
  std::vector<Reach> reach(n, Reach::kRuns);
  for (const std::vector<int>& component : Components(needs)) {
    if (component.size() > 1) {
      int first = *std::min_element(component.begin(), component.end());
      std::set<int> members(component.begin(), component.end());
      problems.push_back(
          {Kind::kCycle, first, -1,
           "cycle: " + CyclePath(steps, needs, members, first) + " (each needs the next)"});
      for (int v : component) reach[v] = Reach::kBroken;
      continue;
    }
    // One step, whose needs were all decided before it.
    int v = component[0];
    if (broken[v]) {
      reach[v] = Reach::kBroken;
      continue;
    }
    const FlowNode& step = steps[v];
    int never = -1;
    bool any_broken = false, any_can_run = false;
    for (int w : needs[v]) {
      if (reach[w] == Reach::kBroken) any_broken = true;
      if (reach[w] == Reach::kNever && never < 0) never = w;
      if (reach[w] == Reach::kRuns) any_can_run = true;
    }
    if (any_broken) {
      reach[v] = Reach::kBroken;
      continue;
    }
    std::string why;
    if (step.when == StepWhen::kSuccess && never >= 0) {
      why = fmt::format("can never run: it needs \"{}\" to succeed, which can never run",
                        steps[never].name);
    } else if (step.when == StepWhen::kFailure && needs[v].empty()) {
      why =
          "can never run: when = \"failure\" runs a step after a step it needs failed, and it "
          "needs none";
    } else if (step.when == StepWhen::kFailure && !any_can_run) {
      why =
          "can never run: when = \"failure\", and none of the steps it needs can run, so "
          "none can fail";
    }
    if (!why.empty()) {
      reach[v] = Reach::kNever;
      problems.push_back({Kind::kNeverRuns, v, -1, std::move(why)});
    }
  }
  std::stable_sort(problems.begin(), problems.end(),
                   [](const FlowGraphProblem& a, const FlowGraphProblem& b) {
                     return std::tie(a.step, a.need) < std::tie(b.step, b.need);
                   });
  return problems;
}

FlowAdvance AdvanceFlow(std::span<const FlowNode> steps, std::span<const StepState> states) {
  const int n = static_cast<int>(steps.size());
  std::vector<std::vector<int>> needs = NeedIndices(steps);
  std::vector<StepState> now(states.begin(), states.end());
  now.resize(n, StepState::kWaiting);
  FlowAdvance out;
  // Components of an accepted graph are single steps, needs first: one pass decides every
  // step whose needs end in this call too.
  for (const std::vector<int>& component : Components(needs)) {
    for (int v : component) {
      if (now[v] != StepState::kWaiting) continue;
      bool ended = true, any_failed = false;
      int not_succeeded = -1;
      for (int w : needs[v]) {
        if (now[w] == StepState::kWaiting || now[w] == StepState::kRunning) ended = false;
        if (now[w] == StepState::kFailed) any_failed = true;
        if (now[w] != StepState::kSucceeded && not_succeeded < 0) not_succeeded = w;
      }
      if (!ended) continue;
      std::string reason;
      switch (steps[v].when) {
        case StepWhen::kSuccess:
          if (not_succeeded >= 0) {
            reason =
                fmt::format("needs \"{}\", which {}", steps[not_succeeded].name,
                            now[not_succeeded] == StepState::kFailed ? "failed" : "was skipped");
          }
          break;
        case StepWhen::kFailure:
          if (!any_failed) reason = "when = \"failure\", and no step it needs failed";
          break;
        case StepWhen::kAlways: break;
      }
      if (reason.empty()) {
        now[v] = StepState::kRunning;
        out.start.push_back(v);
      } else {
        now[v] = StepState::kSkipped;
        out.skip.push_back({v, std::move(reason)});
      }
    }
  }
  std::sort(out.start.begin(), out.start.end());
  out.ended = std::none_of(now.begin(), now.end(), [](StepState s) {
    return s == StepState::kWaiting || s == StepState::kRunning;
  });
  out.succeeded = out.ended && std::none_of(now.begin(), now.end(),
                                            [](StepState s) { return s == StepState::kFailed; });
  return out;
}

Result<std::vector<StepState>> RerunFrom(std::span<const FlowNode> steps,
                                         std::span<const StepState> ended,
                                         std::span<const int> from) {
  const int n = static_cast<int>(steps.size());
  if (from.empty()) return Status::InvalidArgument("no step to rerun from");
  if (static_cast<int>(ended.size()) != n) {
    return Status::InvalidArgument("one state per step is needed");
  }
  for (StepState s : ended) {
    if (s == StepState::kWaiting || s == StepState::kRunning) {
      return Status::Conflict("the flow run has not ended");
    }
  }
  std::vector<std::vector<int>> needs = NeedIndices(steps);
  std::vector<StepState> out(ended.begin(), ended.end());
  std::vector<bool> rerun(n, false);
  for (int f : from) {
    if (f < 0 || f >= n) return Status::InvalidArgument("no such step: " + std::to_string(f));
    rerun[f] = true;
  }
  // Needs first: a step is rerun when one of the steps it needs is.
  for (const std::vector<int>& component : Components(needs)) {
    for (int v : component) {
      for (int w : needs[v]) rerun[v] = rerun[v] || rerun[w];
    }
  }
  for (int v = 0; v < n; ++v) {
    if (rerun[v]) out[v] = StepState::kWaiting;
  }
  FlowAdvance next = AdvanceFlow(steps, out);
  for (int f : from) {
    for (const StepSkip& skip : next.skip) {
      if (skip.step == f) {
        return Status::Conflict(
            fmt::format("step \"{}\" would be skipped again: {}", steps[f].name, skip.reason));
      }
    }
  }
  return out;
}

}  // namespace jobctl
