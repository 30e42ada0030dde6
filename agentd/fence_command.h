// The commands agentd sends its fence (fence.h), one per line:
//   arm PGID DEADLINE_MS RUN SHARD ATTEMPT
//   disarm PGID RUN SHARD ATTEMPT
// Pure; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "model/ids.h"

namespace jobctl::agentd {

// Lines longer than this are not commands.
inline constexpr size_t kMaxFenceLine = 256;

struct FenceCommand {
  enum class Kind { kArm, kDisarm };
  Kind kind = Kind::kArm;
  int64_t pgid = 0;
  int64_t deadline_ms = 0;  // arm only
  // Whose group it is: a disarm forgets PGID only while it is armed for this attempt (the
  // number may have been reused by a newer shard by then). Also for the log and the event log.
  AttemptKey key;
  bool operator==(const FenceCommand&) const = default;
};

// One command as a line (with its newline).
std::string FormatFenceCommand(const FenceCommand& c);
// A line without its newline: nullopt for anything but exactly one command with fields in
// range (pgid 2..2^31-1, run >= 1, shard >= 0, attempt >= 1, deadline >= 0).
std::optional<FenceCommand> ParseFenceCommand(std::string_view line);

}  // namespace jobctl::agentd
