// Text helpers shared by the renderers and senders of lib/notify; not part of its API.
// Pure functions; any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "notify/notification.h"

namespace jobctl::notify::internal {

// Bounds on what a rendering holds, whatever the caller passed: the coordinator already
// bounds the output tail and the shards; these keep a mail and a webhook body small even
// when it did not.
inline constexpr size_t kMaxShards = 16;
inline constexpr size_t kMaxTailBytes = 4096;
inline constexpr size_t kMaxFieldBytes = 1024;  // job, host, detail, ... each

// A copy of n within the bounds above: the first kMaxShards shards, the last kMaxTailBytes of
// each output tail (from a line start when one is near), other fields cut (Truncate).
Notification Bounded(const Notification& n);

// The text as one line of valid UTF-8: control characters and escape sequences are shown
// visibly (as SanitizeForTerminal does: ESC as ^[, bytes that are not UTF-8 as \xff), and
// line breaks and tabs become spaces. Nothing in the result ends a line.
std::string OneLine(std::string_view text);

// The text as lines of valid UTF-8 separated by '\n' (CRLF and a lone CR end a line),
// other control characters shown visibly; tabs kept.
std::string Lines(std::string_view text);

// At most max_bytes bytes of `text`, cut at a UTF-8 character boundary, with "…" (3 bytes,
// counted in max_bytes) when something was cut.
std::string Truncate(std::string_view text, size_t max_bytes);

// The last max_bytes of `text` at most, starting at a line when one starts near the cut, else
// at a UTF-8 character boundary.
std::string TailOf(std::string_view text, size_t max_bytes);

// A dot-atom for a Message-ID's left part and a header value: letters, digits and ._-+
// (no leading, trailing or doubled dot); anything else becomes '_'. At most 200 bytes; "_"
// for "".
std::string Token(std::string_view text);

// For people: "2026-11-26 03:00 UTC", with ":SS" when the seconds are not zero.
std::string PeopleTime(int64_t unix_ms);
// RFC 3339 UTC, as the rest of jobctl writes it: "2026-11-26T03:00:00Z".
std::string Rfc3339(int64_t unix_ms);
// A duration to whole seconds, as in job files: "1h2m", "45s" ("0s" below a second).
std::string PeopleDuration(int64_t ms);

// A word for a shell command line: itself when it holds only safe characters, else in
// single quotes.
std::string ShellWord(std::string_view word);

// The headline of a notification: Subject() without the "jobctl: " prefix, unbounded.
std::string Headline(const Notification& n);

// Lowercase hex HMAC-SHA256(key, message) (Signature() without its prefix and framing).
std::string HmacSha256Hex(std::string_view key, std::string_view message);

// coordinator + "/v1/runs/<id>", or "" without a coordinator URL or a run.
std::string RunLink(const Notification& n);

}  // namespace jobctl::notify::internal
