// Reading the [[flow]] tables of jobs.toml (man 5 jobs.toml, FLOWS) for ParseJobFile. A flow
// takes the job keys that say when it fires (schedule, misfire, overlap, notify, ...) and
// holds 1 to kMaxFlowSteps [[flow.step]] tables. A step names a [[job]] of the file (and then
// takes no job keys) or has its own command or shell with the job keys that say how it runs;
// it lists the steps it needs and when it runs. Problems are reported as the job reader's are,
// at the value that is wrong, naming the flow and the step (or their place in the file where
// they have no valid name): the graph's too (an unknown need at that need, a cycle at the
// needs of its first step with its path). Internal to lib/config; pure, any thread.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "config/job_keys.h"
#include "model/flow_spec.h"

namespace jobctl::jobs_toml {

// The names of a file's [[job]]s and [[flow]]s, which share one namespace: each with the line
// of its name and what it names (kJob or kFlow).
struct FileName {
  int line = 0;
  JobKind kind = JobKind::kJob;
};
using FileNames = std::map<std::string, FileName, std::less<>>;

class FlowReader {
 public:
  // `defaults` is the file's [defaults]; `names` holds the [[job]]s' names and gets the flows'.
  FlowReader(Reporter& reporter, const Draft& defaults, FileNames& names)
      : reporter_(reporter), defaults_(defaults), names_(names) {}

  // One [[flow]] table, the index-th of the array.
  void Read(const toml::table& t, size_t index);

  // Once every table is read: checks each step's job against the file's [[job]]s, then adds
  // the flows without errors and their steps' own jobs to `out`, and where each of those
  // flows has its name to `places`. The tables read must still be alive.
  void Finish(JobFile& out, std::vector<JobFileResult::Place>& places);

  // The [[job]]s some step names: they may leave out schedule.
  const std::set<std::string, std::less<>>& named_jobs() const { return named_jobs_; }

 private:
  struct StepRead {
    const toml::table* table = nullptr;
    size_t index = 0;  // in the flow's step array
    FlowStep step;
    Job own;               // with step.own: the step's own job
    bool graph_ok = true;  // its needs and when read well
  };
  struct FlowRead {
    const toml::table* table = nullptr;
    Flow flow;
    std::string root;  // "flow[2]": how messages name it when it has no valid name
    std::vector<StepRead> steps;
    int errors = 0;
  };

  // Where a step's problems are reported: at its flow's and its own name, or by their place
  // ("flow[0].step[2]", "step[2]") where either has no valid name.
  Scope StepScope(const FlowRead& f, const std::string& step, size_t index);
  void ReadSteps(const toml::table& t, FlowRead& f);
  void ReadStep(const toml::table& t, size_t index, FlowRead& f);
  void CheckGraph(FlowRead& f);

  Reporter& reporter_;
  const Draft& defaults_;
  FileNames& names_;
  std::vector<FlowRead> flows_;
  std::set<std::string, std::less<>> named_jobs_;
};

}  // namespace jobctl::jobs_toml
