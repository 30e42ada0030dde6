// Secrets are values a job needs that never pass through the job file or the coordinator: a
// job names a file (`secrets = { DB_PASSWORD = "db-password" }` in jobs.toml) and agentd
// reads it from its own secrets_dir (agentd.toml, default /etc/agentd/secrets) when the shard
// starts. The host decides which secrets exist; the coordinator only ever sees their names.
// Any thread (plain file reads).
#pragma once

#include <map>
#include <string>

#include "base/status.h"

namespace jobctl::agentd {

inline constexpr size_t kMaxSecretBytes = 64 << 10;

// Variable -> value for each wanted variable -> file name: the file's bytes with one trailing
// newline dropped. An error names the variable and the file: a name that is not a plain file
// name, a file that is missing, not a regular file (symbolic links are not followed), over
// kMaxSecretBytes, or holds a NUL byte.
Result<std::map<std::string, std::string>> ReadSecrets(
    const std::map<std::string, std::string>& wanted, const std::string& dir);

}  // namespace jobctl::agentd
