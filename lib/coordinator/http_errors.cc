#include "coordinator/http_errors.h"

#include <nlohmann/json.hpp>

namespace jobctl::coordinator {
namespace {

// What a 507 says: the store reports only "database or disk is full".
std::string DiskFullMessage(const Status& s) {
  return "the coordinator's disk is full; nothing of this request was kept (" + s.message() + ")";
}

}  // namespace

HttpError HttpErrorFor(const Status& s) {
  switch (s.code()) {
    case Status::Code::kInvalidArgument: return {400, "bad_request", s.message()};
    case Status::Code::kNotFound: return {404, "not_found", s.message()};
    case Status::Code::kConflict: return {409, "conflict", s.message()};
    case Status::Code::kUnauthenticated: return {401, "unauthenticated", s.message()};
    case Status::Code::kPermissionDenied: return {403, "forbidden", s.message()};
    case Status::Code::kResourceExhausted: return {507, "insufficient_storage", DiskFullMessage(s)};
    case Status::Code::kUnavailable:
    case Status::Code::kIo: return {503, "unavailable", s.message()};
    default: return {500, "internal", s.message()};
  }
}

http::Response ErrorResponse(int status, std::string_view error, const std::string& message) {
  nlohmann::json body = {{"error", error}, {"message", message}};
  return {status,
          "application/json",
          body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
          {}};
}

http::Response ErrorResponseFor(const Status& s) {
  HttpError e = HttpErrorFor(s);
  return ErrorResponse(e.status, e.error, e.message);
}

}  // namespace jobctl::coordinator
