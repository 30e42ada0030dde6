// Instants as text: RFC 3339 for JSON and people, in UTC or in an IANA zone with its offset
// ("2024-03-10T03:00:00-04:00"). Pure functions; zone lookups go through the OS tz database.
#pragma once

#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/status.h"

namespace jobctl {

// "2024-03-10T07:00:00Z"; milliseconds appear only when non-zero.
std::string FormatUtc(WallTime t);

// In the given IANA zone ("" or "UTC" -> UTC with "Z"). Unknown zone -> kInvalidArgument.
Result<std::string> FormatInZone(WallTime t, std::string_view zone);

// In the machine's local zone (TZ, else /etc/localtime).
std::string FormatLocal(WallTime t);

// Parses RFC 3339 with "Z" or an offset, an optional fraction, and also a bare unix time
// in seconds ("@1700000000"). The message names what was expected.
Result<WallTime> ParseInstant(std::string_view text);

// "in 3m", "2h ago", "now": a hint for people next to an absolute time.
std::string RelativeHint(WallTime t, WallTime now);

}  // namespace jobctl
