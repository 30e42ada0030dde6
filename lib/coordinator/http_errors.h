// How a failure answers over HTTP: the one mapping from Status to status code, error name and
// message, used by every route, by replies sent after a commit, and by the claim long-poll.
// A full disk is 507 wherever it happens; a store that cannot be reached is 503.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "http/server.h"

namespace jobctl::coordinator {

struct HttpError {
  int status;
  std::string_view error;  // the machine-readable name in the body's "error"
  std::string message;
};

HttpError HttpErrorFor(const Status& s);

// {"error": error, "message": message} as a JSON response.
http::Response ErrorResponse(int status, std::string_view error, const std::string& message);
http::Response ErrorResponseFor(const Status& s);

}  // namespace jobctl::coordinator
