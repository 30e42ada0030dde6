// Durations as people write them in job files and on the command line: "90s", "1h30m",
// "250ms", "2d". Units: ms, s, m, h, d; several may follow each other, largest first.
// Pure functions, any thread.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "base/status.h"

namespace jobctl {

using Millis = std::chrono::milliseconds;

// Parses a duration; the error message says what was expected ("expected a duration like
// \"90s\" or \"1h30m\""). Zero ("0s") is allowed; negative values are not.
Result<Millis> ParseDuration(std::string_view text);

// The shortest text ParseDuration reads back as the same value: 5400000 ms -> "1h30m".
std::string FormatDuration(Millis d);

}  // namespace jobctl
