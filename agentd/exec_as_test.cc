// The exec helper against the real system: a root process that switches to a user must not
// let the job's environment reach its own dynamic loader. Needs root (to switch users) and
// the agentd binary (the helper is agentd itself).
#include "exec_as.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "process_spawn.h"
#include "spawn_spec.h"

namespace jobctl::agentd {
namespace {

constexpr const char* kUser = "jobctl-test";

std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

struct Ran {
  int status = -1;
  std::string out, err;
};

Ran RunAsTestUser(const Assignment& a) {
  Result<UserInfo> user = LookUpUser(kUser);
  EXPECT_TRUE(user.ok());
  SpawnSpec spec = BuildSpawnSpec(a, {AGENTD_PATH, "/", *user, true, "b7ad6b7169203331"});
  int out[2], err[2];
  EXPECT_EQ(pipe2(out, O_CLOEXEC), 0);
  EXPECT_EQ(pipe2(err, O_CLOEXEC), 0);
  // Above 2, as agentd's own pipes always are.
  int out_w = fcntl(out[1], F_DUPFD_CLOEXEC, 10), err_w = fcntl(err[1], F_DUPFD_CLOEXEC, 10);
  close(out[1]);
  close(err[1]);
  Result<pid_t> pid = SpawnDetached(spec, out_w, err_w);
  close(out_w);
  close(err_w);
  Ran r;
  if (!pid.ok()) {
    ADD_FAILURE() << pid.status().ToString();
    return r;
  }
  r.out = ReadAll(out[0]);
  r.err = ReadAll(err[0]);
  close(out[0]);
  close(err[0]);
  waitpid(*pid, &r.status, 0);
  return r;
}

class ExecAsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to switch to another user";
    if (getpwnam(kUser) == nullptr) {
      ASSERT_EQ(std::system("useradd --system --create-home --home-dir /var/tmp/jobctl-test-home "
                            "--shell /bin/sh jobctl-test"),
                0);
    }
    char tmpl[] = "/tmp/exec-as-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_only_ = tmpl;
    ASSERT_EQ(chmod(root_only_.c_str(), 0700), 0);
  }
  void TearDown() override {
    if (!root_only_.empty()) std::filesystem::remove_all(root_only_);
  }
  std::string root_only_;  // a directory only root may write to
};

TEST_F(ExecAsTest, TheJobsEnvironmentIsAppliedOnlyAfterTheSwitch) {
  Assignment a;
  a.key = {1, 0, 1};
  a.job = "j";
  a.run_as = kUser;
  a.command = {"/bin/sh", "-c", "echo \"$(id -u) $MARK $LD_DEBUG_OUTPUT\""};
  // What the review reproduced: with the environment applied before the switch, root's own
  // loader wrote its debug output into a directory only root can write to.
  a.env = {{"MARK", "seen"}, {"LD_DEBUG", "files"}, {"LD_DEBUG_OUTPUT", root_only_ + "/trace"}};
  Ran r = RunAsTestUser(a);
  ASSERT_TRUE(WIFEXITED(r.status)) << r.err;
  EXPECT_EQ(WEXITSTATUS(r.status), 0) << r.err;
  // The loader's own debug lines (the user cannot write them to the root-only file) come first.
  std::string want = std::to_string(getpwnam(kUser)->pw_uid) + " seen " + root_only_ + "/trace\n";
  EXPECT_TRUE(r.out.ends_with("\n" + want) || r.out == want) << r.out;
  EXPECT_TRUE(std::filesystem::is_empty(root_only_))
      << "a root process read the job's LD_DEBUG_OUTPUT: "
      << std::filesystem::directory_iterator(root_only_)->path();
}

TEST_F(ExecAsTest, TheProgramIsLookedUpInTheJobsPathAsTheUser) {
  std::string bin = root_only_ + "/bin";
  std::filesystem::create_directories(bin);
  ASSERT_EQ(chmod(root_only_.c_str(), 0755), 0);
  {
    FILE* f = std::fopen((bin + "/hello-from-path").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("#!/bin/sh\necho found\n", f);
    std::fclose(f);
  }
  ASSERT_EQ(chmod((bin + "/hello-from-path").c_str(), 0755), 0);
  Assignment a;
  a.key = {1, 0, 1};
  a.job = "j";
  a.run_as = kUser;
  a.command = {"hello-from-path"};
  a.env = {{"PATH", bin + ":/usr/bin:/bin"}};
  Ran r = RunAsTestUser(a);
  EXPECT_EQ(r.out, "found\n") << r.err;
}

}  // namespace
}  // namespace jobctl::agentd
