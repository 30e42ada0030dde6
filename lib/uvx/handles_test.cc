#include "uvx/handles.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <memory>

namespace jobctl::uvx {
namespace {

class HandlesTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(uv_loop_init(&loop_), 0); }
  void TearDown() override {
    // Every handle was destroyed: one more turn frees them, and the loop closes cleanly.
    uv_run(&loop_, UV_RUN_DEFAULT);
    EXPECT_EQ(uv_loop_close(&loop_), 0);
  }
  uv_loop_t loop_;
};

TEST_F(HandlesTest, ATimerRunsOnceAndAnEveryTimerUntilStopped) {
  Timer once(&loop_);
  Timer every(&loop_);
  int once_runs = 0, every_runs = 0;
  once.Once(1, [&] { ++once_runs; });
  every.Every(1, [&] {
    if (++every_runs == 3) every.Stop();
  });
  uv_run(&loop_, UV_RUN_DEFAULT);
  EXPECT_EQ(once_runs, 1);
  EXPECT_EQ(every_runs, 3);
  EXPECT_FALSE(once.active());
  EXPECT_FALSE(every.active());
}

// The owner may destroy its handle from inside the handle's own callback, and the callback
// never runs again.
TEST_F(HandlesTest, AHandleDestroyedInItsOwnCallbackNeverRunsAgain) {
  auto timer = std::make_unique<Timer>(&loop_);
  int runs = 0;
  timer->Every(1, [&] {
    ++runs;
    timer.reset();
  });
  uv_run(&loop_, UV_RUN_DEFAULT);
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(timer, nullptr);
}

// A callback may restart its own timer with a new callback.
TEST_F(HandlesTest, ACallbackMayReplaceItselfByRestarting) {
  Timer timer(&loop_);
  std::string seen;
  timer.Once(1, [&] {
    seen += "a";
    timer.Once(1, [&] { seen += "b"; });
  });
  uv_run(&loop_, UV_RUN_DEFAULT);
  EXPECT_EQ(seen, "ab");
}

TEST_F(HandlesTest, AnUnreferencedHandleDoesNotKeepTheLoopRunning) {
  Timer timer(&loop_);
  int runs = 0;
  timer.Every(60'000, [&] { ++runs; });
  timer.Unref();
  EXPECT_EQ(uv_run(&loop_, UV_RUN_DEFAULT), 0);
  EXPECT_EQ(runs, 0);
  EXPECT_TRUE(timer.active());
}

TEST_F(HandlesTest, IdleAndCheckRunEveryTurnWhileStarted) {
  Idle idle(&loop_);
  Check check(&loop_);
  int idles = 0, checks = 0;
  idle.Start([&] {
    if (++idles == 2) idle.Stop();
  });
  check.Start([&] { ++checks; });
  check.Unref();
  uv_run(&loop_, UV_RUN_DEFAULT);
  EXPECT_EQ(idles, 2);
  EXPECT_GE(checks, 2);
  check.Stop();
  EXPECT_FALSE(check.active());
}

TEST_F(HandlesTest, ASignalIsDeliveredToItsWatcher) {
  Signal signal(&loop_);
  int seen = 0;
  signal.Start(SIGUSR1, [&](int signum) {
    seen = signum;
    signal.Stop();
  });
  ASSERT_EQ(raise(SIGUSR1), 0);
  uv_run(&loop_, UV_RUN_DEFAULT);
  EXPECT_EQ(seen, SIGUSR1);
}

TEST_F(HandlesTest, APollSeesItsDescriptorReadable) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  {
    Poll poll(&loop_, fds[0]);
    ASSERT_TRUE(poll.ok());
    int events = 0;
    poll.Start(UV_READABLE, [&](int status, int ready) {
      EXPECT_EQ(status, 0);
      events = ready;
      poll.Stop();
    });
    ASSERT_EQ(write(fds[1], "x", 1), 1);
    uv_run(&loop_, UV_RUN_DEFAULT);
    EXPECT_TRUE(events & UV_READABLE);
  }
  uv_run(&loop_, UV_RUN_DEFAULT);
  close(fds[0]);
  close(fds[1]);
}

}  // namespace
}  // namespace jobctl::uvx
