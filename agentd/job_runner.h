// Runner starts and stops shard subprocesses; it is the seam between the agent and the OS
// (ninja's CommandRunner). UvRunner, on the loop, is the only implementation: the agent's
// tests run real processes through it.
//
// UvRunner starts each child with posix_spawn (process_spawn.h: its cost does not grow with
// agentd's memory, as fork()'s does, which libuv 1.44's uv_spawn uses) and watches its exit
// through a pidfd on a uv_poll_t (through SIGCHLD where the kernel has no pidfds). Each child
// is detached (setsid: its own session and process group, pgid =
// pid), stdin on /dev/null, stdout and stderr on real pipes (not socketpairs, so that
// `>/dev/stdout` works in scripts). Terminate sends SIGTERM to the whole process group and
// SIGKILL after the grace. A child is over when its process has exited and both pipes are
// closed; when the process is gone but a grandchild still holds the pipes, they are closed
// after the grace, so a leftover background process cannot keep a shard alive.
//
// Loop thread only. Callbacks run on the loop, never inside Start() or Terminate().
#pragma once

#include <sys/resource.h>
#include <uv.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string_view>

#include "base/status.h"
#include "cgroup.h"
#include "chunker.h"
#include "spawn_spec.h"
#include "uvx/handles.h"

namespace jobctl::agentd {

struct ExitInfo {
  int64_t exit_status = 0;
  int term_signal = 0;  // non-zero: killed by this signal
  // The largest resident set (bytes) and the CPU time, user + system (ms). From the run's
  // cgroup where it has one: its memory.peak (with the memory controller) and its cpu.stat,
  // which count every process of the run. Otherwise (and for the peak without the memory
  // controller) from wait4's rusage: the process or a descendant it waited for. A process
  // begins in agentd's address space (posix_spawn, or a clone of agentd), which the kernel
  // counts towards its peak at the exec: that figure is never below agentd's own.
  std::optional<int64_t> peak_rss_bytes;
  std::optional<int64_t> cpu_ms;
  // The kernel killed a process of the run for going over its memory_max.
  bool out_of_memory = false;
};

class Runner {
 public:
  using ChildId = uint64_t;
  struct Callbacks {
    std::function<void(ChunkStream, std::string_view)> on_output;  // stdout or stderr bytes
    std::function<void(ExitInfo)> on_exit;  // once, after the exit and the pipes' end
  };
  virtual ~Runner() = default;
  // Spawns; a failure (program not found, ...) is returned and no callback runs.
  // `pipe_grace`: how long the pipes may outlive the process.
  virtual Result<ChildId> Start(const SpawnSpec& spec, std::chrono::milliseconds pipe_grace,
                                Callbacks callbacks) = 0;
  // SIGTERM to the process group now, SIGKILL after `grace`. Ignored for unknown ids.
  virtual void Terminate(ChildId id, std::chrono::milliseconds grace) = 0;
  virtual size_t running() const = 0;
  // The process id of a running child (0 when unknown): for logs and the event log.
  virtual int PidOf(ChildId id) const = 0;
  // Closes every handle (children are left running) and then calls on_closed.
  virtual void Close(std::function<void()> on_closed) = 0;
};

class UvRunner final : public Runner {
 public:
  // With a cgroup tree (cgroup.h), a spec with a `cgroup` key starts in that attempt's own
  // cgroup: Terminate then signals every process in it (SIGTERM to each, then cgroup.kill),
  // and when the child is over, whatever it left running is killed and the cgroup removed
  // (retried every 100 ms until the kernel lets it go). `tree` outlives the runner.
  // How a child's exit is noticed: a pidfd (falling back to SIGCHLD where the kernel has
  // none), or SIGCHLD always (for tests of the fallback).
  enum class ExitWatch { kPidfd, kSignal };
  explicit UvRunner(uv_loop_t* loop, ExitWatch watch = ExitWatch::kPidfd);
  ~UvRunner() override;  // after Close() completed

  Result<ChildId> Start(const SpawnSpec& spec, std::chrono::milliseconds pipe_grace,
                        Callbacks callbacks) override;
  void Terminate(ChildId id, std::chrono::milliseconds grace) override;
  size_t running() const override { return children_.size(); }
  int PidOf(ChildId id) const override;
  void Close(std::function<void()> on_closed) override;
  void UseCgroups(const CgroupTree* tree) { cgroups_ = tree; }
  // Why there is no tree: in the error of a spec with limits.
  void NoCgroups(std::string why) { no_cgroups_ = std::move(why); }
  // Cgroups of ended children that still had processes: for tests.
  size_t cgroups_to_remove() const { return to_remove_.size(); }

 private:
  struct Child;
  void OnExitReadable(Child* c);
  void OnWaitStatus(Child* c, int status, const ::rusage& usage);
  void WatchBySignal(Child* c);
  void OnSigchld();
  void OnExit(Child* c, ExitInfo exit);
  void CloseExitWatch(Child* c);
  void OnRead(Child* c, ChunkStream stream, ssize_t nread, const uv_buf_t* buf);
  void ClosePipe(Child* c, ChunkStream stream);
  void MaybeFinish(Child* c);
  void CloseChild(Child* c);
  void OnHandleClosed(Child* c);
  void RemoveCgroup(const AttemptKey& key);
  void RetryRemovals();

  uv_loop_t* loop_;
  ExitWatch watch_;
  std::map<ChildId, std::unique_ptr<Child>> children_;  // running
  std::map<Child*, std::unique_ptr<Child>> closing_;    // handles closing
  ChildId next_id_ = 1;
  bool closing_all_ = false;
  std::function<void()> on_closed_;
  // Only where the kernel has no pidfds; freed in its close callback.
  std::unique_ptr<uvx::Signal> sigchld_;     // only without pidfds
  std::unique_ptr<uvx::Idle> closed_later_;  // calls on_closed_ from the loop
  int by_signal_ = 0;                        // children whose exit only SIGCHLD tells
  const CgroupTree* cgroups_ = nullptr;
  std::string no_cgroups_ = "no cgroup tree";
  std::map<AttemptKey, int> to_remove_;  // cgroups not empty yet: tries so far
  std::unique_ptr<uvx::Timer> remove_timer_;
  char read_buf_[64 * 1024];  // every read is consumed before the next one
};

}  // namespace jobctl::agentd
