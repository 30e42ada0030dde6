// SpawnDetached starts a shard's program the way the UvRunner needs it, with posix_spawn:
// its own session and process group (setsid), stdin on /dev/null, stdout and stderr on the
// given descriptors, no other descriptor of agentd, every signal at its default (but for
// glibc's two internal ones, 32 and 33, which its posix_spawn leaves ignored) and none
// blocked, the spec's cwd and environment. The program is looked up in the spec's own PATH
// (as execvp after setting the child's environment would), and a file the kernel cannot
// execute (a script without "#!") runs under /bin/sh, as execvp does.
//
// glibc's posix_spawn uses clone(CLONE_VM | CLONE_VFORK): the child shares agentd's memory
// until it execs, so the cost of a spawn does not grow with agentd's size, where fork()
// copies the page tables of every mapped page (libuv 1.44's uv_spawn forks).
//
// OpenPidfd gives a descriptor that becomes readable when the process exits (Linux 5.3), so
// that an exit is watched with a uv_poll_t, without SIGCHLD; -1 where the kernel has none
// (older kernels, and valgrind, which does not know the call): then SIGCHLD it is. Any thread.
#pragma once

#include <sys/types.h>

#include "base/status.h"
#include "spawn_spec.h"

namespace jobctl::agentd {

// `cgroup_fd` >= 0 (a cgroup v2 directory): the child starts in that cgroup (clone3 with
// CLONE_INTO_CGROUP), so that it and everything it starts can be killed together.
Result<pid_t> SpawnDetached(const SpawnSpec& spec, int stdout_fd, int stderr_fd,
                            int cgroup_fd = -1);
Result<int> OpenPidfd(pid_t pid);

// For tests: spawn into a cgroup the way kernels without clone3's CLONE_INTO_CGROUP do (the
// child moves itself in first). Any thread, before spawning.
void UseCgroupJoinByWriteForTesting(bool on);

// The file execvp would run for `program` with this PATH ("" = the default path): `program`
// itself when it has a slash; ENOENT or EACCES (as a Status) when nothing fits.
Result<std::string> FindProgram(const std::string& program, const std::string& path);

}  // namespace jobctl::agentd
