// The fence: a small process beside agentd (`agentd --fence`, spawned by agentd at start) that
// kills a shard's process group with SIGKILL once its lease deadline has passed without a
// renewal, whether agentd is running, stopped (SIGSTOP, a debugger) or gone (kill -9). agentd
// gives up a lease at its own deadline (lease_table.h), but only while it runs; the fence makes
// that deadline hold when it does not.
//
// agentd arms the fence for each shard it starts, again at every renewal, and disarms it when
// the shard has ended. The fence's deadline is the lease's local deadline plus kFenceSlackMs,
// which still leaves 500 ms before the coordinator may count the lease expired and hand the
// shard to another agent (the local deadline is 1 s before that): so the old process is dead
// before a new attempt can be granted. A shard the fence killed is written to the event log as
// "fenced" and logged on agentd's stderr.
//
// The commands are lines on the fence's stdin (a socket agentd holds the other end of):
//   arm PGID DEADLINE_MS RUN SHARD ATTEMPT    kill process group PGID at DEADLINE_MS
//                                             (CLOCK_BOOTTIME, as Clock::MonotonicMs), unless
//                                             armed again or disarmed before
//   disarm PGID RUN SHARD ATTEMPT             that attempt's process group ended: forget it
//                                             (unless PGID is armed for another attempt)
// The fence ignores SIGTERM, SIGINT and SIGHUP (a `pkill agentd` must not disarm it) and ends
// once agentd has closed its end and no armed deadline is left. It runs in its own session, so
// a terminal's signals to agentd's process group do not reach it.
//
// Where agentd runs each shard in a cgroup of its own (cgroup.h), the fence kills that cgroup
// too (cgroup.kill), so a descendant that left the process group (setsid) dies with it. Without
// one, such a descendant is not killed. A process in uninterruptible sleep dies only when the
// kernel lets it.
#pragma once

#include <sys/types.h>
#include <uv.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "assignment.h"
#include "base/status.h"
#include "fence_command.h"
#include "uvx/handles.h"

namespace jobctl::agentd {

// The fence kills this long after the lease's local deadline.
inline constexpr int64_t kFenceSlackMs = 500;

// `agentd --fence [EVENT_LOG AGENT_NAME [CGROUPS]]`: the fence process itself (EVENT_LOG may be
// empty; CGROUPS is agentd's cgroup tree, CgroupTree::dir()). Returns its exit code.
int FenceMain(int argc, char** argv);

// agentd's side: spawns the fence and sends it commands without ever blocking the loop. When
// the fence is gone (killed), the next command finds it out and a new one is started, armed
// with every deadline still armed: at once, or once 5 s have passed since the last start.
// Loop thread only.
class Fence {
 public:
  explicit Fence(uv_loop_t* loop);
  ~Fence();
  Fence(const Fence&) = delete;
  Fence& operator=(const Fence&) = delete;

  // Spawns `exe --fence` (with the event log and agent name when there is an event log, and
  // agentd's cgroup tree when there is one).
  Status Start(std::string exe, std::string event_log, std::string agent, std::string cgroups = "");
  void Arm(pid_t pgid, int64_t deadline_ms, AttemptKey key);
  void Disarm(pid_t pgid, AttemptKey key);
  // Closes agentd's end: the fence ends once nothing is armed.
  void Close();
  bool running() const { return fd_ >= 0; }
  pid_t pid() const { return pid_; }

 private:
  Status Spawn();
  // A new fence now, or at the end of the 5 s since the last start (a timer).
  void Respawn();
  void Send(const FenceCommand& c);
  void Flush();
  void Lost(const std::string& why);
  void Reap();

  uv_loop_t* loop_;
  std::string exe_, event_log_, agent_, cgroups_;
  int fd_ = -1;
  pid_t pid_ = 0;
  std::unique_ptr<uvx::Poll> writable_;
  std::unique_ptr<uvx::Timer> respawn_;
  std::vector<pid_t> unreaped_;  // fences gone whose exit status is not collected yet
  std::string backlog_;
  std::map<int64_t, FenceCommand> armed_;  // by pgid: what a new fence is armed with
  int64_t last_spawn_ms_ = 0;
  bool closed_ = false;
};

}  // namespace jobctl::agentd
