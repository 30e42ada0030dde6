// The Job model as JSON: how the coordinator stores a job's definition and how the API
// shows it. Field names are the job file's keys. Pure functions, any thread.
#pragma once

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "model/job.h"

namespace jobctl::wire {

nlohmann::json JobToJson(const Job& job);
Result<Job> JobFromJson(const nlohmann::json& j);

// Per key: which of the job file's keys differ between two versions of a job ("schedule",
// "env", ...), for `jobctl diff` and the apply response.
std::vector<std::string> ChangedFields(const Job& before, const Job& after);

// Labels as a JSON object and selectors as "k=v" / "k!=v" text.
std::string SelectorText(const LabelSelector& s);

}  // namespace jobctl::wire
