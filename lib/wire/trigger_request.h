// TriggerRequest is the body of POST /v1/jobs/{name}/trigger: what `jobctl trigger` sends
// and the coordinator decodes. FromJson checks types and the limits that need nothing but
// the body; every error is kInvalidArgument with the message the API answers with (400). The
// coordinator checks a deferred start against its own clock (kMaxDefer). Value type; pure
// functions, any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/duration.h"
#include "base/status.h"

namespace jobctl::wire {

inline constexpr Millis kMaxDefer = std::chrono::hours(24 * 366);
inline constexpr size_t kMaxIdempotencyKey = 200;

struct TriggerRequest {
  std::string idempotency_key;                // "" = none; at most kMaxIdempotencyKey bytes
  std::map<std::string, std::string> params;  // "params" (or, from older clients, "env")
  // A deferred run: "at" (RFC 3339) or "in" (a duration such as "2h"), not both.
  std::optional<int64_t> at_ms;
  std::optional<Millis> in;
  // The caller's W3C traceparent (model/trace_context.h): the run joins its trace. "" = none.
  std::string traceparent;

  // "params" always; "idempotency_key", "at" (UTC), "in" and "traceparent" when set.
  nlohmann::json ToJson() const;
  static Result<TriggerRequest> FromJson(const nlohmann::json& body);
  bool operator==(const TriggerRequest&) const = default;
};

}  // namespace jobctl::wire
