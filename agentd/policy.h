// Policy is the host's own limit on what the coordinator may make it run (agentd.toml's
// allow_run_as and allow_commands). The coordinator cannot override it: a shard that breaks
// it is reported with outcome "policy" and the reason, and never started. Pure; any thread.
//
// Rules, in order:
//  - exactly one of command (argv, argv[0] non-empty) and shell is set;
//  - without run_as the shard runs as agentd's own user (whoever the host started it as);
//    run_as root is refused unless "root" is in allow_run_as; any other run_as but agentd's
//    own user must be listed, and agentd must be root to switch to it;
//  - when allow_commands is set, the program (argv[0], or /bin/sh for shell) must be an
//    absolute, normalized path equal to or below one of the prefixes.
#pragma once

#include <string>
#include <vector>

#include "assignment.h"
#include "base/status.h"

namespace jobctl::agentd {

struct Policy {
  std::vector<std::string> allow_run_as;
  std::vector<std::string> allow_commands;  // empty = any program
};

// Who agentd itself runs as.
struct AgentUser {
  std::string name;
  bool is_root = false;
};

// Ok, or PermissionDenied with a sentence for the run's message.
Status CheckPolicy(const Assignment& a, const Policy& policy, const AgentUser& self);

// Whether `program` is equal to or below the directory or file `prefix` ("/opt/jobs" and
// "/opt/jobs/" both allow "/opt/jobs/x", neither allows "/opt/jobsx").
bool UnderPrefix(const std::string& program, const std::string& prefix);

}  // namespace jobctl::agentd
