#include "model/flow_spec.h"

#include <algorithm>

namespace jobctl {

std::string_view JobKindName(JobKind k) {
  switch (k) {
    case JobKind::kJob: return "job";
    case JobKind::kFlow: return "flow";
    case JobKind::kStep: return "step";
  }
  return "job";
}

std::optional<JobKind> ParseJobKind(std::string_view s) {
  for (JobKind k : {JobKind::kJob, JobKind::kFlow, JobKind::kStep}) {
    if (JobKindName(k) == s) return k;
  }
  return std::nullopt;
}

bool IsValidStepName(std::string_view name) {
  auto first = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  auto rest = [&](char c) { return first(c) || c == '.' || c == '_' || c == '-'; };
  return !name.empty() && name.size() <= kMaxStepNameLength && first(name[0]) &&
         std::all_of(name.begin(), name.end(), rest);
}

std::string StepJobName(std::string_view flow, std::string_view step) {
  return std::string(flow) + ":" + std::string(step);
}

std::string StepEnvName(std::string_view step) {
  std::string out(step);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') {
      c = static_cast<char>(c - 'a' + 'A');
    } else if (c == '.' || c == '-') {
      c = '_';
    }
  }
  return out;
}

std::vector<FlowNode> GraphOf(const Flow& flow) {
  std::vector<FlowNode> graph;
  graph.reserve(flow.steps.size());
  for (const FlowStep& step : flow.steps) graph.push_back({step.name, step.needs, step.when});
  return graph;
}

}  // namespace jobctl
