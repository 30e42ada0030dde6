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
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>

#include "cgroup.h"
#include "process_spawn.h"
#include "test_process.h"
#include "uvx/handles.h"

namespace jobctl::agentd {
namespace {

using std::chrono::milliseconds;

struct Mode {
  UvRunner::ExitWatch watch;
  bool cgroup;  // each child in a cgroup of its own (clone3), as agentd does where it can
  // As on kernels without clone3's CLONE_INTO_CGROUP (the child moves itself into its
  // cgroup) and without cgroup.kill (the cgroup is frozen and each process killed).
  bool older_kernel = false;
};

// Every test runs three times: exits seen through pidfds, through SIGCHLD (the fallback for
// kernels without pidfds), and with each child in a cgroup of its own. The cgroup runs need
// a writable cgroup v2 hierarchy (root), and are skipped with the reason without one.
class UvRunnerTest : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override {
    ASSERT_EQ(0, uv_loop_init(&loop_));
    if (GetParam().cgroup) {
      Result<CgroupTree> tree = CgroupTree::Open(/*move_self=*/false);
      if (!tree.ok()) GTEST_SKIP() << "no cgroup v2 to run shards in: " << tree.status().message();
      tree_ = std::move(*tree);
      runner_->UseCgroups(&*tree_);
    }
    UseCgroupJoinByWriteForTesting(GetParam().older_kernel);
    UseKillWithoutCgroupKillForTesting(GetParam().older_kernel);
  }
  void TearDown() override {
    // The cgroups of what the tests left running are removed once it is dead.
    if (tree_) RunUntil([this] { return runner_->cgroups_to_remove() == 0; }, 5000);
    UseCgroupJoinByWriteForTesting(false);
    UseKillWithoutCgroupKillForTesting(false);
    bool closed = false;
    runner_->Close([&closed] { closed = true; });
    uv_run(&loop_, UV_RUN_DEFAULT);
    EXPECT_TRUE(closed);
    runner_.reset();
    ASSERT_EQ(0, uv_loop_close(&loop_));
    if (tree_) {
      // Every run's cgroup was removed: only the tree itself is left.
      EXPECT_EQ(rmdir(tree_->dir().c_str()), 0) << tree_->dir() << ": " << std::strerror(errno);
    }
  }
  bool cgroup() const { return GetParam().cgroup; }
  // Runs the loop until `done` or `ms` have passed.
  void RunUntil(const std::function<bool()>& done, int ms) {
    auto end = std::chrono::steady_clock::now() + milliseconds(ms);
    uvx::Timer tick(&loop_);
    tick.Every(10, [] {});
    while (!done() && std::chrono::steady_clock::now() < end) uv_run(&loop_, UV_RUN_ONCE);
    tick.Stop();
  }
  static bool Gone(pid_t pid) { return testing::ProcessGone(pid); }
  static pid_t ReadPid(const std::string& path) {
    FILE* f = std::fopen(path.c_str(), "r");
    if (f == nullptr) return 0;
    int pid = 0;
    if (std::fscanf(f, "%d", &pid) != 1) pid = 0;
    std::fclose(f);
    return pid;
  }
  static SpawnSpec InCgroup(SpawnSpec spec, AttemptKey key) {
    spec.cgroup = key;
    return spec;
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
    Result<Runner::ChildId> id =
        runner_->Start(cgroup() ? InCgroup(spec, {++next_run_, 0, 1}) : spec, grace, cb);
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
  std::optional<CgroupTree> tree_;
  std::unique_ptr<UvRunner> runner_ = std::make_unique<UvRunner>(&loop_, GetParam().watch);
  std::string out_, err_;
  bool terminate_on_output_ = false;  // Terminate once the child has said it is up
  bool terminated_ = false;
  RunId next_run_ = 0;
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

// A limit is never silently dropped: without cgroups, or without the limit's controller,
// the shard does not start, and the error says why.
TEST_P(UvRunnerTest, ASpecWithLimitsIsRefusedWhereTheyCannotBeEnforced) {
  SpawnSpec spec = Shell("echo ran");
  spec.limits = {int64_t{64} << 20, 50, 10, 100};
  Runner::Callbacks cb;
  cb.on_output = [](ChunkStream, std::string_view) {};
  cb.on_exit = [](ExitInfo) { ADD_FAILURE() << "a refused shard ran"; };
  if (!cgroup()) {
    runner_->NoCgroups("no cgroup v2 hierarchy is mounted");
    Result<Runner::ChildId> id = runner_->Start(spec, milliseconds(100), cb);
    ASSERT_FALSE(id.ok());
    EXPECT_EQ(id.status().message(),
              "cannot start /bin/sh: the job sets resource limits, and this agent runs shards "
              "without cgroup v2 (no cgroup v2 hierarchy is mounted; see agentd(8), CGROUPS)");
    return;
  }
  struct One {
    const char* key;
    const char* controller;
    ResourceLimits limits;
  };
  int refused = 0;
  for (const One& one :
       {One{"memory_max", "memory", {.memory_max_bytes = int64_t{64} << 20}},
        One{"cpu_max", "cpu", {.cpu_max_percent = 50}}, One{"pids_max", "pids", {.pids_max = 10}},
        One{"io_weight", "io", {.io_weight = 100}}}) {
    if (tree_->controllers().count(one.controller)) continue;
    SpawnSpec limited = InCgroup(Shell("echo ran"), {++next_run_, 0, 1});
    limited.limits = one.limits;
    Result<Runner::ChildId> id = runner_->Start(limited, milliseconds(100), cb);
    ASSERT_FALSE(id.ok()) << one.key;
    EXPECT_NE(id.status().message().find(std::string(one.key) + " needs the cgroup v2 " +
                                         one.controller + " controller, which is not enabled"),
              std::string::npos)
        << id.status().message();
    // Nothing is left of the attempt's cgroup.
    struct stat st {};
    EXPECT_NE(stat(tree_->RunDir({next_run_, 0, 1}).c_str(), &st), 0);
    ++refused;
  }
  std::cerr << refused << " of 4 limits refused: their controllers are not enabled here\n";
}

// What only a cgroup gives (skipped with the reason without a writable cgroup v2); then the
// limits themselves, where the machine delegates their controllers (a cgroup v2 host, as
// under systemd with Delegate=yes), skipped with the reason elsewhere.
class UvRunnerCgroupTest : public UvRunnerTest {
 protected:
  void Need(const char* controller) {
    if (!tree_->controllers().count(controller)) {
      GTEST_SKIP() << "the cgroup v2 " << controller << " controller is not enabled for runs in "
                   << tree_->dir() << " (it is bound to cgroup v1, or the parent has processes)";
    }
  }
};

// A descendant that left the shard's process group (setsid) is out of reach of a signal to
// the group: only the run's cgroup holds it. Terminate kills it too.
TEST_P(UvRunnerCgroupTest, TerminateKillsADescendantThatLeftTheProcessGroup) {
  std::string pidfile = ::testing::TempDir() + "/escaped-" + std::to_string(getpid());
  std::remove(pidfile.c_str());
  terminate_on_output_ = true;
  ExitInfo e = RunToEnd(Shell("setsid sleep 60 </dev/null >/dev/null 2>&1 & echo $! > " + pidfile +
                              "; trap '' TERM; echo up; sleep 60"),
                        milliseconds(300));
  EXPECT_EQ(e.term_signal, SIGKILL);
  pid_t escaped = ReadPid(pidfile);
  ASSERT_GT(escaped, 0);
  RunUntil([&] { return Gone(escaped); }, 5000);
  EXPECT_TRUE(Gone(escaped)) << "pid " << escaped << " outlived Terminate";
  RunUntil([&] { return runner_->cgroups_to_remove() == 0; }, 5000);
  EXPECT_EQ(runner_->cgroups_to_remove(), 0u);
  std::remove(pidfile.c_str());
}

// When the shard's process has ended, what it left running in its cgroup is killed and the
// cgroup removed: nothing of one run goes on beside the next.
TEST_P(UvRunnerCgroupTest, WhatAShardLeftRunningEndsWithItAndItsCgroupIsRemoved) {
  std::string pidfile = ::testing::TempDir() + "/left-" + std::to_string(getpid());
  std::remove(pidfile.c_str());
  ExitInfo e = RunToEnd(
      Shell("setsid sleep 60 </dev/null >/dev/null 2>&1 & echo $! > " + pidfile + "; echo done"),
      milliseconds(1000));
  EXPECT_EQ(e.exit_status, 0);
  pid_t left = ReadPid(pidfile);
  ASSERT_GT(left, 0);
  RunUntil([&] { return Gone(left) && runner_->cgroups_to_remove() == 0; }, 5000);
  EXPECT_TRUE(Gone(left)) << "pid " << left << " outlived its shard";
  EXPECT_EQ(runner_->cgroups_to_remove(), 0u);
  struct stat st {};
  EXPECT_NE(stat(tree_->RunDir({next_run_, 0, 1}).c_str(), &st), 0) << "the run's cgroup is left";
}

// The CPU time of a run counts every process in its cgroup, also one nobody waited for
// (wait4's figure cannot see it).
TEST_P(UvRunnerCgroupTest, CpuTimeCountsADescendantNobodyWaitedFor) {
  // dd writes to /dev/null on its stdout; its stderr (the pipe) keeps the shard open until
  // it ends.
  ExitInfo e = RunToEnd(Shell("dd if=/dev/zero of=/dev/null bs=1M count=6000 & exit 0"),
                        milliseconds(20000));
  EXPECT_EQ(e.exit_status, 0);
  ASSERT_TRUE(e.cpu_ms.has_value());
  EXPECT_GE(*e.cpu_ms, 50) << "6 GB read from /dev/zero by an orphaned dd";
}

TEST_P(UvRunnerCgroupTest, AShardOverItsMemoryMaxIsKilledAndSaysOutOfMemory) {
  Need("memory");
  if (IsSkipped()) return;
  SpawnSpec spec = Shell("dd if=/dev/zero of=/dev/null bs=256M count=1");
  spec.limits.memory_max_bytes = int64_t{32} << 20;
  ExitInfo e = RunToEnd(spec, milliseconds(1000));
  EXPECT_TRUE(e.out_of_memory);
  EXPECT_NE(e.exit_status, 0);
}

TEST_P(UvRunnerCgroupTest, PidsMaxContainsAForkBomb) {
  Need("pids");
  if (IsSkipped()) return;
  SpawnSpec spec = Shell("for i in $(seq 60); do sleep 30 & done; echo started; wait");
  spec.limits.pids_max = 20;
  terminate_on_output_ = true;
  RunToEnd(spec, milliseconds(200));
  // The shell could not start 60 sleeps: forks failed once 20 processes were in the cgroup.
  EXPECT_NE(err_.find("fork"), std::string::npos) << err_;
}

TEST_P(UvRunnerCgroupTest, CpuMaxReachesTheCgroup) {
  Need("cpu");
  if (IsSkipped()) return;
  // The shard prints its own cgroup's cpu.max (RunToEnd gives it the next run number).
  SpawnSpec spec = Shell("cat " + tree_->RunDir({next_run_ + 1, 0, 1}) + "/cpu.max");
  spec.limits.cpu_max_percent = 150;
  RunToEnd(spec, milliseconds(1000));
  EXPECT_EQ(out_, "150000 100000\n");
}

INSTANTIATE_TEST_SUITE_P(InCgroups, UvRunnerCgroupTest,
                         ::testing::Values(Mode{UvRunner::ExitWatch::kPidfd, true},
                                           Mode{UvRunner::ExitWatch::kPidfd, true, true}),
                         [](const ::testing::TestParamInfo<Mode>& p) {
                           return p.param.older_kernel ? "CgroupOnAnOlderKernel" : "Cgroup";
                         });

INSTANTIATE_TEST_SUITE_P(ExitWatches, UvRunnerTest,
                         ::testing::Values(Mode{UvRunner::ExitWatch::kPidfd, false},
                                           Mode{UvRunner::ExitWatch::kSignal, false},
                                           Mode{UvRunner::ExitWatch::kPidfd, true},
                                           Mode{UvRunner::ExitWatch::kPidfd, true, true}),
                         [](const ::testing::TestParamInfo<Mode>& p) -> std::string {
                           if (p.param.older_kernel) return "CgroupOnAnOlderKernel";
                           if (p.param.cgroup) return "Cgroup";
                           return p.param.watch == UvRunner::ExitWatch::kPidfd ? "Pidfd"
                                                                               : "Sigchld";
                         });

}  // namespace
}  // namespace jobctl::agentd
