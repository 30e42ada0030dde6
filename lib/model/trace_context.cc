#include "model/trace_context.h"

#include <algorithm>

namespace jobctl {
namespace {

bool IsLowerHex(std::string_view s, size_t n) {
  return s.size() == n && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

bool AllZero(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == '0'; });
}

int HexValue(char c) { return c <= '9' ? c - '0' : c - 'a' + 10; }

}  // namespace

bool IsTraceId(std::string_view s) { return IsLowerHex(s, 32) && !AllZero(s); }

Result<TraceParent> ParseTraceParent(std::string_view text) {
  const auto bad = [](std::string_view why) {
    return Status::InvalidArgument(std::string("traceparent: ") + std::string(why) +
                                   " (expected VERSION-TRACEID-PARENTID-FLAGS, such as "
                                   "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01)");
  };
  if (text.size() > kMaxTraceParent) return bad("longer than 256 characters");
  if (text.size() < 55) return bad("too short");
  std::string_view version = text.substr(0, 2), trace = text.substr(3, 32),
                   parent = text.substr(36, 16), flags = text.substr(53, 2);
  if (text[2] != '-' || text[35] != '-' || text[52] != '-') return bad("fields not split by -");
  if (!IsLowerHex(version, 2)) return bad("the version is not 2 lowercase hex digits");
  if (version == "ff") return bad("version ff is invalid");
  if (version == "00" && text.size() != 55) return bad("version 00 is exactly 55 characters");
  if (text.size() > 55 && text[55] != '-') return bad("a later version's fields are split by -");
  if (!IsLowerHex(trace, 32) || AllZero(trace)) {
    return bad("the trace id is not 32 lowercase hex digits, not all zero");
  }
  if (!IsLowerHex(parent, 16) || AllZero(parent)) {
    return bad("the parent id is not 16 lowercase hex digits, not all zero");
  }
  if (!IsLowerHex(flags, 2)) return bad("the flags are not 2 lowercase hex digits");
  return TraceParent{std::string(trace), std::string(parent),
                     static_cast<uint8_t>(HexValue(flags[0]) * 16 + HexValue(flags[1]))};
}

}  // namespace jobctl
