// The schedule kinds beyond cron and @every, against the real `jobctl serve`: a random delay
// per fire (jitter), one-shot @at jobs, fixed-delay @delay jobs, and manual runs deferred with
// "at"/"in" (jobctl trigger --at/--in). Agents are test agents speaking the protocol by hand,
// so each test decides when a run ends.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>

#include "model/time_format.h"
#include "testlib/cluster.h"
#include "testlib/coordinator_fixture.h"

namespace jobctl::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

int64_t NowMs() {
  return std::chrono::duration_cast<milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class ScheduleKindsTest : public CoordinatorFixture {
 protected:
  json Run(int64_t id) { return coord_->GetJson("/v1/runs/" + std::to_string(id)); }
  json Job(const std::string& name) { return coord_->GetJson("/v1/jobs/" + name); }
  http::HttpResponse Trigger(const std::string& job, const json& body) {
    return coord_->Request("POST", "/v1/jobs/" + job + "/trigger", body.dump());
  }
};

// jitter = "2s": every fire is a run created at its instant that records the delay it drew
// (0 to 2 s), and no shard of it is granted before the instant plus that delay. The delays
// differ from fire to fire.
TEST_F(ScheduleKindsTest, EachFireOfAJitteredJobWaitsItsOwnStoredDelayBeforeAnyShardStarts) {
  Start();
  coord_->Apply(
      "[[job]]\nname = \"spread\"\nschedule = \"*/1 * * * * *\"\nshell = \"true\"\n"
      "overlap = \"allow\"\njitter = \"2s\"\n");
  TestAgent agent(*coord_, "a");
  std::set<int64_t> delays;
  for (int granted = 0; granted < 5;) {
    std::vector<json> claimed = agent.Claim(5, 5000);
    ASSERT_FALSE(claimed.empty()) << "no fire of the jittered job was handed out";
    for (const json& a : claimed) {
      json run = Run(a["run"].get<int64_t>());
      ASSERT_TRUE(run["jitter_ms"].is_number()) << run.dump();
      int64_t jitter = run["jitter_ms"].get<int64_t>();
      EXPECT_GE(jitter, 0);
      EXPECT_LE(jitter, 2000);
      int64_t not_before = UnixMs(run["not_before"].get<std::string>());
      EXPECT_EQ(not_before, UnixMs(run["scheduled_at"].get<std::string>()) + jitter) << run.dump();
      EXPECT_GE(UnixMs(run["shards"][0]["started_at"].get<std::string>()), not_before)
          << "granted before its delay ended: " << run.dump();
      delays.insert(jitter);
      ASSERT_EQ(agent.Finish(a, 0).status, 200);
      ++granted;
    }
  }
  EXPECT_GE(delays.size(), 2u) << "every fire drew the same delay";
}

// "@at INSTANT": the job's next fire is that instant; it fires once, then has none, and its
// run stays listed.
TEST_F(ScheduleKindsTest, AnAtJobFiresOnceAtItsInstantAndThenHasNoNextFire) {
  Start();
  const int64_t at = (NowMs() / 1000 + 3) * 1000;
  const std::string when = FormatUtc(FromUnixMs(at));
  coord_->Apply("[[job]]\nname = \"once\"\nschedule = \"@at " + when + "\"\nshell = \"true\"\n");
  EXPECT_EQ(Job("once")["next_fire"], when);
  TestAgent agent(*coord_, "a");
  std::vector<json> a = agent.ClaimUpTo(1, 8000);
  ASSERT_EQ(a.size(), 1u);
  json run = Run(a[0]["run"].get<int64_t>());
  EXPECT_EQ(run["scheduled_at"], when);
  EXPECT_EQ(run["reason"], "schedule");
  EXPECT_EQ(Job("once")["next_fire"], "");
  ASSERT_EQ(agent.Finish(a[0], 0).status, 200);
  EXPECT_TRUE(agent.Claim(1, 1500).empty());
  EXPECT_EQ(coord_->Runs("once").size(), 1u);
  EXPECT_EQ(Job("once")["next_fire"], "");
}

// "@delay 1s": no fire is pending while a run is active; the next fire is one delay after the
// run ended (not after it started), and it survives a restart of the coordinator.
TEST_F(ScheduleKindsTest, ADelayJobFiresOneDelayAfterItsLastRunEndedAcrossARestart) {
  Start();
  coord_->Apply("[[job]]\nname = \"after\"\nschedule = \"@delay 1s\"\nshell = \"true\"\n");
  TestAgent agent(*coord_, "a");
  std::vector<json> first = agent.ClaimUpTo(1, 5000);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(Job("after")["next_fire"], "") << "a fire is pending while the run is active";
  // The run takes 1.5 s: longer than the delay, so a fixed rate would have fired meanwhile.
  std::this_thread::sleep_for(milliseconds(1500));
  EXPECT_EQ(coord_->Runs("after").size(), 1u);
  ASSERT_EQ(agent.Finish(first[0], 0).status, 200);
  json ended = Run(first[0]["run"].get<int64_t>());
  int64_t finished = UnixMs(ended["finished_at"].get<std::string>());
  std::string next = Job("after")["next_fire"].get<std::string>();
  ASSERT_NE(next, "");
  EXPECT_GE(UnixMs(next), finished + 1000);
  EXPECT_LE(UnixMs(next), finished + 1100);

  coord_->Stop();
  coord_->Start();
  EXPECT_EQ(Job("after")["next_fire"], next) << "the next fire did not survive the restart";
  TestAgent again(*coord_, "a");
  std::vector<json> second = again.ClaimUpTo(1, 5000);
  ASSERT_EQ(second.size(), 1u);
  json run = Run(second[0]["run"].get<int64_t>());
  EXPECT_EQ(run["scheduled_at"], next);
  EXPECT_EQ(coord_->Runs("after").size(), 2u);
}

// After an outage longer than misfire_grace, a fixed-delay job with misfire = "skip" records
// its one overdue fire as missed and fires again one delay after the coordinator is back.
TEST_F(ScheduleKindsTest, ADelayJobsFireMissedInAnOutageIsSkippedAndTheNextComesADelayLater) {
  Start("misfire_grace = \"1s\"\n");
  coord_->Apply(
      "[[job]]\nname = \"after\"\nschedule = \"@delay 2s\"\nshell = \"true\"\n"
      "misfire = \"skip\"\n");
  int64_t due = UnixMs(Job("after")["next_fire"].get<std::string>());
  coord_->Kill9();
  // The outage: the fire comes due and the grace passes while no coordinator runs.
  std::this_thread::sleep_for(milliseconds(std::max<int64_t>(due + 1500 - NowMs(), 0)));
  int64_t back = NowMs();
  coord_->Start();
  json misses = coord_->GetJson("/v1/misses?job=after");
  ASSERT_EQ(misses.size(), 1u) << misses.dump();
  EXPECT_EQ(misses[0]["first_ms"], due);
  EXPECT_EQ(misses[0]["reason"], "misfire=skip");
  EXPECT_TRUE(coord_->Runs("after").empty());
  int64_t next = UnixMs(Job("after")["next_fire"].get<std::string>());
  EXPECT_GE(next, back + 2000);
  EXPECT_LE(next, NowMs() + 2000);
}

// An @at instant that passes while the coordinator is down follows the misfire policy:
// fire-once runs it late (the run keeps its instant), skip records it missed; neither job
// has a next fire afterwards.
TEST_F(ScheduleKindsTest, AnAtInstantMissedInAnOutageRunsLateOrIsRecordedMissedByPolicy) {
  Start("misfire_grace = \"1s\"\n");
  const int64_t at = (NowMs() / 1000 + 3) * 1000;
  const std::string when = FormatUtc(FromUnixMs(at));
  coord_->Apply("[[job]]\nname = \"late\"\nschedule = \"@at " + when +
                "\"\nshell = \"true\"\n"
                "[[job]]\nname = \"dropped\"\nschedule = \"@at " +
                when +
                "\"\nshell = \"true\"\n"
                "misfire = \"skip\"\n");
  coord_->Kill9();
  // The outage: the instant and the grace pass while no coordinator runs.
  std::this_thread::sleep_for(milliseconds(std::max<int64_t>(at + 1500 - NowMs(), 0)));
  coord_->Start();
  json late = coord_->Runs("late");
  ASSERT_EQ(late.size(), 1u) << late.dump();
  EXPECT_EQ(late[0]["scheduled_at"], when);
  EXPECT_GT(UnixMs(late[0]["created_at"].get<std::string>()), at + 1000);
  EXPECT_TRUE(coord_->Runs("dropped").empty());
  json misses = coord_->GetJson("/v1/misses?job=dropped");
  ASSERT_EQ(misses.size(), 1u) << misses.dump();
  EXPECT_EQ(misses[0]["first_ms"], at);
  EXPECT_EQ(misses[0]["reason"], "misfire=skip");
  EXPECT_EQ(Job("late")["next_fire"], "");
  EXPECT_EQ(Job("dropped")["next_fire"], "");
}

// A trigger with "in" (or "at") makes a pending run at once, which starts at its time: a
// restart in between keeps it, and a deferred run canceled before its time never starts.
// Times in the past, unreadable ones and both at once are refused with 400.
TEST_F(ScheduleKindsTest, ADeferredTriggerWaitsForItsTimeSurvivesARestartAndCanBeCanceled) {
  Start();
  coord_->Apply("[[job]]\nname = \"later\"\nschedule = \"@yearly\"\nshell = \"true\"\n");
  http::HttpResponse soon = Trigger("later", {{"in", "3s"}});
  ASSERT_EQ(soon.status, 201) << soon.body;
  json s = json::parse(soon.body);
  EXPECT_EQ(s["state"], "pending");
  EXPECT_EQ(s["reason"], "manual");
  int64_t start = UnixMs(s["not_before"].get<std::string>());
  EXPECT_EQ(s["scheduled_at"], s["not_before"]);
  // "in" counts from the request's arrival, a moment before the run's creation.
  EXPECT_NEAR(start - UnixMs(s["created_at"].get<std::string>()), 3000, 200) << s.dump();
  http::HttpResponse far = Trigger("later", {{"at", FormatUtc(FromUnixMs(NowMs() + 3'600'000))}});
  ASSERT_EQ(far.status, 201) << far.body;
  int64_t far_id = json::parse(far.body)["id"].get<int64_t>();
  http::HttpResponse cancel =
      coord_->Request("POST", "/v1/runs/" + std::to_string(far_id) + "/cancel");
  ASSERT_EQ(cancel.status, 200) << cancel.body;
  EXPECT_EQ(json::parse(cancel.body)["state"], "canceled");

  for (const json& bad :
       {json{{"in", "soon"}}, json{{"at", "2000-01-01T00:00:00Z"}}, json{{"at", "tomorrow"}},
        json{{"in", "1s"}, {"at", "2030-01-01T00:00:00Z"}}, json{{"in", "400d"}}}) {
    http::HttpResponse r = Trigger("later", bad);
    EXPECT_EQ(r.status, 400) << bad.dump() << " -> " << r.body;
  }

  coord_->Stop();
  coord_->Start();
  TestAgent agent(*coord_, "a");
  std::vector<json> a = agent.ClaimUpTo(1, 8000);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0]["run"], s["id"]);
  json run = Run(s["id"].get<int64_t>());
  EXPECT_GE(UnixMs(run["shards"][0]["started_at"].get<std::string>()), start) << run.dump();
  ASSERT_EQ(agent.Finish(a[0], 0).status, 200);
  EXPECT_TRUE(agent.Claim(1, 1000).empty()) << "the canceled deferred run was handed out";
  EXPECT_EQ(Run(far_id)["state"], "canceled");
  EXPECT_EQ(Run(s["id"].get<int64_t>())["state"], "succeeded");
}

}  // namespace
}  // namespace jobctl::testing
