// Wall-clock jumps of one process at a time, with libfaketime (fake_wall_clock.h): the
// monotonic and boot-time clocks stay real, as they do when NTP or an admin steps the clock.
//
// Coordinator forward: instants skipped over go through each job's misfire policy (fire-once
// makes one run, skip records them, fire-all makes at most misfire_cap runs and records the
// rest), every instant is either a run or counted in a recorded miss, none twice, and the
// catch-up is bounded in time and runs. Coordinator backward: nothing is fired again, and
// firing resumes once the clock passes the last fired instant (also when it is stepped
// forward again). Agent either way mid-lease: the lease is kept (it is timed on the boot-time
// clock), nothing is re-granted, the agent does not crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <ctime>
#include <map>
#include <set>
#include <thread>

#include "fault/env/env_fault_test.h"
#include "fault/env/fake_wall_clock.h"

namespace jobctl::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

constexpr int64_t kEveryMs = 10'000;

class ClockJumpTest : public EnvFaultTest {
 protected:
  void SetUp() override {
    if (std::string why = FakeWallClock::Unavailable(); !why.empty()) GTEST_SKIP() << why;
  }

  struct Fires {
    std::vector<int64_t> scheduled;      // instants of schedule runs, ascending
    std::map<int64_t, int64_t> late_ms;  // instant -> how late its run was created
    int64_t missed = 0;                  // counted in recorded misses
    int64_t last_missed_ms = -1;
  };
  // What a job's instants after `after_ms` became.
  Fires FiresOf(const std::string& job, int64_t after_ms) {
    Fires f;
    for (const json& r : coord_->Runs(job, 10'000)) {
      if (r["reason"] != "schedule") continue;
      int64_t at = UnixMs(r["scheduled_at"]);
      if (at <= after_ms) continue;
      f.scheduled.push_back(at);
      f.late_ms[at] = UnixMs(r["created_at"]) - at;
    }
    std::sort(f.scheduled.begin(), f.scheduled.end());
    for (const json& m : coord_->GetJson("/v1/misses?job=" + job)) {
      if (m["last_ms"].get<int64_t>() <= after_ms) continue;
      f.missed += m["count"].get<int64_t>();
      f.last_missed_ms = std::max(f.last_missed_ms, m["last_ms"].get<int64_t>());
    }
    return f;
  }
  int64_t LastFired(const std::string& job) {
    Fires f = FiresOf(job, 0);
    return f.scheduled.empty() ? -1 : f.scheduled.back();
  }
};

TEST_F(ClockJumpTest, CoordinatorForwardJumpFollowsEachMisfirePolicyWithABoundedCatchUp) {
  FakeWallClock clock(dir_.path() + "/coordinator.faketime", JOBCTL_BIN);
  // A grace of one period: when the jump is noticed exactly one instant (the newest) is on
  // time, so each policy's outcome is exact (that one fires as usual, older ones are missed).
  StartCoordinator("misfire_grace = \"10s\"\n", "127.0.0.1", clock.launch());
  std::string jobs;
  for (const char* policy : {"fire-once", "skip", "fire-all"}) {
    jobs += std::string("[[job]]\nname = \"") + policy + "\"\nschedule = \"@every 10s\"\n" +
            "overlap = \"allow\"\nmisfire = \"" + policy +
            "\"\nmisfire_cap = 5\nshell = \"true\"\n";
  }
  // The same policies on a 20-minute grid starting 5 minutes from now: the jump skips three
  // of its instants, and none of them can be on time.
  int64_t anchor_s =
      std::chrono::duration_cast<seconds>(std::chrono::system_clock::now().time_since_epoch())
          .count() +
      300;
  char anchor[32];
  std::time_t t = anchor_s;
  std::strftime(anchor, sizeof anchor, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  for (const char* policy : {"fire-once", "skip", "fire-all"}) {
    jobs += std::string("[[job]]\nname = \"") + policy + "-20m\"\nschedule = \"@every 20m\"\n" +
            "anchor = \"" + anchor + "\"\noverlap = \"allow\"\nmisfire = \"" + policy +
            "\"\nmisfire_cap = 2\nshell = \"true\"\n";
  }
  coord_->Apply(jobs);
  std::map<std::string, int64_t> before;
  ASSERT_TRUE(Coordinator::Eventually(
      [&] {
        for (const char* job : {"fire-once", "skip", "fire-all"}) before[job] = LastFired(job);
        return before["fire-once"] > 0 && before["skip"] > 0 && before["fire-all"] > 0;
      },
      seconds(15)))
      << "no fire before the jump";
  // Runs are created up to early_dispatch (1 s) ahead of their instants: the jump comes once
  // those instants have passed, so that it lands early in a period, as the grace assumes.
  int64_t latest = std::max({before["fire-once"], before["skip"], before["fire-all"]});
  ASSERT_TRUE(Coordinator::Eventually(
      [&] {
        return std::chrono::duration_cast<milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count() > latest + 200;
      },
      seconds(5)));
  // The faked clock is in effect: runs were created at the real time so far.
  int64_t real_now =
      std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  EXPECT_LT(std::abs(before["fire-once"] - real_now), 15'000);

  clock.Jump(3600);
  auto jumped = Clock::now();
  // The catch-up happens at the next wake-up (the fire loop sleeps at most a second) and at
  // once for all jobs.
  ASSERT_TRUE(Coordinator::Eventually(
      [&] {
        return FiresOf("fire-once", before["fire-once"]).missed > 0 &&
               FiresOf("skip", before["skip"]).missed > 0 &&
               FiresOf("fire-all", before["fire-all"]).missed > 0;
      },
      seconds(15)))
      << "no catch-up after the jump";
  double noticed_s = std::chrono::duration<double>(Clock::now() - jumped).count();
  // One more period, so that on-time firing after the jump shows too: each job's next run
  // after the newest instant of its catch-up.
  std::map<std::string, int64_t> caught;
  for (const char* job : {"fire-once", "skip", "fire-all"}) {
    Fires f = FiresOf(job, before[job]);
    caught[job] = f.scheduled.empty() ? before[job] : f.scheduled.back();
  }
  ASSERT_TRUE(Coordinator::Eventually(
      [&] {
        for (const auto& [job, last] : caught) {
          if (FiresOf(job, last).scheduled.empty()) return false;
        }
        return true;
      },
      seconds(15)))
      << "no on-time fire one period after the catch-up";

  for (const char* job : {"fire-once", "skip", "fire-all"}) {
    Fires f = FiresOf(job, before[job]);
    ASSERT_FALSE(f.scheduled.empty()) << job;
    int64_t last = std::max(f.scheduled.back(), f.last_missed_ms);
    int64_t instants = (last - before[job]) / kEveryMs;
    std::set<int64_t> unique(f.scheduled.begin(), f.scheduled.end());
    // The catch-up: runs created together with the first run after the jump.
    int64_t first_created = INT64_MAX;
    for (const auto& [at, ms] : f.late_ms) first_created = std::min(first_created, at + ms);
    int late = 0, burst = 0;
    for (const auto& [at, ms] : f.late_ms) {
      late += ms > 10'000 ? 1 : 0;
      burst += at + ms - first_created < 1000 ? 1 : 0;
    }
    std::cout << job << ": " << instants << " instants after the jump: " << burst
              << " runs at the catch-up (" << late << " of them for missed instants), " << f.missed
              << " recorded as missed, " << f.scheduled.size() << " runs in all; "
              << "caught up " << noticed_s << " s after the jump\n";
    EXPECT_EQ(unique.size(), f.scheduled.size()) << job << ": an instant fired twice";
    EXPECT_EQ(static_cast<int64_t>(f.scheduled.size()) + f.missed, instants)
        << job << ": an instant is neither a run nor a recorded miss";
    EXPECT_GE(instants, 3600'000 / kEveryMs);
    // fire-once: the on-time run stands for all the missed ones; skip: only the on-time run;
    // fire-all: misfire_cap (5) runs for missed instants, plus the on-time one.
    bool all = std::string(job) == "fire-all";
    EXPECT_EQ(late, all ? 5 : 0) << job;
    EXPECT_EQ(burst, all ? 6 : 1) << job;
  }
  EXPECT_LT(noticed_s, 3) << "the coordinator noticed the jump late";
  // 20-minute grid: instants at +5, +25 and +45 minutes were jumped over.
  for (const char* job : {"fire-once-20m", "skip-20m", "fire-all-20m"}) {
    Fires f = FiresOf(job, 0);
    std::cout << job << ": " << f.scheduled.size() << " runs, " << f.missed
              << " recorded as missed\n";
    std::string policy(job);
    size_t runs = policy == "fire-once-20m" ? 1 : policy == "skip-20m" ? 0 : 2;
    EXPECT_EQ(f.scheduled.size(), runs) << job;
    EXPECT_EQ(static_cast<int64_t>(f.scheduled.size()) + f.missed, 3) << job;
    for (const auto& [at, ms] : f.late_ms) EXPECT_GT(ms, 10 * 60'000) << job;
    if (policy == "fire-once-20m" && !f.scheduled.empty()) {
      EXPECT_EQ(f.scheduled.back(), (anchor_s + 40 * 60) * 1000) << "not the latest instant";
    }
  }
  CheckInvariants();
}

TEST_F(ClockJumpTest, CoordinatorBackwardJumpFiresNothingTwiceAndResumesWhenTheClockPassesOn) {
  FakeWallClock clock(dir_.path() + "/coordinator.faketime", JOBCTL_BIN);
  UseEventLogs();
  StartCoordinator("misfire_grace = \"2s\"\n", "127.0.0.1", clock.launch());
  coord_->Apply(
      "[[job]]\nname = \"tick\"\nschedule = \"@every 10s\"\noverlap = \"allow\"\n"
      "shell = \"true\"\n");
  ASSERT_TRUE(Coordinator::Eventually([&] { return LastFired("tick") > 0; }, seconds(15)));
  int64_t last = LastFired("tick");

  // Back 25 s: the last two or three instants come round again on the clock; none may fire
  // again, and the next new one fires when the clock reaches it.
  clock.Jump(-25);
  auto back = Clock::now();
  ASSERT_TRUE(Coordinator::Eventually([&] { return LastFired("tick") > last; }, seconds(50)))
      << "firing did not resume after the clock went back";
  double resumed_s = std::chrono::duration<double>(Clock::now() - back).count();
  Fires after = FiresOf("tick", 0);
  std::set<int64_t> unique(after.scheduled.begin(), after.scheduled.end());
  EXPECT_EQ(unique.size(), after.scheduled.size()) << "an instant fired twice";
  EXPECT_EQ(after.missed, 0);
  EXPECT_EQ(LastFired("tick"), last + kEveryMs) << "not the next instant";
  std::cout << "clock back 25 s: next fire " << resumed_s << " s later (the instant after the last "
            << "fired one, once the clock got there)\n";
  EXPECT_GE(resumed_s, 25 - 1);

  // Back an hour, then stepped forward again (a wrong clock corrected): nothing in the hour
  // fires twice, and firing resumes right after the correction, not an hour later.
  last = LastFired("tick");
  clock.Jump(-25 - 3600);
  std::this_thread::sleep_for(seconds(12));
  EXPECT_EQ(LastFired("tick"), last) << "fired while the clock was behind";
  clock.Jump(-25);
  auto corrected = Clock::now();
  ASSERT_TRUE(Coordinator::Eventually([&] { return LastFired("tick") > last; }, seconds(25)))
      << "firing did not resume after the clock was corrected";
  EXPECT_LT(Clock::now() - corrected, seconds(10 + 3)) << "resumed late after the correction";
  std::cout << "clock back an hour and corrected: firing resumed "
            << std::chrono::duration<double>(Clock::now() - corrected).count()
            << " s after the correction\n";
  Fires all = FiresOf("tick", 0);
  std::set<int64_t> all_unique(all.scheduled.begin(), all.scheduled.end());
  EXPECT_EQ(all_unique.size(), all.scheduled.size()) << "an instant fired twice";
  CheckInvariants();
}

TEST_F(ClockJumpTest, AgentJumpsEitherWayMidLeaseKeepTheLease) {
  UseEventLogs();
  StartCoordinator("lease_ttl = \"3s\"\nheartbeat = \"1s\"\n");
  FakeWallClock clock(dir_.path() + "/agent.faketime", AGENTD_BIN);
  AgentProcess& agent = AddAgent("a", {}, "", clock.launch());
  WaitForAgents(1);
  std::string started = dir_.path() + "/started";
  coord_->Apply(
      "[[job]]\nname = \"steady\"\nschedule = \"@yearly\"\n"
      "shell = \"" +
      JobPids() + "touch " + started +
      "; i=0; while [ $i -lt 200 ]; do "
      "echo tick $i; i=$((i+1)); sleep 0.1; done\"\n");
  int64_t id = Trigger("steady")["id"];
  ASSERT_TRUE(
      Coordinator::Eventually([&] { return ::access(started.c_str(), F_OK) == 0; }, seconds(15)));
  json first = GetRun(id)["shards"][0];
  // Forward an hour for two TTLs, then an hour behind the real time for two TTLs, then back.
  clock.Jump(3600);
  std::this_thread::sleep_for(seconds(6));
  clock.Jump(-3600);
  std::this_thread::sleep_for(seconds(6));
  clock.Jump(0);
  json done = WaitRun(id, seconds(60));
  ASSERT_EQ(done["state"], "succeeded") << done.dump();
  EXPECT_EQ(done["shards"][0]["attempt"], 1) << "the shard was re-granted";
  EXPECT_EQ(done["shards"][0]["token"], first["token"]);
  EXPECT_EQ(done["shards"][0]["agent"], "a");
  EXPECT_TRUE(agent.process().running()) << "the agent died";
  EXPECT_EQ(agent.Logs().find("lease lost"), std::string::npos) << agent.Logs();
  std::string want;
  for (int i = 0; i < 200; ++i) want += "tick " + std::to_string(i) + "\n";
  EXPECT_EQ(Output(id, 0, "stdout"), want);
  // The agent's faked clock was in effect: its chunks carry its (jumped) wall time.
  json chunks = coord_->GetJson("/v1/runs/" + std::to_string(id) + "/logs?limit=10000");
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const json& c : chunks["chunks"]) {
    int64_t at = UnixMs(c["at"]);
    lo = std::min(lo, at);
    hi = std::max(hi, at);
  }
  std::cout << "agent clock jumps: chunk times spread over " << (hi - lo) / 1000
            << " s of a 20 s run\n";
  EXPECT_GT(hi - lo, 3'000'000) << "libfaketime did not move the agent's wall clock";
  CheckInvariants();
}

}  // namespace
}  // namespace jobctl::testing
