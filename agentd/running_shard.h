// RunningShard is one attempt of a shard on this agent, from its assignment to its result: it
// starts the subprocess through the Runner, pumps its output into chunks, enforces the job's
// timeout, stops it when told why (lease lost, canceled, agentd stopping), and turns the way it
// ended into a ShardResult. The first reason to stop wins and decides the outcome.
//
// Loop thread only; owned by the Agent, which may destroy it from inside on_done.
#pragma once

#include <uv.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "assignment.h"
#include "base/clock.h"
#include "base/event_log.h"
#include "job_runner.h"
#include "output_pump.h"
#include "uvx/handles.h"

namespace jobctl::agentd {

enum class StopReason { kNone, kTimeout, kCanceled, kLeaseLost, kStale, kDraining };

class RunningShard {
 public:
  struct Callbacks {
    std::function<void(AttemptKey, Chunk)> on_chunk;
    std::function<void(ShardResult)> on_done;  // once, after the process and its output ended
  };
  RunningShard(uv_loop_t* loop, Runner* runner, const Clock* clock, Assignment assignment,
               std::chrono::milliseconds default_grace, const EventLog* events,
               Callbacks callbacks);

  // Starts the subprocess; on failure nothing started and no callback will run.
  Status Start(const SpawnSpec& spec);
  // TERM to the process group, KILL after the grace. The first reason is kept.
  void Stop(StopReason reason, std::string why);

  const Assignment& assignment() const { return a_; }
  bool started() const { return child_.has_value(); }
  int pid() const { return pid_; }
  std::chrono::milliseconds grace() const { return grace_; }
  StopReason stop_reason() const { return reason_; }

  // How an ended attempt is reported (pure).
  static ShardResult ResultFor(const Assignment& a, StopReason reason, const std::string& why,
                               ExitInfo exit);

 private:
  void OnExit(ExitInfo exit);

  Runner* runner_;
  const EventLog* events_;
  Assignment a_;
  std::chrono::milliseconds grace_;
  Callbacks cb_;
  OutputPump pump_;
  uvx::Timer timeout_timer_;
  std::optional<Runner::ChildId> child_;
  int pid_ = 0;
  StopReason reason_ = StopReason::kNone;
  std::string why_;
};

}  // namespace jobctl::agentd
