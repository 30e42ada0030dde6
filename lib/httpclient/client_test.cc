// Tests for BlockingClient and MultiClient against a real loopback HTTP server.
//
// TestServer below is a deliberately tiny HTTP/1.1 server on POSIX sockets (one thread accepting,
// one per connection, keep-alive), so these tests do not depend on lib/http. Replies can be held
// until the test releases them, which stands in for a long poll without any sleep.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "httpclient/blocking_client.h"
#include "httpclient/multi_client.h"

namespace jobctl::http {
namespace {

using namespace std::chrono_literals;

::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" lacks \"" << part << "\"";
}

// ---------------------------------------------------------------------------------------------
// TestServer

struct SeenRequest {
  std::string method;
  std::string path;
  std::string body;
  std::map<std::string, std::string> headers;  // lower-case names
};

enum class ReplyAction { kRespond, kHold, kCloseWithoutReply };

struct Reply {
  int status = 200;
  std::string body = "ok";
  ReplyAction action = ReplyAction::kRespond;  // kHold: respond once ReleaseHeld() is called
  bool close_after = false;  // close the connection after replying, without "Connection: close"
};

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

class TestServer {
 public:
  using Handler = std::function<Reply(const SeenRequest&)>;
  // Runs on a server thread after each request has been read, before the reply.
  using Observer = std::function<void(const SeenRequest&)>;

  explicit TestServer(Handler handler, Observer observer = nullptr)
      : handler_(std::move(handler)), observer_(std::move(observer)) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        listen(listen_fd_, 128) != 0 ||
        getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "cannot listen on loopback";
    }
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }

  ~TestServer() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      for (int fd : open_fds_) shutdown(fd, SHUT_RDWR);
    }
    held_cv_.notify_all();
    shutdown(listen_fd_, SHUT_RDWR);  // wakes accept()
    acceptor_.join();
    for (std::thread& t : connection_threads_) t.join();  // no new ones once acceptor is done
    close(listen_fd_);
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int connections() const { return connections_.load(); }
  std::vector<SeenRequest> requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }
  void ReleaseHeld() {
    {
      std::lock_guard lock(mu_);
      released_ = true;
    }
    held_cv_.notify_all();
  }

 private:
  void AcceptLoop() {
    for (;;) {
      int fd = accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      std::lock_guard lock(mu_);
      if (stopping_) {
        close(fd);
        return;
      }
      ++connections_;
      open_fds_.push_back(fd);
      connection_threads_.emplace_back([this, fd] { Serve(fd); });
    }
  }

  void Serve(int fd) {
    std::string buffer;
    while (std::optional<SeenRequest> request = ReadRequest(fd, buffer)) {
      {
        std::lock_guard lock(mu_);
        requests_.push_back(*request);
      }
      if (observer_) observer_(*request);
      Reply reply = handler_(*request);
      if (reply.action == ReplyAction::kCloseWithoutReply || !WaitIfHeld(reply)) break;
      std::string out = "HTTP/1.1 " + std::to_string(reply.status) +
                        " X\r\nContent-Length: " + std::to_string(reply.body.size()) +
                        "\r\nContent-Type: application/json\r\nX-Served-By: test\r\n\r\n" +
                        reply.body;
      bool sent =
          send(fd, out.data(), out.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(out.size());
      if (!sent || reply.close_after) break;
    }
    std::lock_guard lock(mu_);
    std::erase(open_fds_, fd);
    close(fd);
  }

  // False when the server stops first. The bound only keeps a broken test from hanging.
  bool WaitIfHeld(const Reply& reply) {
    if (reply.action != ReplyAction::kHold) return true;
    std::unique_lock lock(mu_);
    held_cv_.wait_for(lock, 30s, [this] { return released_ || stopping_; });
    return !stopping_;
  }

  static bool Fill(int fd, std::string& buffer) {
    char chunk[16384];
    ssize_t n = recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<size_t>(n));
    return true;
  }

  // Reads one request (headers, then a Content-Length body) from fd; nullopt at EOF.
  static std::optional<SeenRequest> ReadRequest(int fd, std::string& buffer) {
    size_t end;
    while ((end = buffer.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill(fd, buffer)) return std::nullopt;
    }
    SeenRequest request;
    std::string head = buffer.substr(0, end);
    size_t line_end = head.find("\r\n");
    std::string request_line = head.substr(0, line_end);
    size_t sp1 = request_line.find(' ');
    size_t sp2 = request_line.find(' ', sp1 + 1);
    request.method = request_line.substr(0, sp1);
    request.path = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
    for (size_t pos = line_end; pos != std::string::npos && pos < head.size();) {
      size_t next = head.find("\r\n", pos + 2);
      std::string line = head.substr(pos + 2, next == std::string::npos ? next : next - pos - 2);
      size_t colon = line.find(':');
      if (colon != std::string::npos) {
        size_t value_start = line.find_first_not_of(' ', colon + 1);
        request.headers[Lower(line.substr(0, colon))] =
            value_start == std::string::npos ? "" : line.substr(value_start);
      }
      pos = next;
    }
    size_t length = 0;
    if (auto it = request.headers.find("content-length"); it != request.headers.end())
      length = std::stoul(it->second);
    buffer.erase(0, end + 4);
    while (buffer.size() < length) {
      if (!Fill(fd, buffer)) return std::nullopt;
    }
    request.body = buffer.substr(0, length);
    buffer.erase(0, length);
    return request;
  }

  Handler handler_;
  Observer observer_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<int> connections_{0};
  std::thread acceptor_;
  mutable std::mutex mu_;
  std::condition_variable held_cv_;
  bool released_ = false;                        // guarded by mu_
  bool stopping_ = false;                        // guarded by mu_
  std::vector<int> open_fds_;                    // guarded by mu_
  std::vector<std::thread> connection_threads_;  // guarded by mu_; joined after acceptor_
  std::vector<SeenRequest> requests_;            // guarded by mu_
};

Reply Echo(const SeenRequest& request) { return {200, "echo:" + request.body}; }

// A loopback port that refuses connections: bound, never listening, held for the whole test so
// nothing else can take it.
class RefusingPort {
 public:
  RefusingPort() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    bind(fd_, reinterpret_cast<sockaddr*>(&addr), len);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~RefusingPort() { close(fd_); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_;
  int port_ = 0;
};

RequestOptions Post(std::string body) {
  RequestOptions options;
  options.method = "POST";
  options.body = std::move(body);
  return options;
}

// ---------------------------------------------------------------------------------------------
// BlockingClient

TEST(BlockingClientTest, GetSendsBearerTokenAndReturnsResponse) {
  TestServer server([](const SeenRequest&) { return Reply{200, R"({"jobs":[]})"}; });
  BlockingClient client(server.url(), "s3cret");

  Result<HttpResponse> response = client.Request("/v1/jobs", RequestOptions{});

  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(200, response->status);
  EXPECT_EQ(R"({"jobs":[]})", response->body);
  EXPECT_EQ("test", response->headers["x-served-by"]);
  EXPECT_EQ("application/json", response->headers["content-type"]);
  std::vector<SeenRequest> seen = server.requests();
  ASSERT_EQ(1u, seen.size());
  EXPECT_EQ("GET", seen[0].method);
  EXPECT_EQ("/v1/jobs", seen[0].path);
  EXPECT_EQ("Bearer s3cret", seen[0].headers["authorization"]);
}

TEST(BlockingClientTest, PostSendsBodyContentTypeAndExtraHeaders) {
  TestServer server(Echo);
  BlockingClient client(server.url() + "/", "tok");
  RequestOptions options = Post(R"({"job":"backup"})");
  options.headers = {{"X-Seq", "7"}};

  Result<HttpResponse> response = client.Request("/v1/runs", options);

  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(R"(echo:{"job":"backup"})", response->body);
  SeenRequest seen = server.requests().at(0);
  EXPECT_EQ("POST", seen.method);
  EXPECT_EQ("/v1/runs", seen.path);
  EXPECT_EQ("application/json", seen.headers["content-type"]);
  EXPECT_EQ("7", seen.headers["x-seq"]);
  EXPECT_EQ("Bearer tok", seen.headers["authorization"]);
}

TEST(BlockingClientTest, NoTokenSendsNoAuthorizationHeader) {
  TestServer server(Echo);
  BlockingClient client(server.url(), "");
  ASSERT_TRUE(client.Request("/", RequestOptions{}).ok());
  EXPECT_EQ(0u, server.requests().at(0).headers.count("authorization"));
}

TEST(BlockingClientTest, LargeBodyIsSentWithoutExpectContinue) {
  TestServer server(Echo);
  BlockingClient client(server.url(), "");
  // curl 7.88 adds "Expect: 100-continue" above 1 MiB (older releases above 1 KiB).
  std::string big(2 * 1024 * 1024, 'x');

  Result<HttpResponse> response = client.Request("/big", Post(big));

  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ("echo:" + big, response->body);
  SeenRequest seen = server.requests().at(0);
  EXPECT_EQ(0u, seen.headers.count("expect"));
  EXPECT_EQ(std::to_string(big.size()), seen.headers["content-length"]);
}

TEST(BlockingClientTest, DeleteWithoutBodyUsesMethod) {
  TestServer server(Echo);
  BlockingClient client(server.url(), "");
  RequestOptions options;
  options.method = "DELETE";
  ASSERT_TRUE(client.Request("/v1/jobs/a", options).ok());
  SeenRequest seen = server.requests().at(0);
  EXPECT_EQ("DELETE", seen.method);
  EXPECT_EQ(0u, seen.headers.count("content-type"));
}

TEST(BlockingClientTest, HttpErrorStatusIsSuccessfulResult) {
  TestServer server([](const SeenRequest&) { return Reply{404, R"({"error":"no job"})"}; });
  BlockingClient client(server.url(), "");
  Result<HttpResponse> response = client.Request("/v1/jobs/x", RequestOptions{});
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(404, response->status);
  EXPECT_EQ(R"({"error":"no job"})", response->body);
}

TEST(BlockingClientTest, ReusesConnectionAcrossRequests) {
  TestServer server(Echo);
  BlockingClient client(server.url(), "");
  ASSERT_TRUE(client.Request("/a", RequestOptions{}).ok());
  ASSERT_TRUE(client.Request("/b", Post("x")).ok());
  ASSERT_TRUE(client.Request("/c", RequestOptions{}).ok());
  EXPECT_EQ(3u, server.requests().size());
  EXPECT_EQ(1, server.connections());
}

TEST(BlockingClientTest, KeptConnectionClosedByServerIsReplacedTransparently) {
  TestServer server([](const SeenRequest& r) {
    return Reply{.status = 200, .body = r.path, .close_after = true};
  });
  BlockingClient client(server.url(), "");

  Result<HttpResponse> first = client.Request("/a", RequestOptions{});
  Result<HttpResponse> second = client.Request("/b", Post("x"));

  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ("/b", second->body);
  EXPECT_EQ(2, server.connections());
}

TEST(BlockingClientTest, RefusedConnectionIsUnavailableNamingUrl) {
  RefusingPort port;
  BlockingClient client(port.url(), "");

  Result<HttpResponse> response = client.Request("/v1/jobs", RequestOptions{});

  ASSERT_FALSE(response.ok());
  EXPECT_EQ(Status::Code::kUnavailable, response.status().code());
  EXPECT_TRUE(Contains(response.status().message(), "cannot reach " + port.url() + "/v1/jobs"));
  EXPECT_TRUE(Contains(response.status().message(), "Connection refused"));
}

TEST(BlockingClientTest, TimeoutIsUnavailable) {
  TestServer server([](const SeenRequest&) { return Reply{.action = ReplyAction::kHold}; });
  BlockingClient client(server.url(), "");
  RequestOptions options;
  options.timeout = 200ms;

  Result<HttpResponse> response = client.Request("/v1/poll", options);

  ASSERT_FALSE(response.ok());
  EXPECT_EQ(Status::Code::kUnavailable, response.status().code());
  EXPECT_TRUE(Contains(response.status().message(), server.url() + "/v1/poll"));
  EXPECT_TRUE(Contains(response.status().message(), "timed out"));
}

TEST(BlockingClientTest, ConnectionClosedWithoutReplyIsUnavailable) {
  TestServer server(
      [](const SeenRequest&) { return Reply{.action = ReplyAction::kCloseWithoutReply}; });
  BlockingClient client(server.url(), "");
  Result<HttpResponse> response = client.Request("/x", RequestOptions{});
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(Status::Code::kUnavailable, response.status().code());
  EXPECT_TRUE(Contains(response.status().message(), "GET " + server.url() + "/x"));
}

// ---------------------------------------------------------------------------------------------
// MultiClient

// Runs a function on the loop thread once a server thread has called Notify() `times` times:
// uv_async_send is libuv's one thread-safe entry point. The handle closes itself then; a test
// that may end before that calls Close() from its last callback so the loop can finish.
class LoopNotifier {
 public:
  LoopNotifier(uv_loop_t* loop, int times, std::function<void()> on_notified)
      : remaining_(times), on_notified_(std::move(on_notified)) {
    uv_async_init(loop, &async_,
                  [](uv_async_t* async) { static_cast<LoopNotifier*>(async->data)->OnAsync(); });
    async_.data = this;
  }
  // From any thread, at most `times` times.
  void Notify() {
    ++pending_;
    uv_async_send(&async_);
  }
  // Loop thread.
  void Close() {
    if (closed_) return;
    closed_ = true;
    uv_close(reinterpret_cast<uv_handle_t*>(&async_), nullptr);
  }

 private:
  void OnAsync() {
    // Several sends may coalesce into one callback.
    remaining_ -= pending_.exchange(0);
    if (remaining_ > 0 || closed_) return;
    Close();
    on_notified_();
  }

  uv_async_t async_;
  std::atomic<int> pending_{0};
  int remaining_;
  bool closed_ = false;
  std::function<void()> on_notified_;
};

class MultiClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(0, uv_loop_init(&loop_));
    client_ = std::make_unique<MultiClient>(&loop_);
  }

  void TearDown() override {
    if (client_ != nullptr) {
      bool closed = false;
      client_->Close([&] { closed = true; });
      Run();
      EXPECT_TRUE(closed);
      client_.reset();
    }
    EXPECT_EQ(0, uv_loop_close(&loop_));
  }

  // Returns when nothing on the loop is active, which for the client means nothing in flight.
  void Run() { uv_run(&loop_, UV_RUN_DEFAULT); }

  RequestOptions Options() {
    RequestOptions options;
    options.timeout = 20s;  // only so that a broken test ends
    return options;
  }

  uv_loop_t loop_;
  std::unique_ptr<MultiClient> client_;
};

TEST_F(MultiClientTest, GetReturnsResponseWithTokenSent) {
  TestServer server(Echo);
  std::optional<Result<HttpResponse>> result;
  client_->Start(server.url() + "/v1/heartbeat", "agent-token", Options(),
                 [&](Result<HttpResponse> r) { result = std::move(r); });
  EXPECT_EQ(1u, client_->in_flight());

  Run();

  ASSERT_TRUE(result.has_value());
  ASSERT_TRUE(result->ok()) << result->status().ToString();
  EXPECT_EQ(200, (*result)->status);
  EXPECT_EQ("test", (*result)->headers["x-served-by"]);
  EXPECT_EQ("Bearer agent-token", server.requests().at(0).headers["authorization"]);
  EXPECT_EQ(0u, client_->in_flight());
}

TEST_F(MultiClientTest, FiftyConcurrentPostsAllCompleteWithTheirBodies) {
  TestServer server(Echo);
  constexpr int kCount = 50;
  std::vector<std::optional<Result<HttpResponse>>> results(kCount);
  for (int i = 0; i < kCount; ++i) {
    RequestOptions options = Options();
    options.method = "POST";
    options.body = "body-" + std::to_string(i);
    client_->Start(server.url() + "/v1/report", "", options,
                   [&results, i](Result<HttpResponse> r) { results[i] = std::move(r); });
  }
  EXPECT_EQ(static_cast<size_t>(kCount), client_->in_flight());

  Run();

  for (int i = 0; i < kCount; ++i) {
    ASSERT_TRUE(results[i].has_value()) << i;
    ASSERT_TRUE(results[i]->ok()) << results[i]->status().ToString();
    EXPECT_EQ("echo:body-" + std::to_string(i), (*results[i])->body);
  }
  EXPECT_EQ(static_cast<size_t>(kCount), server.requests().size());
}

TEST_F(MultiClientTest, CallbackNeverRunsInsideStart) {
  RefusingPort port;
  bool inside_start = false;
  bool called_inside_start = false;
  std::optional<Result<HttpResponse>> result;
  inside_start = true;
  client_->Start(port.url() + "/v1/heartbeat", "", Options(), [&](Result<HttpResponse> r) {
    called_inside_start = inside_start;
    result = std::move(r);
  });
  inside_start = false;

  Run();

  EXPECT_FALSE(called_inside_start);
  ASSERT_TRUE(result.has_value());
  ASSERT_FALSE(result->ok());
  EXPECT_EQ(Status::Code::kUnavailable, result->status().code());
  EXPECT_TRUE(Contains(result->status().message(), "cannot reach " + port.url()));
}

TEST_F(MultiClientTest, TimeoutIsUnavailable) {
  TestServer server([](const SeenRequest&) { return Reply{.action = ReplyAction::kHold}; });
  RequestOptions options = Options();
  options.timeout = 200ms;
  std::optional<Result<HttpResponse>> result;
  client_->Start(server.url() + "/v1/poll", "", options,
                 [&](Result<HttpResponse> r) { result = std::move(r); });

  Run();

  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(Status::Code::kUnavailable, result->status().code());
  EXPECT_TRUE(Contains(result->status().message(), "timed out"));
}

TEST_F(MultiClientTest, LongPollDoesNotDelayLaterRequest) {
  std::vector<std::string> finished;
  TestServer* server = nullptr;
  // The heartbeat starts only once the server holds the poll, so the poll's connection is busy.
  LoopNotifier poll_arrived(&loop_, 1, [&] {
    client_->Start(server->url() + "/v1/heartbeat", "", Options(), [&](Result<HttpResponse> r) {
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      finished.push_back("heartbeat");
      server->ReleaseHeld();
    });
  });
  TestServer held_poll_server(
      [](const SeenRequest& r) {
        return r.path == "/v1/poll" ? Reply{200, "work", ReplyAction::kHold} : Reply{};
      },
      [&](const SeenRequest& r) {
        if (r.path == "/v1/poll") poll_arrived.Notify();
      });
  server = &held_poll_server;
  client_->Start(server->url() + "/v1/poll", "", Options(), [&](Result<HttpResponse> r) {
    poll_arrived.Close();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ("work", r->body);
    finished.push_back("poll");
  });

  Run();

  EXPECT_EQ((std::vector<std::string>{"heartbeat", "poll"}), finished);
  EXPECT_EQ(2, server->connections());
}

TEST_F(MultiClientTest, CallbackMayStartNextRequestOnTheSameConnection) {
  TestServer server(Echo);
  int done = 0;
  std::function<void(int)> start = [&](int i) {
    RequestOptions options = Options();
    options.method = "POST";
    options.body = std::to_string(i);
    client_->Start(server.url() + "/v1/report", "", options, [&, i](Result<HttpResponse> r) {
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ("echo:" + std::to_string(i), r->body);
      ++done;
      if (i < 4) start(i + 1);
    });
  };
  start(0);

  Run();

  EXPECT_EQ(5, done);
  EXPECT_EQ(1, server.connections());
}

TEST_F(MultiClientTest, CancelRunsCallbackOnceWithUnavailableLater) {
  uint64_t id = 0;
  int calls = 0;
  std::optional<Result<HttpResponse>> result;
  LoopNotifier arrived(&loop_, 1, [&] {
    EXPECT_TRUE(client_->Cancel(id));
    EXPECT_EQ(0, calls) << "callback ran inside Cancel";
    EXPECT_EQ(0u, client_->in_flight());
  });
  TestServer server([](const SeenRequest&) { return Reply{.action = ReplyAction::kHold}; },
                    [&](const SeenRequest&) { arrived.Notify(); });
  id = client_->Start(server.url() + "/v1/poll", "", Options(), [&](Result<HttpResponse> r) {
    arrived.Close();
    ++calls;
    result = std::move(r);
  });

  Run();
  EXPECT_FALSE(client_->Cancel(id));  // already canceled: ignored
  Run();

  EXPECT_EQ(1, calls);
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(Status::Code::kUnavailable, result->status().code());
  EXPECT_TRUE(Contains(result->status().message(), "canceled: GET " + server.url() + "/v1/poll"));
}

TEST_F(MultiClientTest, CancelAfterFinishIsIgnored) {
  TestServer server(Echo);
  int calls = 0;
  uint64_t id = client_->Start(server.url(), "", Options(), [&](Result<HttpResponse> r) {
    EXPECT_TRUE(r.ok());
    ++calls;
  });
  Run();
  EXPECT_FALSE(client_->Cancel(id));
  Run();
  EXPECT_EQ(1, calls);
}

TEST_F(MultiClientTest, CloseAbortsRequestsInFlightThenLoopCloses) {
  constexpr int kHeld = 3;
  std::vector<std::string> events;
  LoopNotifier all_arrived(&loop_, kHeld, [&] {
    client_->Close([&] { events.push_back("closed"); });
    EXPECT_TRUE(events.empty()) << "callbacks ran inside Close";
  });
  TestServer server([](const SeenRequest&) { return Reply{.action = ReplyAction::kHold}; },
                    [&](const SeenRequest&) { all_arrived.Notify(); });
  for (int i = 0; i < kHeld; ++i) {
    client_->Start(server.url() + "/v1/poll", "", Options(), [&](Result<HttpResponse> r) {
      all_arrived.Close();  // in case this is an early failure, so that the loop can end
      EXPECT_EQ(Status::Code::kUnavailable, r.status().code());
      EXPECT_TRUE(Contains(r.status().message(), "client closed"));
      events.push_back("aborted");
    });
  }

  Run();

  EXPECT_EQ((std::vector<std::string>{"aborted", "aborted", "aborted", "closed"}), events);
  bool called = false;
  EXPECT_EQ(0u, client_->Start(server.url(), "", Options(),
                               [&](Result<HttpResponse>) { called = true; }));
  Run();
  EXPECT_FALSE(called);
  client_.reset();  // TearDown then checks uv_loop_close(&loop_) == 0
}

TEST_F(MultiClientTest, CallbackMayCloseClientWhileAnotherRequestIsInFlight) {
  std::vector<std::string> events;
  TestServer* server = nullptr;
  LoopNotifier poll_arrived(&loop_, 1, [&] {
    client_->Start(server->url() + "/v1/heartbeat", "", Options(), [&](Result<HttpResponse> r) {
      EXPECT_TRUE(r.ok());
      events.push_back("heartbeat");
      client_->Close([&] { events.push_back("closed"); });
    });
  });
  TestServer held_poll_server(
      [](const SeenRequest& r) {
        return r.path == "/v1/poll" ? Reply{.action = ReplyAction::kHold} : Reply{};
      },
      [&](const SeenRequest& r) {
        if (r.path == "/v1/poll") poll_arrived.Notify();
      });
  server = &held_poll_server;
  client_->Start(server->url() + "/v1/poll", "", Options(), [&](Result<HttpResponse> r) {
    poll_arrived.Close();
    EXPECT_EQ(Status::Code::kUnavailable, r.status().code());
    events.push_back("poll aborted");
  });

  Run();

  EXPECT_EQ((std::vector<std::string>{"heartbeat", "poll aborted", "closed"}), events);
  client_.reset();
}

TEST_F(MultiClientTest, IdleClientKeepsNoHandleActive) {
  TestServer server(Echo);
  uv_timer_t probe;
  uv_timer_init(&loop_, &probe);
  int active_when_idle = -1;
  probe.data = &active_when_idle;
  client_->Start(server.url(), "", Options(), [&](Result<HttpResponse> r) {
    EXPECT_TRUE(r.ok());
    // Count on the next loop iteration, once curl is done with the finished transfer. A one-shot
    // timer is no longer active inside its own callback.
    uv_timer_start(
        &probe,
        [](uv_timer_t* timer) {
          int active = 0;
          uv_walk(
              timer->loop,
              [](uv_handle_t* handle, void* count) {
                if (uv_is_active(handle)) ++*static_cast<int*>(count);
              },
              &active);
          *static_cast<int*>(timer->data) = active;
          uv_close(reinterpret_cast<uv_handle_t*>(timer), nullptr);
        },
        0, 0);
  });

  Run();

  EXPECT_EQ(0, active_when_idle);
}
}  // namespace
}  // namespace jobctl::http
