#include "coordinator/http_errors.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace jobctl::coordinator {
namespace {

// Every failure answers with the same status wherever it happens: a full disk is 507 for an
// apply, a trigger, a log chunk or a reply sent after the commit alike.
TEST(HttpErrorsTest, EachFailureHasOneStatusCode) {
  struct Case {
    Status status;
    int http;
    std::string_view error;
  };
  const Case cases[] = {
      {Status::InvalidArgument("x"), 400, "bad_request"},
      {Status::Unauthenticated("x"), 401, "unauthenticated"},
      {Status::PermissionDenied("x"), 403, "forbidden"},
      {Status::NotFound("x"), 404, "not_found"},
      {Status::Conflict("x"), 409, "conflict"},
      {Status::Unavailable("x"), 503, "unavailable"},
      {Status::Io("x"), 503, "unavailable"},
      {Status::ResourceExhausted("database or disk is full"), 507, "insufficient_storage"},
      {Status::Corrupt("x"), 500, "internal"},
      {Status::Internal("x"), 500, "internal"},
  };
  for (const Case& c : cases) {
    HttpError e = HttpErrorFor(c.status);
    EXPECT_EQ(e.status, c.http) << c.status.ToString();
    EXPECT_EQ(e.error, c.error) << c.status.ToString();
    http::Response r = ErrorResponseFor(c.status);
    EXPECT_EQ(r.status, c.http);
    nlohmann::json body = nlohmann::json::parse(r.body);
    EXPECT_EQ(body["error"], c.error);
    EXPECT_EQ(body["message"], e.message);
  }
}

TEST(HttpErrorsTest, AFullDiskSaysNothingOfTheRequestWasKept) {
  HttpError e = HttpErrorFor(Status::ResourceExhausted("database or disk is full"));
  EXPECT_EQ(e.message,
            "the coordinator's disk is full; nothing of this request was kept (database or disk "
            "is full)");
}

}  // namespace
}  // namespace jobctl::coordinator
