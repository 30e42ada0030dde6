#include "running_shard.h"

#include <string.h>

#include "base/duration.h"

namespace jobctl::agentd {

RunningShard::RunningShard(uv_loop_t* loop, Runner* runner, const Clock* clock,
                           Assignment assignment, std::chrono::milliseconds default_grace,
                           const EventLog* events, Callbacks callbacks)
    : runner_(runner),
      events_(events),
      a_(std::move(assignment)),
      grace_(a_.kill_grace_ms ? std::chrono::milliseconds(*a_.kill_grace_ms) : default_grace),
      cb_(std::move(callbacks)),
      pump_(loop, clock, [this](Chunk c) { cb_.on_chunk(a_.key, std::move(c)); }),
      timeout_timer_(loop) {}

Status RunningShard::Start(const SpawnSpec& spec) {
  Runner::Callbacks callbacks;
  callbacks.on_output = [this](ChunkStream s, std::string_view data) { pump_.Append(s, data); };
  callbacks.on_exit = [this](ExitInfo exit) { OnExit(exit); };
  Result<Runner::ChildId> id = runner_->Start(spec, grace_, std::move(callbacks));
  if (!id.ok()) return id.status();
  child_ = *id;
  pid_ = runner_->PidOf(*id);
  if (a_.timeout_ms && *a_.timeout_ms > 0) {
    timeout_timer_.Once(static_cast<uint64_t>(*a_.timeout_ms), [this] {
      Stop(StopReason::kTimeout, "timed out after " + FormatDuration(Millis(*a_.timeout_ms)));
    });
  }
  return Status::Ok();
}

void RunningShard::Stop(StopReason reason, std::string why) {
  if (reason_ != StopReason::kNone || !child_) return;
  reason_ = reason;
  why_ = std::move(why);
  events_->Write("kill", {{"run", a_.key.run},
                          {"shard", a_.key.shard},
                          {"attempt", a_.key.attempt},
                          {"token", a_.token},
                          {"pid", pid_},
                          {"why", why_}});
  timeout_timer_.Stop();
  runner_->Terminate(*child_, grace_);
}

void RunningShard::OnExit(ExitInfo exit) {
  timeout_timer_.Stop();
  pump_.Finish();
  ShardResult result = ResultFor(a_, reason_, why_, exit);
  // The owner may destroy this object in on_done: nothing below may touch a member.
  std::function<void(ShardResult)> done = cb_.on_done;
  done(std::move(result));
}

ShardResult RunningShard::ResultFor(const Assignment& a, StopReason reason, const std::string& why,
                                    ExitInfo exit) {
  ShardResult r;
  r.key = a.key;
  r.token = a.token;
  r.peak_rss_bytes = exit.peak_rss_bytes;
  r.cpu_ms = exit.cpu_ms;
  std::string how;
  if (exit.term_signal != 0) {
    const char* name = sigabbrev_np(exit.term_signal);
    how = "killed by signal " + std::to_string(exit.term_signal) +
          (name ? std::string(" (SIG") + name + ")" : "");
  } else {
    how = "exited with status " + std::to_string(exit.exit_status);
    r.exit_code = exit.exit_status;
  }
  switch (reason) {
    case StopReason::kNone:
      // The kernel killed the cgroup for going over the job's memory_max. Only for a job
      // that sets one: an OOM kill from elsewhere (the whole machine, the unit's own limit)
      // is a signal like another, and a coordinator that sent no limits may not know the
      // outcome.
      if (exit.out_of_memory && a.limits.memory_max_bytes &&
          (exit.term_signal != 0 || exit.exit_status != 0)) {
        r.outcome = Outcome::kOutOfMemory;
        r.message = "killed: out of memory (memory_max " + FormatSize(*a.limits.memory_max_bytes) +
                    "); " + how;
        return r;
      }
      r.outcome = exit.term_signal != 0 ? Outcome::kSignaled : Outcome::kExited;
      r.message = exit.term_signal != 0 ? how : "";
      return r;
    case StopReason::kTimeout: r.outcome = Outcome::kTimedOut; break;
    case StopReason::kCanceled: r.outcome = Outcome::kCanceled; break;
    case StopReason::kLeaseLost:
    case StopReason::kStale:
    case StopReason::kDraining: r.outcome = Outcome::kLeaseLost; break;
  }
  r.message = why + "; " + how;
  return r;
}

}  // namespace jobctl::agentd
