// A flow is a set of steps that wait for each other: each step names the steps it needs and
// when it runs given how they ended. This file holds the two pure rules flows live by:
//
//  - CheckFlowGraph finds what makes a flow's graph unusable, each problem at the step (and
//    the need) it is about: a need that is no step of the flow, a step that needs itself or
//    names a need twice, a cycle (with its path), and a step that can never run.
//  - AdvanceFlow takes how far one flow run got (each step waiting, running, succeeded,
//    failed or skipped) and says which steps start now, which are skipped and why, and
//    whether the flow run has ended and whether it succeeded. Skips cascade within one call,
//    so the caller never has to call it twice for one change.
//
// When a step runs, given its needs once all of them have ended:
//   success  every need succeeded (the default)
//   failure  at least one need failed ("page someone if any step failed")
//   always   whatever happened ("always run cleanup")
// A step that does not run is skipped, with the reason; a skipped need counts as "did not
// succeed" and "did not fail". A flow run ends when no step is waiting or running, and it
// succeeded when no step failed (a step that ran on failure does not make it succeed).
//
// Value types and pure functions, any thread. Steps are referred to by their index in the
// flow; names are only for messages.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/run.h"

namespace jobctl {

enum class StepWhen { kSuccess, kFailure, kAlways };
std::string_view StepWhenName(StepWhen w);  // "success", "failure", "always"
std::optional<StepWhen> ParseStepWhen(std::string_view s);

// Size limits of a flow, checked where flows are read.
constexpr int kMaxFlowSteps = 100;

// One step as the graph sees it.
struct FlowNode {
  std::string name;
  std::vector<std::string> needs;  // names of steps of the same flow, in file order
  StepWhen when = StepWhen::kSuccess;
  bool operator==(const FlowNode&) const = default;
};

struct FlowGraphProblem {
  enum class Kind {
    kDuplicateStep,  // a second step with the same name
    kUnknownNeed,    // a need that is no step of the flow
    kSelfNeed,       // a step that needs itself
    kRepeatedNeed,   // the same need twice in one step
    kCycle,          // reported once per cycle, at the step of the cycle that comes first
    kNeverRuns,      // no outcome of the steps it needs lets it run
  };
  Kind kind;
  int step = 0;         // index of the step it is about
  int need = -1;        // index into that step's needs, or -1 when about the step as a whole
  std::string message;  // "needs \"load\", which is not a step of this flow"
  bool operator==(const FlowGraphProblem&) const = default;
};

// Every problem of the graph, in step order. Empty means AdvanceFlow may be used on it.
std::vector<FlowGraphProblem> CheckFlowGraph(std::span<const FlowNode> steps);

enum class StepState { kWaiting, kRunning, kSucceeded, kFailed, kSkipped };
std::string_view StepStateName(StepState s);

// A step's state from its run's: pending and running are running; failed, timed out, lost and
// canceled are failed (so a person who cancels a step lets the "failure" steps run).
StepState StepStateOf(RunState run);

struct StepSkip {
  int step = 0;
  std::string reason;  // "needs \"extract\", which failed"
  bool operator==(const StepSkip&) const = default;
};

struct FlowAdvance {
  std::vector<int> start;      // steps whose needs are met: start them now, in step order
  std::vector<StepSkip> skip;  // steps that can no longer run, in the order they were decided
  bool ended = false;          // nothing waits or runs once these are applied
  bool succeeded = false;      // ended, and no step failed
  bool operator==(const FlowAdvance&) const = default;
};

// What follows from `states` (one per step, same order) in a graph CheckFlowGraph accepted.
// A waiting step whose needs have not all ended stays waiting; one whose needs have ended
// starts or is skipped. Steps already running or ended are left as they are.
FlowAdvance AdvanceFlow(std::span<const FlowNode> steps, std::span<const StepState> states);

// The states a retry of an ended flow run starts from, when it reruns the steps `from` (indexes)
// and every step that needs one of them, directly or not: those are waiting again; every other
// step keeps how it ended. Refused (kConflict) when the run has not ended, and when a `from`
// step would at once be skipped again, with AdvanceFlow's reason; InvalidArgument for an index
// out of range or no step at all.
Result<std::vector<StepState>> RerunFrom(std::span<const FlowNode> steps,
                                         std::span<const StepState> ended,
                                         std::span<const int> from);

}  // namespace jobctl
