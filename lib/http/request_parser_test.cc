#include "http/request_parser.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace jobctl::http {
namespace {

using State = RequestParser::State;

// Feeds `data` in pieces of `step` bytes (0: all at once) and collects every complete request;
// stops at the first error.
std::vector<Request> ParseAll(RequestParser& parser, std::string_view data, size_t step = 0) {
  std::vector<Request> out;
  while (!data.empty() && parser.state() != State::kFailed) {
    size_t len = step == 0 ? data.size() : std::min(step, data.size());
    size_t used = parser.Feed(data.substr(0, len));
    data.remove_prefix(used);
    if (parser.state() == State::kComplete) out.push_back(parser.TakeRequest());
    if (used == 0 && parser.state() != State::kComplete) break;
  }
  return out;
}

void ExpectSameRequest(const Request& a, const Request& b) {
  EXPECT_EQ(a.method, b.method);
  EXPECT_EQ(a.target, b.target);
  EXPECT_EQ(a.path, b.path);
  EXPECT_EQ(a.query, b.query);
  EXPECT_EQ(a.headers, b.headers);
  EXPECT_EQ(a.body, b.body);
  EXPECT_EQ(a.http_minor, b.http_minor);
  EXPECT_EQ(a.keep_alive, b.keep_alive);
}

constexpr std::string_view kPost =
    "POST /v1/jobs/nightly%20backup/runs?reason=manual+run&force HTTP/1.1\r\n"
    "Host: coordinator:7070\r\n"
    "Content-Type: application/json\r\n"
    "X-Trace:  a \r\n"
    "x-trace: b\r\n"
    "X-Empty:\r\n"
    "Content-Length: 13\r\n"
    "\r\n"
    "{\"shards\":4}\n";

TEST(RequestParserTest, ParsesMethodTargetQueryHeadersAndBody) {
  RequestParser parser({});
  std::vector<Request> got = ParseAll(parser, kPost);
  ASSERT_EQ(got.size(), 1u);
  const Request& r = got[0];
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.target, "/v1/jobs/nightly%20backup/runs?reason=manual+run&force");
  EXPECT_EQ(r.path, "/v1/jobs/nightly backup/runs");
  EXPECT_EQ(r.query, (std::map<std::string, std::string>{{"force", ""}, {"reason", "manual run"}}));
  EXPECT_EQ(r.Header("host"), "coordinator:7070");
  EXPECT_EQ(r.Header("x-trace"), "a, b");
  EXPECT_EQ(r.Header("x-empty"), "");
  EXPECT_EQ(r.headers.count("x-empty"), 1u);
  EXPECT_EQ(r.Header("content-length"), "13");
  EXPECT_EQ(r.Header("absent"), "");
  EXPECT_EQ(r.body, "{\"shards\":4}\n");
  EXPECT_EQ(r.http_minor, 1);
  EXPECT_TRUE(r.keep_alive);
  EXPECT_EQ(parser.state(), State::kIdle);
}

TEST(RequestParserTest, ByteByByteGivesTheSameRequest) {
  RequestParser whole({});
  RequestParser bytes({});
  std::vector<Request> a = ParseAll(whole, kPost);
  std::vector<Request> b = ParseAll(bytes, kPost, 1);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  ExpectSameRequest(a[0], b[0]);
}

TEST(RequestParserTest, StopsAtTheEndOfEachPipelinedRequest) {
  std::string first = "GET /a?x=1 HTTP/1.1\r\nHost: h\r\n\r\n";
  std::string two = first + std::string(kPost);
  RequestParser parser({});
  EXPECT_EQ(parser.Feed(two), first.size());
  ASSERT_EQ(parser.state(), State::kComplete);
  EXPECT_EQ(parser.Feed("more"), 0u);  // nothing more until the request is taken
  Request a = parser.TakeRequest();
  EXPECT_EQ(a.path, "/a");
  EXPECT_EQ(a.query.at("x"), "1");
  EXPECT_EQ(parser.Feed(std::string_view(two).substr(first.size())), kPost.size());
  ASSERT_EQ(parser.state(), State::kComplete);
  EXPECT_EQ(parser.TakeRequest().body, "{\"shards\":4}\n");
}

TEST(RequestParserTest, HeadExactlyAtTheLimitIsAccepted) {
  std::string head = "GET / HTTP/1.1\r\nX-Pad: \r\n\r\n";
  ParserLimits limits;
  limits.max_header_bytes = 200;
  head.insert(head.find("\r\n\r\n"), limits.max_header_bytes - head.size(), 'p');
  ASSERT_EQ(head.size(), limits.max_header_bytes);
  for (size_t step : {0, 1, 7}) {
    RequestParser parser(limits);
    EXPECT_EQ(ParseAll(parser, head, step).size(), 1u) << "step " << step;
  }
}

TEST(RequestParserTest, HeadOneByteOverTheLimitIs431) {
  std::string head = "GET / HTTP/1.1\r\nX-Pad: \r\n\r\n";
  ParserLimits limits;
  limits.max_header_bytes = 200;
  head.insert(head.find("\r\n\r\n"), limits.max_header_bytes + 1 - head.size(), 'p');
  for (size_t step : {0, 1, 7}) {
    RequestParser parser(limits);
    EXPECT_TRUE(ParseAll(parser, head, step).empty());
    EXPECT_EQ(parser.state(), State::kFailed);
    EXPECT_EQ(parser.error_http_status(), 431) << "step " << step;
    EXPECT_EQ(parser.error().code(), Status::Code::kResourceExhausted);
  }
}

TEST(RequestParserTest, EndlessHeadIsCutOffJustPastTheLimit) {
  ParserLimits limits;
  limits.max_header_bytes = 1024;
  RequestParser parser(limits);
  std::string endless = "GET / HTTP/1.1\r\nX-Long: " + std::string(1 << 20, 'a');
  size_t used = parser.Feed(endless);
  EXPECT_LE(used, limits.max_header_bytes + 1);
  EXPECT_EQ(parser.error_http_status(), 431);
}

TEST(RequestParserTest, BodyOverTheDefaultLimitFailsBeforeTheBodyArrives) {
  ParserLimits limits;
  limits.default_max_body = 10;
  RequestParser parser(limits);
  std::string head = "POST /x HTTP/1.1\r\nContent-Length: 11\r\n\r\n";
  parser.Feed(head);
  EXPECT_EQ(parser.state(), State::kFailed);
  EXPECT_EQ(parser.error_http_status(), 413);
  EXPECT_EQ(parser.error().code(), Status::Code::kResourceExhausted);
}

TEST(RequestParserTest, BodyLimitCallbackSeesTheHeadAndDecidesPerRequest) {
  std::vector<std::string> seen;
  ParserLimits limits;
  limits.default_max_body = 1;
  limits.body_limit = [&](const Request& head) -> size_t {
    seen.push_back(head.method + " " + head.path + " " + head.Header("content-length") +
                   " body=" + head.body);
    return head.path == "/v1/jobfile" ? 100 : 5;
  };
  RequestParser parser(limits);
  std::string big =
      "POST /v1/jobfile HTTP/1.1\r\nContent-Length: 50\r\n\r\n" + std::string(50, 'j');
  std::vector<Request> got = ParseAll(parser, big);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].body.size(), 50u);
  ParseAll(parser, "POST /v1/logs HTTP/1.1\r\nContent-Length: 6\r\n\r\nabcdef");
  EXPECT_EQ(parser.error_http_status(), 413);
  EXPECT_EQ(seen, (std::vector<std::string>{"POST /v1/jobfile 50 body=", "POST /v1/logs 6 body="}));
}

TEST(RequestParserTest, ChunkedBodyIsRefusedWith411) {
  RequestParser parser({});
  ParseAll(parser, "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
  EXPECT_EQ(parser.state(), State::kFailed);
  EXPECT_EQ(parser.error_http_status(), 411);
  EXPECT_EQ(parser.error().code(), Status::Code::kInvalidArgument);
}

TEST(RequestParserTest, MalformedRequestsAre400) {
  for (std::string_view bad : {
           std::string_view("GARBAGE\r\n\r\n"),
           std::string_view("GET / HTTP/1.1\r\nBad Header\r\n\r\n"),
           std::string_view("GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n"),
           std::string_view("GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
           std::string_view("GET /a%zz HTTP/1.1\r\n\r\n"),
           std::string_view("GET /a%00b HTTP/1.1\r\n\r\n"),
           std::string_view("GET /a?q=%4 HTTP/1.1\r\n\r\n"),
       }) {
    RequestParser parser({});
    EXPECT_TRUE(ParseAll(parser, bad).empty()) << bad;
    EXPECT_EQ(parser.state(), State::kFailed) << bad;
    EXPECT_EQ(parser.error_http_status(), 400) << bad;
    EXPECT_EQ(parser.error().code(), Status::Code::kInvalidArgument) << bad;
  }
}

TEST(RequestParserTest, OnlyHttp1IsSupported) {
  RequestParser parser({});
  ParseAll(parser, "GET / HTTP/2.0\r\n\r\n");
  EXPECT_EQ(parser.error_http_status(), 505);
}

TEST(RequestParserTest, KeepAliveFollowsVersionAndConnectionHeader) {
  struct Case {
    std::string_view text;
    int minor;
    bool keep_alive;
  };
  for (const Case& c : {
           Case{"GET / HTTP/1.1\r\n\r\n", 1, true},
           Case{"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", 1, false},
           Case{"GET / HTTP/1.0\r\n\r\n", 0, false},
           Case{"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 0, true},
       }) {
    RequestParser parser({});
    std::vector<Request> got = ParseAll(parser, c.text);
    ASSERT_EQ(got.size(), 1u) << c.text;
    EXPECT_EQ(got[0].http_minor, c.minor) << c.text;
    EXPECT_EQ(got[0].keep_alive, c.keep_alive) << c.text;
  }
}

TEST(RequestParserTest, AbsoluteFormTargetKeepsOnlyThePath) {
  RequestParser parser({});
  std::vector<Request> got = ParseAll(parser, "GET http://h:1/v1/x?y=2 HTTP/1.1\r\n\r\n");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].path, "/v1/x");
  EXPECT_EQ(got[0].query.at("y"), "2");
}

TEST(RequestParserTest, PercentDecodeHandlesPlusAndRejectsBadEscapes) {
  std::string out;
  EXPECT_TRUE(PercentDecode("a%2Fb+c%7e", true, &out));
  EXPECT_EQ(out, "a/b c~");
  EXPECT_TRUE(PercentDecode("a+b", false, &out));
  EXPECT_EQ(out, "a+b");
  EXPECT_FALSE(PercentDecode("%", false, &out));
  EXPECT_FALSE(PercentDecode("%4", false, &out));
  EXPECT_FALSE(PercentDecode("%g0", false, &out));
}

}  // namespace
}  // namespace jobctl::http
