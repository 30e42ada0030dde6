// RunBook owns the runs that are not finished yet: it creates runs and their shards (in the
// caller's write batch), records each attempt's grant and result, retries failed shards with
// backoff, re-runs or fails shards whose lease was lost, cancels runs, enforces the timeout
// backstop, and finishes a run when its last shard ends — waking anyone waiting on it.
// Finished runs live only in the store. Loop thread only; owned by the Coordinator.
#pragma once

#include <uv.h>

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "base/random.h"
#include "coordinator/context.h"
#include "coordinator/job_index.h"
#include "model/result_rules.h"
#include "model/run.h"
#include "uvx/handles.h"
#include "wire/agent_messages.h"

namespace jobctl::coordinator {

class Dispatcher;

// A result as the RunBook takes it: the agent's message, its agent set from the credential.
using ResultReport = wire::ShardResult;

class RunBook {
 public:
  // `random` jitters retry delays; nullptr: the RunBook's own SystemRandom.
  RunBook(Context* ctx, JobIndex* jobs, Dispatcher* dispatcher, Random* random = nullptr);
  RunBook(const RunBook&) = delete;
  RunBook& operator=(const RunBook&) = delete;

  void Start();
  void Close();
  void Clear();
  // Rebuilding from the store: open runs, their specs, pending shards to the dispatcher.
  Status Load(RunRecord run);

  // Creates a run with its shards in the current write batch. kConflict when the instant
  // was already fired (or the idempotency key already used). Its shards start no earlier
  // than `not_before_ms` (a deferred manual run); a scheduled fire of a job with a jitter
  // draws its own delay instead. The run carries `trace_id` (a caller's trace), or a new one.
  Result<RunRecord> Create(JobEntry& job, RunReason reason, int64_t scheduled_ms,
                           const std::string& env_json, const std::string& idempotency_key,
                           int64_t not_before_ms = 0, const std::string& trace_id = "");
  // Create in two steps, for many runs in one write (the fire loop's slice): Prepare makes
  // the record (the fields and shards Create would insert); CreateAll inserts the prepared
  // runs together and opens each inserted one as Create does. created[i] is false for a run
  // whose instant was already fired (Create's kConflict). Any other failure fails the turn
  // and is returned.
  struct Prepared {
    JobEntry* job;
    RunRecord rec;
    std::shared_ptr<const Job> spec;
  };
  Result<Prepared> Prepare(JobEntry& job, RunReason reason, int64_t scheduled_ms,
                           const std::string& env_json, const std::string& idempotency_key,
                           int64_t not_before_ms = 0, const std::string& trace_id = "");
  Status CreateAll(std::vector<Prepared>& runs, std::vector<bool>& created);
  // A retry of `old` (ended) that runs only its shards that did not succeed: a new run (reason
  // retry) with all of old's shards and indexes, those that succeeded in `old` copied as
  // succeeded (outcome "kept", "succeeded in run N") and never handed out. A broadcast run's
  // shards keep their agents. kConflict when every shard succeeded, or when the job's shard
  // count is no longer old's (a retry of the whole run is what fits then).
  Result<RunRecord> RetryFailedShards(JobEntry& job, const RunRecord& old);
  // Loads the definitions of those `jobs` that hold none, in one read (SpecOf would load
  // each). A definition that does not read is left to SpecOf, which says why.
  Status LoadSpecs(const std::vector<JobEntry*>& jobs);
  // Records an instant that was not run (overlap) as a skipped run.
  Status RecordSkipped(JobEntry& job, int64_t scheduled_ms, const std::string& note);

  // The dispatcher granted a lease: records it and returns the assignment for the agent.
  wire::Grant Grant(ShardKey key, const std::string& agent, int64_t token, int64_t now_ms);
  // An agent's result. kConflict for a stale token (the agent must stop); a repeat of an
  // accepted result returns the same state.
  Result<RunState> OnResult(const ResultReport& report);
  // Whether a result was accepted for this lease (so its holder may still list it until the
  // acknowledgement reaches it): true for an attempt that ended with a result, false for one
  // that is running, was never granted under this token, or ended because its lease expired.
  bool EndedByResult(ShardKey key, int64_t token);
  // Whether `agent` may append log chunks to this (attempt, token): only while it holds
  // that attempt's lease. Once the lease ended (result accepted, expired, agent removed)
  // nothing more is appended, except output trailing a result that declared where it ends
  // (Api::CheckTrailingOutput); agentd sends an attempt's result only after all its output
  // was taken, so its own chunks do not normally trail its result. kConflict says why,
  // never a token.
  Status CheckLogToken(ShardKey key, int attempt, int64_t token, const std::string& agent);
  // Counts and records a refused log append (a stale token, another agent's lease).
  void NoteRefusedLog(ShardKey key, int64_t token, const std::string& agent);
  void OnLeaseExpired(ShardKey key, int64_t token);

  Status Cancel(int64_t run_id, const std::string& why);
  // Calls `cb` once when the run is finished (at once if it already is); `cb` gets nullopt
  // if the run does not exist.
  void Wait(int64_t run_id, std::function<void(std::optional<RunRecord>)> cb);
  const RunRecord* FindOpen(int64_t run_id) const;
  // The definition an open run was created with; nullptr when the run is not open.
  const Job* OpenSpec(int64_t run_id) const;
  size_t open_runs() const { return open_.size(); }
  // The open runs of a job (for overlap = replace).
  std::vector<int64_t> OpenRunsOf(int64_t job_id) const;

  // The job's definition, loaded from the store when no open run holds it.
  Result<std::shared_ptr<const Job>> SpecOf(JobEntry& job);

  // Flows. A flow run is a run of a [[flow]]'s row with no shards of its own; its steps are
  // runs of their jobs that name it (RunRecord::flow_run_id). The RunBook keeps it open (so
  // overlap, Wait and listing see it) while its owner, the FlowBook, decides its steps
  // through these hooks; it ends only by FinishFlowRun.
  struct FlowHooks {
    // The graph a new run of `flow` starts with (RunRecord::flow_json), or why it cannot run.
    std::function<Result<std::string>(JobEntry& flow)> graph;
    // A flow run was opened: inserted in this turn's batch, or `loaded` from the store.
    std::function<Status(const RunRecord& flow_run, bool loaded)> opened;
    // A step run ended, in the batch that ended it, after it left the book: the FlowBook may
    // create runs and finish its flow run from here.
    std::function<void(const RunRecord& step_run)> step_ended;
    // Cancel of an open flow run: its steps are canceled, then FinishFlowRun.
    std::function<void(int64_t flow_run_id, const std::string& why)> cancel;
    // What an open step run receives from the steps it needs ($JOB_OUTPUT), for its grants.
    std::function<StepOutputs(const RunRecord& step_run)> step_outputs;
  };
  void set_flow_hooks(FlowHooks hooks) { flow_hooks_ = std::move(hooks); }
  // Ends an open flow run in the current write batch, as MaybeFinish ends a run whose last
  // shard ended: waiters, health, on_run_ended (with the flow's `notify`), on_runs_ended.
  void FinishFlowRun(int64_t run_id, RunState state, const std::string& note,
                     const NotifyPolicy& notify);
  // A run that is a flow run (not one of its steps, not a plain run).
  static bool IsFlowRun(const RunRecord& r) { return r.flow_run_id == 0 && !r.flow_json.empty(); }

  // Called after the commit that finished a run (log followers stop waiting).
  std::function<void(int64_t run_id)> on_finished;
  // Called in the write batch that finished a job's last open run (a fixed-delay job's
  // next fire is set there).
  std::function<void(JobEntry& job)> on_runs_ended;
  // Called in the write batch that finished a run, with whom it tells (its definition's, or
  // its flow's for a flow run): notifications.
  std::function<void(JobEntry& job, const NotifyPolicy& notify, const RunRecord& run)> on_run_ended;
  // Called in the write batch that recorded a skipped instant.
  std::function<void(JobEntry& job, const RunRecord& skipped)> on_skipped;
  // Called in the write batch that found a running shard's lease expired (its agent lost).
  std::function<void(JobEntry& job, const Job& spec, const RunRecord& run,
                     const ShardRecord& shard)>
      on_agent_lost;

 private:
  struct OpenRun {
    RunRecord rec;
    std::shared_ptr<const Job> spec;
    std::vector<std::function<void(std::optional<RunRecord>)>> waiters;
  };
  // What result_rules.h judges a report by, for `shard` of an open or a finished run.
  ResultFacts FactsOf(const ShardRecord& shard, const ResultReport& report, bool run_open) const;
  // Applies a result JudgeResult accepted: the shard is re-run, retried or ended.
  RunState Accept(OpenRun& run, ShardRecord& shard, const ResultReport& report);
  void EnqueueShard(OpenRun& run, ShardRecord& shard);
  // After the insert of a prepared run: the fire event, and its shards to the dispatcher.
  void Open(Prepared& run);
  void EndAttempt(OpenRun& run, ShardRecord& shard, RunState state, int64_t now_ms);
  void Requeue(OpenRun& run, ShardRecord& shard, int64_t not_before_ms);
  int64_t BackoffMs(const Job& spec, int attempt) const;
  void MaybeFinish(OpenRun& run);
  // The terminal half of MaybeFinish: records the run's end and lets it go.
  void Finish(OpenRun& run, RunState state, const NotifyPolicy* notify = nullptr);
  void Save(ShardRecord& shard);
  void EraseDeadline(ShardKey key);
  void ArmDeadlines();
  void OnDeadlineTimer();

  Context* ctx_;
  JobIndex* jobs_;
  Dispatcher* dispatcher_;
  SystemRandom own_random_;
  Random* random_;  // own_random_ unless one was injected
  std::map<int64_t, OpenRun> open_;
  // The answer given to the last accepted result of each shard of an open run, by token and
  // holder: a repeated result for an attempt that was since retried gets the same answer.
  struct Answer {
    int64_t token = 0;
    std::string agent;
    RunState state = RunState::kPending;
  };
  std::map<ShardKey, Answer> answered_;
  // Timeout backstop: (deadline on the wall clock, shard) for running shards with a timeout.
  std::set<std::pair<int64_t, ShardKey>> deadlines_;
  std::unique_ptr<uvx::Timer> deadline_timer_;
  bool started_ = false;
  FlowHooks flow_hooks_;
};

// 32 random hex digits: a W3C trace id for a new run.
std::string NewTraceId();

}  // namespace jobctl::coordinator
