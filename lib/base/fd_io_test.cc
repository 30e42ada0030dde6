#include "fd_io.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace jobctl {
namespace {

TEST(FdIoTest, WhatIsWrittenIsReadToTheEndOrToTheLimit) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  std::string data(100'000, 'x');
  data[99'999] = 'y';
  // More than a pipe holds at once: written in parts by a reader on the other side.
  pid_t child = fork();
  if (child == 0) {
    close(p[0]);
    _exit(WriteToEnd(p[1], data) == 0 ? 0 : 1);
  }
  close(p[1]);
  std::string got = "a";
  EXPECT_EQ(ReadToEnd(p[0], &got, 1 << 20), 0);
  close(p[0]);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(got, "a" + data);

  ASSERT_EQ(pipe(p), 0);
  ASSERT_EQ(WriteToEnd(p[1], std::string(1000, 'z')), 0);
  close(p[1]);
  std::string capped;
  EXPECT_EQ(ReadToEnd(p[0], &capped, 10), 0);
  EXPECT_GT(capped.size(), 10u);  // past the limit: the caller sees it was over
  close(p[0]);
}

TEST(FdIoTest, AFailedReadOrWriteSaysItsErrno) {
  std::string out;
  EXPECT_EQ(ReadToEnd(-1, &out, 10), EBADF);
  EXPECT_EQ(WriteToEnd(-1, "x"), EBADF);
  int dir = open("/", O_RDONLY | O_DIRECTORY);
  ASSERT_GE(dir, 0);
  EXPECT_EQ(ReadToEnd(dir, &out, 10), EISDIR);
  close(dir);
}

}  // namespace
}  // namespace jobctl
