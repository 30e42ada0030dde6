// SpawnSpec is how a shard's subprocess is started: argv, the whole environment and the
// working directory. BuildSpawnSpec makes it from an assignment the way cron would: the job's
// env, the JOB_* variables, a W3C TRACEPARENT, HOME USER LOGNAME SHELL of the user it runs as
// and a default PATH. Pure (the user is looked up by the caller); any thread.
//
// With run_as (a user other than agentd's own), argv goes through agentd's exec helper:
//   agentd --exec-as USER --cwd DIR -- ARGV...
// which sets the user's supplementary groups (initgroups), gid and uid, enters DIR as that
// user and execs ARGV (see exec_as.h). uv_spawn's own setuid/setgid would drop every
// supplementary group instead. The helper runs as root, so it starts with an empty
// environment: nothing of the job's (LD_PRELOAD and its kind) can reach the dynamic loader of
// a root process. The job's environment travels to it on descriptor 3 instead
// (`helper_input`), and is applied only in the execve after the user switch.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "assignment.h"
#include "base/status.h"

namespace jobctl::agentd {

struct SpawnSpec {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // "K=V": the environment the process starts with
  std::string cwd;
  // Handed to the process on descriptor 3 when not empty: for the exec helper, the job's
  // environment as "K=V\0" entries.
  std::string helper_input;
  // The attempt whose cgroup the process starts in, where the runner has a cgroup tree.
  std::optional<AttemptKey> cgroup;
  // Set in that cgroup before the process starts; a runner without cgroups refuses a spec
  // with limits.
  ResourceLimits limits;
};

struct UserInfo {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;
  std::string shell;
};

// getpwnam_r / getpwuid_r. May block on NSS (LDAP, ...).
Result<UserInfo> LookUpUser(const std::string& name);
Result<UserInfo> CurrentUser();

struct SpawnContext {
  std::string exe_path;                        // agentd itself, for the exec helper
  std::string state_dir;                       // cwd of a shard without run_as and cwd
  UserInfo user;                               // the user the shard runs as
  bool switch_user = false;                    // true: go through the exec helper
  std::string span_id;                         // 16 hex digits, for TRACEPARENT
  std::map<std::string, std::string> secrets;  // read from secrets_dir, over the job's env
  std::string output_path;                     // a flow step's $JOB_OUTPUT (step_output.h)
};

inline constexpr const char* kDefaultPath =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

SpawnSpec BuildSpawnSpec(const Assignment& a, const SpawnContext& c);

// "00-<trace id>-<span id>-01", or "" when the trace id is not 32 lowercase hex digits.
std::string TraceParent(const std::string& trace_id, const std::string& span_id);

}  // namespace jobctl::agentd
