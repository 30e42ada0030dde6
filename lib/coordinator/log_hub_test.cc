#include "coordinator/log_hub.h"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "base/fake_clock.h"

namespace jobctl::coordinator {
namespace {

class LogHubTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(0, uv_loop_init(&loop_));
    ctx_.loop = &loop_;
    ctx_.clock = &clock_;
    hub_.Start();
  }
  void TearDown() override {
    hub_.Close();
    uv_run(&loop_, UV_RUN_DEFAULT);
    ASSERT_EQ(0, uv_loop_close(&loop_));
  }

  uv_loop_t loop_;
  FakeClock clock_{WallTime{}, 1'000};
  Context ctx_;
  LogHub hub_{&ctx_};
};

TEST_F(LogHubTest, NotifyWakesOnlyThatRunsWaiters) {
  std::vector<int> woke;
  hub_.Park(7, 60'000, [&] { woke.push_back(1); });
  hub_.Park(8, 60'000, [&] { woke.push_back(2); });
  hub_.Park(7, 60'000, [&] { woke.push_back(3); });
  hub_.Notify(7);
  EXPECT_EQ(woke, (std::vector<int>{1, 3}));
  EXPECT_EQ(hub_.waiters(), 1u);
  hub_.Close();  // wakes the last one while `woke` is alive
}

TEST_F(LogHubTest, ACancelledWaiterIsNeverWoken) {
  int woke = 0;
  LogHub::WaiterId id = hub_.Park(7, 60'000, [&] { ++woke; });
  hub_.Park(7, 60'000, [&] { woke += 10; });
  hub_.Cancel(id);
  hub_.Cancel(id);  // twice is fine
  hub_.Notify(7);
  EXPECT_EQ(woke, 10);
  EXPECT_EQ(hub_.waiters(), 0u);
}

TEST_F(LogHubTest, DeadlinesWakeInOrderFromTheTimer) {
  std::vector<int> woke;
  hub_.Park(1, 1'000, [&] { woke.push_back(1); });  // due now
  hub_.Park(2, 900, [&] { woke.push_back(2); });    // overdue
  hub_.Park(3, 90'000, [&] { woke.push_back(3); });
  // The timer is due at once and runs at the start of the turn; NOWAIT, because the timer it
  // re-arms for the third waiter would keep a UV_RUN_ONCE turn polling until it is due.
  uv_run(&loop_, UV_RUN_NOWAIT);
  EXPECT_EQ(woke, (std::vector<int>{2, 1}));
  EXPECT_EQ(hub_.waiters(), 1u);
  hub_.Close();
}

// Re-arming once scanned every waiter: 50,000 long-polls took O(n^2), seconds of loop time.
TEST_F(LogHubTest, FiftyThousandWaitersParkAndLeaveQuickly) {
  auto start = std::chrono::steady_clock::now();
  std::vector<LogHub::WaiterId> ids;
  for (int i = 0; i < 50'000; ++i) {
    ids.push_back(hub_.Park(i % 100, 2'000 + (50'000 - i), [] {}));
  }
  for (size_t i = 0; i < ids.size(); i += 2) hub_.Cancel(ids[i]);
  for (int run = 0; run < 100; ++run) hub_.Notify(run);
  EXPECT_EQ(hub_.waiters(), 0u);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

}  // namespace
}  // namespace jobctl::coordinator
