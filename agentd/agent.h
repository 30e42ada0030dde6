// Agent is agentd: it wires the parts together and decides nothing they can decide alone.
// The Claimer brings assignments; each becomes a RunningShard (after the Policy allowed it),
// whose lease the LeaseKeeper renews and whose output the LogShipper sends; when it ends, the
// RunReporter reports the result once the output is in, and the lease is let go once the
// result is. The CoordinatorLink carries every request, with the credential the Enroller
// settled on before anything else is sent.
//
// main() owns the loop and the Agent; loop thread only. Stop() drains: no more claims,
// running shards get drain_timeout, then they are killed and reported, and on_stopped runs
// once every handle of the Agent is closed.
#pragma once

#include <uv.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "assignment.h"
#include "base/clock.h"
#include "base/random.h"
#include "boot_timer.h"
#include "claimer.h"
#include "coordinator_link.h"
#include "enroller.h"
#include "fence.h"
#include "job_runner.h"
#include "lease_keeper.h"
#include "log_shipper.h"
#include "policy.h"
#include "run_reporter.h"
#include "running_shard.h"
#include "spawn_spec.h"
#include "spool.h"
#include "uvx/handles.h"

namespace jobctl::agentd {

struct AgentSettings {
  AgentIdentity identity;
  std::vector<std::string> coordinators;
  std::string token;  // a join token (enrols) or an agent token bound to identity.name
  std::string state_dir;
  std::string exe_path;  // agentd itself, for the exec helper
  Policy policy;
  std::string secrets_dir = "/etc/agentd/secrets";  // jobs' `secrets` files (secrets.h)
  std::string output_dir;  // flow steps' $JOB_OUTPUT files (step_output.h); "" = none
  std::chrono::milliseconds drain_timeout{60'000};
  std::chrono::milliseconds kill_grace{10'000};
  int64_t spool_max_bytes = int64_t{256} << 20;
  std::string event_log;  // "" = off
  http::TlsOptions tls;   // for https:// coordinators
};

class Agent {
 public:
  // `random` (not owned) draws the span ids and the retry jitter of the Enroller, the
  // LogShipper, the Claimer and the RunReporter. nullptr: the Agent's own SystemRandom.
  Agent(uv_loop_t* loop, const Clock* clock, AgentSettings settings, Random* random = nullptr);
  ~Agent();

  Status Start();
  // SIGHUP: new labels and slots take effect with the next claim (sent at once).
  void Reconfigure(std::map<std::string, std::string> labels, int slots);
  // First call drains; a second one kills the running shards at once.
  void Stop(std::function<void()> on_stopped);

 private:
  // The coordinator took this agent's credential: output and results left by an earlier
  // agentd go out, and claiming starts.
  void OnEnrolled();
  void OnAssignments(std::vector<Assignment> list, int64_t sent_ms);
  void Accept(Assignment a, int64_t sent_ms);
  // Tells the Claimer the free slots and whether a shard waits for its instant.
  void UpdateClaim();
  // Starts the shards whose instants have come (start_timer_), and arms it for the next.
  void OnStartTimer();
  void ArmStartTimer();
  // A shard granted ahead of its instant reached it: it starts if its lease may run.
  void OnStartTime(AttemptKey key);
  // Takes the shard out of waiting_ (and its due order); false: it was not waiting.
  bool Unwait(AttemptKey key);
  // A claim's answer said this lease's run was canceled: a shard still waiting for its
  // instant ends unstarted.
  void OnCanceledEarly(ShardKey key, int64_t token);
  void Launch(RunningShard& shard);
  void EndUnstarted(AttemptKey key, Outcome outcome, std::string message);
  void OnShardDone(ShardResult result);
  void Report(const ShardResult& result);
  void OnLeaseRenewed(ShardKey key, int64_t token);
  // Arms the fence with the shard's lease deadline (fence.h).
  void ArmFence(RunningShard& shard);
  void OnLeaseLost(ShardKey key, int64_t token, LeaseLoss loss);
  void OnLogsStale(AttemptKey key);
  void OnResultSettled(const ShardResult& result, bool accepted);
  RunningShard* Find(ShardKey key, int64_t token);
  int FreeSlots() const;
  std::string NewSpanId();
  void KillAll(const std::string& why);
  void EndWaiting(const std::string& why);
  void MaybeFinishStop();
  void Shutdown();

  uv_loop_t* loop_;
  const Clock* clock_;
  AgentSettings settings_;
  EventLog events_;
  AgentUser self_;
  UserInfo self_info_;
  SystemRandom own_random_;
  Random* random_;
  std::unique_ptr<CoordinatorLink> link_;
  Enroller enroller_;
  Spool spool_;
  std::optional<CgroupTree> cgroups_;  // before runner_, which uses it
  UvRunner runner_;
  Fence fence_;
  std::unique_ptr<LogShipper> shipper_;
  std::unique_ptr<RunReporter> reporter_;
  std::unique_ptr<LeaseKeeper> leases_;
  std::unique_ptr<Claimer> claimer_;
  std::map<AttemptKey, std::unique_ptr<RunningShard>> shards_;  // waiting for a lease or running
  // Shards granted ahead of their instant, not started yet: when each is due (MonotonicUs).
  std::map<AttemptKey, int64_t> waiting_;
  std::set<std::pair<int64_t, AttemptKey>> due_order_;  // waiting_ by due time, earliest first
  // A timerfd on CLOCK_BOOTTIME in microseconds, armed for the earliest of waiting_: libuv's
  // timers count whole milliseconds from a cached loop time, which would start a child up to
  // two milliseconds after its instant.
  BootTimer start_timer_;
  std::map<AttemptKey, int64_t> stale_;  // attempts whose result must not be reported
  // Flow steps' $JOB_OUTPUT files, by attempt, from their start to their end.
  std::map<AttemptKey, std::string> step_outputs_;
  bool step_output_ready_ = false;   // settings_.output_dir is usable: flow steps are taken
  bool step_output_shared_ = false;  // and users other than agentd's can reach files there
  uvx::Timer drain_timer_;
  uvx::Timer flush_timer_;
  bool started_ = false;
  bool enrolled_ = false;
  bool stopping_ = false;
  bool shutting_down_ = false;
  std::function<void()> on_stopped_;
};

}  // namespace jobctl::agentd
