// CoordinatorLink against two coordinators on loopback (the coordinator's own HttpServer on
// the test's loop): one that takes requests and never answers, as a frozen (SIGSTOPped) or
// cut-off coordinator does, and one that answers.
#include "coordinator_link.h"

#include <gtest/gtest.h>
#include <uv.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "http/server.h"

namespace jobctl::agentd {
namespace {

using std::chrono::milliseconds;

constexpr char kClaim[] = "/v1/agent/claim";
constexpr char kHeartbeat[] = "/v1/agent/heartbeat";
constexpr milliseconds kClaimTimeout{60'000};
// Gives up on a test that does not finish: well before the claim's own timeout.
constexpr uint64_t kWatchdogMs = 15'000;

class CoordinatorLinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(0, uv_loop_init(&loop_));
    // Frozen: holds every request unanswered.
    frozen_ = std::make_unique<http::HttpServer>(
        &loop_, http::Limits{},
        [this](http::Request&& request, std::shared_ptr<http::Responder> r) {
          held_.push_back(std::move(r));
          if (on_frozen_request_) on_frozen_request_(request.target);
        });
    // Serving: answers each request at once with its target; while standby_, refuses it as a
    // standby coordinator does.
    serving_ = std::make_unique<http::HttpServer>(
        &loop_, http::Limits{},
        [this](http::Request&& request, std::shared_ptr<http::Responder> r) {
          if (standby_) {
            r->Send(
                {503, "application/json", R"({"error":"standby"})", {{"X-Jobctl-Standby", "1"}}});
            return;
          }
          served_.push_back(request.target);
          r->Send({200, "text/plain", request.target, {}});
        });
    ASSERT_TRUE(frozen_->Listen("127.0.0.1", 0).ok());
    ASSERT_TRUE(serving_->Listen("127.0.0.1", 0).ok());
    frozen_url_ = "http://127.0.0.1:" + std::to_string(frozen_->port());
    serving_url_ = "http://127.0.0.1:" + std::to_string(serving_->port());
    link_ = std::make_unique<CoordinatorLink>(
        &loop_, std::vector<std::string>{frozen_url_, serving_url_}, "token");
    uv_timer_init(&loop_, &watchdog_);
    watchdog_.data = this;
    uv_timer_start(
        &watchdog_,
        [](uv_timer_t* t) {
          ADD_FAILURE() << "the requests did not complete in " << kWatchdogMs << " ms";
          static_cast<CoordinatorLinkTest*>(t->data)->Shutdown();
        },
        kWatchdogMs, 0);
  }

  void TearDown() override {
    if (!shut_down_) Shutdown();
    uv_run(&loop_, UV_RUN_DEFAULT);
    EXPECT_EQ(0, uv_loop_close(&loop_));
  }

  // Closes the link (its requests' callbacks run), then the servers and the watchdog.
  void Shutdown() {
    if (shut_down_) return;
    shut_down_ = true;
    uv_timer_stop(&watchdog_);
    uv_close(reinterpret_cast<uv_handle_t*>(&watchdog_), nullptr);
    if (!link_) return;  // SetUp failed early
    link_->Close([this] {
      frozen_->Close(nullptr);
      serving_->Close(nullptr);
    });
  }

  int64_t ElapsedMs() const {
    return std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start_)
        .count();
  }

  uv_loop_t loop_;
  uv_timer_t watchdog_;
  bool shut_down_ = false;
  std::vector<std::shared_ptr<http::Responder>> held_;  // outlives the servers
  std::unique_ptr<http::HttpServer> frozen_;
  std::unique_ptr<http::HttpServer> serving_;
  std::unique_ptr<CoordinatorLink> link_;
  std::string frozen_url_;
  std::string serving_url_;
  std::function<void(const std::string& target)> on_frozen_request_;
  bool standby_ = false;
  std::vector<std::string> served_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// A claim long-poll is held by the frozen coordinator; a heartbeat times out there and fails
// over to the serving one. The claim then leaves the frozen coordinator at once and is
// answered by the serving one, long before its own 60 s timeout.
TEST_F(CoordinatorLinkTest, RequestInFlightMovesToTheCoordinatorFailedOverTo) {
  int claim_calls = 0, heartbeat_calls = 0;
  std::optional<Result<http::HttpResponse>> claim, heartbeat;
  int64_t heartbeat_ms = -1;
  auto maybe_done = [&] {
    if (claim_calls > 0 && heartbeat_calls > 0) Shutdown();
  };
  on_frozen_request_ = [&](const std::string& target) {
    if (target != kClaim) return;
    // The claim is held: now the heartbeat, with a short timeout like LeaseKeeper's.
    link_->Post(kHeartbeat, "{}", "application/json", milliseconds(300),
                [&](Result<http::HttpResponse> r) {
                  ++heartbeat_calls;
                  heartbeat_ms = ElapsedMs();
                  heartbeat = std::move(r);
                  maybe_done();
                });
  };
  link_->Post(kClaim, "{}", "application/json", kClaimTimeout, [&](Result<http::HttpResponse> r) {
    ++claim_calls;
    claim = std::move(r);
    maybe_done();
  });

  uv_run(&loop_, UV_RUN_DEFAULT);

  ASSERT_EQ(1, heartbeat_calls);
  ASSERT_TRUE(heartbeat->ok()) << heartbeat->status().message();
  EXPECT_EQ(200, (*heartbeat)->status);
  EXPECT_EQ(serving_url_, link_->current_url());
  ASSERT_EQ(1, claim_calls);
  ASSERT_TRUE(claim->ok()) << claim->status().message();
  EXPECT_EQ(200, (*claim)->status);
  EXPECT_EQ(kClaim, (*claim)->body);
  EXPECT_GE(heartbeat_ms, 300);  // the failover came first
  // Each reached the serving coordinator once.
  EXPECT_EQ((std::vector<std::string>{kHeartbeat, kClaim}), served_);
}

// The second coordinator is a standby when the first freezes, and takes over a moment later:
// the heartbeat that finds it serving moves the claim there, though the link already pointed
// at it.
TEST_F(CoordinatorLinkTest, RequestInFlightMovesWhenAStandbyTakesOver) {
  standby_ = true;
  int claim_calls = 0, heartbeat_calls = 0;
  std::optional<Result<http::HttpResponse>> claim;
  std::function<void(Result<http::HttpResponse>)> on_heartbeat = [&](Result<http::HttpResponse> r) {
    ++heartbeat_calls;
    ASSERT_TRUE(r.ok()) << r.status().message();
    if (heartbeat_calls == 1) {
      EXPECT_TRUE(http::IsStandby(*r));
      standby_ = false;  // it takes over
      link_->Post(kHeartbeat, "{}", "application/json", milliseconds(300), on_heartbeat);
      return;
    }
    EXPECT_EQ(200, r->status);
  };
  on_frozen_request_ = [&](const std::string& target) {
    if (target == kClaim)
      link_->Post(kHeartbeat, "{}", "application/json", milliseconds(300), on_heartbeat);
  };
  link_->Post(kClaim, "{}", "application/json", kClaimTimeout, [&](Result<http::HttpResponse> r) {
    ++claim_calls;
    claim = std::move(r);
    Shutdown();
  });

  uv_run(&loop_, UV_RUN_DEFAULT);

  EXPECT_EQ(2, heartbeat_calls);
  ASSERT_EQ(1, claim_calls);
  ASSERT_TRUE(claim->ok()) << claim->status().message();
  EXPECT_EQ(200, (*claim)->status);
  EXPECT_EQ((std::vector<std::string>{kHeartbeat, kClaim}), served_);
}

// Closing the link from the failover's callback, right after the claim was sent again: the
// claim's callback still runs exactly once (Unavailable), not once per transfer.
TEST_F(CoordinatorLinkTest, CloseRightAfterFailoverRunsEachCallbackOnce) {
  int claim_calls = 0, heartbeat_calls = 0;
  std::optional<Result<http::HttpResponse>> claim;
  on_frozen_request_ = [&](const std::string& target) {
    if (target != kClaim) return;
    link_->Post(kHeartbeat, "{}", "application/json", milliseconds(300),
                [&](Result<http::HttpResponse> r) {
                  ++heartbeat_calls;
                  EXPECT_TRUE(r.ok());
                  EXPECT_EQ(0, claim_calls);
                  Shutdown();
                });
  };
  link_->Post(kClaim, "{}", "application/json", kClaimTimeout, [&](Result<http::HttpResponse> r) {
    ++claim_calls;
    claim = std::move(r);
  });

  uv_run(&loop_, UV_RUN_DEFAULT);

  EXPECT_EQ(1, heartbeat_calls);
  ASSERT_EQ(1, claim_calls);
  EXPECT_FALSE(claim->ok());
}

TEST(RetryAfterTest, A429OrABusy503IsWaitedForUpToTheCapAndNothingElse) {
  auto answer = [](int status, std::map<std::string, std::string> headers) {
    return Result<http::HttpResponse>(http::HttpResponse{status, "", std::move(headers)});
  };
  EXPECT_EQ(RetryAfterMs(answer(429, {{"retry-after", "2"}})), 2'000);
  EXPECT_EQ(RetryAfterMs(answer(503, {{"retry-after", "1"}})), 1'000);
  EXPECT_EQ(RetryAfterMs(answer(429, {{"retry-after", "0"}})), 0);
  EXPECT_EQ(RetryAfterMs(answer(429, {{"retry-after", "3600"}})), kMaxRetryAfterMs);
  EXPECT_EQ(RetryAfterMs(answer(429, {{"retry-after", "999999999999"}})), 0);  // not a count
  // A standby's refusal sends the request on to the next coordinator at once.
  EXPECT_EQ(RetryAfterMs(answer(503, {{"retry-after", "1"}, {"x-jobctl-standby", "1"}})), 0);
  EXPECT_EQ(RetryAfterMs(answer(500, {{"retry-after", "1"}})), 0);
  EXPECT_EQ(RetryAfterMs(answer(200, {{"retry-after", "1"}})), 0);
  EXPECT_EQ(RetryAfterMs(answer(429, {})), 0);
  EXPECT_EQ(RetryAfterMs(answer(429, {{"retry-after", "Fri, 31 Dec 1999 23:59:59 GMT"}})), 0);
  EXPECT_EQ(RetryAfterMs(answer(429, {{"retry-after", "-1"}})), 0);
  EXPECT_EQ(RetryAfterMs(Result<http::HttpResponse>(Status::Unavailable("refused"))), 0);
}

}  // namespace
}  // namespace jobctl::agentd
