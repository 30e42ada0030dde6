// Flow is one [[flow]] of jobs.toml after defaults are applied and every value is checked: when
// it fires (every schedule form a job has, with its misfire and overlap policies) and its
// steps, each running a [[job]] of the file or its own command once the steps it needs have
// ended (model/flow.h holds the rules). A step with its own command runs as a job of its own,
// named StepJobName(flow, step), which no [[job]] can be named. A plain value type.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/duration.h"
#include "model/flow.h"
#include "model/job.h"
#include "model/notify.h"
#include "model/schedule.h"

namespace jobctl {

// What a row of the job table is: a [[job]], a [[flow]], or a step's own command.
enum class JobKind { kJob, kFlow, kStep };
std::string_view JobKindName(JobKind k);  // "job", "flow", "step"
std::optional<JobKind> ParseJobKind(std::string_view s);

struct FlowStep {
  std::string name;  // IsValidStepName, unique in the flow
  // The job it runs: a [[job]]'s name, or StepJobName(flow, name) when `own`.
  std::string job;
  bool own = false;
  std::vector<std::string> needs;  // step names, in file order
  StepWhen when = StepWhen::kSuccess;
  bool operator==(const FlowStep&) const = default;
};

struct Flow {
  std::string name;       // IsValidJobName; flows and jobs share one namespace
  std::string schedule;   // as written; parsed by Schedule
  int64_t anchor_ms = 0;  // as a job's
  Dialect dialect = Dialect::kCron;
  std::string timezone;  // IANA; "" = UTC
  Overlap overlap = Overlap::kForbid;
  Misfire misfire = Misfire::kFireOnce;
  int misfire_cap = 100;
  bool enabled = true;
  std::string description;
  std::optional<Millis> expect_success_within;
  NotifyPolicy notify;          // one notification per flow run
  std::vector<FlowStep> steps;  // 1 to kMaxFlowSteps, in file order
  bool operator==(const Flow&) const = default;
};

// Step names: [a-z0-9][a-z0-9._-]*, at most kMaxStepNameLength characters.
inline constexpr size_t kMaxStepNameLength = 64;
bool IsValidStepName(std::string_view name);

// "nightly-etl:transform": the job a step with its own command runs as.
std::string StepJobName(std::string_view flow, std::string_view step);

// "load-2.x" -> "LOAD_2_X": how a step is named in its dependents' environment
// (JOB_NEED_LOAD_2_X_RUN_ID).
std::string StepEnvName(std::string_view step);

// The graph of `flow`, for CheckFlowGraph and AdvanceFlow.
std::vector<FlowNode> GraphOf(const Flow& flow);

// What Schedule::Parse needs from a flow; views into `flow`, which must outlive the spec.
inline ScheduleSpec ScheduleSpecOf(const Flow& flow) {
  return {.expr = flow.schedule,
          .dialect = flow.dialect,
          .timezone = flow.timezone,
          .hash_key = flow.name,
          .anchor = FromUnixMs(flow.anchor_ms)};
}

}  // namespace jobctl
