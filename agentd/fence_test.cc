// The fence (fence.h): its commands, and the real `agentd --fence` process killing real process
// groups at their deadlines, after agentd's end closed too. Every wait is on a pidfd with a
// deadline, never a sleep.
#include "fence.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "base/clock.h"
#include "cgroup.h"
#include "process_spawn.h"
#include "test_process.h"

extern char** environ;

namespace jobctl::agentd {
namespace {

// CLOCK_BOOTTIME, as agentd's lease deadlines are measured.
int64_t BootMs() { return SystemClock().MonotonicMs(); }

TEST(FenceCommandTest, CommandsRoundTripAndAnythingElseIsRefused) {
  FenceCommand arm{FenceCommand::Kind::kArm, 4242, 123456789, {7, 2, 3}};
  EXPECT_EQ(FormatFenceCommand(arm), "arm 4242 123456789 7 2 3\n");
  EXPECT_EQ(ParseFenceCommand("arm 4242 123456789 7 2 3"), arm);
  FenceCommand disarm{FenceCommand::Kind::kDisarm, 4242, 0, {7, 2, 3}};
  EXPECT_EQ(FormatFenceCommand(disarm), "disarm 4242 7 2 3\n");
  EXPECT_EQ(ParseFenceCommand("disarm 4242 7 2 3"), disarm);
  for (const char* bad : {"",
                          "arm",
                          "disarm",
                          "disarm 1",
                          "disarm 0",
                          "disarm -5",
                          "disarm +5",
                          "disarm 2147483648",
                          "disarm 42 ",
                          " disarm 42 1 0 1",
                          "disarm  42 1 0 1",
                          "arm 42 1 1 0",
                          "arm 42 1 0 0 1",
                          "arm 42 1 1 0 0",
                          "arm 42 -1 1 0 1",
                          "arm 42 1 1 0 1 9",
                          "arm 42 1 1 0 1 ",
                          "kill 42",
                          "arm 42 x 1 0 1",
                          "arm 42 99999999999999999999 1 0 1",
                          "disarm 42",
                          "disarm 42 1 0 1\r",
                          "disarm 042 1 0 1",
                          "disarm 42 1 0 0",
                          "arm 42 1 1 00 1",
                          "arm 2 -0 1 5 1"}) {
    EXPECT_EQ(ParseFenceCommand(bad), std::nullopt) << "'" << bad << "'";
  }
  EXPECT_EQ(ParseFenceCommand("arm 42 " + std::string(300, '1') + " 1 0 1"), std::nullopt);
}

// A process in its own session and process group, as agentd starts a shard.
pid_t StartSleeper() {
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
  char sh[] = "/bin/sh", c[] = "-c", cmd[] = "sleep 30 & wait";
  char* argv[] = {sh, c, cmd, nullptr};
  pid_t pid = 0;
  EXPECT_EQ(posix_spawn(&pid, "/bin/sh", nullptr, &attr, argv, environ), 0);
  posix_spawnattr_destroy(&attr);
  return pid;
}

// Waits (on a pidfd, up to `ms`) for the child to end; its wait status, or -1.
int WaitEnd(pid_t pid, int ms) {
  Result<int> fd = OpenPidfd(pid);
  if (!fd.ok() || *fd < 0) return -1;
  struct pollfd p {
    *fd, POLLIN, 0
  };
  int n = poll(&p, 1, ms);
  close(*fd);
  if (n != 1) return -1;
  int status = 0;
  return waitpid(pid, &status, 0) == pid ? status : -1;
}

bool Alive(pid_t pid) {
  int status = 0;
  return waitpid(pid, &status, WNOHANG) == 0;
}

class FenceTest : public ::testing::Test {
 protected:
  void SetUp() override { uv_loop_init(&loop_); }
  void TearDown() override {
    if (fence_pid_ > 0) {
      kill(fence_pid_, SIGKILL);
      waitpid(fence_pid_, nullptr, 0);
    }
    for (pid_t p : started_) {
      kill(-p, SIGKILL);
      waitpid(p, nullptr, 0);
    }
    fence_.reset();
    uv_run(&loop_, UV_RUN_NOWAIT);
    uv_loop_close(&loop_);
  }
  pid_t Sleeper() {
    pid_t p = StartSleeper();
    started_.push_back(p);
    return p;
  }
  void Forget(pid_t p) { std::erase(started_, p); }
  // The shard ended (`status` from WaitEnd; -1: it did not, `why` says what that means) and by
  // SIGKILL, the fence's kill. A shard still running is left for TearDown to kill.
  void ExpectKilled(pid_t shard, int status, const char* why) {
    if (status == -1) {
      ADD_FAILURE() << why;
      return;
    }
    Forget(shard);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  }
  void StartFence() {
    ASSERT_TRUE(fence_->Start(AGENTD_PATH, "", "a").ok());
    fence_pid_ = fence_->pid();
    ASSERT_GT(fence_pid_, 0);
  }

  uv_loop_t loop_;
  std::unique_ptr<Fence> fence_ = std::make_unique<Fence>(&loop_);
  std::vector<pid_t> started_;
  pid_t fence_pid_ = 0;  // until reaped
};

TEST_F(FenceTest, AnArmedGroupIsKilledAtItsDeadlineAndADisarmedOneIsNot) {
  StartFence();
  pid_t kept = Sleeper(), fenced = Sleeper(), renewed = Sleeper();
  int64_t now = BootMs();
  fence_->Arm(kept, now + 200, {1, 0, 1});
  fence_->Disarm(kept, {1, 0, 1});
  // Armed again later: the later deadline holds.
  fence_->Arm(renewed, now + 200, {3, 0, 1});
  fence_->Arm(renewed, now + 60'000, {3, 0, 1});
  fence_->Arm(fenced, now + 400, {2, 0, 1});
  int status = WaitEnd(fenced, 10'000);
  ASSERT_NE(status, -1) << "the fence did not kill the armed group";
  Forget(fenced);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  int64_t at = BootMs();
  EXPECT_GE(at, now + 400);
  // The commands are read in order and the later deadline has passed: the disarmed group
  // and the one armed again would have gone first.
  EXPECT_TRUE(Alive(kept));
  EXPECT_TRUE(Alive(renewed));
}

TEST_F(FenceTest, DeadlinesHoldAfterAgentdsEndClosedAndTerminalSignalsDoNotStopTheFence) {
  StartFence();
  pid_t fence = fence_pid_;
  // A first kill: the fence is up (and ignores SIGTERM from then on).
  pid_t first = Sleeper();
  fence_->Arm(first, BootMs() + 100, {4, 0, 1});
  ASSERT_NE(WaitEnd(first, 10'000), -1);
  Forget(first);
  pid_t shard = Sleeper();
  fence_->Arm(shard, BootMs() + 500, {4, 1, 2});
  // In a session of its own: a signal to agentd's process group does not reach it.
  EXPECT_EQ(getsid(fence), fence);
  // agentd is gone (its end closed) and someone sends the fence SIGTERM, SIGINT and SIGHUP.
  fence_->Close();
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) kill(fence, sig);
  int status = WaitEnd(shard, 10'000);
  ExpectKilled(shard, status, "the shard outlived its deadline");
  // Nothing armed and nobody to listen to: the fence ends.
  int fence_status = WaitEnd(fence, 10'000);
  ASSERT_NE(fence_status, -1) << "the fence did not end";
  fence_pid_ = 0;
  EXPECT_TRUE(WIFEXITED(fence_status) && WEXITSTATUS(fence_status) == 0) << fence_status;
}

TEST_F(FenceTest, AStoppedFenceDoesNotBlockAgentdAndKillsOnceItRunsAgain) {
  StartFence();
  pid_t shard = Sleeper();
  kill(fence_->pid(), SIGSTOP);
  // Far more commands than the socket holds: none of them blocks.
  for (int i = 0; i < 20'000; ++i) fence_->Arm(shard, BootMs() + 3'600'000, {5, 0, 1});
  fence_->Arm(shard, BootMs() + 100, {5, 0, 1});
  kill(fence_->pid(), SIGCONT);
  // The backlog goes out as the loop finds the socket writable.
  int64_t until = BootMs() + 10'000;
  int status = -1;
  while (status == -1 && BootMs() < until) {
    uv_run(&loop_, UV_RUN_NOWAIT);
    status = WaitEnd(shard, 50);
  }
  ExpectKilled(shard, status, "the shard outlived its deadline");
}

TEST_F(FenceTest, ADisarmForAnEarlierAttemptLeavesTheGroupArmedForTheNewerOne) {
  StartFence();
  pid_t shard = Sleeper();
  // The same number armed for a newer attempt (the pid was reused) before the older attempt's
  // end was told: that disarm must not take the newer shard's deadline away.
  fence_->Arm(shard, BootMs() + 60'000, {6, 0, 1});
  fence_->Arm(shard, BootMs() + 300, {7, 0, 1});
  fence_->Disarm(shard, {6, 0, 1});
  int status = WaitEnd(shard, 10'000);
  ExpectKilled(shard, status, "the newer attempt's deadline was forgotten");
}

TEST_F(FenceTest, AKilledFenceIsReplacedArmedWithEveryDeadlineStillArmed) {
  StartFence();
  pid_t shard = Sleeper();
  fence_->Arm(shard, BootMs() + 60'000, {8, 0, 1});
  kill(fence_pid_, SIGKILL);
  ASSERT_NE(WaitEnd(fence_pid_, 10'000), -1);
  fence_pid_ = 0;
  // The next renewal finds the fence gone; a new one (within 5 s of the first) is armed with
  // the renewed deadline, and kills at it.
  fence_->Arm(shard, BootMs() + 200, {8, 0, 1});
  int64_t until = BootMs() + 20'000;
  int status = -1;
  while (status == -1 && BootMs() < until) {
    uv_run(&loop_, UV_RUN_NOWAIT);
    status = WaitEnd(shard, 50);
  }
  ExpectKilled(shard, status, "no new fence killed the shard");
  fence_pid_ = fence_->pid();  // the new one, for TearDown
}

// Where each shard has a cgroup of its own, the fence kills that cgroup: a descendant that
// left the shard's process group (setsid) dies with it.
TEST_F(FenceTest, TheFenceKillsTheShardsCgroupWithADescendantThatLeftTheGroup) {
  Result<CgroupTree> tree = CgroupTree::Open(/*move_self=*/false);
  if (!tree.ok()) GTEST_SKIP() << "no cgroup v2 to run shards in: " << tree.status().message();
  AttemptKey key{10, 0, 1};
  Result<int> dir_fd = tree->Create(key);
  ASSERT_TRUE(dir_fd.ok()) << dir_fd.status().ToString();
  std::string pidfile = ::testing::TempDir() + "/fenced-escape-" + std::to_string(getpid());
  std::remove(pidfile.c_str());
  int out = open("/dev/null", O_WRONLY | O_CLOEXEC), err = dup(out);
  ASSERT_GT(out, 2);
  ASSERT_GT(err, 2);
  SpawnSpec spec{
      {"/bin/sh", "-c", "setsid sh -c 'echo $$ > " + pidfile + "; exec sleep 60' & wait"},
      {"PATH=/usr/bin:/bin"},
      "/"};
  Result<pid_t> shard = SpawnDetached(spec, out, err, *dir_fd);
  close(out);
  close(err);
  close(*dir_fd);
  ASSERT_TRUE(shard.ok()) << shard.status().ToString();
  started_.push_back(*shard);
  // The shell has written the escaped pid once the file holds a number.
  pid_t escaped = 0;
  for (int64_t until = BootMs() + 10'000; escaped <= 0 && BootMs() < until;) {
    if (FILE* f = std::fopen(pidfile.c_str(), "r")) {
      if (std::fscanf(f, "%d", &escaped) != 1) escaped = 0;
      std::fclose(f);
    }
    if (escaped <= 0) WaitEnd(*shard, 20);
  }
  ASSERT_GT(escaped, 0);
  EXPECT_NE(getsid(escaped), *shard) << "the descendant did not leave the shard's session";
  ASSERT_TRUE(fence_->Start(AGENTD_PATH, "", "a", tree->dir()).ok());
  fence_pid_ = fence_->pid();
  fence_->Arm(*shard, BootMs() + 200, key);
  ExpectKilled(*shard, WaitEnd(*shard, 10'000), "the fence did not kill the shard");
  // The escaped sleep is not this test's child: it is gone once its pid is (or a zombie).
  bool gone = false;
  for (int64_t until = BootMs() + 10'000;
       !(gone = testing::ProcessGone(escaped)) && BootMs() < until;) {
    poll(nullptr, 0, 20);  // the next look
  }
  EXPECT_TRUE(gone) << "pid " << escaped << " outlived the fence's kill";
  if (!gone) kill(escaped, SIGKILL);
  for (int64_t until = BootMs() + 10'000; !tree->Remove(key) && BootMs() < until;) {
    poll(nullptr, 0, 20);  // the next look
  }
  EXPECT_TRUE(tree->Remove(key));
  EXPECT_EQ(rmdir(tree->dir().c_str()), 0) << std::strerror(errno);
  std::remove(pidfile.c_str());
}

}  // namespace
}  // namespace jobctl::agentd
