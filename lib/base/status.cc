#include "base/status.h"

namespace jobctl {

std::string_view CodeName(Status::Code code) {
  switch (code) {
    case Status::Code::kOk: return "ok";
    case Status::Code::kInvalidArgument: return "invalid_argument";
    case Status::Code::kNotFound: return "not_found";
    case Status::Code::kConflict: return "conflict";
    case Status::Code::kUnavailable: return "unavailable";
    case Status::Code::kUnauthenticated: return "unauthenticated";
    case Status::Code::kPermissionDenied: return "permission_denied";
    case Status::Code::kResourceExhausted: return "resource_exhausted";
    case Status::Code::kIo: return "io";
    case Status::Code::kCorrupt: return "corrupt";
    case Status::Code::kInternal: return "internal";
  }
  return "unknown";
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  return Status(code_, std::string(context) + ": " + message_);
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(CodeName(code_)) + ": " + message_;
}

}  // namespace jobctl
