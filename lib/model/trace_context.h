// W3C Trace Context (https://www.w3.org/TR/trace-context/): the traceparent a caller may hand
// to `jobctl trigger` (flag, $TRACEPARENT or the HTTP header), so that its trace continues into
// the run, and the trace ids runs are found by. Pure, any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace jobctl {

// A traceparent is at most this long: version 00 is exactly 55 characters; later versions may
// append fields, which are read past and not kept.
constexpr size_t kMaxTraceParent = 256;

struct TraceParent {
  std::string trace_id;   // 32 lowercase hex digits, not all zero
  std::string parent_id;  // 16 lowercase hex digits, not all zero
  uint8_t flags = 0;      // bit 0: sampled
  bool operator==(const TraceParent&) const = default;
};

// "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", as the specification reads it:
// lowercase hex only, version ff refused, version 00 exactly 55 characters, a later version
// at least that and, past it, only "-" and more.
Result<TraceParent> ParseTraceParent(std::string_view text);

// 32 lowercase hex digits, not all zero: a trace id as runs carry it.
bool IsTraceId(std::string_view s);

}  // namespace jobctl
