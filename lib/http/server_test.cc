// HttpServer against real sockets on 127.0.0.1: the uv loop runs on the test thread, the
// client (libcurl easy, or a plain blocking socket for raw bytes) on a std::thread. The
// client hands work to the loop through a uv_async queue; every wait is on an event (a reply,
// an EOF, a callback), bounded by client-side timeouts and a loop watchdog.
#include "http/server.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace jobctl::http {
namespace {

using Clock = std::chrono::steady_clock;

long MillisSince(Clock::time_point start) {
  return static_cast<long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
}

// ---- libcurl client (client thread) ----

struct CurlReply {
  CURLcode code = CURLE_OK;
  long status = 0;
  long new_connections = -1;  // CURLINFO_NUM_CONNECTS: 0 when a connection was reused
  std::string headers;
  std::string body;
};

struct FetchOptions {
  const std::string* post_body = nullptr;
  std::vector<std::string> headers;
};

size_t AppendTo(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

CurlReply Fetch(CURL* curl, const std::string& url, const FetchOptions& opt = {}) {
  CurlReply r;
  curl_slist* headers = nullptr;
  for (const std::string& h : opt.headers) headers = curl_slist_append(headers, h.c_str());
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 10'000L);
  curl_easy_setopt(curl, CURLOPT_EXPECT_100_TIMEOUT_MS, 5'000L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &AppendTo);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &r.body);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &AppendTo);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &r.headers);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  if (opt.post_body != nullptr) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, opt.post_body->data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(opt.post_body->size()));
  } else {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  }
  r.code = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r.status);
  curl_easy_getinfo(curl, CURLINFO_NUM_CONNECTS, &r.new_connections);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, nullptr);
  curl_slist_free_all(headers);
  return r;
}

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
using CurlHandle = std::unique_ptr<CURL, CurlDeleter>;

// ---- raw socket client (client thread) ----

class RawClient {
 public:
  // `from`: the loopback address to connect from ("127.0.0.2"), to look like another client.
  explicit RawClient(int port, const char* from = nullptr) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{5, 0};  // every recv gives up after 5 s, so a broken server fails, not hangs
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (from != nullptr) {
      sockaddr_in local{};
      local.sin_family = AF_INET;
      inet_pton(AF_INET, from, &local.sin_addr);
      bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof local);
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~RawClient() { Close(); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return connected_; }
  int fd() const { return fd_; }
  void Send(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
  }
  // Reads until the server closes (returns true) or a recv times out or fails (false).
  bool ReadUntilEof(std::string* out) {
    char buf[16 * 1024];
    for (;;) {
      ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n == 0) return true;
      if (n < 0) return errno == ECONNRESET;  // a reset after the data still means "closed"
      out->append(buf, static_cast<size_t>(n));
    }
  }
  // Reads until `out` holds at least one complete response (head + Content-Length body).
  bool ReadOneResponse(std::string* out) {
    char buf[16 * 1024];
    for (;;) {
      size_t end = out->find("\r\n\r\n");
      if (end != std::string::npos) {
        size_t cl = out->find("Content-Length: ");
        size_t len = cl < end ? std::stoul(out->substr(cl + 16, 20)) : 0;
        if (out->size() >= end + 4 + len) return true;
      }
      ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return false;
      out->append(buf, static_cast<size_t>(n));
    }
  }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

size_t CountOf(const std::string& haystack, std::string_view needle) {
  size_t count = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

// ---- fixture ----

class HttpServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { curl_global_init(CURL_GLOBAL_DEFAULT); }
  static void TearDownTestSuite() { curl_global_cleanup(); }

  void SetUp() override { ASSERT_EQ(0, uv_loop_init(&loop_)); }

  void TearDown() override {
    if (server_ && !close_started_) {  // a test that never ran the loop
      CloseServer();
      uv_run(&loop_, UV_RUN_DEFAULT);
    }
    if (server_) {
      EXPECT_TRUE(server_closed_);
      EXPECT_EQ(server_->connections(), 0u);
    }
    server_.reset();
    ASSERT_EQ(0, uv_loop_close(&loop_));  // a leaked handle fails here
  }

  void StartServer(Limits limits = {}) {
    server_ = std::make_unique<HttpServer>(
        &loop_, std::move(limits), [this](Request&& r, std::shared_ptr<Responder> responder) {
          ++handled_;
          handler_(std::move(r), std::move(responder));
        });
    Status s = server_->Listen("127.0.0.1", 0);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_GT(server_->port(), 0);
  }

  std::string Url(std::string_view path) const {
    return "http://127.0.0.1:" + std::to_string(server_->port()) + std::string(path);
  }

  // Runs `client` on a thread while the loop runs here. Once the client returned and the
  // test's loop-side condition holds (loop_done_), the server is closed; uv_run returns when
  // every handle is closed.
  void Run(std::function<void()> client) {
    async_.data = this;
    ASSERT_EQ(0, uv_async_init(&loop_, &async_, [](uv_async_t* a) {
                static_cast<HttpServerTest*>(a->data)->RunPosted();
              }));
    watchdog_.data = this;
    uv_timer_init(&loop_, &watchdog_);
    uv_timer_start(
        &watchdog_,
        [](uv_timer_t* t) {
          auto* self = static_cast<HttpServerTest*>(t->data);
          ADD_FAILURE() << "watchdog: the test did not finish in time";
          self->loop_done_ = true;
          self->CloseServer();  // unblocks a client waiting for EOF
          self->MaybeStop();
        },
        20'000, 0);
    std::thread thread([this, client] {
      client();
      Post([this] {
        client_done_ = true;
        MaybeStop();
      });
    });
    uv_run(&loop_, UV_RUN_DEFAULT);
    thread.join();
  }

  // From the client thread: runs fn on the loop thread.
  void Post(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      posted_.push_back(std::move(fn));
    }
    uv_async_send(&async_);
  }

  // Loop thread helpers.
  void CloseServer() {
    if (close_started_) return;
    close_started_ = true;
    server_->Close([this] { server_closed_ = true; });
  }
  void SetLoopDone() {
    loop_done_ = true;
    MaybeStop();
  }
  void Later(uint64_t ms, std::function<void()> fn) {
    struct Pending {
      uv_timer_t timer;
      std::function<void()> fn;
    };
    auto* p = new Pending{{}, std::move(fn)};
    uv_timer_init(&loop_, &p->timer);
    p->timer.data = p;
    uv_timer_start(
        &p->timer,
        [](uv_timer_t* t) {
          auto* pending = static_cast<Pending*>(t->data);
          pending->fn();
          uv_close(reinterpret_cast<uv_handle_t*>(t),
                   [](uv_handle_t* h) { delete static_cast<Pending*>(h->data); });
        },
        ms, 0);
  }

  uv_loop_t loop_;
  std::unique_ptr<HttpServer> server_;
  Handler handler_ = [](Request&&, std::shared_ptr<Responder> r) { r->Send({200, "", "ok", {}}); };
  int handled_ = 0;
  bool loop_done_ = true;  // tests that wait for a loop-side event set it false first
  bool server_closed_ = false;

 private:
  void RunPosted() {
    std::vector<std::function<void()>> fns;
    {
      std::lock_guard<std::mutex> lock(mu_);
      fns.swap(posted_);
    }
    for (auto& fn : fns) fn();
  }
  void MaybeStop() {
    if (!client_done_ || !loop_done_ || stopped_) return;
    stopped_ = true;
    CloseServer();
    uv_close(reinterpret_cast<uv_handle_t*>(&async_), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&watchdog_), nullptr);
  }

  uv_async_t async_;
  uv_timer_t watchdog_;
  std::mutex mu_;
  std::vector<std::function<void()>> posted_;
  bool client_done_ = false;
  bool stopped_ = false;
  bool close_started_ = false;
};

// ---- round trips ----

TEST_F(HttpServerTest, GetRoundTripDecodesPathAndQuery) {
  std::vector<Request> seen;
  handler_ = [&](Request&& r, std::shared_ptr<Responder> responder) {
    seen.push_back(r);
    responder->Send({200, "application/json", "{\"path\":\"" + r.path + "\"}", {{"X-Run", "r-1"}}});
  };
  StartServer();
  CurlReply reply;
  Run([&] {
    CurlHandle curl(curl_easy_init());
    reply = Fetch(curl.get(), Url("/v1/runs/a%20b?limit=3&name=x%2By+z&flag"));
  });
  EXPECT_EQ(reply.code, CURLE_OK);
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.body, "{\"path\":\"/v1/runs/a b\"}");
  EXPECT_NE(reply.headers.find("Content-Type: application/json\r\n"), std::string::npos);
  EXPECT_NE(reply.headers.find("X-Run: r-1\r\n"), std::string::npos);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].method, "GET");
  EXPECT_EQ(seen[0].target, "/v1/runs/a%20b?limit=3&name=x%2By+z&flag");
  EXPECT_EQ(seen[0].query,
            (std::map<std::string, std::string>{{"flag", ""}, {"limit", "3"}, {"name", "x+y z"}}));
  EXPECT_EQ(seen[0].Header("host"), "127.0.0.1:" + std::to_string(server_->port()));
}

TEST_F(HttpServerTest, PostRoundTripCarriesTheBody) {
  handler_ = [](Request&& r, std::shared_ptr<Responder> responder) {
    responder->Send({201, "text/plain", r.method + ":" + r.body, {}});
  };
  StartServer();
  CurlReply reply;
  Run([&] {
    CurlHandle curl(curl_easy_init());
    std::string body = "{\"job\":\"nightly\"}";
    reply = Fetch(curl.get(), Url("/v1/jobs"), {&body, {"Content-Type: application/json"}});
  });
  EXPECT_EQ(reply.status, 201);
  EXPECT_EQ(reply.body, "POST:{\"job\":\"nightly\"}");
}

TEST_F(HttpServerTest, KeepAliveServesTwoRequestsOverOneConnection) {
  std::vector<size_t> connections;
  handler_ = [&](Request&& r, std::shared_ptr<Responder> responder) {
    connections.push_back(server_->connections());
    responder->Send({200, "text/plain", r.path, {}});
  };
  StartServer();
  CurlReply first, second;
  Run([&] {
    CurlHandle curl(curl_easy_init());
    first = Fetch(curl.get(), Url("/one"));
    second = Fetch(curl.get(), Url("/two"));
  });
  EXPECT_EQ(first.body, "/one");
  EXPECT_EQ(second.body, "/two");
  EXPECT_EQ(first.new_connections, 1);
  EXPECT_EQ(second.new_connections, 0);  // reused
  EXPECT_EQ(connections, (std::vector<size_t>{1, 1}));
}

TEST_F(HttpServerTest, HeadRequestGetsContentLengthButNoBody) {
  StartServer();
  std::string got;
  Run([&] {
    RawClient c(server_->port());
    c.Send("HEAD /x HTTP/1.1\r\nConnection: close\r\n\r\n");
    EXPECT_TRUE(c.ReadUntilEof(&got));
  });
  EXPECT_EQ(got, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n");
}

TEST_F(HttpServerTest, Http10ClosesUnlessKeepAliveWasAsked) {
  StartServer();
  std::string closed, kept;
  Run([&] {
    RawClient a(server_->port());
    a.Send("GET / HTTP/1.0\r\n\r\n");
    EXPECT_TRUE(a.ReadUntilEof(&closed));
    RawClient b(server_->port());
    b.Send("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    EXPECT_TRUE(b.ReadOneResponse(&kept));
  });
  EXPECT_NE(closed.find("Connection: close\r\n"), std::string::npos) << closed;
  EXPECT_NE(kept.find("Connection: keep-alive\r\n"), std::string::npos) << kept;
}

// ---- deferred responses ----

TEST_F(HttpServerTest, DeferredResponseIsSentLaterFromATimer) {
  bool alive_before = false;
  handler_ = [&](Request&&, std::shared_ptr<Responder> responder) {
    alive_before = responder->alive();
    Later(50, [responder] { responder->Send({200, "text/plain", "late", {}}); });
  };
  StartServer();
  CurlReply reply;
  Run([&] {
    CurlHandle curl(curl_easy_init());
    reply = Fetch(curl.get(), Url("/v1/wait"));
  });
  EXPECT_TRUE(alive_before);
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.body, "late");
}

TEST_F(HttpServerTest, ClientDisconnectFiresOnCloseAndMakesTheResponderDead) {
  std::shared_ptr<Responder> saved;
  int on_close_calls = 0;
  loop_done_ = false;
  handler_ = [&](Request&&, std::shared_ptr<Responder> responder) {
    saved = responder;
    responder->OnClose([&] {
      ++on_close_calls;
      EXPECT_FALSE(saved->alive());
      saved->Send({200, "", "too late", {}});  // a no-op, not a crash
      SetLoopDone();
    });
  };
  StartServer();
  Run([&] {
    RawClient c(server_->port());
    c.Send("GET /v1/wait HTTP/1.1\r\n\r\n");
    c.Close();  // the request precedes the FIN, so the server sees both, in order
  });
  EXPECT_EQ(on_close_calls, 1);
  server_.reset();  // the Responder outlives its server too
  ASSERT_TRUE(saved);
  EXPECT_FALSE(saved->alive());
  saved->Send({200, "", "", {}});
  int late_calls = 0;
  saved->OnClose([&] { ++late_calls; });  // already closed: runs at once
  EXPECT_EQ(late_calls, 1);
}

TEST_F(HttpServerTest, DroppedResponderAnswers500) {
  handler_ = [](Request&&, std::shared_ptr<Responder>) {};
  StartServer();
  CurlReply reply;
  Run([&] {
    CurlHandle curl(curl_easy_init());
    reply = Fetch(curl.get(), Url("/x"));
  });
  EXPECT_EQ(reply.status, 500);
  EXPECT_NE(reply.body.find("\"error\":\"internal\""), std::string::npos) << reply.body;
}

TEST_F(HttpServerTest, PipelinedRequestsAreAnsweredInOrder) {
  std::vector<std::string> events;
  handler_ = [&](Request&& r, std::shared_ptr<Responder> responder) {
    events.push_back("got " + r.path);
    std::string path = r.path;
    auto send = [&events, responder, path] {
      events.push_back("sent " + path);
      responder->Send({200, "text/plain", "body" + path, {}});
    };
    if (path == "/a") {
      Later(50, send);  // the first answer comes late; the others must wait for it
    } else {
      send();
    }
  };
  StartServer();
  std::string got;
  Run([&] {
    RawClient c(server_->port());
    c.Send(
        "GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n"
        "GET /c HTTP/1.1\r\nConnection: close\r\n\r\n");
    EXPECT_TRUE(c.ReadUntilEof(&got));
  });
  size_t a = got.find("body/a"), b = got.find("body/b"), c = got.find("body/c");
  ASSERT_NE(c, std::string::npos) << got;
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
  EXPECT_EQ(CountOf(got, "HTTP/1.1 200 OK"), 3u);
  EXPECT_EQ(events, (std::vector<std::string>{"got /a", "sent /a", "got /b", "sent /b", "got /c",
                                              "sent /c"}));
}

// ---- limits and errors ----

TEST_F(HttpServerTest, BodyOverThePerRequestLimitIs413) {
  Limits limits;
  limits.body_limit = [](const Request& head) -> size_t {
    return head.path == "/v1/jobfile" ? 8 * 1024 : 1024;
  };
  handler_ = [](Request&& r, std::shared_ptr<Responder> responder) {
    responder->Send({200, "text/plain", std::to_string(r.body.size()), {}});
  };
  StartServer(std::move(limits));
  CurlReply small_limit, big_limit;
  Run([&] {
    std::string body(4 * 1024, 'x');
    CurlHandle curl(curl_easy_init());
    small_limit = Fetch(curl.get(), Url("/v1/logs"), {&body, {}});
    big_limit = Fetch(curl.get(), Url("/v1/jobfile"), {&body, {}});
  });
  EXPECT_EQ(small_limit.status, 413);
  EXPECT_NE(small_limit.body.find("{\"error\":\"payload_too_large\",\"message\":\""),
            std::string::npos)
      << small_limit.body;
  EXPECT_NE(small_limit.headers.find("Connection: close"), std::string::npos);
  EXPECT_EQ(big_limit.status, 200);
  EXPECT_EQ(big_limit.body, "4096");
  EXPECT_EQ(handled_, 1);
}

TEST_F(HttpServerTest, ExpectContinueIsAnsweredAtOnceOrRefusedWith413) {
  Limits limits;
  limits.default_max_body = 64 * 1024;
  handler_ = [](Request&& r, std::shared_ptr<Responder> responder) {
    responder->Send({200, "text/plain", std::to_string(r.body.size()), {}});
  };
  StartServer(std::move(limits));
  CurlReply fits, too_big;
  long fits_ms = 0, too_big_ms = 0;
  Run([&] {
    CurlHandle curl(curl_easy_init());
    std::string small(32 * 1024, 's'), big(128 * 1024, 'b');
    // curl waits up to 5 s (CURLOPT_EXPECT_100_TIMEOUT_MS) for the server's verdict.
    Clock::time_point start = Clock::now();
    fits = Fetch(curl.get(), Url("/up"), {&small, {"Expect: 100-continue"}});
    fits_ms = MillisSince(start);
    start = Clock::now();
    too_big = Fetch(curl.get(), Url("/up"), {&big, {"Expect: 100-continue"}});
    too_big_ms = MillisSince(start);
  });
  EXPECT_EQ(fits.status, 200);
  EXPECT_EQ(fits.body, "32768");
  EXPECT_LT(fits_ms, 4'000);
  EXPECT_EQ(too_big.status, 413);
  EXPECT_LT(too_big_ms, 4'000);
}

// The 413 goes out while the client is still uploading: the server shuts down its write
// side and discards the rest of the upload instead of resetting the connection. (On loopback
// a reset would rarely show; over a network it can destroy the unsent 413.)
TEST_F(HttpServerTest, ClientStillUploadingReadsThe413) {
  Limits limits;
  limits.default_max_body = 1024;
  StartServer(std::move(limits));
  CurlReply reply;
  Run([&] {
    CurlHandle curl(curl_easy_init());
    std::string body(8 << 20, 'u');
    reply = Fetch(curl.get(), Url("/v1/jobfile"), {&body, {"Expect:"}});  // no 100-continue
  });
  EXPECT_EQ(reply.code, CURLE_OK) << curl_easy_strerror(reply.code);
  EXPECT_EQ(reply.status, 413);
  EXPECT_EQ(handled_, 0);
}

TEST_F(HttpServerTest, HeadOver16KiBIs431) {
  StartServer();
  CurlReply reply;
  Run([&] {
    CurlHandle curl(curl_easy_init());
    reply = Fetch(curl.get(), Url("/x"), {nullptr, {"X-Big: " + std::string(17 * 1024, 'h')}});
  });
  EXPECT_EQ(reply.status, 431);
  EXPECT_NE(reply.body.find("\"error\":\"headers_too_large\""), std::string::npos) << reply.body;
  EXPECT_EQ(handled_, 0);
}

TEST_F(HttpServerTest, MalformedRequestIs400AndTheConnectionCloses) {
  StartServer();
  std::string got;
  Run([&] {
    RawClient c(server_->port());
    c.Send("GARBAGE\r\n\r\n");
    EXPECT_TRUE(c.ReadUntilEof(&got));
  });
  EXPECT_EQ(got.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << got;
  EXPECT_NE(got.find("Connection: close\r\n"), std::string::npos);
  EXPECT_NE(got.find("\r\n\r\n{\"error\":\"bad_request\",\"message\":\"malformed request: "),
            std::string::npos)
      << got;
  EXPECT_EQ(handled_, 0);
}

TEST_F(HttpServerTest, ChunkedRequestBodyIs411) {
  StartServer();
  std::string got;
  Run([&] {
    RawClient c(server_->port());
    c.Send("POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
    EXPECT_TRUE(c.ReadUntilEof(&got));
  });
  EXPECT_EQ(got.rfind("HTTP/1.1 411 Length Required\r\n", 0), 0u) << got;
}

// ---- timeouts ----

TEST_F(HttpServerTest, IdleKeepAliveConnectionIsClosedAfterTheIdleTimeout) {
  Limits limits;
  limits.idle_timeout_ms = 100;
  StartServer(std::move(limits));
  std::string got;
  bool eof = false;
  long waited_ms = 0;
  Run([&] {
    RawClient c(server_->port());
    // The server's idle timer starts after it answered, so after this point.
    Clock::time_point start = Clock::now();
    c.Send("GET / HTTP/1.1\r\n\r\n");
    ASSERT_TRUE(c.ReadOneResponse(&got));
    eof = c.ReadUntilEof(&got);
    waited_ms = MillisSince(start);
  });
  EXPECT_TRUE(eof);
  EXPECT_GE(waited_ms, 90);  // not closed right after the response (10 ms for coarse clocks)
  EXPECT_LT(waited_ms, 4'000);
  EXPECT_EQ(CountOf(got, "HTTP/1.1 200 OK"), 1u);
}

TEST_F(HttpServerTest, AResponseStillBeingWrittenWhenTheLoopWasBusyPastTheIdleTimeoutIsNotCut) {
  Limits limits;
  limits.idle_timeout_ms = 100;
  StartServer(std::move(limits));
  const std::string big(32 << 20, 'x');
  handler_ = [&big](Request&&, std::shared_ptr<Responder> r) {
    r->Send({200, "text/plain", big, {}});
    // The rest of this loop turn holds the loop past the idle timeout (as a long store commit
    // does), while most of the response still waits in the write queue.
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
  };
  std::string got;
  bool complete = false;
  Run([&] {
    RawClient c(server_->port());
    c.Send("GET / HTTP/1.1\r\n\r\n");
    complete = c.ReadOneResponse(&got);
  });
  EXPECT_TRUE(complete) << "cut after " << got.size() << " bytes";
  EXPECT_EQ(CountOf(got, "HTTP/1.1 200 OK"), 1u);
}

TEST_F(HttpServerTest, AResponseThePeerStopsReadingIsCutAfterTheIdleTimeoutAndAGrace) {
  Limits limits;
  limits.idle_timeout_ms = 100;
  StartServer(std::move(limits));
  const std::string big(32 << 20, 'x');
  handler_ = [&big](Request&&, std::shared_ptr<Responder> r) {
    r->Send({200, "text/plain", big, {}});
  };
  std::string got;
  bool eof = false;
  Run([&] {
    RawClient c(server_->port());
    c.Send("GET / HTTP/1.1\r\n\r\n");
    // The peer stalls (reads nothing for 2 s, 20 times the idle timeout): a reader that
    // stops holds no connection for ever. Then it finds the connection closed before the
    // whole body.
    std::this_thread::sleep_for(std::chrono::seconds(2));
    eof = c.ReadUntilEof(&got);
  });
  EXPECT_TRUE(eof);
  EXPECT_LT(got.size(), big.size());
}

TEST_F(HttpServerTest, SlowHeadIsCutOffAtTheHeaderDeadline) {
  Limits limits;
  limits.header_timeout_ms = 100;
  limits.idle_timeout_ms = 30'000;
  StartServer(std::move(limits));
  std::string got;
  bool eof = false;
  Run([&] {
    RawClient c(server_->port());
    c.Send("GET / HTTP/1.1\r\nHost: a\r\n");  // and never the blank line
    eof = c.ReadUntilEof(&got);
  });
  EXPECT_TRUE(eof);
  EXPECT_EQ(got, "");
  EXPECT_EQ(handled_, 0);
}

// ---- shutdown ----

TEST_F(HttpServerTest, CloseWithAConnectedIdleClientCompletes) {
  StartServer();
  bool eof = false;
  Run([&] {
    RawClient c(server_->port());
    c.Send("GET / HTTP/1.1\r\n\r\n");
    std::string got;
    ASSERT_TRUE(c.ReadOneResponse(&got));  // now connected and idle
    Post([this] { CloseServer(); });
    eof = c.ReadUntilEof(&got);
  });
  EXPECT_TRUE(eof);
  EXPECT_TRUE(server_closed_);
  EXPECT_EQ(server_->connections(), 0u);
  // TearDown checks uv_loop_close() == 0.
}

TEST_F(HttpServerTest, CloseLetsASentResponseFlushAndCallsNoMoreHandlers) {
  handler_ = [&](Request&&, std::shared_ptr<Responder> responder) {
    responder->Send({200, "text/plain", std::string(512 * 1024, 'z'), {}});
    CloseServer();
  };
  StartServer();
  std::string got;
  Run([&] {
    RawClient c(server_->port());
    c.Send("GET /1 HTTP/1.1\r\n\r\nGET /2 HTTP/1.1\r\n\r\n");
    EXPECT_TRUE(c.ReadUntilEof(&got));
  });
  EXPECT_EQ(handled_, 1);
  EXPECT_EQ(CountOf(got, "HTTP/1.1 200 OK"), 1u);
  size_t body = got.find("\r\n\r\n");
  ASSERT_NE(body, std::string::npos);
  EXPECT_EQ(got.size() - body - 4, 512u * 1024);
}

TEST_F(HttpServerTest, ClosePendingLongPollFiresOnClose) {
  std::shared_ptr<Responder> saved;
  int on_close_calls = 0;
  handler_ = [&](Request&&, std::shared_ptr<Responder> responder) {
    saved = responder;
    responder->OnClose([&] { ++on_close_calls; });
    Later(0, [this] { CloseServer(); });
  };
  StartServer();
  std::string got;
  bool eof = false;
  Run([&] {
    RawClient c(server_->port());
    c.Send("GET /v1/wait HTTP/1.1\r\n\r\n");
    eof = c.ReadUntilEof(&got);
  });
  EXPECT_TRUE(eof);
  EXPECT_EQ(got, "");
  EXPECT_EQ(on_close_calls, 1);
  EXPECT_FALSE(saved->alive());
}

TEST_F(HttpServerTest, ConnectionsOverTheLimitAreClosed) {
  Limits limits;
  limits.max_connections = 1;
  StartServer(std::move(limits));
  std::string first, second;
  bool second_eof = false;
  Run([&] {
    RawClient a(server_->port());
    a.Send("GET /a HTTP/1.1\r\n\r\n");
    ASSERT_TRUE(a.ReadOneResponse(&first));  // a holds the only slot
    RawClient b(server_->port());
    second_eof = b.ReadUntilEof(&second);
  });
  EXPECT_NE(first.find("200 OK"), std::string::npos);
  EXPECT_TRUE(second_eof);
  EXPECT_EQ(second, "");
}

// ---- limits against hostile clients ----

// A client without credentials must not make the server buffer its upload: the admit hook
// answers once the headers are in, and no byte of the 8 MiB body is ever sent.
TEST_F(HttpServerTest, AdmitRefusalIsAnsweredAtTheHeadersWithoutReadingTheBody) {
  Limits limits;
  limits.default_max_body = 16 << 20;
  limits.admit = [](const Request& head) -> std::optional<Response> {
    if (!head.Header("authorization").empty()) return std::nullopt;
    return Response{401, "application/json", R"({"error":"unauthenticated"})", {}};
  };
  StartServer(std::move(limits));
  std::string got;
  bool eof = false;
  size_t reserved_while_open = 1;
  Run([&] {
    RawClient c(server_->port());
    c.Send("POST /v1/jobfile HTTP/1.1\r\nContent-Length: 8388608\r\n\r\n");
    eof = c.ReadUntilEof(&got);
    Post([&] { reserved_while_open = server_->body_bytes_in_flight(); });
  });
  EXPECT_TRUE(eof);
  EXPECT_EQ(CountOf(got, "HTTP/1.1 401"), 1u) << got;
  EXPECT_NE(got.find("Connection: close"), std::string::npos);
  EXPECT_EQ(handled_, 0);
  EXPECT_EQ(reserved_while_open, 0u);
}

TEST_F(HttpServerTest, AdmittedRequestsReachTheHandler) {
  Limits limits;
  int admitted = 0;
  limits.admit = [&admitted](const Request& head) -> std::optional<Response> {
    ++admitted;
    EXPECT_EQ(head.path, "/ok");
    EXPECT_TRUE(head.body.empty());
    return std::nullopt;
  };
  StartServer(std::move(limits));
  CurlReply reply;
  std::string body = "payload";
  Run([&] {
    CurlHandle curl(curl_easy_init());
    FetchOptions opt;
    opt.post_body = &body;
    reply = Fetch(curl.get(), Url("/ok"), opt);
  });
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(admitted, 1);
  EXPECT_EQ(handled_, 1);
}

// The body deadline runs from the end of the head and a byte now and then does not extend it.
TEST_F(HttpServerTest, TricklingBodyIsCutOffAtTheBodyDeadline) {
  Limits limits;
  limits.body_timeout_ms = 300;
  limits.idle_timeout_ms = 30'000;
  StartServer(std::move(limits));
  bool closed = false;
  long closed_after_ms = 0;
  Run([&] {
    RawClient c(server_->port());
    Clock::time_point start = Clock::now();
    c.Send("POST / HTTP/1.1\r\nContent-Length: 1000\r\n\r\n");
    // One byte every 50 ms would take 50 s; the server must give up after about 300 ms.
    for (int i = 0; i < 100 && !closed; ++i) {
      c.Send("x");
      timeval tv{0, 50'000};
      fd_set fds;
      FD_ZERO(&fds);
      FD_SET(c.fd(), &fds);
      if (select(c.fd() + 1, &fds, nullptr, nullptr, &tv) > 0) {
        char b;
        closed = recv(c.fd(), &b, 1, 0) <= 0;
      }
    }
    closed_after_ms = MillisSince(start);
  });
  EXPECT_TRUE(closed);
  EXPECT_GE(closed_after_ms, 250);
  EXPECT_LT(closed_after_ms, 3'000);
  EXPECT_EQ(handled_, 0);
}

// One address cannot take every connection: its surplus is closed at once while another
// address is still served.
TEST_F(HttpServerTest, ConnectionsOverThePerClientLimitAreClosedOthersAreServed) {
  Limits limits;
  limits.max_connections_per_client = 2;
  StartServer(std::move(limits));
  std::string third, other;
  bool third_eof = false;
  HttpServer::ClientUse use_while_open;
  Run([&] {
    RawClient a(server_->port()), b(server_->port());
    std::string got;
    a.Send("GET /a HTTP/1.1\r\n\r\n");
    ASSERT_TRUE(a.ReadOneResponse(&got));
    b.Send("GET /b HTTP/1.1\r\n\r\n");
    ASSERT_TRUE(b.ReadOneResponse(&got));
    RawClient c(server_->port());
    third_eof = c.ReadUntilEof(&third);
    RawClient d(server_->port(), "127.0.0.2");
    d.Send("GET /d HTTP/1.1\r\n\r\n");
    ASSERT_TRUE(d.ReadOneResponse(&other));
    std::promise<void> seen;
    Post([&] {
      use_while_open = server_->client_use("127.0.0.1");
      seen.set_value();
    });
    seen.get_future().wait();
  });
  EXPECT_TRUE(third_eof);
  EXPECT_EQ(third, "");
  EXPECT_NE(other.find("200 OK"), std::string::npos);
  EXPECT_EQ(use_while_open.connections, 2u);
}

// Declared bodies count against their client until answered: a second upload from the same
// address is refused with 429 and Retry-After, one from another address is read.
TEST_F(HttpServerTest, BodiesInFlightOverThePerClientLimitAre429) {
  Limits limits;
  limits.max_body_bytes_in_flight_per_client = 1000;
  limits.max_body_bytes_in_flight = 1500;
  StartServer(std::move(limits));
  std::string second, other, global;
  HttpServer::ClientUse after;
  Run([&] {
    RawClient first(server_->port());
    first.Send("POST /1 HTTP/1.1\r\nContent-Length: 800\r\n\r\n" + std::string(100, 'a'));
    RawClient same(server_->port());
    same.Send("POST /2 HTTP/1.1\r\nContent-Length: 800\r\n\r\n");
    EXPECT_TRUE(same.ReadUntilEof(&second));
    RawClient far(server_->port(), "127.0.0.3");
    far.Send("POST /3 HTTP/1.1\r\nContent-Length: 600\r\n\r\n");
    RawClient over(server_->port(), "127.0.0.4");
    over.Send("POST /4 HTTP/1.1\r\nContent-Length: 200\r\n\r\n");
    EXPECT_TRUE(over.ReadUntilEof(&global));  // 800 + 600 + 200 > 1500 in all
    far.Send(std::string(600, 'c'));
    EXPECT_TRUE(far.ReadOneResponse(&other));
    first.Send(std::string(700, 'a'));
    std::string done;
    EXPECT_TRUE(first.ReadOneResponse(&done));
    std::promise<void> seen;
    Post([&] {
      after = server_->client_use("127.0.0.1");
      seen.set_value();
    });
    seen.get_future().wait();
  });
  EXPECT_EQ(CountOf(second, "HTTP/1.1 429"), 1u) << second;
  EXPECT_NE(second.find("Retry-After: 1"), std::string::npos);
  EXPECT_EQ(CountOf(global, "HTTP/1.1 503"), 1u) << global;
  EXPECT_NE(other.find("200 OK"), std::string::npos);
  EXPECT_EQ(after.body_bytes, 0u);  // released once answered
  EXPECT_EQ(handled_, 2);
}

// ---- Listen ----

TEST_F(HttpServerTest, ListenRejectsAHostName) {
  HttpServer server(&loop_, {}, [](Request&&, std::shared_ptr<Responder>) {});
  Status s = server.Listen("localhost", 0);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  bool closed = false;
  server.Close([&] { closed = true; });  // nothing was open: runs at once
  EXPECT_TRUE(closed);
}

TEST_F(HttpServerTest, ListensOnAnIpv6Literal) {
  server_ =
      std::make_unique<HttpServer>(&loop_, Limits{}, [](Request&&, std::shared_ptr<Responder> r) {
        r->Send({200, "text/plain", "v6", {}});
      });
  Status s = server_->Listen("::1", 0);
  if (!s.ok()) GTEST_SKIP() << "no IPv6 loopback here: " << s.ToString();
  CurlReply reply;
  Run([&] {
    CurlHandle curl(curl_easy_init());
    reply = Fetch(curl.get(), "http://[::1]:" + std::to_string(server_->port()) + "/");
  });
  EXPECT_EQ(reply.body, "v6");
}

}  // namespace
}  // namespace jobctl::http
