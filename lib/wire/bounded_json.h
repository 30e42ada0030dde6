// ParseJson is the one way to parse JSON that came over the wire or from a file another
// party wrote: request bodies in the coordinator, the coordinator's replies in agentd and
// jobctl. It refuses text nested deeper than a limit before nlohmann builds anything, because
// copying, comparing or printing a deep tree recurses once per level: 100,000 nested arrays
// (200 KB) overflow the stack. Pure functions, any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "base/status.h"

namespace jobctl::wire {

// No message of ours nests more than a handful of levels; 64 leaves room for user JSON in
// a job's fields and stays far below what recursion on a thread's stack can take.
inline constexpr int kMaxJsonDepth = 64;

// Whether the arrays and objects in `text` nest at most `max_depth` deep. Counts brackets
// outside strings in one pass and builds nothing; it does not check that `text` is JSON.
bool JsonDepthWithin(std::string_view text, int max_depth = kMaxJsonDepth);

// The parsed value, or a discarded value (is_discarded()) when `text` is not JSON or nests
// deeper than `max_depth`: a drop-in for json::parse(text, nullptr, false).
nlohmann::json ParseJson(std::string_view text, int max_depth = kMaxJsonDepth);

// As ParseJson, with a reason: kInvalidArgument "nested deeper than 64 levels" or "not JSON".
Result<nlohmann::json> ParseJsonOr(std::string_view text, int max_depth = kMaxJsonDepth);

}  // namespace jobctl::wire
