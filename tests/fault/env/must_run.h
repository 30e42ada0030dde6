// MustRun runs a system command for a fault test (ip, iptables, mkfs.ext4, losetup, mount)
// and throws std::runtime_error with the command and its output when it does not exit 0.
#pragma once

#include <string>
#include <vector>

namespace jobctl::testing {

void MustRun(const std::vector<std::string>& argv);

}  // namespace jobctl::testing
