// RequestParser turns the bytes of one HTTP/1.x connection into complete Request values,
// one at a time, on top of http_parser (Debian's libhttp-parser 2.9). Each connection owns
// one; it is a plain value with no I/O and no libuv, so it runs under tests and the fuzzer
// as it does in HttpServer. Not thread-safe; the server uses it on the loop thread only.
//
// Feed() stops at the end of each request, so pipelined bytes after it stay with the caller
// until the request was answered. Limits are enforced while parsing: the request line plus
// headers may not exceed max_header_bytes (431), and the body may not exceed the limit
// chosen once the headers are known (413, decided from Content-Length before any body byte
// is read). Request bodies must carry Content-Length: every client we ship sends it, so a
// Transfer-Encoding (chunked) body is refused with 411. After an error the parser is done;
// the caller answers error_http_status() and closes the connection.
#pragma once

#include <http_parser.h>

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "base/status.h"

namespace jobctl::http {

struct Request {
  std::string method;                          // "GET"
  std::string target;                          // raw, as sent: "/v1/runs/5?limit=3"
  std::string path;                            // percent-decoded: "/v1/runs/5"
  std::map<std::string, std::string> query;    // decoded, '+' as space; last repeat wins
  std::map<std::string, std::string> headers;  // keys lower-case; repeated headers joined by ", "
  std::string body;
  int http_minor = 1;      // HTTP/1.<minor>; only major version 1 is accepted
  bool keep_alive = true;  // false after "Connection: close" or HTTP/1.0 without keep-alive
  // Set by HttpServer, never parsed from the request: the name in the client certificate
  // verified at the TLS handshake (see http/tls.h); "" over plain HTTP or without mTLS.
  std::string peer_name;

  std::string Header(std::string_view lower_name) const;  // "" if absent
};

struct ParserLimits {
  size_t max_header_bytes = 16 * 1024;  // request line + headers + blank line
  size_t default_max_body = 1 << 20;
  // Called once per request when its headers are complete (body still empty); returns that
  // request's body limit. Optional: without it every request gets default_max_body.
  std::function<size_t(const Request& head)> body_limit;
};

class RequestParser {
 public:
  enum class State {
    kIdle,      // no byte of the next request seen yet
    kHead,      // reading the request line and headers
    kBody,      // headers complete (request() holds them), reading the body
    kComplete,  // a whole request is ready: TakeRequest()
    kFailed,    // error() says why; feed no more
  };

  explicit RequestParser(ParserLimits limits);
  RequestParser(const RequestParser&) = delete;
  RequestParser& operator=(const RequestParser&) = delete;

  // Parses from the start of `data` up to the end of one request and returns how many bytes
  // it used. When the result is smaller than data.size(), the state is kComplete (the rest
  // belongs to the next request: feed it again after TakeRequest) or kFailed. Returns 0 in
  // those two states.
  size_t Feed(std::string_view data);

  State state() const { return state_; }
  // The request being parsed: its head from kBody on, all of it in kComplete.
  const Request& request() const { return request_; }
  // Moves the complete request out and gets ready for the next one. kComplete only.
  Request TakeRequest();

  // Set in kFailed: kInvalidArgument (400, 411, 505) or kResourceExhausted (413, 431).
  const Status& error() const { return error_; }
  int error_http_status() const { return error_http_status_; }

 private:
  static int OnUrl(http_parser* p, const char* at, size_t len);
  static int OnHeaderField(http_parser* p, const char* at, size_t len);
  static int OnHeaderValue(http_parser* p, const char* at, size_t len);
  static int OnHeadersComplete(http_parser* p);
  static int OnBody(http_parser* p, const char* at, size_t len);
  static int OnMessageComplete(http_parser* p);

  void Reset();
  size_t FeedHead(std::string_view data);
  size_t FeedBody(std::string_view data);
  size_t Execute(std::string_view data);
  void FinishHead();
  void CommitHeader();
  void Fail(int http_status, std::string message);
  void FailFromParser();

  ParserLimits limits_;
  http_parser_settings settings_;
  http_parser parser_;
  State state_ = State::kIdle;
  Request request_;
  std::string field_;          // header name being assembled (lower-cased)
  std::string value_;          // its value so far
  bool in_value_ = false;      // the last header callback was a value
  bool headers_done_ = false;  // set by OnHeadersComplete (parser paused there)
  bool message_done_ = false;  // set by OnMessageComplete (parser paused there)
  size_t head_bytes_ = 0;      // bytes of the current request's head consumed so far
  size_t max_body_ = 0;        // this request's body limit, chosen in FinishHead
  Status error_;
  int error_http_status_ = 0;
};

// Decodes %XX escapes (and '+' as a space when plus_is_space). False on a malformed escape.
bool PercentDecode(std::string_view in, bool plus_is_space, std::string* out);

// The "error" word of the JSON error body for an HTTP status: 400 -> "bad_request",
// 413 -> "payload_too_large", 431 -> "headers_too_large", ...
std::string_view ErrorCodeForHttpStatus(int http_status);

}  // namespace jobctl::http
