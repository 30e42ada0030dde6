// What the probe job prints: deterministic text derived from (run, shard, attempt), so that
// the checker can recompute every byte an attempt should have sent and compare it with the
// store. Pure functions; any thread.
#pragma once

#include <cstdint>
#include <string>

namespace jobctl::fault {

// Line `i` (0-based) of `lines`, newline included:
// "probe run=7 shard=1 attempt=2 line=3/20 9f2c...(32 hex digits)\n".
std::string ProbeLine(int64_t run, int shard, int attempt, int i, int lines);
// All `lines` lines: what a probe that ran to the end printed on stdout.
std::string ProbeOutput(int64_t run, int shard, int attempt, int lines);
// Hex SHA-256, for reports.
std::string Sha256Hex(const std::string& data);

}  // namespace jobctl::fault
