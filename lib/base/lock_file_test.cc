#include "base/lock_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace jobctl {
namespace {

class LockFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/jobctl-lock-test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/serve.lock";
  }
  void TearDown() override {
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }
  std::string dir_;
  std::string path_;
};

TEST_F(LockFileTest, HolderWritesItsPidAndTheFileIsPrivate) {
  Result<LockFile> lock = LockFile::Acquire(path_);
  ASSERT_TRUE(lock.ok()) << lock.status().ToString();
  EXPECT_EQ(LockFile::ReadHolder(path_), ::getpid());
  struct stat st {};
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(LockFileTest, SecondClaimIsRefusedUntilTheFirstIsReleased) {
  std::optional<Result<LockFile>> first(LockFile::Acquire(path_));
  ASSERT_TRUE(first->ok());
  Result<LockFile> second = LockFile::Acquire(path_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Status::Code::kConflict);
  EXPECT_NE(second.status().message().find(path_), std::string::npos);
  first.reset();
  EXPECT_TRUE(LockFile::Acquire(path_).ok());
}

TEST_F(LockFileTest, AMovedLockIsStillHeld) {
  Result<LockFile> first = LockFile::Acquire(path_);
  ASSERT_TRUE(first.ok());
  LockFile moved = std::move(*first);
  EXPECT_FALSE(LockFile::Acquire(path_).ok());
}

TEST_F(LockFileTest, AStalePidFromAnEarlierHolderIsReplaced) {
  FILE* f = std::fopen(path_.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("99999999999\n", f);
  std::fclose(f);
  Result<LockFile> lock = LockFile::Acquire(path_);
  ASSERT_TRUE(lock.ok());
  EXPECT_EQ(LockFile::ReadHolder(path_), ::getpid());
}

TEST_F(LockFileTest, ReadHolderOfAMissingOrEmptyFileIsUnknown) {
  EXPECT_EQ(LockFile::ReadHolder(path_), std::nullopt);
  FILE* f = std::fopen(path_.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  EXPECT_EQ(LockFile::ReadHolder(path_), std::nullopt);
}

TEST_F(LockFileTest, TheLockOfAKilledProcessGoesAwayWithIt) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Result<LockFile> held = LockFile::Acquire(path_);
    char c = held.ok() ? 'y' : 'n';
    if (::write(ready[1], &c, 1) != 1) ::_exit(1);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  ASSERT_EQ(c, 'y');
  Result<LockFile> refused = LockFile::Acquire(path_);
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(LockFile::ReadHolder(path_), child);
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(LockFile::Acquire(path_).ok());
}

}  // namespace
}  // namespace jobctl
