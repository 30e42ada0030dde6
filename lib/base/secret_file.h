// SecretFile checks that a file holding a secret (an API or agent token, a config file
// with a token in it) is private to its owner. Permissions are a property of the host, so a
// loose mode is a warning, not an error: the caller prints or logs it. And it makes a
// daemon's state directory private to the daemon's user. Any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace jobctl {

// "token file /etc/agentd/token is readable by group and others (mode 0644); make it private:
// chmod 600 /etc/agentd/token", when `path` grants its group or others any access; nullopt
// when it does not, or cannot be examined (the read that follows reports that).
std::optional<std::string> LooseSecretFileMode(const std::string& path, std::string_view what);

// Creates the directory `path` (and missing parents) and makes it mode 0700 whatever the
// umask. One that existed open to others is tightened and logged (warn): a daemon's state
// directory holds its store or spool, which only the daemon reads. kIo when it cannot.
Status MakePrivateDir(const std::string& path);

}  // namespace jobctl
