// A flow step's $JOB_OUTPUT file on the host: created new and private to the attempt's user,
// read once and removed, refused when it is not what agentd created.
#include "step_output.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace jobctl::agentd {
namespace {

UserInfo Me() { return *CurrentUser(); }

// A scratch directory, removed at the end.
struct Scratch {
  Scratch() {
    char tmpl[] = "/tmp/step-output-XXXXXX";
    if (mkdtemp(tmpl) != nullptr) dir = tmpl;
  }
  ~Scratch() { std::filesystem::remove_all(dir); }
  std::string path() const { return dir; }
  std::string Write(const std::string& name, const std::string& data) const {
    std::ofstream(dir + "/" + name, std::ios::binary) << data;
    return dir + "/" + name;
  }
  std::string dir;
};

TEST(StepOutputFileTest, AFileIsNewPrivateAndReadOnceThenGone) {
  Scratch tmp;
  std::string dir = tmp.path() + "/outputs";
  ASSERT_TRUE(PrepareOutputDir(dir).ok());
  struct stat st {};
  ASSERT_EQ(stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0711u);
  Result<std::string> path = CreateStepOutput(dir, {12, 1, 2}, "0123456789abcdef", Me(), false);
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  EXPECT_EQ(*path, dir + "/r12-s1-a2-0123456789abcdef");
  ASSERT_EQ(stat(path->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_size, 0);
  // The same attempt's file is never made twice.
  EXPECT_FALSE(CreateStepOutput(dir, {12, 1, 2}, "0123456789abcdef", Me(), false).ok());
  std::ofstream(*path) << "# rows\nROWS=1200\n";
  Result<StepOutputs> out = CollectStepOutput(*path);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, (StepOutputs{{"ROWS", "1200"}}));
  EXPECT_FALSE(std::filesystem::exists(*path));
}

TEST(StepOutputFileTest, WhatDoesNotReadIsRefusedNamingJobOutputAndStillRemoved) {
  Scratch tmp;
  std::string dir = tmp.path() + "/outputs";
  ASSERT_TRUE(PrepareOutputDir(dir).ok());
  std::string bad = *CreateStepOutput(dir, {1, 0, 1}, "aaaaaaaaaaaaaaaa", Me(), false);
  std::ofstream(bad) << "ok=1\nnot a line\n";
  Result<StepOutputs> out = CollectStepOutput(bad);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(), "JOB_OUTPUT: line 2: expected KEY=value, got \"not a line\"");
  EXPECT_FALSE(std::filesystem::exists(bad));

  std::string big = *CreateStepOutput(dir, {1, 0, 2}, "bbbbbbbbbbbbbbbb", Me(), false);
  std::ofstream(big) << "A=" << std::string(kMaxStepOutputBytes * 4, 'x');
  out = CollectStepOutput(big);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Status::Code::kResourceExhausted);
  EXPECT_FALSE(std::filesystem::exists(big));

  // A link put in place of the file is not followed.
  std::string secret = tmp.Write("secret", "PASSWORD=x\n");
  std::string link = dir + "/r1-s0-a3-cccccccccccccccc";
  ASSERT_EQ(symlink(secret.c_str(), link.c_str()), 0);
  out = CollectStepOutput(link);
  EXPECT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("JOB_OUTPUT"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(link));
  EXPECT_TRUE(std::filesystem::exists(secret));
}

TEST(StepOutputFileTest, AnOutputDirIsEmptiedOfWhatAnEarlierAgentLeft) {
  Scratch tmp;
  std::string dir = tmp.path() + "/outputs";
  ASSERT_TRUE(PrepareOutputDir(dir).ok());
  std::string left = *CreateStepOutput(dir, {5, 0, 1}, "dddddddddddddddd", Me(), false);
  ASSERT_EQ(chmod(dir.c_str(), 0755), 0);
  ASSERT_TRUE(PrepareOutputDir(dir).ok());
  EXPECT_FALSE(std::filesystem::exists(left));
  struct stat st {};
  ASSERT_EQ(stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0711u);
  // Not a directory, or a link to one: refused.
  std::string file = tmp.Write("plain", "");
  EXPECT_FALSE(PrepareOutputDir(file).ok());
  std::string link = tmp.path() + "/link";
  ASSERT_EQ(symlink(dir.c_str(), link.c_str()), 0);
  EXPECT_FALSE(PrepareOutputDir(link).ok());
  // What agentd did not create there is left alone, and does not stop it.
  std::string other = dir + "/notes.txt";
  std::ofstream(other) << "x";
  ASSERT_EQ(mkdir((dir + "/sub").c_str(), 0700), 0);
  std::string mine = *CreateStepOutput(dir, {6, 0, 1}, "eeeeeeeeeeeeeeee", Me(), false);
  ASSERT_TRUE(PrepareOutputDir(dir).ok());
  EXPECT_TRUE(std::filesystem::exists(other));
  EXPECT_TRUE(std::filesystem::exists(dir + "/sub"));
  EXPECT_FALSE(std::filesystem::exists(mine));
}

TEST(StepOutputFileTest, AFifoOrBytesThatAreNotUtf8AreRefused) {
  Scratch tmp;
  std::string dir = tmp.path() + "/outputs";
  ASSERT_TRUE(PrepareOutputDir(dir).ok());
  std::string fifo = dir + "/r7-s0-a1-ffffffffffffffff";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  Result<StepOutputs> out = CollectStepOutput(fifo);  // returns at once: nothing writes to it
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(), "JOB_OUTPUT: not a regular file");
  EXPECT_FALSE(std::filesystem::exists(fifo));
  std::string latin1 = *CreateStepOutput(dir, {7, 0, 2}, "ffffffffffffffff", Me(), false);
  std::ofstream(latin1) << "CITY=M\xfcnchen\n";
  out = CollectStepOutput(latin1);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(), "JOB_OUTPUT: line 1: is not UTF-8");
}

// An output directory whose parent another user may write (where it could be swapped for a
// link) is refused; one whose path others cannot search is usable, but not reachable by them.
TEST(StepOutputFileTest, AParentOthersMayWriteIsRefusedAndReachabilityIsKnown) {
  Scratch tmp;
  std::string open = tmp.path() + "/open";
  ASSERT_EQ(mkdir(open.c_str(), 0777), 0);
  ASSERT_EQ(chmod(open.c_str(), 0777), 0);  // whatever the umask
  Status refused = PrepareOutputDir(open + "/outputs");
  EXPECT_EQ(refused.code(), Status::Code::kPermissionDenied) << refused.ToString();
  EXPECT_NE(refused.message().find("may be written by other users"), std::string::npos);

  std::string closed = tmp.path() + "/closed";
  ASSERT_EQ(mkdir(closed.c_str(), 0700), 0);
  ASSERT_EQ(chmod(tmp.path().c_str(), 0711), 0);
  ASSERT_TRUE(PrepareOutputDir(closed + "/outputs").ok());
  EXPECT_FALSE(ReachableByOthers(closed + "/outputs"));
  ASSERT_EQ(chmod(closed.c_str(), 0711), 0);
  EXPECT_TRUE(ReachableByOthers(closed + "/outputs"));
}

}  // namespace
}  // namespace jobctl::agentd
