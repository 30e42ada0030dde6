// An agent cut off from the coordinator: agentd runs in a network namespace of the test's own,
// joined by a veth pair; the coordinator listens on this side's end. While the agent runs a
// shard the link is cut (both ways: link down; one way: iptables in the namespace drops the
// coordinator's replies, or the agent's requests), kept cut past the lease TTL, then healed.
//
// What must hold (research/reliability.md N1, N2; invariants I3, I4, I8, I9): the cut-off
// agent kills its child by its own lease deadline (self-fencing, measured from the cut, and
// before the shard runs anywhere else), the shard runs on the other agent within TTL +
// heartbeat + 1 s of the cut, nothing the cut-off agent sends with its old token after healing
// is accepted, and no run is left stuck.
#include <gtest/gtest.h>
#include <signal.h>
#include <time.h>

#include <functional>
#include <thread>

#include "fault/env/env_fault_test.h"

namespace jobctl::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

constexpr double kTtlS = 3, kHeartbeatS = 1;

class PartitionTest : public EnvFaultTest {
 protected:
  void SetUp() override {
    if (std::string why = VethNamespace::Unavailable(); !why.empty()) GTEST_SKIP() << why;
    netns_ = std::make_unique<VethNamespace>();
    UseEventLogs();
    StartCoordinator("lease_ttl = \"3s\"\nheartbeat = \"1s\"\n", netns_->host_address());
  }

  // Runs the scenario with `cut` and `heal` as the fault; `what` names it in the figures.
  void CutOffMidShardThenHeal(const std::string& what, const std::function<void()>& cut,
                              const std::function<void()>& heal);
  // The same with one iptables rule in the namespace: appended to cut, deleted to heal.
  void CutOffByRule(const std::string& what, const std::vector<std::string>& rule) {
    auto with = [&](const char* op) {
      std::vector<std::string> args = {op};
      args.insert(args.end(), rule.begin(), rule.end());
      return args;
    };
    CutOffMidShardThenHeal(
        what, [&] { netns_->Iptables(with("-A")); }, [&] { netns_->Iptables(with("-D")); });
  }
};

void PartitionTest::CutOffMidShardThenHeal(const std::string& what,
                                           const std::function<void()>& cut,
                                           const std::function<void()>& heal) {
  AgentProcess& island = AddAgent("island", {"--labels", "zone=island"}, "", netns_->launch());
  WaitForAgents(1);
  std::string pidfile = dir_.path() + "/pid";
  coord_->Apply(
      "[[job]]\nname = \"long\"\nschedule = \"@yearly\"\nroute = \"failover\"\n"
      "shell = \"" +
      JobPids() + "echo $$ > " + pidfile +
      "-$JOB_ATTEMPT; i=0; "
      "while [ $i -lt 600 ]; do echo attempt $JOB_ATTEMPT tick $i; i=$((i+1)); "
      "sleep 0.1; done\"\n");
  int64_t id = Trigger("long")["id"];
  ASSERT_TRUE(
      Coordinator::Eventually([&] { return !ReadFile(pidfile + "-1").empty(); }, seconds(15)))
      << "the shard did not start on the agent in the namespace";
  pid_t first = std::stoi(ReadFile(pidfile + "-1"));
  json before = GetRun(id);
  ASSERT_EQ(before["shards"][0]["agent"], "island");
  int64_t old_token = before["shards"][0]["token"];
  AddAgent("mainland");
  WaitForAgents(2);
  // Two more contacts from the island (heartbeats renewing its lease), so the cut falls
  // between two renewals of an agent in its steady state.
  auto island_seen = [&] {
    for (const auto& a : coord_->GetJson("/v1/agents")) {
      if (a["name"] == "island") return a["last_seen"].get<std::string>();
    }
    return std::string();
  };
  for (int contact = 0; contact < 2; ++contact) {
    std::string seen = island_seen();
    ASSERT_TRUE(Coordinator::Eventually([&] { return island_seen() != seen; }, seconds(5)))
        << "the island agent stopped renewing before the cut";
  }

  timespec mono{};
  clock_gettime(CLOCK_MONOTONIC, &mono);
  cut();
  auto cut_at = Clock::now();
  double fenced_s = -1, regranted_s = -1;
  std::string attempt1_at_regrant;
  while (Clock::now() - cut_at < seconds(15) && (fenced_s < 0 || regranted_s < 0)) {
    double t = std::chrono::duration<double>(Clock::now() - cut_at).count();
    if (fenced_s < 0 && ::kill(first, 0) != 0) fenced_s = t;
    if (regranted_s < 0) {
      json shard = GetRun(id)["shards"][0];
      if (shard["agent"] == "mainland" && shard["state"] == "running") {
        regranted_s = std::chrono::duration<double>(Clock::now() - cut_at).count();
        attempt1_at_regrant = Output(id, 0, "stdout", 1);
      }
    }
    std::this_thread::sleep_for(milliseconds(10));
  }
  // Past twice the TTL, then heal: the agent comes back with nothing but stale news.
  std::this_thread::sleep_until(cut_at + seconds(static_cast<int>(2 * kTtlS)));
  heal();
  auto healed_at = Clock::now();

  std::cout << what << ": child killed " << fenced_s << " s after the cut (agent deadline "
            << kTtlS * 0.99 - 1 << " s after its last renewal), shard running elsewhere after "
            << regranted_s << " s (bound " << kTtlS + kHeartbeatS + 1 << " s)\n";
  ASSERT_GE(fenced_s, 0) << "the cut-off agent never killed its child";
  ASSERT_GE(regranted_s, 0) << "the shard was never re-granted";
  EXPECT_LE(fenced_s, kTtlS * 0.99 - 1 + 0.5) << "self-fencing later than the agent's own deadline";
  EXPECT_LT(fenced_s, regranted_s) << "two holders ran the shard at once";
  EXPECT_LE(regranted_s, kTtlS + kHeartbeatS + 1);

  json now = GetRun(id)["shards"][0];
  EXPECT_EQ(now["attempt"], 2);
  EXPECT_GT(now["token"].get<int64_t>(), old_token);
  // After healing the island reports its lost attempt with the old token: refused.
  EXPECT_TRUE(island.process().WaitForLog("stale", seconds(15)) ||
              island.process().WaitForLog("409", seconds(1)))
      << "the cut-off agent never heard that its token is stale";
  std::this_thread::sleep_until(healed_at + seconds(3));  // anything late has arrived by now
  json after = GetRun(id)["shards"][0];
  EXPECT_EQ(after["agent"], "mainland");
  EXPECT_EQ(after["attempt"], 2);
  EXPECT_EQ(after["token"], now["token"]);
  EXPECT_EQ(after["state"], "running");
  EXPECT_EQ(Output(id, 0, "stdout", 1), attempt1_at_regrant)
      << "output of the old attempt was accepted after the re-grant";
  TestAgent ghost(*coord_, "island");
  json old = {{"run", id}, {"shard", 0}, {"attempt", 1}, {"token", old_token}};
  EXPECT_EQ(ghost.Finish(old, 0).status, 409);
  EXPECT_EQ(ghost.Log(old, 999, "stdout", "late").status, 409);
  EXPECT_TRUE(island.process().running()) << "the cut-off agent died";

  // No run is stuck: canceling ends it at once, and the healed agent takes new work.
  coord_->PostJson("/v1/runs/" + std::to_string(id) + "/cancel", json::object());
  json ended = WaitRun(id, seconds(20));
  EXPECT_FALSE(ended["finished_at"].get<std::string>().empty()) << ended.dump();
  WaitForAgents(2);
  std::string jobfile = coord_->GetJson("/v1/jobfile").value("text", "");
  coord_->Apply(jobfile +
                "[[job]]\nname = \"after\"\nschedule = \"@yearly\"\n"
                "on = [\"zone=island\"]\nshell = \"" +
                JobPids() + "echo back\"\n");
  json back = WaitRun(Trigger("after")["id"], seconds(30));
  EXPECT_EQ(back["state"], "succeeded") << "the healed agent takes no new work: " << back.dump();

  // The checker over every process's events and the store: I1-I8, the cut counted as the
  // island's failure for I8.
  fault::Report report =
      CheckInvariants({.kills = {{"island", int64_t{mono.tv_sec} * 1'000'000'000 + mono.tv_nsec}}});
  for (const fault::Failover& f : report.failovers) {
    std::cout << what << ": checker: lease of " << f.agent << " ended " << f.ended_ms
              << " ms after the cut, shard granted again after " << f.regranted_ms << " ms\n";
  }
  for (const fault::AttemptOverlap& o : report.overlaps) {
    ADD_FAILURE() << what << ": attempts " << o.old_attempt << " and " << o.new_attempt
                  << " ran at once for " << o.ms << " ms";
  }
}

TEST_F(PartitionTest, LinkDownBothWaysFencesTheAgentAndHandsTheShardOver) {
  CutOffMidShardThenHeal(
      "link down", [&] { netns_->SetLink(false); }, [&] { netns_->SetLink(true); });
}

TEST_F(PartitionTest, DroppedRepliesFenceTheAgentAndHandTheShardOver) {
  // Inside the namespace: what the coordinator sends never arrives.
  CutOffByRule("replies dropped", {"INPUT", "-s", netns_->host_address(), "-j", "DROP"});
}

TEST_F(PartitionTest, DroppedRequestsFenceTheAgentAndHandTheShardOver) {
  // Inside the namespace: what the agent sends never leaves.
  CutOffByRule("requests dropped", {"OUTPUT", "-d", netns_->host_address(), "-j", "DROP"});
}

}  // namespace
}  // namespace jobctl::testing
