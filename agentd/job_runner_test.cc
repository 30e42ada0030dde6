// UvRunner against real processes on a real loop: output, exit, and the ways a shard is
// stopped. Each test ends with uv_loop_close, so a leaked handle fails it.
#include "job_runner.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

namespace jobctl::agentd {
namespace {

using std::chrono::milliseconds;

// Every test runs twice: exits seen through pidfds, and through SIGCHLD (the fallback for
// kernels without pidfds).
class UvRunnerTest : public ::testing::TestWithParam<UvRunner::ExitWatch> {
 protected:
  void SetUp() override { ASSERT_EQ(0, uv_loop_init(&loop_)); }
  void TearDown() override {
    bool closed = false;
    runner_->Close([&closed] { closed = true; });
    uv_run(&loop_, UV_RUN_DEFAULT);
    EXPECT_TRUE(closed);
    runner_.reset();
    ASSERT_EQ(0, uv_loop_close(&loop_));
  }

  static void WriteScript(const std::string& path, const std::string& text) {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(text.c_str(), f);
    std::fclose(f);
    chmod(path.c_str(), 0755);
  }
  static SpawnSpec Shell(const std::string& script) {
    return {{"/bin/sh", "-c", script}, {"PATH=/usr/bin:/bin"}, "/"};
  }
  // Starts, runs the loop until the child is over, and returns how it ended.
  ExitInfo RunToEnd(const SpawnSpec& spec, milliseconds grace,
                    std::function<void(Runner::ChildId)> after_start = nullptr) {
    bool done = false;
    ExitInfo exit;
    Runner::Callbacks cb;
    Runner::ChildId child = 0;
    cb.on_output = [this, &child, grace](ChunkStream s, std::string_view d) {
      (s == ChunkStream::kStdout ? out_ : err_).append(d);
      if (terminate_on_output_ && !terminated_) {
        terminated_ = true;
        runner_->Terminate(child, grace);
      }
    };
    cb.on_exit = [&](ExitInfo e) {
      done = true;
      exit = e;
    };
    Result<Runner::ChildId> id = runner_->Start(spec, grace, cb);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    if (!id.ok()) return exit;
    child = *id;
    if (after_start) after_start(*id);
    while (!done && uv_run(&loop_, UV_RUN_ONCE) != 0) {
    }
    EXPECT_TRUE(done);
    return exit;
  }

  uv_loop_t loop_;
  std::unique_ptr<UvRunner> runner_ = std::make_unique<UvRunner>(&loop_, GetParam());
  std::string out_, err_;
  bool terminate_on_output_ = false;  // Terminate once the child has said it is up
  bool terminated_ = false;
};

TEST_P(UvRunnerTest, CapturesBothStreamsAndTheExitStatus) {
  ExitInfo e = RunToEnd(Shell("echo out; echo err >&2; exit 3"), milliseconds(1000));
  EXPECT_EQ(e.exit_status, 3);
  EXPECT_EQ(e.term_signal, 0);
  EXPECT_EQ(out_, "out\n");
  EXPECT_EQ(err_, "err\n");
}

TEST_P(UvRunnerTest, StdoutIsARealPipeAndStdinIsDevNull) {
  RunToEnd(Shell("echo viafile > /dev/stdout; cat; test -p /dev/stdout && echo pipe"),
           milliseconds(1000));
  EXPECT_EQ(out_, "viafile\npipe\n");
}

TEST_P(UvRunnerTest, MissingProgramFailsToStart) {
  Result<Runner::ChildId> id =
      runner_->Start({{"/no/such/program"}, {}, "/"}, milliseconds(100), {});
  EXPECT_FALSE(id.ok());
}

TEST_P(UvRunnerTest, ProgramIsLookedUpInTheChildsPath) {
  std::string dir = ::testing::TempDir() + "agentd-path-test-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  WriteScript(dir + "/only-here", "#!/bin/sh\necho found\n");
  RunToEnd({{"only-here"}, {"PATH=/nonexistent:" + dir}, "/"}, milliseconds(1000));
  EXPECT_EQ(out_, "found\n");
  Result<Runner::ChildId> id =
      runner_->Start({{"only-here"}, {"PATH=/usr/bin:/bin"}, "/"}, milliseconds(100), {});
  EXPECT_FALSE(id.ok());
  std::filesystem::remove_all(dir);
}

TEST_P(UvRunnerTest, ScriptWithoutAShebangRunsUnderTheShell) {
  std::string dir = ::testing::TempDir() + "agentd-noshebang-test-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  WriteScript(dir + "/plain", "echo \"from sh: $1\"\n");
  RunToEnd({{dir + "/plain", "arg"}, {"PATH=/usr/bin:/bin"}, "/"}, milliseconds(1000));
  EXPECT_EQ(out_, "from sh: arg\n");
  std::filesystem::remove_all(dir);
}

TEST_P(UvRunnerTest, ChildGetsItsOwnSessionTheCwdDefaultSignalsAndNoOtherDescriptors) {
  // A descriptor agentd holds without close-on-exec must not reach the job.
  int leaky = dup(2);
  ASSERT_GT(leaky, 2);
  signal(SIGUSR1, SIG_IGN);
  RunToEnd(Shell("ls /proc/self/fd | sort -n | tr '\\n' ' '; echo; "
                 "test \"$(ps -o sid= -p $$)\" -eq $$ && echo own-session; pwd; "
                 "grep SigIgn /proc/self/status"),
           milliseconds(1000));
  signal(SIGUSR1, SIG_DFL);
  close(leaky);
  // The shell's own descriptors only: stdin, stdout, stderr (and the one ls opens).
  EXPECT_EQ(out_.substr(0, out_.find('\n')), "0 1 2 3 ");
  EXPECT_NE(out_.find("own-session\n/\n"), std::string::npos) << out_;
  // Nothing of agentd's is ignored (SIGUSR1 here). glibc's posix_spawn leaves its two
  // internal signals, 32 and 33, ignored: they are reserved to the C library anyway.
  size_t at = out_.find("SigIgn:\t");
  ASSERT_NE(at, std::string::npos) << out_;
  uint64_t ignored = std::stoull(out_.substr(at + 8, 16), nullptr, 16);
  EXPECT_EQ(ignored & ~((uint64_t{1} << 31) | (uint64_t{1} << 32)), 0u) << out_;
}

TEST_P(UvRunnerTest, TerminateKillsAGroupThatIgnoresSigterm) {
  auto start = std::chrono::steady_clock::now();
  terminate_on_output_ = true;
  ExitInfo e = RunToEnd(Shell("trap '' TERM; sleep 30 & echo up; wait"), milliseconds(300));
  EXPECT_EQ(e.term_signal, SIGKILL);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST_P(UvRunnerTest, GrandchildHoldingThePipesDoesNotKeepTheShardAlive) {
  auto start = std::chrono::steady_clock::now();
  // The grandchild leaves the process group, so no signal reaches it; only closing the
  // pipes ends the shard.
  ExitInfo e = RunToEnd(Shell("setsid sleep 3 & echo parent done"), milliseconds(200));
  EXPECT_EQ(e.exit_status, 0);
  EXPECT_EQ(out_, "parent done\n");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2500));
}

// What a shard used, from wait4: the largest resident set of the process or of a child it
// waited for, and their CPU time. A process starts in its parent's address space (posix_spawn
// shares it until the exec), so its peak is at least this test's own: dd's buffer is made
// 64 MiB larger than that, and read into, so its peak can only come from dd.
TEST_P(UvRunnerTest, ReportsThePeakMemoryAndCpuTimeOfTheProcessAndTheChildrenItWaitedFor) {
  ::rusage self{};
  ASSERT_EQ(getrusage(RUSAGE_SELF, &self), 0);
  const int64_t floor = static_cast<int64_t>(self.ru_maxrss) * 1024;
  ExitInfo idle = RunToEnd(Shell("exit 0"), milliseconds(1000));
  ASSERT_TRUE(idle.peak_rss_bytes.has_value());
  ASSERT_TRUE(idle.cpu_ms.has_value());
  EXPECT_GT(*idle.peak_rss_bytes, 0);
  EXPECT_LT(*idle.peak_rss_bytes, floor + (int64_t{16} << 20));
  const int64_t buffer_mib = (floor >> 20) + 64;
  auto start = std::chrono::steady_clock::now();
  ExitInfo busy = RunToEnd(Shell("dd if=/dev/zero of=/dev/null bs=" + std::to_string(buffer_mib) +
                                 "M count=1 2>/dev/null && "
                                 "dd if=/dev/zero of=/dev/null bs=1M count=4000 2>/dev/null"),
                           milliseconds(1000));
  int64_t wall_ms =
      std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(busy.exit_status, 0);
  ASSERT_TRUE(busy.peak_rss_bytes.has_value());
  EXPECT_GE(*busy.peak_rss_bytes, buffer_mib << 20);
  EXPECT_LT(*busy.peak_rss_bytes, (buffer_mib + 64) << 20);
  ASSERT_TRUE(busy.cpu_ms.has_value());
  EXPECT_GE(*busy.cpu_ms, 20);  // 4 GB read from /dev/zero
  EXPECT_LE(*busy.cpu_ms, wall_ms + 20);
}

INSTANTIATE_TEST_SUITE_P(ExitWatches, UvRunnerTest,
                         ::testing::Values(UvRunner::ExitWatch::kPidfd,
                                           UvRunner::ExitWatch::kSignal),
                         [](const ::testing::TestParamInfo<UvRunner::ExitWatch>& p) {
                           return p.param == UvRunner::ExitWatch::kPidfd ? "Pidfd" : "Sigchld";
                         });

}  // namespace
}  // namespace jobctl::agentd
