#include "http/request_parser.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <utility>

namespace jobctl::http {
namespace {

RequestParser* Self(http_parser* p) { return static_cast<RequestParser*>(p->data); }

char ToLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Splits "a=1&b=x%20y&flag" into the map; false on a malformed escape.
bool ParseQuery(std::string_view query, std::map<std::string, std::string>* out) {
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    std::string key, value;
    if (!PercentDecode(pair.substr(0, eq), true, &key)) return false;
    if (eq != std::string_view::npos && !PercentDecode(pair.substr(eq + 1), true, &value))
      return false;
    (*out)[std::move(key)] = std::move(value);
  }
  return true;
}

// Fills path and query from the raw target (origin or absolute form).
Status ParseTarget(bool is_connect, Request* r) {
  http_parser_url url;
  http_parser_url_init(&url);
  if (http_parser_parse_url(r->target.data(), r->target.size(), is_connect, &url) != 0)
    return Status::InvalidArgument("malformed request target");
  auto field = [&](int f) {
    return std::string_view(r->target).substr(url.field_data[f].off, url.field_data[f].len);
  };
  r->path = "/";
  // A NUL in the path would cut it short in any C API further down, so it is refused.
  if ((url.field_set & (1 << UF_PATH)) != 0 && (!PercentDecode(field(UF_PATH), false, &r->path) ||
                                                r->path.find('\0') != std::string::npos)) {
    return Status::InvalidArgument("malformed percent-encoding in path");
  }
  if ((url.field_set & (1 << UF_QUERY)) != 0 && !ParseQuery(field(UF_QUERY), &r->query))
    return Status::InvalidArgument("malformed percent-encoding in query");
  return Status::Ok();
}

}  // namespace

std::string Request::Header(std::string_view lower_name) const {
  auto it = headers.find(std::string(lower_name));
  return it == headers.end() ? std::string() : it->second;
}

bool PercentDecode(std::string_view in, bool plus_is_space, std::string* out) {
  out->clear();
  out->reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '+' && plus_is_space) {
      out->push_back(' ');
    } else if (c != '%') {
      out->push_back(c);
    } else {
      if (i + 2 >= in.size()) return false;
      int hi = HexValue(in[i + 1]), lo = HexValue(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      out->push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    }
  }
  return true;
}

std::string_view ErrorCodeForHttpStatus(int http_status) {
  switch (http_status) {
    case 400: return "bad_request";
    case 408: return "request_timeout";
    case 411: return "length_required";
    case 413: return "payload_too_large";
    case 414: return "uri_too_long";
    case 429: return "too_many_requests";
    case 431: return "headers_too_large";
    case 505: return "http_version_not_supported";
    case 503: return "unavailable";
    default: return http_status >= 500 ? "internal" : "bad_request";
  }
}

RequestParser::RequestParser(ParserLimits limits) : limits_(std::move(limits)) {
  http_parser_settings_init(&settings_);
  settings_.on_url = &OnUrl;
  settings_.on_header_field = &OnHeaderField;
  settings_.on_header_value = &OnHeaderValue;
  settings_.on_headers_complete = &OnHeadersComplete;
  settings_.on_body = &OnBody;
  settings_.on_message_complete = &OnMessageComplete;
  Reset();
}

void RequestParser::Reset() {
  http_parser_init(&parser_, HTTP_REQUEST);
  parser_.data = this;
  state_ = State::kIdle;
  request_ = Request();
  field_.clear();
  value_.clear();
  in_value_ = false;
  headers_done_ = false;
  message_done_ = false;
  head_bytes_ = 0;
  max_body_ = 0;
}

Request RequestParser::TakeRequest() {
  Request r = std::move(request_);
  Reset();
  return r;
}

size_t RequestParser::Feed(std::string_view data) {
  size_t used = 0;
  while (used < data.size()) {
    std::string_view rest = data.substr(used);
    State before = state_;
    size_t n = 0;
    switch (state_) {
      case State::kIdle: state_ = State::kHead; [[fallthrough]];
      case State::kHead: n = FeedHead(rest); break;
      case State::kBody: n = FeedBody(rest); break;
      case State::kComplete:
      case State::kFailed: return used;
    }
    used += n;
    // Pausing at the end of the headers may consume nothing, but it always moves the state on;
    // anything else that makes no progress would loop forever, so it is treated as an error.
    if (n == 0 && state_ == before) Fail(400, "malformed request: parser made no progress");
  }
  return used;
}

// The head is fed at most one byte past the limit, so an oversized head is caught the same
// way however the bytes were split, and never buffered beyond the limit.
size_t RequestParser::FeedHead(std::string_view data) {
  size_t budget = limits_.max_header_bytes + 1 - head_bytes_;
  size_t n = Execute(data.substr(0, budget));
  head_bytes_ += n;
  if (state_ == State::kFailed) return n;
  if (headers_done_) {
    // Paused on the final LF, which is not counted in n.
    if (head_bytes_ + 1 > limits_.max_header_bytes) {
      Fail(431, "request head exceeds " + std::to_string(limits_.max_header_bytes) + " bytes");
    } else {
      FinishHead();
    }
  } else if (head_bytes_ > limits_.max_header_bytes) {
    Fail(431, "request head exceeds " + std::to_string(limits_.max_header_bytes) + " bytes");
  }
  return n;
}

size_t RequestParser::FeedBody(std::string_view data) {
  size_t n = Execute(data);
  if (state_ != State::kFailed && message_done_) state_ = State::kComplete;
  return n;
}

size_t RequestParser::Execute(std::string_view data) {
  size_t n = http_parser_execute(&parser_, &settings_, data.data(), data.size());
  http_errno err = HTTP_PARSER_ERRNO(&parser_);
  if (err == HPE_PAUSED) {
    http_parser_pause(&parser_, 0);  // headers_done_ or message_done_ says why it stopped
  } else if (err != HPE_OK && state_ != State::kFailed) {
    FailFromParser();
  }
  return n;
}

void RequestParser::FinishHead() {
  request_.method = http_method_str(static_cast<http_method>(parser_.method));
  request_.http_minor = parser_.http_minor;
  request_.keep_alive = http_should_keep_alive(&parser_) != 0;
  if (parser_.http_major != 1) {
    return Fail(505, "HTTP/" + std::to_string(parser_.http_major) + "." +
                         std::to_string(parser_.http_minor) + " is not supported; use HTTP/1.1");
  }
  if (request_.target.size() > UINT16_MAX) return Fail(414, "request target too long");
  if (Status s = ParseTarget(parser_.method == HTTP_CONNECT, &request_); !s.ok())
    return Fail(400, s.message());
  if (request_.headers.count("transfer-encoding") != 0)
    return Fail(411, "request bodies need Content-Length; Transfer-Encoding is not supported");
  max_body_ = limits_.body_limit ? limits_.body_limit(request_) : limits_.default_max_body;
  bool has_length = (parser_.flags & F_CONTENTLENGTH) != 0 && parser_.content_length != ULLONG_MAX;
  if (has_length && parser_.content_length > max_body_) {
    return Fail(413, "body of " + std::to_string(parser_.content_length) +
                         " bytes exceeds the limit of " + std::to_string(max_body_) + " bytes");
  }
  if (has_length) request_.body.reserve(parser_.content_length);
  state_ = State::kBody;
}

void RequestParser::CommitHeader() {
  if (!field_.empty()) {
    std::string_view value = TrimOws(value_);
    auto [it, inserted] = request_.headers.try_emplace(field_, value);
    if (!inserted) it->second.append(", ").append(value);
  }
  field_.clear();
  value_.clear();
  in_value_ = false;
}

void RequestParser::Fail(int http_status, std::string message) {
  state_ = State::kFailed;
  error_http_status_ = http_status;
  bool too_large = http_status == 413 || http_status == 414 || http_status == 431;
  error_ = too_large ? Status::ResourceExhausted(std::move(message))
                     : Status::InvalidArgument(std::move(message));
}

void RequestParser::FailFromParser() {
  http_errno err = HTTP_PARSER_ERRNO(&parser_);
  if (err == HPE_HEADER_OVERFLOW) return Fail(431, "request head too large");
  Fail(400, std::string("malformed request: ") + http_errno_description(err));
}

int RequestParser::OnUrl(http_parser* p, const char* at, size_t len) {
  Self(p)->request_.target.append(at, len);
  return 0;
}

int RequestParser::OnHeaderField(http_parser* p, const char* at, size_t len) {
  RequestParser* self = Self(p);
  if (self->in_value_) self->CommitHeader();
  for (size_t i = 0; i < len; ++i) self->field_.push_back(ToLower(at[i]));
  return 0;
}

int RequestParser::OnHeaderValue(http_parser* p, const char* at, size_t len) {
  RequestParser* self = Self(p);
  self->in_value_ = true;
  self->value_.append(at, len);
  return 0;
}

// Pausing here hands control back to Feed(), which checks the limits and picks the body limit
// before a single body byte is parsed.
int RequestParser::OnHeadersComplete(http_parser* p) {
  RequestParser* self = Self(p);
  self->CommitHeader();
  self->headers_done_ = true;
  http_parser_pause(p, 1);
  return 0;
}

int RequestParser::OnBody(http_parser* p, const char* at, size_t len) {
  RequestParser* self = Self(p);
  if (self->request_.body.size() + len > self->max_body_) {
    self->Fail(413, "body exceeds the limit of " + std::to_string(self->max_body_) + " bytes");
    return 1;
  }
  self->request_.body.append(at, len);
  return 0;
}

// Pausing here keeps the bytes of a pipelined next request unparsed until this one is answered.
int RequestParser::OnMessageComplete(http_parser* p) {
  Self(p)->message_done_ = true;
  http_parser_pause(p, 1);
  return 0;
}

}  // namespace jobctl::http
