// Applier syncs a whole jobs.toml into the coordinator: validates it with the same code as
// `jobctl validate`, works out which jobs are created, changed (field by field), removed
// and unchanged, and — unless it is a dry run — records the file as a new revision and
// updates the jobs, all in the current write batch. Optimistic concurrency: the caller names
// the revision it started from, and a stale one is refused with who applied the newer one.
// A removed job stops firing; its runs stay. Loop thread only; owned by the Coordinator.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>

#include "coordinator/context.h"
#include "coordinator/job_index.h"
#include "coordinator/scheduler.h"

namespace jobctl::coordinator {

// Who made a change, for the audit trail: the credential's name and token id (0: none).
struct Credential {
  std::string name;
  int64_t token_id = 0;
};

struct ApplyRequest {
  std::string text;
  std::string filename = "jobs.toml";
  int64_t base_revision = -1;  // -1: apply whatever the current revision is
  bool dry_run = false;
  std::string author;
  Credential credential;  // set by the API from the caller's token, never from the body
};

struct ApplyOutcome {
  int http_status = 200;
  nlohmann::json body;
  bool wrote = false;  // the batch holds writes: answer after the commit
};

class Applier {
 public:
  Applier(Context* ctx, JobIndex* jobs, Scheduler* scheduler)
      : ctx_(ctx), jobs_(jobs), scheduler_(scheduler) {}
  // The outcome (200, or 400/409 with what is wrong), or the store's failure.
  Result<ApplyOutcome> Apply(const ApplyRequest& request);
  // Pause or resume a job (resuming applies its misfire policy to what it missed).
  Status SetPaused(JobEntry& job, bool paused, const Credential& actor);

  // "" when a job may send notifications to `target`, else why not (Notifier::TargetProblem);
  // unset: any target.
  std::function<std::string(const std::string& target)> target_problem;

 private:
  // One row of the job table as the file has it: a [[job]], a [[flow]], or a step's own job.
  struct Item {
    std::string name;
    std::string spec_json;
    store::JobTiming timing;
    const Job* job = nullptr;   // the definition new runs take; null for a flow
    std::string flow;           // a step's own job: its flow (timing.flow_id is set from it)
    JobEntry* entry = nullptr;  // null: new
    std::optional<store::JobTiming> before;  // the stored timing of an existing one
  };
  Status Upsert(Item& item, int64_t revision, int64_t now);
  Context* ctx_;
  JobIndex* jobs_;
  Scheduler* scheduler_;
};

}  // namespace jobctl::coordinator
