// The exec helper: `agentd --exec-as USER [--cwd DIR] -- PROGRAM ARGS...`, run by agentd in
// place of a shard's program when the shard has run_as. In the (already setsid'ed) child it
// reads the job's environment ("K=V\0" entries) from descriptor 3 and closes it, sets USER's
// supplementary groups with initgroups, then the gid and uid, checks that root cannot be
// regained, enters DIR as USER and execs PROGRAM (looked up in the job's PATH) with the job's
// environment. The helper itself is started with an empty environment, so nothing a job file
// or a trigger says reaches the dynamic loader or the C library of a root process.
// uv_spawn's UV_PROCESS_SETUID/SETGID would clear the supplementary groups instead.
//
// Failures go to stderr (the shard's stderr pipe, so they show in the run's logs) with exit
// status 126 (setup failed) or 127 (program not found), as a shell would.
#pragma once

namespace jobctl::agentd {

inline constexpr int kInputFd = 3;  // where agentd hands the helper the job's environment

// argv[0] is agentd, argv[1] is "--exec-as". Returns only on failure, with the exit status.
int ExecAsMain(int argc, char** argv);

}  // namespace jobctl::agentd
