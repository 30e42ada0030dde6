// agentd's cgroup v2 subtree: every shard attempt runs in a cgroup of its own, so that a
// timeout, a cancel, a lost lease or the fence kills the whole tree it started (cgroup.kill),
// also a descendant that left the shard's process group with setsid, and so that its CPU time
// counts every process of the run, not only those the shard's process waited for.
//
// The layout, under the cgroup agentd was started in (OWN: the unit's cgroup under systemd,
// which must be delegated, `Delegate=yes`):
//   OWN/agentd-PID/agentd                agentd itself (and its fence): it moves there at start,
//                                        so that agentd-PID has no process of its own
//   OWN/agentd-PID/run-RUN.SHARD.ATTEMPT one per shard attempt, removed once it is empty
// The controllers OWN offers of cpu, io, memory and pids are enabled for the runs where the
// kernel allows it (OWN must have no process of its own then, as under a delegated unit);
// which ones are is reported by controllers(). A tree whose agentd is gone is removed by the
// next agentd's sweep once it is empty.
//
// Without a writable cgroup v2 hierarchy (not mounted, agentd not root, cgroup v1 only) Open
// fails with the reason, and agentd runs shards in process groups only, as before.
// Blocking file system calls on cgroupfs (fast: no disk behind it). Loop thread only.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/ids.h"
#include "model/job.h"

namespace jobctl::agentd {

struct CgroupUsage {
  std::optional<int64_t> cpu_ms;          // cpu.stat usage_usec / 1000: every process of the run
  std::optional<int64_t> peak_rss_bytes;  // memory.peak, with the memory controller only
  bool oom_killed = false;                // memory.events: the kernel killed one for memory.max
};

class CgroupTree {
 public:
  // `move_self`: move this process into OWN/agentd-PID/agentd (agentd does; tests of the runner
  // leave their own process where it is).
  static Result<CgroupTree> Open(bool move_self);
  // The cgroup v2 mount point and this process's cgroup under it, from /proc/self/mountinfo
  // and /proc/self/cgroup: "/sys/fs/cgroup" + "/system.slice/agentd.service", say.
  static Result<std::string> OwnDirectory();

  CgroupTree() = default;
  CgroupTree(CgroupTree&&) = default;
  CgroupTree& operator=(CgroupTree&&) = default;

  // OWN/agentd-PID.
  const std::string& dir() const { return dir_; }
  // The controllers enabled for runs ("cpu", "io", "memory", "pids"; perhaps none).
  const std::set<std::string>& controllers() const { return controllers_; }

  // The directory of an attempt's cgroup.
  std::string RunDir(const AttemptKey& key) const;
  // Makes the attempt's cgroup (an existing empty one is reused) and opens it for
  // clone3(CLONE_INTO_CGROUP): the caller closes the descriptor.
  Result<int> Create(const AttemptKey& key) const;
  // SIGKILL to every process in the cgroup (cgroup.kill, Linux 5.14), or, on kernels without
  // it, to every process cgroup.procs lists. OK when the cgroup is gone.
  Status Kill(const AttemptKey& key) const;
  // `sig` to every process cgroup.procs lists now.
  void Signal(const AttemptKey& key, int sig) const;
  CgroupUsage Usage(const AttemptKey& key) const;
  // Writes the limits into the attempt's cgroup (made by Create): memory.max (and
  // memory.swap.max 0, so that going over is an out-of-memory kill, not swapping), cpu.max
  // (PERCENT * 1000 per 100 ms), pids.max, io.weight. A limit whose controller is not enabled
  // is an error naming the job key, the controller and the tree.
  Status SetLimits(const AttemptKey& key, const ResourceLimits& limits) const;
  // Removes the attempt's cgroup: false while it still has processes (EBUSY); true once it
  // is gone (or was never there).
  bool Remove(const AttemptKey& key) const;
  // Removes the trees of agentd processes that are gone, where they are empty. Returns how
  // many it removed.
  int Sweep() const;

 private:
  std::string own_;  // OWN
  std::string dir_;  // OWN/agentd-PID
  std::set<std::string> controllers_;
};

// Kills every process of the cgroup at `dir` (as CgroupTree::Kill): for the fence, which has
// only the path. OK when the directory is gone.
Status KillCgroup(const std::string& dir);

// For tests: kill as on kernels before 5.14, which have no cgroup.kill. Any thread.
void UseKillWithoutCgroupKillForTesting(bool on);

// "run-RUN.SHARD.ATTEMPT".
std::string CgroupRunName(const AttemptKey& key);

}  // namespace jobctl::agentd
