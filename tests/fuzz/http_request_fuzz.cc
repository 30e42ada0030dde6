// libFuzzer target: arbitrary bytes through http::RequestParser, once in a single piece and
// once in arbitrary pieces (sizes drawn from the input itself), buffered the way HttpServer
// does it. Both runs must yield the same requests and the same final state, and no request
// may break the limits.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "http/request_parser.h"

namespace {

using jobctl::http::ParserLimits;
using jobctl::http::Request;
using jobctl::http::RequestParser;
using State = RequestParser::State;

constexpr size_t kMaxHead = 512;
constexpr size_t kMaxBody = 256;
constexpr size_t kMaxBigBody = 4096;

struct Outcome {
  std::vector<Request> requests;
  State state = State::kIdle;
  int error_http_status = 0;
};

void Check(bool ok) {
  if (!ok) std::abort();
}

ParserLimits Limits() {
  ParserLimits limits;
  limits.max_header_bytes = kMaxHead;
  limits.default_max_body = kMaxBody;
  limits.body_limit = [](const Request& head) {
    Check(head.body.empty());
    return head.path.rfind("/big", 0) == 0 ? kMaxBigBody : kMaxBody;
  };
  return limits;
}

// Appends `piece` to the pending input and parses as far as it goes, as a connection does.
void FeedPiece(RequestParser& parser, std::string& input, std::string_view piece, Outcome& out) {
  input.append(piece);
  while (!input.empty() && parser.state() != State::kFailed) {
    size_t used = parser.Feed(input);
    Check(used <= input.size());
    input.erase(0, used);
    if (parser.state() == State::kComplete) {
      Request r = parser.TakeRequest();
      Check(r.body.size() <= (r.path.rfind("/big", 0) == 0 ? kMaxBigBody : kMaxBody));
      Check(!r.method.empty() && !r.path.empty());
      out.requests.push_back(std::move(r));
      continue;
    }
    // Short of a complete request or an error, the parser takes every byte it is given.
    Check(parser.state() == State::kFailed || input.empty());
  }
}

Outcome Run(std::string_view data, std::string_view sizes) {
  RequestParser parser(Limits());
  std::string input;
  Outcome out;
  size_t i = 0;
  while (!data.empty()) {
    size_t len = data.size();
    if (!sizes.empty()) len = 1 + static_cast<unsigned char>(sizes[i++ % sizes.size()]) % 64;
    len = std::min(len, data.size());
    FeedPiece(parser, input, data.substr(0, len), out);
    data.remove_prefix(len);
  }
  out.state = parser.state();
  if (out.state == State::kFailed) {
    out.error_http_status = parser.error_http_status();
    Check(!parser.error().ok());
  }
  return out;
}

bool SameRequest(const Request& a, const Request& b) {
  return a.method == b.method && a.target == b.target && a.path == b.path && a.query == b.query &&
         a.headers == b.headers && a.body == b.body && a.http_minor == b.http_minor &&
         a.keep_alive == b.keep_alive;
}

}  // namespace

// The first bytes (up to the first NUL, at most 16) choose the piece sizes; the rest is the
// stream, so the fuzzer can mutate both.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view all(reinterpret_cast<const char*>(data), size);
  size_t nul = all.find('\0');
  size_t split = (nul != std::string_view::npos && nul <= 16) ? nul : 0;
  std::string_view sizes = all.substr(0, split);
  std::string_view stream = all.substr(split == 0 ? 0 : split + 1);
  Outcome whole = Run(stream, {});
  Outcome pieces = Run(stream, sizes.empty() ? std::string_view("\x00", 1) : sizes);
  Check(whole.state == pieces.state);
  Check(whole.error_http_status == pieces.error_http_status);
  Check(whole.requests.size() == pieces.requests.size());
  for (size_t i = 0; i < whole.requests.size(); ++i)
    Check(SameRequest(whole.requests[i], pieces.requests[i]));
  return 0;
}
