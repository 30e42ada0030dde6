// Hostile jobs through the real agentd: a flood of output, one enormous line, binary bytes and
// terminal escapes, and a fork bomb. The agent must stay small and keep draining (the job is
// never blocked on a full pipe), the coordinator must keep at most its cap plus an explicit
// truncation marker, bytes must arrive exactly, and a bomb must be contained and killed at its
// timeout with its whole process tree while the agent goes on serving other shards.
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "fault/env/env_fault_test.h"

namespace jobctl::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

class HostileJobTest : public EnvFaultTest {};

TEST_F(HostileJobTest, TwoGibibytesOfOutputKeepTheAgentSmallAndStoreTheCapPlusAMarker) {
  StartCoordinator("log_cap = \"4MiB\"\n");
  // Under AddressSanitizer freed memory sits in a quarantine of up to 256 MiB, which would
  // count as the agent's; a small quarantine keeps the checks and measures the agent itself.
  const char* asan = std::getenv("ASAN_OPTIONS");
  AgentProcess& agent = AddAgent(
      "a", {}, "",
      Launch{{}, {{"ASAN_OPTIONS", std::string(asan ? asan : "") + ":quarantine_size_mb=4"}}});
  WaitForAgents(1);
  std::string stamps = dir_.path() + "/flood";
  coord_->Apply(
      "[[job]]\nname = \"flood\"\nschedule = \"@yearly\"\ntimeout = \"10m\"\n"
      "shell = \"" +
      JobPids() + "date +%s%N > " + stamps +
      ".start; "
      "head -c 2147483648 /dev/zero; date +%s%N > " +
      stamps + ".end; echo done >&2\"\n");
  long idle_rss = RssKib(agent.process().pid());
  int64_t id = Trigger("flood")["id"];
  long max_rss = idle_rss;
  json run;
  auto deadline = Clock::now() + seconds(480);
  while (Clock::now() < deadline) {
    max_rss = std::max(max_rss, RssKib(agent.process().pid()));
    run = GetRun(id);
    if (!run["finished_at"].get<std::string>().empty()) break;
    std::this_thread::sleep_for(milliseconds(100));
  }
  ASSERT_EQ(run["state"], "succeeded") << run.dump();
  double job_s =
      (std::stod(ReadFile(stamps + ".end")) - std::stod(ReadFile(stamps + ".start"))) / 1e9;
  std::string out = Output(id, 0, "stdout");
  std::string marker = Output(id, 0, "marker");
  std::cout << "2 GiB job: wrote for " << job_s << " s (" << 2048 / job_s << " MiB/s); agent RSS "
            << idle_rss / 1024 << " MiB idle, " << max_rss / 1024 << " MiB max; stored "
            << out.size() << " bytes of stdout; marker: " << marker;
  // The agent's output budget: up to 8 MiB of chunks queued in memory (more spool to disk),
  // a 4 MiB batch being built and one in flight. AddressSanitizer's allocator about doubles
  // that (redzones, per-size caches, the quarantine), so 96 MiB; a queue that grew with the
  // output would be gigabytes.
  EXPECT_LT(max_rss - idle_rss, 96 * 1024) << "the agent grew by more than 96 MiB";
  EXPECT_LE(out.size(), 4u << 20);
  EXPECT_GE(out.size(), 3u << 20) << "the cap's worth of output should be kept";
  EXPECT_EQ(out, std::string(out.size(), '\0'));
  EXPECT_NE(marker.find("truncated"), std::string::npos) << "no truncation marker";
  // The cap is per run: what came after it ("done" on stderr) is not kept either.
  EXPECT_EQ(Output(id, 0, "stderr"), "");
  EXPECT_LT(job_s, 60) << "the job was held up writing into its pipe";
  EXPECT_TRUE(agent.process().running());
}

TEST_F(HostileJobTest, AnEnormousLineAndBinaryBytesArriveByteExact) {
  StartCoordinator();
  AddAgent("a");
  WaitForAgents(1);
  // Every byte value, NULs, terminal and OSC escapes, CR without LF, invalid UTF-8.
  std::string binary;
  for (int round = 0; round < 64; ++round) {
    for (int b = 0; b < 256; ++b) binary += static_cast<char>(b);
    binary += std::string("\0\0\0", 3) +
              "\x1b[2J\x1b[31mred\x1b[0m\x1b]0;title\x07\r\r\n\xff\xfe\xc3\x28\xed\xa0\x80";
  }
  std::string file = dir_.path() + "/binary.bin";
  std::ofstream(file, std::ios::binary) << binary;
  std::string line(10 << 20, 'x');
  line += "\n";
  coord_->Apply(
      "[[job]]\nname = \"line\"\nschedule = \"@yearly\"\n"
      "shell = \"" +
      JobPids() +
      "head -c 10485760 /dev/zero | tr '\\\\0' x; echo\"\n"
      "[[job]]\nname = \"binary\"\nschedule = \"@yearly\"\n"
      "shell = \"" +
      JobPids() + "cat " + file + "; cat " + file + " >&2\"\n");
  auto start = Clock::now();
  int64_t line_run = Trigger("line")["id"];
  ASSERT_EQ(WaitRun(line_run, seconds(120))["state"], "succeeded");
  double line_s = std::chrono::duration<double>(Clock::now() - start).count();
  start = Clock::now();
  int64_t binary_run = Trigger("binary")["id"];
  ASSERT_EQ(WaitRun(binary_run, seconds(60))["state"], "succeeded");
  std::cout << "10 MiB line: run took " << line_s << " s; " << binary.size()
            << " binary bytes twice: "
            << std::chrono::duration<double>(Clock::now() - start).count() << " s\n";
  std::string got_line = Output(line_run, 0, "stdout");
  EXPECT_EQ(got_line.size(), line.size());
  EXPECT_EQ(Sha256Hex(got_line), Sha256Hex(line));
  EXPECT_EQ(Sha256Hex(Output(binary_run, 0, "stdout")), Sha256Hex(binary));
  EXPECT_EQ(Sha256Hex(Output(binary_run, 0, "stderr")), Sha256Hex(binary));
  // The API's JSON stays valid whatever the bytes (they travel base64-encoded).
  http::HttpResponse logs =
      coord_->Request("GET", "/v1/runs/" + std::to_string(binary_run) + "/logs");
  EXPECT_FALSE(json::parse(logs.body, nullptr, false).is_discarded());
}

// The processes of one user (their pids), from /proc.
std::vector<pid_t> ProcessesOf(uid_t uid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    struct stat st {};
    if (::stat(e.path().c_str(), &st) == 0 && st.st_uid == uid) out.push_back(std::stoi(name));
  }
  return out;
}

TEST_F(HostileJobTest, AForkBombIsContainedAndKilledAtItsTimeoutWhileOtherShardsRun) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run the bomb as a user of its own";
  // The containment is the host's: jobs of this user may hold at most kLimit processes
  // (RLIMIT_NPROC, inherited from agentd, which as root is not held to it itself).
  constexpr int kLimit = 64;
  const char* user = "jobctl-fault";
  if (getpwnam(user) == nullptr) {
    ASSERT_EQ(std::system("useradd --system --create-home --home-dir /var/tmp/jobctl-fault-home "
                          "--shell /bin/sh jobctl-fault"),
              0);
  }
  uid_t uid = getpwnam(user)->pw_uid;
  for (pid_t pid : ProcessesOf(uid)) ::kill(pid, SIGKILL);  // a bomb left by a killed run
  StartCoordinator();
  AgentProcess& agent = AddAgent(
      "a", {"--slots", "4"}, "allow_run_as = [\"root\", \"jobctl-fault\"]\n",
      Launch{
          {"/usr/bin/prlimit", "--nproc=" + std::to_string(kLimit) + ":" + std::to_string(kLimit)},
          {}});
  WaitForAgents(1);
  // Each bomb process forks copies of itself forever; the job's main process waits on a
  // sleeper forked first, so only the timeout ends it.
  coord_->Apply(
      "[[job]]\nname = \"bomb\"\nschedule = \"@yearly\"\nrun_as = \"jobctl-fault\"\n"
      "timeout = \"6s\"\nkill_grace = \"1s\"\n"
      "shell = 'b() { while :; do b & sleep 0.05; done; }; sleep 1000 & s=$!; b & wait $s'\n"
      "[[job]]\nname = \"ok\"\nschedule = \"@yearly\"\nrun_as = \"root\"\n"
      "shell = \"" +
      JobPids() + "echo fine\"\n");
  auto start = Clock::now();
  int64_t bomb = Trigger("bomb")["id"];
  ASSERT_TRUE(
      Coordinator::Eventually([&] { return ProcessesOf(uid).size() >= kLimit / 2; }, seconds(10)))
      << "the bomb did not go off";
  // While it rages: at most the limit, and other shards still run.
  size_t most = 0;
  std::vector<double> ok_ms;
  while (GetRun(bomb)["finished_at"].get<std::string>().empty() &&
         Clock::now() - start < seconds(20)) {
    most = std::max(most, ProcessesOf(uid).size());
    auto t0 = Clock::now();
    json ok = WaitRun(Trigger("ok")["id"], seconds(10));
    EXPECT_EQ(ok["state"], "succeeded") << ok.dump();
    ok_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    most = std::max(most, ProcessesOf(uid).size());
  }
  json done = WaitRun(bomb, seconds(30));
  double ended_s = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(done["state"], "timed_out") << done.dump();
  EXPECT_LE(most, static_cast<size_t>(kLimit));
  // The whole tree is gone with the run (SIGTERM to the group, SIGKILL after kill_grace).
  bool gone = Coordinator::Eventually([&] { return ProcessesOf(uid).empty(); }, seconds(3));
  size_t left = ProcessesOf(uid).size();
  for (pid_t pid : ProcessesOf(uid)) ::kill(pid, SIGKILL);
  EXPECT_TRUE(gone) << left << " bomb processes outlived the run";
  std::cout << "fork bomb: at most " << most << " processes (limit " << kLimit << "), run ended "
            << ended_s << " s after the trigger (timeout 6 s + kill_grace 1 s); " << ok_ms.size()
            << " other runs meanwhile, slowest "
            << (ok_ms.empty() ? 0 : *std::max_element(ok_ms.begin(), ok_ms.end())) << " ms\n";
  EXPECT_FALSE(ok_ms.empty()) << "no other shard ran during the bomb";
  EXPECT_LT(ended_s, 6 + 1 + 3);
  EXPECT_TRUE(agent.process().running());
  EXPECT_EQ(WaitRun(Trigger("ok")["id"], seconds(10))["state"], "succeeded");
}

}  // namespace
}  // namespace jobctl::testing
