// The Claimer against the coordinator's own HttpServer on loopback, on the test's loop.
#include "claimer.h"

#include <gtest/gtest.h>
#include <uv.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/fake_random.h"
#include "http/server.h"

namespace jobctl::agentd {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

int64_t SinceMs(steady_clock::time_point t) {
  return std::chrono::duration_cast<milliseconds>(steady_clock::now() - t).count();
}

// A coordinator over its rate limit answers the first claim 429 with Retry-After: 1. The
// retry backoff alone would claim again at once (every draw is 0): the second claim comes no
// sooner than the second the coordinator asked for, and no later than the backoff's cap.
TEST(ClaimerTest, AClaimRefusedWithRetryAfterIsRepeatedNoSoonerThanItSays) {
  uv_loop_t loop;
  ASSERT_EQ(0, uv_loop_init(&loop));
  std::vector<int64_t> claims_ms;  // when each claim arrived, from the refusal
  steady_clock::time_point refused;
  std::vector<std::shared_ptr<http::Responder>> held;
  std::unique_ptr<CoordinatorLink> link;
  std::unique_ptr<Claimer> claimer;
  std::unique_ptr<http::HttpServer> server;
  server = std::make_unique<http::HttpServer>(
      &loop, http::Limits{}, [&](http::Request&& request, std::shared_ptr<http::Responder> r) {
        if (request.target != "/v1/agent/claim") return r->Send({404, "text/plain", "", {}});
        if (claims_ms.empty()) {
          claims_ms.push_back(0);
          refused = steady_clock::now();
          return r->Send({429,
                          "application/json",
                          R"({"error":"too_many_requests"})",
                          {{"Retry-After", "1"}}});
        }
        claims_ms.push_back(SinceMs(refused));
        held.push_back(std::move(r));  // the long poll stays open
        claimer->Close();
        link->Close([&] { server->Close(nullptr); });
      });
  ASSERT_TRUE(server->Listen("127.0.0.1", 0).ok());
  link = std::make_unique<CoordinatorLink>(
      &loop, std::vector<std::string>{"http://127.0.0.1:" + std::to_string(server->port())},
      "token");
  SystemClock clock;
  FakeRandom random;  // every backoff draw is 0 ms
  claimer = std::make_unique<Claimer>(
      &loop, link.get(), &clock, AgentIdentity{"a1", {}, 1, "test", {}},
      [](std::vector<Assignment>, int64_t) {}, nullptr, &random);
  uv_timer_t watchdog;
  uv_timer_init(&loop, &watchdog);
  watchdog.data = &loop;
  uv_timer_start(
      &watchdog, [](uv_timer_t* t) { uv_stop(static_cast<uv_loop_t*>(t->data)); }, 10'000, 0);
  uv_unref(reinterpret_cast<uv_handle_t*>(&watchdog));
  claimer->Set(1, false);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_close(reinterpret_cast<uv_handle_t*>(&watchdog), nullptr);
  held.clear();
  uv_run(&loop, UV_RUN_DEFAULT);
  ASSERT_EQ(claims_ms.size(), 2u) << "the claim was not repeated";
  EXPECT_GE(claims_ms[1], 1000) << "claimed again before the Retry-After";
  EXPECT_LT(claims_ms[1], 1000 + kRetryCapMs);
  EXPECT_GE(random.calls(), 1u);
  claimer.reset();
  link.reset();
  server.reset();
  uv_run(&loop, UV_RUN_DEFAULT);  // the handles they closed
  EXPECT_EQ(0, uv_loop_close(&loop));
}

}  // namespace
}  // namespace jobctl::agentd
