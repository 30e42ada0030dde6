// The Job model as JSON: how the coordinator stores a job's definition and how the API
// shows it. Field names are the job file's keys. Pure functions, any thread.
#pragma once

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "model/flow_spec.h"
#include "model/job.h"

namespace jobctl::wire {

// A job's resource limits as four fields of `j` ("memory_max_bytes", "cpu_max_percent",
// "pids_max", "io_weight"; null when unset), and read back: each null, absent or an integer
// in its range (model/job.h), else an error naming `what`.FIELD.
void LimitsToJson(const ResourceLimits& limits, nlohmann::json& j);
Status LimitsFromJson(const nlohmann::json& j, std::string_view what, ResourceLimits* out);

nlohmann::json JobToJson(const Job& job);
Result<Job> JobFromJson(const nlohmann::json& j);

// Per key: which of the job file's keys differ between two versions of a job ("schedule",
// "env", ...), for `jobctl diff` and the apply response.
std::vector<std::string> ChangedFields(const Job& before, const Job& after);

// A flow: its keys as a job's (the same names) and "steps": [{name, job, own, needs, when}].
// FlowFromJson checks what a flow read from jobs.toml holds: 1 to kMaxFlowSteps steps with
// valid, distinct names, each needing at most kMaxFlowSteps steps.
nlohmann::json FlowToJson(const Flow& flow);
Result<Flow> FlowFromJson(const nlohmann::json& j);

// The flow's keys that differ ("schedule", ...), then per step: `step "x" (added)`,
// `step "x" (removed)`, `step "x".needs` (and .when, .job). What a step's own job changed is
// ChangedFields of its step jobs.
std::vector<std::string> FlowChangedFields(const Flow& before, const Flow& after);

// Labels as a JSON object and selectors as "k=v" / "k!=v" text.
std::string SelectorText(const LabelSelector& s);

}  // namespace jobctl::wire
