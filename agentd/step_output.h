// The $JOB_OUTPUT file of a flow step's attempt (model/step_output.h): agentd creates it
// before the process starts, in its output directory, and reads and removes it when the
// process has ended. The directory is agentd's (mode 0711: others may open a file they are
// told the name of, never list, add or remove one), the file new and empty, mode 0600, owned
// by the user the attempt runs as, so that only that process and agentd can write or read
// it, and no process can put a link to elsewhere in its place. Blocking file I/O of a few
// small files; the loop thread calls it as it calls ReadSecrets.
#pragma once

#include <string>

#include "base/status.h"
#include "model/ids.h"
#include "model/step_output.h"
#include "spawn_spec.h"

namespace jobctl::agentd {

// `dir` as an output directory: created when missing, never through a link, owned by
// agentd's user, mode 0711, and emptied of the files a previous agentd left behind (their
// attempts ended with it); any other entry is left alone. Its parent must be writable by
// agentd's user alone (as /run/agentd, the unit's RuntimeDirectory, and the state dir are).
// A parent that another user could write to (where the directory could be swapped for a
// link) is refused.
Status PrepareOutputDir(const std::string& dir);

// Whether a user other than agentd's (and not in its group) can reach a file in `dir`: every
// directory on its path is searchable by others. False when one cannot be read.
bool ReachableByOthers(const std::string& dir);

// Creates dir/r<run>-s<shard>-a<attempt>-<suffix> (O_EXCL, O_NOFOLLOW), mode 0600, owned by
// `user` when `switch_user`; its path. `suffix` is random (16 hex digits), so that no one can
// guess the name of another attempt's file.
Result<std::string> CreateStepOutput(const std::string& dir, const AttemptKey& key,
                                     const std::string& suffix, const UserInfo& user,
                                     bool switch_user);

// Reads the file at `path` (a regular file, no link, at most kMaxStepOutputBytes) and removes
// it; what it holds as ParseStepOutput reads it. Errors start with "JOB_OUTPUT: ".
Result<StepOutputs> CollectStepOutput(const std::string& path);

}  // namespace jobctl::agentd
