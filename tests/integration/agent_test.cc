// agentd as hosts run it: real coordinator and agentd binaries on loopback, real
// subprocesses, kill -9 and SIGSTOP on the real processes.
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "testlib/cluster.h"

namespace jobctl::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

std::string Sha256(const std::string& data) {
  unsigned char d[32];
  unsigned int n = 0;
  EVP_Digest(data.data(), data.size(), d, &n, EVP_sha256(), nullptr);
  std::ostringstream ss;
  for (unsigned i = 0; i < n; ++i) ss << std::hex << (d[i] >> 4) << (d[i] & 15);
  return ss.str();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Gone, or a zombie nobody reaped yet (its parent was killed).
bool Gone(pid_t pid) {
  if (kill(pid, 0) != 0) return true;
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  return stat.empty() ||
         (paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z');
}

// Whether this agentd runs each shard in a cgroup of its own (it says so at start).
bool InCgroups(AgentProcess& agent) {
  return agent.Logs().find("each shard runs in a cgroup of its own") != std::string::npos;
}

class AgentTest : public ::testing::Test {
 protected:
  void StartCoordinator(const std::string& config = "") {
    coord_ = std::make_unique<Coordinator>(dir_, config);
    coord_->Start();
  }
  AgentProcess& AddAgent(const std::string& name, std::vector<std::string> args = {},
                         const std::string& config = "") {
    agents_.push_back(std::make_unique<AgentProcess>(*coord_, dir_, name, std::move(args), config));
    return *agents_.back();
  }
  void WaitForAgents(size_t n) {
    ASSERT_TRUE(Coordinator::Eventually(
        [&] {
          size_t connected = 0;
          for (const auto& a : coord_->GetJson("/v1/agents"))
            connected += a["connected"].get<bool>();
          return connected >= n;
        },
        seconds(20)))
        << coord_->GetJson("/v1/agents").dump();
  }
  json Trigger(const std::string& job) {
    return coord_->PostJson("/v1/jobs/" + job + "/trigger", json::object());
  }
  json WaitRun(int64_t id, seconds timeout = seconds(60)) { return coord_->WaitRun(id, timeout); }
  // All output of a run for one shard and stream, in order.
  std::string Output(int64_t run, int shard, const std::string& stream, int attempt = 0) {
    return coord_->Output(run, shard, stream, attempt);
  }
  void TearDown() override {
    if (!HasFailure()) return;
    if (coord_) std::cerr << "---- coordinator log ----\n" << coord_->Logs();
    for (auto& a : agents_) std::cerr << "---- agent " << a->name() << " log ----\n" << a->Logs();
  }

  TempDir dir_;
  std::unique_ptr<Coordinator> coord_;
  std::vector<std::unique_ptr<AgentProcess>> agents_;
};

TEST_F(AgentTest, SixShardsOverThreeAgentsEachRunOnceWithTheirIndexAndEnvironment) {
  StartCoordinator();
  for (const char* n : {"a", "b", "c"}) AddAgent(n, {"--slots", "2"});
  WaitForAgents(3);
  coord_->Apply(
      "[[job]]\nname = \"wide\"\nschedule = \"@yearly\"\nshards = 6\nenv = { GREETING = \"hi\" }\n"
      "shell = 'echo \"$JOB_SHARD_INDEX/$JOB_SHARD_TOTAL $JOB_NAME $JOB_RUN_ID $JOB_ATTEMPT "
      "$JOB_FENCING_TOKEN $GREETING $TRACEPARENT\"'\n");
  json run = Trigger("wide");
  int64_t id = run["id"];
  json done = WaitRun(id);
  ASSERT_EQ(done["state"], "succeeded") << done.dump();
  std::set<std::string> hosts;
  for (const auto& s : done["shards"]) {
    int i = s["index"];
    EXPECT_EQ(s["attempt"], 1);
    hosts.insert(s["agent"].get<std::string>());
    std::string out = Output(id, i, "stdout");
    std::string want = std::to_string(i) + "/6 wide " + std::to_string(id) + " 1 " +
                       std::to_string(s["token"].get<int64_t>()) + " hi 00-" +
                       done["trace_id"].get<std::string>() + "-";
    EXPECT_EQ(out.substr(0, want.size()), want) << out;
  }
  EXPECT_EQ(hosts.size(), 3u) << "spread should use every agent";
}

TEST_F(AgentTest, JobsInheritNothingButStdio) {
  StartCoordinator();
  AddAgent("a");
  WaitForAgents(1);
  // The job's shell lists its own descriptors through ls, while it waits for ls (ls listing
  // itself would show the directory being read, and a freshly started child may still be
  // reading its libraries and locale). Only 0, 1 and 2 may be there: the agent's sockets,
  // pipes and files must not leak into jobs.
  coord_->Apply(
      "[[job]]\nname = \"fds\"\nschedule = \"@yearly\"\n"
      "shell = 'ls /proc/$$/fd'\n");
  int64_t id = Trigger("fds")["id"];
  json done = WaitRun(id);
  ASSERT_EQ(done["state"], "succeeded") << done.dump();
  EXPECT_EQ(Output(id, 0, "stdout"), "0\n1\n2\n") << Output(id, 0, "stdout");
}

TEST_F(AgentTest, TenMebibytesOfRandomBytesArriveByteExactAndStderrApart) {
  StartCoordinator();
  AddAgent("a");
  WaitForAgents(1);
  std::string copy = dir_.path() + "/sent.bin";
  coord_->Apply(
      "[[job]]\nname = \"bulk\"\nschedule = \"@yearly\"\n"
      "shell = \"head -c 10485760 /dev/urandom | tee " +
      copy + "; echo oops >&2\"\n");
  int64_t id = Trigger("bulk")["id"];
  json done = WaitRun(id, seconds(120));
  ASSERT_EQ(done["state"], "succeeded") << done.dump();
  std::string sent = ReadFile(copy);
  ASSERT_EQ(sent.size(), 10u << 20);
  std::string got = Output(id, 0, "stdout");
  EXPECT_EQ(got.size(), sent.size());
  EXPECT_EQ(Sha256(got), Sha256(sent));
  EXPECT_EQ(Output(id, 0, "stderr"), "oops\n");
}

TEST_F(AgentTest, KillNineOfAnAgentMidShardRerunsItElsewhereWithinTtlPlusHeartbeatPlusOneSecond) {
  StartCoordinator("lease_ttl = \"3s\"\nheartbeat = \"1s\"\n");
  AddAgent("a");
  WaitForAgents(1);
  coord_->Apply(
      "[[job]]\nname = \"long\"\nschedule = \"@yearly\"\nroute = \"failover\"\n"
      "shell = \"echo attempt $JOB_ATTEMPT; sleep 30\"\n");
  int64_t id = Trigger("long")["id"];
  json first;
  ASSERT_TRUE(Coordinator::Eventually(
      [&] {
        first = coord_->GetJson("/v1/runs/" + std::to_string(id));
        return first["shards"][0]["state"] == "running";
      },
      seconds(10)));
  AddAgent("b");
  WaitForAgents(2);
  agents_[0]->process().Signal(SIGKILL);
  auto killed = std::chrono::steady_clock::now();
  json now;
  ASSERT_TRUE(Coordinator::Eventually(
      [&] {
        now = coord_->GetJson("/v1/runs/" + std::to_string(id));
        return now["shards"][0]["agent"] == "b" && now["shards"][0]["state"] == "running";
      },
      seconds(10)))
      << now.dump();
  EXPECT_LE(std::chrono::steady_clock::now() - killed, seconds(3 + 1 + 1));
  EXPECT_EQ(now["shards"][0]["attempt"], 2);
  // The dead agent's token is refused if anything still arrives with it.
  TestAgent ghost(*coord_, "a");
  json old = {{"run", id}, {"shard", 0}, {"attempt", 1}, {"token", first["shards"][0]["token"]}};
  EXPECT_EQ(ghost.Finish(old, 0).status, 409);
  EXPECT_EQ(ghost.Log(old, 99, "stdout", "late").status, 409);
  coord_->PostJson("/v1/runs/" + std::to_string(id) + "/cancel", json::object());
}

TEST_F(AgentTest, StoppedAgentIsFencedAndNothingItSendsAfterIsAccepted) {
  StartCoordinator("lease_ttl = \"3s\"\nheartbeat = \"1s\"\n");
  AddAgent("a");
  WaitForAgents(1);
  std::string pidfile = dir_.path() + "/pid";
  coord_->Apply(
      "[[job]]\nname = \"ticker\"\nschedule = \"@yearly\"\nroute = \"failover\"\n"
      "shell = \"echo $$ > " +
      pidfile +
      "-$JOB_ATTEMPT; i=0; while [ $i -lt 600 ]; do "
      "echo tick $i; i=$((i+1)); sleep 0.05; done\"\n");
  int64_t id = Trigger("ticker")["id"];
  ASSERT_TRUE(
      Coordinator::Eventually([&] { return !ReadFile(pidfile + "-1").empty(); }, seconds(10)));
  AddAgent("b");
  WaitForAgents(2);
  agents_[0]->process().Signal(SIGSTOP);
  // Past the TTL the shard goes to b.
  ASSERT_TRUE(Coordinator::Eventually(
      [&] {
        json r = coord_->GetJson("/v1/runs/" + std::to_string(id));
        return r["shards"][0]["agent"] == "b";
      },
      seconds(10)));
  std::string attempt1 = Output(id, 0, "stdout", 1);
  agents_[0]->process().Signal(SIGCONT);
  // The stopped agent's own deadline has passed: it kills its process group at once.
  pid_t pid = std::stoi(ReadFile(pidfile + "-1"));
  EXPECT_TRUE(Coordinator::Eventually([&] { return kill(pid, 0) != 0; }, seconds(15)))
      << "attempt 1 still running after SIGCONT";
  EXPECT_TRUE(agents_[0]->process().WaitForLog("lease", seconds(5)));
  std::this_thread::sleep_for(milliseconds(1500));  // give any late sends the chance to arrive
  EXPECT_EQ(Output(id, 0, "stdout", 1), attempt1) << "output with a stale token was accepted";
  coord_->PostJson("/v1/runs/" + std::to_string(id) + "/cancel", json::object());
}

TEST_F(AgentTest, CoordinatorDownTwentySecondsWhileAJobPrintsLosesNoByte) {
  StartCoordinator("lease_ttl = \"60s\"\nheartbeat = \"5s\"\n");
  AddAgent("a");
  WaitForAgents(1);
  coord_->Apply(
      "[[job]]\nname = \"printer\"\nschedule = \"@yearly\"\n"
      "shell = \"i=1; while [ $i -le 300 ]; do echo line $i; i=$((i+1)); sleep 0.1; done\"\n");
  int64_t id = Trigger("printer")["id"];
  ASSERT_TRUE(Coordinator::Eventually(
      [&] { return Output(id, 0, "stdout").find("line 20\n") != std::string::npos; }, seconds(20)));
  coord_->Kill9();
  std::this_thread::sleep_for(seconds(20));  // the outage under test
  coord_->Start();
  json done = WaitRun(id, seconds(60));
  ASSERT_EQ(done["state"], "succeeded") << done.dump();
  std::string want;
  for (int i = 1; i <= 300; ++i) want += "line " + std::to_string(i) + "\n";
  EXPECT_EQ(Output(id, 0, "stdout"), want);
}

TEST_F(AgentTest, TimeoutKillsTheProcessTreeEvenWhenAGrandchildHoldsThePipes) {
  StartCoordinator();
  AddAgent("a");
  WaitForAgents(1);
  std::string pids = dir_.path() + "/pids";
  coord_->Apply(
      "[[job]]\nname = \"stuck\"\nschedule = \"@yearly\"\ntimeout = \"1s\"\nkill_grace = \"1s\"\n"
      "shell = \"sleep 1000 & echo $! >> " +
      pids + "; setsid sh -c 'echo $$ >> " + pids + "; exec sleep 1000' & sleep 1000\"\n");
  auto start = std::chrono::steady_clock::now();
  int64_t id = Trigger("stuck")["id"];
  json done = WaitRun(id, seconds(30));
  EXPECT_EQ(done["state"], "timed_out") << done.dump();
  EXPECT_LE(std::chrono::steady_clock::now() - start, seconds(8));
  std::istringstream in(ReadFile(pids));
  pid_t grandchild = 0, escaped = 0;
  in >> grandchild >> escaped;
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(Coordinator::Eventually([&] { return Gone(grandchild); }, seconds(5)))
      << "the grandchild in the job's process group survived";
  ASSERT_GT(escaped, 0);
  if (InCgroups(*agents_[0])) {
    EXPECT_TRUE(Coordinator::Eventually([&] { return Gone(escaped); }, seconds(5)))
        << "the descendant that left the process group survived its run's cgroup";
  } else {
    std::cerr << "agentd runs shards without cgroups here: the descendant that left the "
                 "process group is not checked\n";
  }
  kill(escaped, SIGKILL);  // without a cgroup it survives; clean up
}

// The line agentd logs at start about its cgroups ("" when there is none).
std::string CgroupLine(AgentProcess& agent) {
  std::string logs = agent.Logs();
  size_t at = logs.find("each shard runs in a cgroup of its own");
  if (at == std::string::npos) return "";
  size_t end = logs.find('\n', at);
  return logs.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

// memory_max reaches the agent and is enforced there, or the shard is refused with the
// reason: never run without its limit.
TEST_F(AgentTest, AMemoryMaxIsEnforcedOrTheShardIsRefusedSayingWhy) {
  StartCoordinator();
  AddAgent("a");
  WaitForAgents(1);
  coord_->Apply(
      "[[job]]\nname = \"hungry\"\nschedule = \"@yearly\"\nmemory_max = \"64MiB\"\n"
      "shell = \"dd if=/dev/zero of=/dev/null bs=256M count=1\"\n");
  EXPECT_EQ(coord_->GetJson("/v1/jobs/hungry")["definition"]["memory_max_bytes"], 64 << 20);
  int64_t id = Trigger("hungry")["id"];
  json done = WaitRun(id, seconds(30));
  EXPECT_EQ(done["state"], "failed") << done.dump();
  const json& shard = done["shards"][0];
  std::string line = CgroupLine(*agents_[0]);
  if (line.find("memory") != std::string::npos) {
    EXPECT_EQ(shard["outcome"], "out_of_memory") << done.dump();
    EXPECT_EQ(
        shard["message"].get<std::string>().rfind("killed: out of memory (memory_max 64MiB); ", 0),
        0u)
        << done.dump();
  } else {
    std::cerr << "no memory controller for agentd's shards here (" << line
              << "): the refusal is checked\n";
    EXPECT_EQ(shard["outcome"], "spawn_failed") << done.dump();
    std::string why = shard["message"];
    EXPECT_TRUE(why.find("memory_max needs the cgroup v2 memory controller, which is not "
                         "enabled for this agent's shards in ") != std::string::npos ||
                why.find("the job sets resource limits, and this agent runs shards without "
                         "cgroup v2") != std::string::npos)
        << why;
    EXPECT_EQ(Output(id, 0, "stdout") + Output(id, 0, "stderr"), "") << "the shard ran";
  }
}

// An agent that does not say it reads limits (an older agentd) would run the shard without
// them: it is not given one.
TEST_F(AgentTest, AShardWithLimitsGoesOnlyToAnAgentThatReadsThem) {
  StartCoordinator();
  coord_->Apply(
      "[[job]]\nname = \"limited\"\nschedule = \"@yearly\"\npids_max = 10\nshell = \"true\"\n"
      "[[job]]\nname = \"free\"\nschedule = \"@yearly\"\nshell = \"true\"\n");
  Trigger("limited");
  TestAgent old(*coord_, "old");
  old.set_features({"step_output"});
  EXPECT_TRUE(old.Claim(4, 300).empty());
  Trigger("free");
  std::vector<json> got = old.ClaimUpTo(1, 5000);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["job"], "free");
  TestAgent current(*coord_, "current");
  got = current.ClaimUpTo(1, 5000);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["job"], "limited");
  EXPECT_EQ(got[0]["pids_max"], 10);
}

int64_t WallMs() {
  return std::chrono::duration_cast<milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t WallUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The protocol of early dispatch: a shard due in 8 s is granted up to early_dispatch (5 s)
// ahead only to an agent whose claim says "start_in_us", with start_in_us counted so that the
// child starts at the instant, never before; an agent that does not say it gets the other
// shard only from the instant on, as before. A cancel before the instant reaches the holder
// at once, in the answer to its open claim.
TEST_F(AgentTest, AShardIsGrantedAheadOnlyToAnAgentThatStartsItAtItsInstant) {
  StartCoordinator("early_dispatch = \"5s\"\nlease_ttl = \"40s\"\nheartbeat = \"5s\"\n");
  int64_t due = (WallMs() / 1000 + 8) * 1000;
  std::time_t anchor = due / 1000 - 3600;
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&anchor));
  std::string toml;
  for (const char* name : {"first", "second"}) {
    toml += std::string("[[job]]\nname = \"") + name + "\"\nschedule = \"@every 1h\"\nanchor = \"" +
            stamp + "\"\nshell = \"true\"\n";
  }
  coord_->Apply(toml);
  TestAgent early(*coord_, "early");
  early.set_features({"step_output", "limits", "start_in_us"});
  std::vector<json> got = early.Claim(1, 20000);
  int64_t received_us = WallUs();
  ASSERT_EQ(got.size(), 1u);
  ASSERT_LT(received_us, due * 1000)
      << "the machine was too slow to see the grant ahead of the instant";
  ASSERT_TRUE(got[0].contains("start_in_us")) << got[0].dump();
  int64_t start_in_us = got[0]["start_in_us"];
  EXPECT_GT(start_in_us, 0);
  EXPECT_LE(start_in_us, 5'000'000);
  EXPECT_GE(received_us + start_in_us, due * 1000) << "told to start before the instant";
  EXPECT_LE(received_us + start_in_us, due * 1000 + 1'000'000)
      << "told to start long after the instant";

  // Canceled before its instant: the lease is named in the answer to the holder's open claim
  // (free 0: it only waits for news).
  http::HttpResponse answer;
  double claims = coord_->Metric("jobctl_claims_total");
  std::thread claim([&] { answer = early.ClaimRaw(0, 20000); });
  int64_t run = got[0]["run"];
  // The claim must be open on the coordinator before the cancel: it is, once counted (the
  // count and the opening are one step of the coordinator's loop).
  bool opened = Coordinator::Eventually(
      [&] { return coord_->Metric("jobctl_claims_total") > claims; }, seconds(10));
  coord_->PostJson("/v1/runs/" + std::to_string(run) + "/cancel", json::object());
  claim.join();
  ASSERT_TRUE(opened);
  ASSERT_EQ(answer.status, 200) << answer.body;
  json body = json::parse(answer.body);
  ASSERT_EQ(body["canceled"].size(), 1u) << answer.body;
  EXPECT_EQ(body["canceled"][0]["run"], run);
  EXPECT_EQ(body["canceled"][0]["token"], got[0]["token"]);
  EXPECT_TRUE(body["assignments"].empty());
  EXPECT_LT(WallMs(), due) << "the machine was too slow to cancel ahead of the instant";

  TestAgent old(*coord_, "old");
  old.set_features({"step_output", "limits"});
  std::vector<json> other = old.ClaimUpTo(1, 20000);
  int64_t other_received = WallMs();
  ASSERT_EQ(other.size(), 1u);
  EXPECT_NE(other[0]["job"], got[0]["job"]);
  EXPECT_GE(other_received, due) << "granted ahead to an agent that did not say start_in_us";
  EXPECT_FALSE(other[0].contains("start_in_us")) << other[0].dump();
}

// An agent with one slot and a job every second: each shard is granted ahead of its instant,
// so the slot is full while it waits, and the agent holds a claim open without a free slot
// (for cancels). When the run ends the agent must claim again at once, or the next second's
// shard waits for that claim's 30 s to pass. Five runs in a row, each on its agent in time.
TEST_F(AgentTest, AOneSlotAgentTakesAnEverySecondJobRunAfterRunGrantedAhead) {
  StartCoordinator();
  AddAgent("a", {"--slots", "1"});
  WaitForAgents(1);
  coord_->Apply(
      "[[job]]\nname = \"tick\"\nschedule = \"*/1 * * * * *\"\noverlap = \"allow\"\n"
      "shell = \"true\"\n");
  ASSERT_TRUE(Coordinator::Eventually(
      [&] {
        int succeeded = 0;
        for (const json& r : coord_->Runs("tick")) succeeded += r["state"] == "succeeded";
        return succeeded >= 5;
      },
      seconds(15)))
      << coord_->Runs("tick").dump();
  EXPECT_GE(coord_->Metric("jobctl_early_grants_total"), 4);
}

// An agentd told to stop while a shard it was granted waits for its instant gives the shard
// back at once and exits (its timer must not hold it until the instant); the shard is granted
// to another agent and starts there at its instant, once.
TEST_F(AgentTest, AStoppingAgentGivesBackAShardWaitingForItsInstantAndExitsAtOnce) {
  StartCoordinator("early_dispatch = \"10s\"\nlease_ttl = \"40s\"\nheartbeat = \"5s\"\n");
  AgentProcess& first = AddAgent("first");
  WaitForAgents(1);
  int64_t due = (WallMs() / 1000 + 13) * 1000;
  std::time_t anchor = due / 1000 - 3600;
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&anchor));
  std::string marker = dir_.path() + "/started";
  coord_->Apply(std::string("[[job]]\nname = \"later\"\nschedule = \"@every 1h\"\nanchor = \"") +
                stamp + "\"\nshell = \"date +%s%N >> " + marker + "\"\n");
  json run;
  ASSERT_TRUE(Coordinator::Eventually(
      [&] {
        json runs = coord_->Runs("later");
        if (runs.empty() || runs[0]["shards"][0]["state"] != "running") return false;
        run = runs[0];
        return true;
      },
      seconds(20)));
  EXPECT_EQ(run["shards"][0]["agent"], "first");
  first.process().Signal(SIGTERM);
  EXPECT_EQ(first.process().Wait(seconds(5)), 0) << first.Logs();
  EXPECT_LT(WallMs(), due) << "agentd stopped only after the instant";
  AddAgent("second");
  json done = WaitRun(run["id"], seconds(40));
  ASSERT_EQ(done["state"], "succeeded") << done.dump();
  EXPECT_EQ(done["shards"][0]["agent"], "second") << done.dump();
  std::string started = ReadFile(marker);
  ASSERT_EQ(std::count(started.begin(), started.end(), '\n'), 1) << started;
  EXPECT_GE(std::stoll(started) / 1'000'000, due) << "the child started before its instant";
}

// Early dispatch, end to end with a real agentd: three jobs due at one instant 15 s away, with
// a 10 s window. Each run is created and its shard granted ahead of the instant. Then, before
// the instant: one run is canceled and one job paused, and neither child ever starts (the
// agent drops them on the claim's answer); the coordinator is killed with SIGKILL and started
// again, and the third shard, still held by the agent, starts at its instant on the agent's
// own clock, never before it, exactly once.
TEST_F(AgentTest, ShardsGrantedAheadStartAtTheirInstantAndACancelOrPauseBeforeItStopsThem) {
  StartCoordinator("early_dispatch = \"10s\"\nlease_ttl = \"40s\"\nheartbeat = \"5s\"\n");
  AgentProcess& agent = AddAgent("a", {"--slots", "4"});
  WaitForAgents(1);
  int64_t now_ms =
      std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  // Anchored a period before the instant, so that the first instant is 15 s from now.
  int64_t due = (now_ms / 1000 + 15) * 1000;
  std::time_t anchor = due / 1000 - 3600;
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&anchor));
  std::string toml;
  for (const char* name : {"ontime", "canceled", "paused"}) {
    std::string marker = dir_.path() + "/" + name;
    toml += std::string("[[job]]\nname = \"") + name + "\"\nschedule = \"@every 1h\"\nanchor = \"" +
            stamp + "\"\nshell = \"date +%s%N >> " + marker + "; echo started\"\n";
    // Two shards: both must hear of the cancel, though one claim answer names only what was
    // canceled when it was sent (the other answers the agent's next claim at once).
    if (std::string(name) == "canceled") toml += "shards = 2\n";
  }
  coord_->Apply(toml);
  // Ahead of the instant: each run exists, its shards granted ("running") to the agent.
  std::map<std::string, int64_t> run_of;
  ASSERT_TRUE(Coordinator::Eventually(
      [&] {
        for (const char* name : {"ontime", "canceled", "paused"}) {
          json runs = coord_->Runs(name);
          if (runs.empty()) return false;
          for (const json& shard : runs[0]["shards"]) {
            if (shard["state"] != "running") return false;
          }
          run_of[name] = runs[0]["id"];
        }
        return true;
      },
      seconds(20)))
      << coord_->GetJson("/v1/runs").dump();
  int64_t granted_ms =
      std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  ASSERT_LT(granted_ms, due) << "the machine was too slow to see the grants ahead of the instant";
  EXPECT_GE(coord_->Metric("jobctl_early_grants_total"), 3);
  for (const auto& [name, id] : run_of) {
    json run = coord_->GetJson("/v1/runs/" + std::to_string(id));
    EXPECT_EQ(UnixMs(run["scheduled_at"]), due) << run.dump();
    EXPECT_LT(UnixMs(run["created_at"]), due) << "not created ahead: " << run.dump();
    EXPECT_EQ(UnixMs(run["shards"][0]["started_at"]), due) << run.dump();
  }

  coord_->PostJson("/v1/runs/" + std::to_string(run_of["canceled"]) + "/cancel", json::object());
  coord_->PostJson("/v1/jobs/paused/pause", json::object());
  auto dropped = [&] {
    std::string logs = agent.Logs();
    int n = 0;
    for (size_t at = logs.find("canceled before its instant; not started"); at != std::string::npos;
         at = logs.find("canceled before its instant; not started", at + 1)) {
      ++n;
    }
    return n;
  };
  ASSERT_TRUE(Coordinator::Eventually([&] { return dropped() == 3; }, seconds(10))) << agent.Logs();
  ASSERT_LT(
      std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count(),
      due)
      << "the cancel reached the agent only after the instant";

  coord_->Kill9();
  coord_->Start();
  json ontime = WaitRun(run_of["ontime"], seconds(60));
  ASSERT_EQ(ontime["state"], "succeeded") << ontime.dump();
  EXPECT_EQ(ontime["shards"][0]["attempt"], 1) << ontime.dump();
  EXPECT_EQ(Output(run_of["ontime"], 0, "stdout"), "started\n");
  std::string started_ns = ReadFile(dir_.path() + "/ontime");
  ASSERT_FALSE(started_ns.empty());
  EXPECT_EQ(started_ns.find('\n'), started_ns.size() - 1) << "started more than once";
  EXPECT_GE(std::stoll(started_ns) / 1'000'000, due) << "the child started before its instant";

  for (const char* name : {"canceled", "paused"}) {
    json run = WaitRun(run_of[name], seconds(30));
    EXPECT_EQ(run["state"], "canceled") << run.dump();
    for (const json& shard : run["shards"]) {
      EXPECT_EQ(shard["started_at"], "") << "never started: " << run.dump();
    }
    EXPECT_EQ(Output(run_of[name], 0, "stdout"), "") << name;
    EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/" + name))
        << name << ": its child started although its run was canceled before the instant";
  }
  EXPECT_NE(coord_->GetJson("/v1/runs/" + std::to_string(run_of["paused"]))["note"]
                .get<std::string>()
                .find("paused before this run's instant"),
            std::string::npos);
}

// A canceled run is handed to nobody else, so its shard gets its whole kill_grace even past
// its lease's last deadline (the fence waits for it): here 5 s of grace against a 3 s lease.
TEST_F(AgentTest, ACanceledShardThatIgnoresSigtermGetsItsWholeKillGracePastItsLease) {
  StartCoordinator("lease_ttl = \"3s\"\nheartbeat = \"1s\"\n");
  AddAgent("a");
  WaitForAgents(1);
  std::string pidfile = dir_.path() + "/pid";
  coord_->Apply(
      "[[job]]\nname = \"stubborn\"\nschedule = \"@yearly\"\nkill_grace = \"5s\"\n"
      "shell = \"echo $$ > " +
      pidfile + "; setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $! > " + pidfile +
      ".escaped; trap '' TERM; echo up; while :; do sleep 0.1; done\"\n");
  int64_t id = Trigger("stubborn")["id"];
  ASSERT_TRUE(
      Coordinator::Eventually([&] { return Output(id, 0, "stdout") == "up\n"; }, seconds(20)));
  pid_t pid = std::stoi(ReadFile(pidfile));
  ASSERT_GT(pid, 1);
  auto canceled = std::chrono::steady_clock::now();
  coord_->PostJson("/v1/runs/" + std::to_string(id) + "/cancel", json::object());
  // agentd reaps the shell once it is killed: then the pid is gone.
  ASSERT_TRUE(Coordinator::Eventually([&] { return kill(pid, 0) != 0; }, seconds(20)))
      << "the canceled shard never ended";
  auto took = std::chrono::steady_clock::now() - canceled;
  // SIGKILL at kill_grace, not at the lease's last deadline (at most 3 s after the cancel).
  EXPECT_GE(took, std::chrono::milliseconds(4500));
  EXPECT_LE(took, seconds(10));
  EXPECT_EQ(WaitRun(id, seconds(10))["state"], "canceled");
  pid_t escaped = std::stoi(ReadFile(pidfile + ".escaped"));
  ASSERT_GT(escaped, 1);
  if (InCgroups(*agents_[0])) {
    EXPECT_TRUE(Coordinator::Eventually([&] { return Gone(escaped); }, seconds(5)))
        << "the descendant that left the process group survived the cancel";
  }
  kill(escaped, SIGKILL);
}

// The unprivileged user the run_as tests switch to, made once on this machine.
void EnsureTestUser() {
  if (getpwnam("jobctl-test") != nullptr) return;
  ASSERT_EQ(std::system("useradd --system --create-home --home-dir /var/tmp/jobctl-test-home "
                        "--shell /bin/sh jobctl-test"),
            0);
}

TEST_F(AgentTest, RunAsGetsTheUsersIdentityAndRootIsRefusedByDefault) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to create a user and switch to it";
  const char* user = "jobctl-test";
  ASSERT_NO_FATAL_FAILURE(EnsureTestUser());
  struct passwd* pw = getpwnam(user);
  ASSERT_NE(pw, nullptr);
  StartCoordinator();
  AddAgent("a", {}, "allow_run_as = [\"jobctl-test\"]\n");
  WaitForAgents(1);
  coord_->Apply(
      "[[job]]\nname = \"as-user\"\nschedule = \"@yearly\"\nrun_as = \"jobctl-test\"\n"
      "shell = 'echo \"$(id -u) $(id -g) $HOME $USER $LOGNAME\"'\n"
      "[[job]]\nname = \"as-root\"\nschedule = \"@yearly\"\nrun_as = \"root\"\nshell = \"id\"\n");
  int64_t id = Trigger("as-user")["id"];
  json done = WaitRun(id);
  ASSERT_EQ(done["state"], "succeeded") << done.dump();
  EXPECT_EQ(Output(id, 0, "stdout"), std::to_string(pw->pw_uid) + " " + std::to_string(pw->pw_gid) +
                                         " " + pw->pw_dir + " jobctl-test jobctl-test\n");
  int64_t root = Trigger("as-root")["id"];
  json refused = WaitRun(root);
  EXPECT_EQ(refused["state"], "failed") << refused.dump();
  EXPECT_EQ(refused["shards"][0]["outcome"], "policy");
  EXPECT_NE(refused["shards"][0]["message"].get<std::string>().find("root"), std::string::npos);
}

// A flow step that runs as another user writes $JOB_OUTPUT where agentd made it: an agent whose
// output_dir that user cannot reach (the default in its private state dir) fails the step at
// once, saying so; with an output_dir it can reach, the value reaches the next step.
TEST_F(AgentTest, AStepRunAsAnotherUserNeedsAnOutputDirItCanReach) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to create a user and switch to it";
  ASSERT_NO_FATAL_FAILURE(EnsureTestUser());
  ASSERT_EQ(chmod(dir_.path().c_str(), 0711), 0);
  std::filesystem::create_directories(dir_.path() + "/run");
  ASSERT_EQ(chmod((dir_.path() + "/run").c_str(), 0711), 0);
  StartCoordinator();
  AddAgent("closed", {"--labels", "out=closed"}, "allow_run_as = [\"jobctl-test\"]\n");
  AddAgent("shared", {"--labels", "out=shared"},
           "allow_run_as = [\"jobctl-test\"]\noutput_dir = \"" + dir_.path() + "/run/outputs\"\n");
  WaitForAgents(2);
  auto flow = [](const std::string& name, const std::string& where) {
    return "[[flow]]\nname = \"" + name + "\"\nschedule = \"@yearly\"\n" +
           "  [[flow.step]]\n  name = \"write\"\n  run_as = \"jobctl-test\"\n  on = [\"out=" +
           where + "\"]\n  shell = \"echo WHO=$(id -un) >> $JOB_OUTPUT\"\n" +
           "  [[flow.step]]\n  name = \"read\"\n  needs = [\"write\"]\n"
           "  run_as = \"jobctl-test\"\n  on = [\"out=" +
           where + "\"]\n  shell = \"echo who=$JOB_OUT_WHO\"\n";
  };
  coord_->Apply(flow("closed", "closed") + flow("shared", "shared"));
  json refused = WaitRun(Trigger("closed")["id"]);
  EXPECT_EQ(refused["state"], "failed") << refused.dump();
  json writes = coord_->Runs("closed:write");
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0]["shards"][0]["outcome"], "spawn_failed");
  EXPECT_NE(
      writes[0]["shards"][0]["message"].get<std::string>().find("cannot be reached by jobctl-test"),
      std::string::npos)
      << writes[0].dump();

  json done = WaitRun(Trigger("shared")["id"]);
  ASSERT_EQ(done["state"], "succeeded") << done.dump() << coord_->Runs("shared:read").dump();
  json reads = coord_->Runs("shared:read");
  ASSERT_EQ(reads.size(), 1u);
  EXPECT_EQ(Output(reads[0]["id"], 0, "stdout"), "who=jobctl-test\n");
}

// A secret's value is read by the agent from its own secrets_dir when the shard starts: the
// job file and the coordinator hold only the file's name. A missing secret fails the shard,
// naming it, without running anything.
TEST_F(AgentTest, SecretsAreReadOnTheAgentHostAndNeverReachTheCoordinator) {
  std::filesystem::create_directories(dir_.path() + "/secrets");
  dir_.Write("secrets/db-password", "s3cret-value\n");
  StartCoordinator();
  AddAgent("a", {}, "secrets_dir = \"" + dir_.path() + "/secrets\"\n");
  WaitForAgents(1);
  coord_->Apply(
      "[[job]]\nname = \"db\"\nschedule = \"@yearly\"\n"
      "shell = 'echo \"pw=$DB_PASSWORD\"'\nsecrets = { DB_PASSWORD = \"db-password\" }\n"
      "[[job]]\nname = \"missing\"\nschedule = \"@yearly\"\nshell = \"echo ran\"\n"
      "secrets = { API_KEY = \"api-key\" }\n");
  int64_t id = Trigger("db")["id"];
  json done = WaitRun(id);
  ASSERT_EQ(done["state"], "succeeded") << done.dump();
  EXPECT_EQ(Output(id, 0, "stdout"), "pw=s3cret-value\n");
  json job = coord_->GetJson("/v1/jobs/db");
  EXPECT_EQ(job["definition"]["secrets"]["DB_PASSWORD"], "db-password");
  EXPECT_EQ(coord_->GetJson("/v1/jobfile").dump().find("s3cret"), std::string::npos);
  EXPECT_EQ(coord_->Logs().find("s3cret"), std::string::npos);

  int64_t missing = Trigger("missing")["id"];
  json failed = WaitRun(missing);
  EXPECT_EQ(failed["state"], "failed") << failed.dump();
  EXPECT_EQ(failed["shards"][0]["outcome"], "spawn_failed");
  EXPECT_NE(failed["shards"][0]["message"].get<std::string>().find("secret API_KEY"),
            std::string::npos)
      << failed.dump();
  EXPECT_EQ(Output(missing, 0, "stdout"), "");
}

TEST_F(AgentTest, AnIdleAgentOnlyHoldsItsLongPoll) {
  StartCoordinator();
  AddAgent("a");
  WaitForAgents(1);
  double claims = coord_->Metric("jobctl_claims_total");
  double beats = coord_->Metric("jobctl_heartbeats_total");
  std::this_thread::sleep_for(seconds(6));  // the idle period being measured
  EXPECT_LE(coord_->Metric("jobctl_claims_total") - claims, 1)
      << "claims should be long-polls, not a loop";
  EXPECT_LE(coord_->Metric("jobctl_heartbeats_total") - beats, 2)
      << "an idle agent holds no leases";
}

TEST_F(AgentTest, AgentdEnrolsOnceWithTheJoinTokenAndKeepsItsOwnCredential) {
  StartCoordinator();
  auto agent_tokens = [&](const std::string& name) {
    int n = 0;
    for (const auto& t : coord_->GetJson("/v1/tokens")) {
      n += t["role"] == "agent" && t["agent"] == name && t["revoked_at"] == "";
    }
    return n;
  };
  AgentProcess& a = AddAgent("a");
  WaitForAgents(1);
  std::string credential = a.state_dir() + "/credential";
  struct stat st {};
  ASSERT_EQ(::stat(credential.c_str(), &st), 0) << "agentd kept no credential";
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(agent_tokens("a"), 1);
  // Restarted, it uses its own credential: no second enrolment (which would be refused).
  a.process().Signal(SIGTERM);
  ASSERT_EQ(a.process().Wait(seconds(20)), 0);
  agents_.clear();
  AgentProcess& again = AddAgent("a");
  coord_->Apply("[[job]]\nname = \"hello\"\nschedule = \"@yearly\"\nshell = \"echo hi\"\n");
  int64_t id = Trigger("hello")["id"];
  EXPECT_EQ(WaitRun(id, seconds(30))["state"], "succeeded");
  EXPECT_EQ(agent_tokens("a"), 1);
  EXPECT_FALSE(again.process().WaitForLog("enrolment refused", milliseconds(10)));
  // Removed by the admin and restarted, it enrols afresh with the join token.
  again.process().Signal(SIGTERM);
  ASSERT_EQ(again.process().Wait(seconds(20)), 0);
  agents_.clear();
  ASSERT_EQ(coord_->Request("DELETE", "/v1/agents/a").status, 200);
  AddAgent("a");
  WaitForAgents(1);
  EXPECT_EQ(agent_tokens("a"), 1);
}

// A shard ends while the coordinator cannot answer (stopped), and agentd is killed before it
// could report the result (a result goes only once its last output was acknowledged, and the
// request carrying "ending" waits unanswered). The next agentd reports it from its state
// dir: the run ends as the shard did, exit code and output included, in its first attempt.
TEST_F(AgentTest, AResultNotReportedWhenAgentdIsKilledIsReportedByTheNextAgentd) {
  StartCoordinator("lease_ttl = \"60s\"\nheartbeat = \"5s\"\n");
  AgentProcess& a = AddAgent("a");
  WaitForAgents(1);
  std::string flag = dir_.path() + "/go";
  coord_->Apply(
      "[[job]]\nname = \"ends\"\nschedule = \"@yearly\"\nshell = 'echo started; while [ ! -e " +
      flag + " ]; do sleep 0.05; done; echo ending; exit 3'\n");
  int64_t id = Trigger("ends")["id"];
  // Running, and its first line stored: what follows is all the agent's to keep.
  ASSERT_TRUE(
      Coordinator::Eventually([&] { return Output(id, 0, "stdout") == "started\n"; }, seconds(30)));
  coord_->process().Signal(SIGSTOP);
  std::ofstream(flag) << "";
  std::string journal = a.state_dir() + "/results/journal";
  std::string key = "\"run\":" + std::to_string(id) + ",";
  bool kept = Coordinator::Eventually(
      [&] {
        std::ifstream in(journal);
        std::string line;
        while (std::getline(in, line)) {
          if (line.rfind('+', 0) == 0 && line.find(key) != std::string::npos) return true;
        }
        return false;
      },
      seconds(10));
  a.process().Signal(SIGKILL);
  a.process().Wait(seconds(10));
  coord_->process().Signal(SIGCONT);
  ASSERT_TRUE(kept) << "agentd never wrote the result to " << journal;
  agents_.clear();
  AddAgent("a");
  json done = WaitRun(id, seconds(30));
  ASSERT_EQ(done["state"], "failed") << done.dump();
  EXPECT_EQ(done["shards"][0]["attempt"], 1) << done.dump();
  EXPECT_EQ(done["shards"][0]["exit_code"], 3) << done.dump();
  EXPECT_EQ(Output(id, 0, "stdout"), "started\nending\n");
}

TEST_F(AgentTest, AgentdRunsWithAnAdminMadeAgentTokenAndRefusesAnotherAgentsName) {
  StartCoordinator();
  http::HttpResponse made = coord_->Request(
      "POST", "/v1/tokens",
      json{{"role", "agent"}, {"agent", "web-1"}, {"labels", {{"role", "web"}}}}.dump());
  ASSERT_EQ(made.status, 201) << made.body;
  std::string token = json::parse(made.body)["token"];
  agents_.push_back(std::make_unique<AgentProcess>(*coord_, dir_, "web-1",
                                                   std::vector<std::string>{"--labels", "role=web"},
                                                   "", Launch{}, token));
  WaitForAgents(1);
  EXPECT_NE(::access((agents_.back()->state_dir() + "/credential").c_str(), F_OK), 0)
      << "an agent token needs no enrolment";
  coord_->Apply(
      "[[job]]\nname = \"hello\"\nschedule = \"@yearly\"\non = [\"role=web\"]\n"
      "shell = \"echo hi\"\n");
  int64_t id = Trigger("hello")["id"];
  json run = WaitRun(id, seconds(30));
  EXPECT_EQ(run["state"], "succeeded");
  EXPECT_EQ(run["shards"][0]["agent"], "web-1");
  // The same token under another name is refused, and says so.
  AgentProcess& wrong = *agents_.emplace_back(std::make_unique<AgentProcess>(
      *coord_, dir_, "web-2", std::vector<std::string>{}, "", Launch{}, token));
  EXPECT_TRUE(wrong.process().WaitForLog("this credential is agent", seconds(20))) << wrong.Logs();
  for (const auto& agent : coord_->GetJson("/v1/agents")) EXPECT_NE(agent["name"], "web-2");
}

}  // namespace
}  // namespace jobctl::testing
