// FlowBook runs flows: it owns each unfinished flow run's frozen graph and its steps' states,
// starts a step when AdvanceFlow (model/flow.h) says its needs are met, records as skipped
// (with the reason) a step that can no longer run, and ends the flow run when nothing waits
// or runs, each in the write batch of the change that decided it: the turn that accepted a
// step's last result also creates the next steps' runs. A step run is an ordinary RunBook run
// (shards, retries, leases, output) of the step's job, reason "flow"; the store's runs_step
// index refuses a second run of one step of one flow run. After a restart the states are read
// back from the store and Reconcile advances what a crash could not have left half done.
// Loop thread only; owned by the Coordinator, called by the RunBook through its FlowHooks.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "coordinator/context.h"
#include "coordinator/job_index.h"
#include "coordinator/run_book.h"
#include "model/flow.h"
#include "model/flow_spec.h"
#include "model/step_output.h"

namespace jobctl::coordinator {

// What a retried flow run keeps of the earlier one (RunRecord::flow_json's "kept"), by step
// index: the run of each step that is not run again, how it ended and what it wrote.
struct KeptStep {
  int64_t run = 0;
  RunState state = RunState::kSucceeded;
  StepOutputs outputs;
};
std::map<int, KeptStep> KeptStepsOf(const nlohmann::json& flow_json);

class FlowBook {
 public:
  FlowBook(Context* ctx, JobIndex* jobs, RunBook* book);
  FlowBook(const FlowBook&) = delete;
  FlowBook& operator=(const FlowBook&) = delete;

  // What the RunBook calls (RunBook::set_flow_hooks).
  RunBook::FlowHooks Hooks();
  void Clear();
  // The holder, after loading: advances every open flow run, in the current write batch.
  // On a store every commit kept consistent this writes nothing.
  void Reconcile();
  size_t open_flow_runs() const { return open_.size(); }
  // Whom the flow tells (its notify keys), read from the store.
  Result<NotifyPolicy> NotifyOf(JobEntry& flow);
  // A new flow run (reason retry, in the current write batch) of the ended flow run `old` that
  // runs the steps `from` again, with every step that needs one of them, and keeps how each
  // other step ended (its run, state and outputs, frozen into the new run's graph). No `from`:
  // the steps that failed. kConflict when a `from` step would be skipped again at once, or
  // nothing failed; kInvalidArgument for a name that is no step of it.
  Result<RunRecord> Retry(JobEntry& flow, const RunRecord& old, std::vector<std::string> from);

 private:
  struct OpenFlowRun {
    int64_t id = 0;
    int64_t job_id = 0;  // the flow's row
    int64_t scheduled_ms = 0;
    int64_t not_before_ms = 0;  // a deferred trigger's: its first steps start no earlier
    std::string trace_id;
    Flow flow;  // as the run started: its graph does not change under it
    std::vector<FlowNode> graph;
    std::vector<StepState> states;     // by step
    std::vector<int64_t> run_ids;      // by step; 0 while waiting
    std::vector<StepOutputs> outputs;  // by step: what its run's shards wrote, once it ended
    std::string broken;                // why the stored graph does not read; "" when it does
    bool canceling = false;
  };

  Result<std::string> GraphOf(JobEntry& flow);
  Status OnOpened(const RunRecord& flow_run, bool loaded);
  void OnStepEnded(const RunRecord& step_run);
  void OnCancel(int64_t flow_run_id, const std::string& why);
  // What step `step` receives from its needs; kResourceExhausted over kMaxNeededOutputBytes.
  Result<StepOutputs> NeededBy(const OpenFlowRun& run, int step) const;
  // A step run's outputs: its shards' ($JOB_OUTPUT of each one's last attempt), by index.
  static StepOutputs OutputsOf(const RunRecord& step_run);
  // Applies AdvanceFlow until nothing more follows: starts, skips, and the end.
  void Advance(OpenFlowRun& run);
  // A step run that ends as it is made (skipped, or failed before it could start).
  RunRecord EndedStep(const OpenFlowRun& run, int step, int64_t job_id, RunState state,
                      const std::string& note) const;
  // Inserts runs that ended as they were made; false (the turn failed) when one was not.
  bool InsertEnded(OpenFlowRun& run, std::vector<RunRecord>& recs);
  // What a step run records of its flow run (RunRecord::flow_json): wire::StepContext
  // without outputs.
  std::string StepContextJson(const OpenFlowRun& run, int step) const;
  // Ends the flow run (erasing it): succeeded when no step failed; canceled while canceling.
  void End(OpenFlowRun& run, const std::string& why = "");

  Context* ctx_;
  JobIndex* jobs_;
  RunBook* book_;
  std::map<int64_t, OpenFlowRun> open_;
};

}  // namespace jobctl::coordinator
