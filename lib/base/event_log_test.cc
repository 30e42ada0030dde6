#include "base/event_log.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

namespace jobctl {
namespace {

std::string TempPath() {
  std::string path = ::testing::TempDir() + "event_log_test_" + std::to_string(::getpid()) + "_" +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::remove(path.c_str());
  return path;
}

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(EventLogTest, ADisabledLogWritesNothing) {
  EventLog log;
  EXPECT_FALSE(log.enabled());
  log.Write("grant", {{"run", 1}});
  ASSERT_TRUE(log.Open("", "coord").ok());
  EXPECT_FALSE(log.enabled());
}

TEST(EventLogTest, EachEventIsOneJsonLineWithSourceClocksAndFields) {
  std::string path = TempPath();
  EventLog log;
  ASSERT_TRUE(log.Open(path, "agent", {{"agent", "web-1"}}).ok());
  int64_t before = MonotonicNs();
  log.Write("claimed",
            {{"run", int64_t{7}}, {"shard", 2}, {"why", "a \"quoted\"\nline"}, {"ok", true}});
  std::vector<std::string> lines = Lines(path);
  ASSERT_EQ(lines.size(), 1u);
  const std::string& l = lines[0];
  EXPECT_EQ(l.rfind("{\"src\":\"agent\",\"pid\":" + std::to_string(::getpid()) +
                        ",\"agent\":\"web-1\",\"mono_ns\":",
                    0),
            0u)
      << l;
  EXPECT_NE(l.find(",\"ev\":\"claimed\",\"run\":7,\"shard\":2,"
                   "\"why\":\"a \\\"quoted\\\"\\nline\",\"ok\":true}"),
            std::string::npos)
      << l;
  int64_t mono = std::stoll(l.substr(l.find("\"mono_ns\":") + 10));
  EXPECT_GE(mono, before);
  EXPECT_LE(mono, MonotonicNs());
  std::remove(path.c_str());
}

TEST(EventLogTest, RenderedEventsAreStampedWhenWritten) {
  std::string path = TempPath();
  EventLog log;
  ASSERT_TRUE(log.Open(path, "coord").ok());
  std::string rendered = log.Render("grant", {{"token", 5}});
  int64_t after_render = MonotonicNs();
  log.WriteRendered(rendered);
  std::vector<std::string> lines = Lines(path);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_GE(std::stoll(lines[0].substr(lines[0].find("\"mono_ns\":") + 10)), after_render);
  std::remove(path.c_str());
}

TEST(EventLogTest, LinesOfProcessesSharingTheFileNeverInterleave) {
  std::string path = TempPath();
  const int kChildren = 4, kLines = 500;
  std::vector<pid_t> pids;
  for (int c = 0; c < kChildren; ++c) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      EventLog log;
      if (!log.Open(path, "probe").ok()) _exit(1);
      std::string pad(200, 'x');
      for (int i = 0; i < kLines; ++i) log.Write("tick", {{"i", i}, {"pad", pad}});
      _exit(0);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::vector<std::string> lines = Lines(path);
  EXPECT_EQ(lines.size(), static_cast<size_t>(kChildren * kLines));
  for (const std::string& l : lines) {
    ASSERT_FALSE(l.empty()) << "an empty line: a live writer's line was taken for a torn one";
    EXPECT_EQ(l.front(), '{');
    EXPECT_EQ(l.back(), '}');
    EXPECT_EQ(l.find('{', 1), std::string::npos) << l;
  }
  std::remove(path.c_str());
}

TEST(EventLogTest, OpeningTheFileWhileAnotherProcessAppendsALongLineLeavesNoEmptyLine) {
  // A line longer than a page is appended page by page: a process opening the file meanwhile
  // must not take it for a torn line and end it with a newline of its own.
  std::string path = TempPath();
  const int kLines = 300, kOpens = 3000;
  pid_t writer = fork();
  ASSERT_GE(writer, 0);
  if (writer == 0) {
    EventLog log;
    if (!log.Open(path, "writer").ok()) _exit(1);
    std::string pad(64 * 1024, 'x');
    for (int i = 0; i < kLines; ++i) log.Write("tick", {{"i", i}, {"pad", pad}});
    _exit(0);
  }
  pid_t opener = fork();
  ASSERT_GE(opener, 0);
  if (opener == 0) {
    for (int i = 0; i < kOpens; ++i) {
      EventLog log;
      if (!log.Open(path, "opener").ok()) _exit(1);
    }
    _exit(0);
  }
  for (pid_t pid : {writer, opener}) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::vector<std::string> lines = Lines(path);
  EXPECT_EQ(lines.size(), static_cast<size_t>(kLines));
  for (const std::string& l : lines) ASSERT_FALSE(l.empty()) << "a live writer's line was ended";
  std::remove(path.c_str());
}

TEST(EventLogTest, ALineTornByAKilledWriterIsEndedBeforeTheNextProcessWrites) {
  std::string path = TempPath();
  {
    std::ofstream torn(path);
    torn << "{\"src\":\"coord\",\"pid\":1,\"ev\":\"grant\"}\n{\"src\":\"coord\",\"pid\":1,\"ev\":"
            "\"re";
  }
  EventLog log;
  ASSERT_TRUE(log.Open(path, "coord").ok());
  log.Write("fire", {{"job", "j"}});
  std::vector<std::string> lines = Lines(path);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1], "{\"src\":\"coord\",\"pid\":1,\"ev\":\"re");
  EXPECT_EQ(lines[2].rfind("{\"src\":\"coord\",\"pid\":", 0), 0u) << lines[2];
  EXPECT_NE(lines[2].find("\"ev\":\"fire\""), std::string::npos) << lines[2];
  // A file that ends with its newline gets nothing added.
  EventLog again;
  ASSERT_TRUE(again.Open(path, "coord").ok());
  EXPECT_EQ(Lines(path).size(), 3u);
}

}  // namespace
}  // namespace jobctl
