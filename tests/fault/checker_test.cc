// The checker must have teeth: each test starts from a small consistent history (a job that
// fired three times, each run's one shard leased, run by a probe, logged and reported), which
// must pass, breaks one invariant by hand, and expects that violation to be reported, naming
// what it is about.
#include "fault/checker.h"

#include <gtest/gtest.h>

#include "fault/probe_output.h"
#include "wire/job_json.h"

namespace jobctl::fault {
namespace {

using nlohmann::json;

constexpr int64_t kT0 = 1'700'000'000'000;  // a whole second (Unix ms)
constexpr int kLines = 3;

struct Line {
  std::string src;
  std::string ev;
  int64_t t_ms;  // test time: mono = t ms, wall = kT0 + t
  json fields;
};

class Scenario {
 public:
  Scenario() {
    Job job;
    job.name = "tick";
    job.schedule = "@every 1s";
    job.overlap = Overlap::kAllow;
    Result<JobView> view = MakeJobView(1, job, kT0 + 3000);
    EXPECT_TRUE(view.ok()) << view.status().ToString();
    store.jobs["tick"] = *view;
    Coord("loading", 0, {});
    Coord("loaded", 1,
          {{"ttl_ms", 3000}, {"heartbeat_ms", 1000}, {"leases", 0}, {"last_token", 0}});
    Coord("scheduled", 2, {{"job", "tick"}, {"next_fire_ms", kT0}});
    for (int i = 0; i < 3; ++i) FireAndRun(i + 1, kT0 + i * 1000, i * 1000);
    Coord("stopping", 3500, {});
  }

  // Run `run` for `instant`: fired at t, granted token = run to agent a, probe, logs, result.
  void FireAndRun(int64_t run, int64_t instant, int64_t t) {
    RunRecord rec;
    rec.id = run;
    rec.job_id = 1;
    rec.job = "tick";
    rec.scheduled_ms = instant;
    rec.state = RunState::kSucceeded;
    ShardRecord shard;
    shard.run_id = run;
    shard.state = RunState::kSucceeded;
    shard.agent = "a";
    shard.token = run;
    shard.exit_code = 0;
    rec.shards.push_back(shard);
    store.runs.push_back(rec);
    json id = {{"run", run}, {"shard", 0}};
    json tok = {{"run", run}, {"shard", 0}, {"attempt", 1}, {"token", run}};
    Coord("fire", t + 5,
          {{"job", "tick"},
           {"run", run},
           {"scheduled_ms", instant},
           {"reason", "schedule"},
           {"shards", 1}});
    Coord("grant", t + 10, Merge(tok, {{"agent", "a"}}));
    Agent("a", "claimed", t + 11, tok);
    Agent("a", "started", t + 12, Merge(tok, {{"pid", 100 + run}}));
    Probe("start", t + 13, Merge(tok, {{"lines", kLines}}));
    Coord("renewed", t + 100, Merge(tok, {{"agent", "a"}}));
    std::string out = ProbeOutput(run, 0, 1, kLines);
    Coord("log_accepted", t + 200, Merge(tok, {{"seq", 1}, {"bytes", out.size()}}));
    Agent("a", "log_acked", t + 201, Merge(tok, {{"seq", 1}, {"bytes", out.size()}}));
    store::LogChunk chunk;
    chunk.run_id = run;
    chunk.seq = 1;
    chunk.data = out;
    store.chunks[{run, 0, 1}][1] = chunk;
    Probe("end", t + 300, Merge(tok, {{"bytes", out.size()}, {"exit", 0}}));
    Agent("a", "exited", t + 301, Merge(tok, {{"outcome", "exited"}, {"exit", 0}}));
    Coord("result_accepted", t + 310,
          Merge(tok, {{"agent", "a"}, {"outcome", "exited"}, {"state", "succeeded"}}));
    Coord("lease_end", t + 311, Merge(id, {{"token", run}, {"agent", "a"}, {"why", "result"}}));
    Agent("a", "result_acked", t + 312, Merge(tok, {{"outcome", "exited"}, {"exit", 0}}));
  }

  static json Merge(json a, const json& b) {
    for (auto it = b.begin(); it != b.end(); ++it) a[it.key()] = it.value();
    return a;
  }
  void Coord(const std::string& ev, int64_t t, json f) {
    lines.push_back({"coord", ev, t, std::move(f)});
  }
  void Agent(const std::string& name, const std::string& ev, int64_t t, json f) {
    f["agent"] = name;
    lines.push_back({"agent", ev, t, std::move(f)});
  }
  void Probe(const std::string& ev, int64_t t, json f) {
    lines.push_back({"probe", ev, t, std::move(f)});
  }
  // Removes the first line with this event and these fields.
  void Drop(const std::string& ev, const json& match) {
    for (auto it = lines.begin(); it != lines.end(); ++it) {
      bool same = it->ev == ev;
      for (auto m = match.begin(); same && m != match.end(); ++m) {
        same = it->fields.contains(m.key()) && it->fields[m.key()] == m.value();
      }
      if (same) {
        lines.erase(it);
        return;
      }
    }
    ADD_FAILURE() << "no " << ev << " " << match.dump();
  }

  Report Run(const CheckOptions& options = {}) {
    // Each source's lines in time order, as its file would have them.
    std::stable_sort(lines.begin(), lines.end(),
                     [](const Line& a, const Line& b) { return a.t_ms < b.t_ms; });
    std::string text;
    for (const Line& l : lines) {
      json j = {{"src", l.src},
                {"pid", 1},
                {"mono_ns", l.t_ms * 1'000'000},
                {"wall_ms", kT0 + l.t_ms},
                {"ev", l.ev}};
      for (auto it = l.fields.begin(); it != l.fields.end(); ++it) j[it.key()] = it.value();
      text += j.dump() + "\n";
    }
    History h;
    Status s = ParseEvents(text, "test", &h);
    EXPECT_TRUE(s.ok()) << s.ToString();
    Report r = Check(h, store, options);
    text_ = r.ToString();
    return r;
  }
  const std::string& text() const { return text_; }

  std::vector<Line> lines;
  StoreView store;

 private:
  std::string text_;
};

// SIGKILL can cut a writer's last line short; the restarted process ends it and goes on. That
// line is skipped and counted, while garbage between two lines of one process is an error.
TEST(CheckerTest, ALineTornByAKilledWriterIsSkippedButGarbageWithinAProcessIsNot) {
  std::string a1 = R"({"src":"coord","pid":1,"mono_ns":1,"ev":"fire","job":"j"})";
  std::string a2 = R"({"src":"coord","pid":1,"mono_ns":2,"ev":"fire","job":"j"})";
  std::string b1 = R"({"src":"coord","pid":2,"mono_ns":3,"ev":"fire","job":"j"})";
  std::string torn = R"({"src":"coord","pid":1,"mono_ns":2,"ev":"ren)";
  History h;
  ASSERT_TRUE(ParseEvents(a1 + "\n" + torn + "\n" + b1 + "\n", "log", &h).ok());
  EXPECT_EQ(h.coordinator.size(), 2u);
  EXPECT_EQ(h.torn_lines, 1);
  History last;
  ASSERT_TRUE(ParseEvents(a1 + "\n" + torn + "\n", "log", &last).ok());
  EXPECT_EQ(last.torn_lines, 1);
  History bad;
  Status s = ParseEvents(a1 + "\n" + torn + "\n" + a2 + "\n", "log", &bad);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("log:2"), std::string::npos) << s.ToString();
}

TEST(CheckerTest, AConsistentHistoryPasses) {
  Scenario s;
  Report r = s.Run();
  EXPECT_TRUE(r.ok()) << s.text();
  EXPECT_TRUE(r.notes.empty()) << s.text();
}

TEST(CheckerTest, ADueInstantWithNeitherRunNorMissIsALostTrigger) {
  Scenario s;
  s.store.runs.erase(s.store.runs.begin() + 1);
  Report r = s.Run();
  ASSERT_TRUE(r.Has("I1")) << s.text();
  EXPECT_NE(s.text().find("job tick instant " + FormatInstant(kT0 + 1000)), std::string::npos)
      << s.text();
}

// The scenario's job as "@delay 1s": each run ends at its instant (created then too) and the
// coordinator announces the next fire one second later.
void MakeFixedDelay(Scenario& s) {
  Job job;
  job.name = "tick";
  job.schedule = "@delay 1s";
  Result<JobView> view = MakeJobView(1, job, kT0 + 3000);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  s.store.jobs["tick"] = *view;
  for (RunRecord& run : s.store.runs) {
    run.created_ms = run.scheduled_ms;
    run.finished_ms = run.scheduled_ms;
  }
  for (int i = 0; i < 3; ++i) {
    s.Coord("scheduled", i * 1000 + 20, {{"job", "tick"}, {"next_fire_ms", kT0 + (i + 1) * 1000}});
  }
}

TEST(CheckerTest, AFixedDelayJobWhoseFiresFollowItsRunsEndsPasses) {
  Scenario s;
  MakeFixedDelay(s);
  Report r = s.Run();
  EXPECT_FALSE(r.Has("I1")) << s.text();
  EXPECT_FALSE(r.Has("I2")) << s.text();
}

TEST(CheckerTest, AFixedDelayFireBeforeThePreviousRunEndedPlusTheDelayIsReported) {
  Scenario s;
  MakeFixedDelay(s);
  s.store.runs[1].finished_ms = kT0 + 1500;  // the run at kT0+2000 came 500 ms after it ended
  Report r = s.Run();
  ASSERT_TRUE(r.Has("I2")) << s.text();
  EXPECT_NE(s.text().find("before its delay"), std::string::npos) << s.text();
}

TEST(CheckerTest, AnAnnouncedFixedDelayFireWithNeitherRunNorMissIsALostTrigger) {
  Scenario s;
  MakeFixedDelay(s);
  s.store.runs.erase(s.store.runs.begin() + 1);
  Report r = s.Run();
  ASSERT_TRUE(r.Has("I1")) << s.text();
  EXPECT_NE(s.text().find("instant " + FormatInstant(kT0 + 1000)), std::string::npos) << s.text();
}

TEST(CheckerTest, ARecordedMissAccountsForAnInstant) {
  Scenario s;
  s.store.runs.erase(s.store.runs.begin() + 1);
  s.store.misses.push_back({1, kT0 + 1000, kT0 + 1000, 1, "misfire=skip", kT0 + 1500});
  s.Drop("fire", {{"run", 2}});
  Report r = s.Run();
  EXPECT_FALSE(r.Has("I1")) << s.text();
  EXPECT_FALSE(r.Has("I2")) << s.text();
}

TEST(CheckerTest, AnInstantBothRunAndMissedIsReported) {
  Scenario s;
  s.store.misses.push_back({1, kT0 + 1000, kT0 + 1000, 1, "misfire=skip", kT0 + 1500});
  EXPECT_TRUE(s.Run().Has("I1")) << s.text();
}

TEST(CheckerTest, ASchedulerFarBehindAtTheEndIsALostTrigger) {
  Scenario s;
  s.Coord("stopping", 20'000, {});
  Report r = s.Run();
  ASSERT_TRUE(r.Has("I1")) << s.text();
  EXPECT_NE(s.text().find("still not fired"), std::string::npos) << s.text();
}

TEST(CheckerTest, TwoRunsForOneInstantAreADuplicateTrigger) {
  Scenario s;
  RunRecord dup = s.store.runs[0];
  dup.id = 9;
  s.store.runs.push_back(dup);
  Report r = s.Run();
  ASSERT_TRUE(r.Has("I2")) << s.text();
  EXPECT_NE(s.text().find("2 runs: 1 9"), std::string::npos) << s.text();
}

TEST(CheckerTest, TwoFireEventsForOneInstantAreADuplicateTrigger) {
  Scenario s;
  s.Coord("fire", 50, {{"job", "tick"}, {"run", 1}, {"scheduled_ms", kT0}, {"reason", "schedule"}});
  EXPECT_TRUE(s.Run().Has("I2")) << s.text();
}

TEST(CheckerTest, ARunAtAnInstantOutsideTheScheduleIsReported) {
  Scenario s;
  s.store.runs[2].scheduled_ms = kT0 + 2500;
  s.Drop("fire", {{"run", 3}});
  Report r = s.Run();
  EXPECT_TRUE(r.Has("I2")) << s.text();
  EXPECT_TRUE(r.Has("I1")) << s.text();  // and kT0 + 2000 went without a run
}

TEST(CheckerTest, AGrantWhileTheShardIsLeasedIsTwoLiveLeases) {
  Scenario s;
  s.Coord("grant", 150, {{"run", 1}, {"shard", 0}, {"attempt", 2}, {"token", 7}, {"agent", "b"}});
  Report r = s.Run();
  ASSERT_TRUE(r.Has("I3")) << s.text();
  EXPECT_NE(s.text().find("run 1 shard 0: token 7 granted to b"), std::string::npos) << s.text();
}

TEST(CheckerTest, TokensThatDoNotGrowAreReported) {
  Scenario s;
  // Run 3's lease gets token 2 again.
  for (Line& l : s.lines) {
    if (l.fields.is_object() && l.fields.value("run", 0) == 3 && l.fields.contains("token")) {
      l.fields["token"] = 2;
    }
  }
  s.store.runs[2].shards[0].token = 2;
  Report r = s.Run();
  ASSERT_TRUE(r.Has("I3")) << s.text();
  EXPECT_NE(s.text().find("tokens must strictly increase"), std::string::npos) << s.text();
}

TEST(CheckerTest, ARestartWithATokenCounterBelowAGrantedTokenIsReported) {
  Scenario s;
  s.Coord("loading", 3000, {});
  s.Coord("loaded", 3001,
          {{"ttl_ms", 3000}, {"heartbeat_ms", 1000}, {"leases", 0}, {"last_token", 1}});
  EXPECT_TRUE(s.Run().Has("I3")) << s.text();
}

TEST(CheckerTest, ARestartClosesLeasesTheStoreNoLongerHoldsAndReopensTheOnesItHolds) {
  Scenario s;
  // Run 2's lease_end line was lost in a kill -9; run 3's grant line too.
  s.Drop("lease_end", {{"run", 2}});
  s.Drop("grant", {{"run", 3}});
  s.Coord("loading", 1900, {});
  s.Coord("loaded", 1902,
          {{"ttl_ms", 3000}, {"heartbeat_ms", 1000}, {"leases", 0}, {"last_token", 2}});
  s.Coord("loading", 2008, {});
  s.Coord("lease_loaded", 2009, {{"run", 3}, {"shard", 0}, {"token", 3}, {"agent", "a"}});
  s.Coord("loaded", 2009,
          {{"ttl_ms", 3000}, {"heartbeat_ms", 1000}, {"leases", 1}, {"last_token", 3}});
  Report r = s.Run();
  EXPECT_TRUE(r.ok()) << s.text();
  EXPECT_EQ(r.notes.size(), 1u) << s.text();  // the lost grant line
}

TEST(CheckerTest, AResultAcceptedAfterTheLeaseExpiredIsAStaleToken) {
  Scenario s;
  s.Drop("lease_end", {{"run", 1}});
  s.Coord("lease_end", 150,
          {{"run", 1}, {"shard", 0}, {"token", 1}, {"agent", "a"}, {"why", "expired"}});
  s.Coord("grant", 160, {{"run", 1}, {"shard", 0}, {"attempt", 2}, {"token", 11}, {"agent", "b"}});
  Report r = s.Run();
  ASSERT_TRUE(r.Has("I4")) << s.text();
  EXPECT_NE(s.text().find("job tick instant " + FormatInstant(kT0) +
                          " run 1 shard 0 token 1: result accepted"),
            std::string::npos)
      << s.text();
}

TEST(CheckerTest, ALogChunkWithAnOldTokenAfterANewGrantIsAStaleToken) {
  Scenario s;
  s.Coord("lease_end", 320, {{"run", 1}, {"shard", 0}, {"token", 1}, {"why", "expired"}});
  s.Drop("lease_end", {{"run", 1}, {"why", "result"}});
  s.Coord("grant", 330, {{"run", 1}, {"shard", 0}, {"attempt", 2}, {"token", 12}, {"agent", "b"}});
  s.Coord("log_accepted", 340,
          {{"run", 1}, {"shard", 0}, {"attempt", 1}, {"token", 1}, {"seq", 2}, {"bytes", 3}});
  Report r = s.Run();
  ASSERT_TRUE(r.Has("I4")) << s.text();
  EXPECT_NE(s.text().find("log chunk seq 2 accepted"), std::string::npos) << s.text();
}

TEST(CheckerTest, ARenewalOfAnEndedLeaseIsAStaleToken) {
  Scenario s;
  s.Coord("renewed", 400, {{"run", 1}, {"shard", 0}, {"token", 1}, {"agent", "a"}});
  EXPECT_TRUE(s.Run().Has("I4")) << s.text();
}

TEST(CheckerTest, TwoResultsForOneAttemptAreReported) {
  Scenario s;
  s.Drop("lease_end", {{"run", 1}});
  s.Coord("result_accepted", 311,
          {{"run", 1}, {"shard", 0}, {"attempt", 1}, {"token", 1}, {"outcome", "exited"}});
  s.Coord("lease_end", 312, {{"run", 1}, {"shard", 0}, {"token", 1}, {"why", "result"}});
  Report r = s.Run();
  ASSERT_TRUE(r.Has("I5")) << s.text();
  EXPECT_NE(s.text().find("a second result accepted"), std::string::npos) << s.text();
}

TEST(CheckerTest, AnAcknowledgedLogChunkMissingFromTheStoreIsLost) {
  Scenario s;
  s.store.chunks.erase({2, 0, 1});
  Report r = s.Run();
  ASSERT_TRUE(r.Has("I6")) << s.text();
  EXPECT_NE(s.text().find("agent a saw log chunk seq 1"), std::string::npos) << s.text();
}

TEST(CheckerTest, AnAcknowledgedResultTheStoreDoesNotHoldIsLost) {
  Scenario s;
  s.store.runs[0].shards[0].state = RunState::kRunning;
  Report r = s.Run();
  ASSERT_TRUE(r.Has("I6")) << s.text();
  EXPECT_NE(s.text().find("saw its result (exited) acknowledged"), std::string::npos) << s.text();
}

TEST(CheckerTest, StoredOutputThatIsNotWhatTheProbePrintedIsReportedWithHashes) {
  Scenario s;
  s.store.chunks[{3, 0, 1}][1].data[5] = 'X';
  s.Drop("log_acked", {{"run", 3}});  // still a violation without the chunk's acknowledgement
  Report r = s.Run();
  ASSERT_TRUE(r.Has("I6")) << s.text();
  EXPECT_NE(s.text().find("sha256 " + Sha256Hex(ProbeOutput(3, 0, 1, kLines))), std::string::npos)
      << s.text();
}

TEST(CheckerTest, AFireTheStoreDoesNotHoldIsLost) {
  Scenario s;
  s.Coord("fire", 2500,
          {{"job", "tick"}, {"run", 44}, {"scheduled_ms", kT0 + 2500}, {"reason", "manual"}});
  EXPECT_TRUE(s.Run().Has("I6")) << s.text();
}

TEST(CheckerTest, AKilledAgentsShardGrantedAgainTooLateIsSlowFailover) {
  Scenario s;
  // Agent a dies at 150 holding run 1; the lease expires at 3200 and b gets it at 5400.
  s.Drop("lease_end", {{"run", 1}});
  s.Drop("result_accepted", {{"run", 1}});
  s.Drop("result_acked", {{"run", 1}});
  s.Coord("lease_end", 3200,
          {{"run", 1}, {"shard", 0}, {"token", 1}, {"agent", "a"}, {"why", "expired"}});
  s.Coord("grant", 5400, {{"run", 1}, {"shard", 0}, {"attempt", 2}, {"token", 13}, {"agent", "b"}});
  CheckOptions o;
  o.kills.push_back({"a", 150 * 1'000'000});
  Report r = s.Run(o);
  ASSERT_TRUE(r.Has("I8")) << s.text();
  ASSERT_EQ(r.failovers.size(), 1u);
  EXPECT_EQ(r.failovers[0].ended_ms, 3050);
  EXPECT_EQ(r.failovers[0].regranted_ms, 5250);
  EXPECT_NE(s.text().find("granted again 5250 ms after the kill or its instant (bound 5000 ms)"),
            std::string::npos)
      << s.text();
}

TEST(CheckerTest, AKilledAgentsShardGrantedAgainInTimeIsAFailoverFigure) {
  Scenario s;
  s.Drop("lease_end", {{"run", 1}});
  s.Drop("result_accepted", {{"run", 1}});
  s.Drop("result_acked", {{"run", 1}});
  s.Coord("lease_end", 3200,
          {{"run", 1}, {"shard", 0}, {"token", 1}, {"agent", "a"}, {"why", "expired"}});
  s.Coord("grant", 3210, {{"run", 1}, {"shard", 0}, {"attempt", 2}, {"token", 13}, {"agent", "b"}});
  s.Coord("result_accepted", 3400,
          {{"run", 1}, {"shard", 0}, {"attempt", 2}, {"token", 13}, {"outcome", "exited"}});
  s.Coord("lease_end", 3401, {{"run", 1}, {"shard", 0}, {"token", 13}, {"why", "result"}});
  s.store.runs[0].shards[0].attempt = 2;
  s.store.runs[0].shards[0].token = 13;
  CheckOptions o;
  o.kills.push_back({"a", 150 * 1'000'000});
  Report r = s.Run(o);
  EXPECT_TRUE(r.ok()) << s.text();
  ASSERT_EQ(r.failovers.size(), 1u);
  EXPECT_EQ(r.failovers[0].regranted_ms, 3060);
}

TEST(CheckerTest, TwoAttemptsAliveAtOnceAreAnOverlapAndViolateI9) {
  Scenario s;
  s.Probe("start", 250,
          {{"run", 1}, {"shard", 0}, {"attempt", 2}, {"token", 14}, {"lines", kLines}});
  Report r = s.Run();
  ASSERT_EQ(r.overlaps.size(), 1u) << s.text();
  EXPECT_EQ(r.overlaps[0].old_attempt, 1);
  EXPECT_EQ(r.overlaps[0].new_attempt, 2);
  EXPECT_EQ(r.overlaps[0].ms, 50);  // attempt 1's probe ended at 300
  EXPECT_TRUE(r.Has("I9")) << r.ToString();
}

TEST(CheckerTest, AnAttemptTheFenceKilledEndsThereAndTheNextOneMayStartAfter) {
  Scenario s;
  // Attempt 1's probe and agentd saw it end at 300; the fence's line says it was killed at 240.
  s.Agent("a", "fenced", 240, {{"run", 1}, {"shard", 0}, {"attempt", 1}, {"pid", 99}});
  s.Probe("start", 250,
          {{"run", 1}, {"shard", 0}, {"attempt", 2}, {"token", 14}, {"lines", kLines}});
  Report r = s.Run();
  EXPECT_TRUE(r.overlaps.empty()) << r.ToString();
  EXPECT_FALSE(r.Has("I9")) << r.ToString();
  // Fenced after the new start: I9.
  Scenario late;
  late.Agent("a", "fenced", 260, {{"run", 1}, {"shard", 0}, {"attempt", 1}, {"pid", 99}});
  late.Probe("start", 250,
             {{"run", 1}, {"shard", 0}, {"attempt", 2}, {"token", 14}, {"lines", kLines}});
  Report bad = late.Run();
  EXPECT_TRUE(bad.Has("I9")) << bad.ToString();
}

// Several coordinators' logs: merged by monotonic time, each log's order kept.
TEST(CheckerTest, CoordinatorLogsAreMergedByMonotonicTime) {
  History h;
  ASSERT_TRUE(ParseEvents(R"({"src":"coord","pid":1,"mono_ns":1,"ev":"a"})"
                          "\n"
                          R"({"src":"coord","pid":1,"mono_ns":5,"ev":"c"})"
                          "\n",
                          "one", &h)
                  .ok());
  ASSERT_TRUE(ParseEvents(R"({"src":"coord","pid":2,"mono_ns":3,"ev":"b"})"
                          "\n"
                          R"({"src":"coord","pid":2,"mono_ns":7,"ev":"d"})"
                          "\n",
                          "two", &h)
                  .ok());
  MergeCoordinators(&h);
  std::string order;
  for (const Event& e : h.coordinator) order += e.ev;
  EXPECT_EQ(order, "abcd");
}

// A coordinator stopped between a commit and its lines writes them late, after another
// took over: they are ordered where the commit began, and no violation.
TEST(CheckerTest, LinesOfACommitWrittenLateAreOrderedWhereTheCommitBegan) {
  History h;
  ASSERT_TRUE(
      ParseEvents(R"({"src":"coord","pid":1,"mono_ns":90,"ev":"commit","began_ns":2,"epoch":1})"
                  "\n"
                  R"({"src":"coord","pid":1,"mono_ns":91,"ev":"grant"})"
                  "\n",
                  "one", &h)
          .ok());
  ASSERT_TRUE(
      ParseEvents(R"({"src":"coord","pid":2,"mono_ns":5,"ev":"loading"})"
                  "\n"
                  R"({"src":"coord","pid":2,"mono_ns":6,"ev":"loaded","epoch":2})"
                  "\n"
                  R"({"src":"coord","pid":2,"mono_ns":8,"ev":"commit","began_ns":7,"epoch":2})"
                  "\n",
                  "two", &h)
          .ok());
  MergeCoordinators(&h);
  std::string order;
  for (const Event& e : h.coordinator) order += e.ev + " ";
  EXPECT_EQ(order, "commit grant loading loaded commit ");
  Report r;
  CheckLeaders(h, {}, &r);
  EXPECT_TRUE(r.ok()) << r.ToString();
  // A commit of epoch 1 that began after epoch 2 committed is two holders at once.
  ASSERT_TRUE(
      ParseEvents(R"({"src":"coord","pid":1,"mono_ns":95,"ev":"commit","began_ns":93,"epoch":1})"
                  "\n",
                  "three", &h)
          .ok());
  MergeCoordinators(&h);
  Report bad;
  CheckLeaders(h, {}, &bad);
  EXPECT_TRUE(bad.Has("I10")) << bad.ToString();
}

// A standby on a shared database writes lease_loaded lines as it reads the store to keep
// its view current, while another coordinator serves: they are no restart's leases.
TEST(CheckerTest, AStandbysLeaseLoadedLinesAreNotLeases) {
  Scenario s;
  s.Coord("lease_loaded", 1400,
          {{"pid", 2}, {"run", 2}, {"shard", 0}, {"token", 2}, {"agent", "a"}});
  Report r = s.Run();
  EXPECT_TRUE(r.ok()) << s.text();
  EXPECT_TRUE(r.notes.empty()) << s.text();
}

// The scenario's coordinator (pid 1) holds epoch 1; at 1500 ms coordinator pid 2 takes over
// in epoch 2 and commits.
void TakeOver(Scenario& s) {
  s.Coord("commit", 20, {{"us", 100}, {"epoch", 1}});
  s.Coord("loading", 1500, {{"pid", 2}});
  s.Coord("loaded", 1501,
          {{"pid", 2},
           {"ttl_ms", 3000},
           {"heartbeat_ms", 1000},
           {"leases", 0},
           {"last_token", 2},
           {"epoch", 2}});
  s.Coord("commit", 1600, {{"pid", 2}, {"us", 100}, {"epoch", 2}});
}

TEST(CheckerTest, ALeaderChangeIsMeasured) {
  Scenario s;
  TakeOver(s);
  CheckOptions o;
  o.coordinator_faults.push_back(1200 * 1'000'000);
  Report r = s.Run(o);
  EXPECT_TRUE(r.ok()) << s.text();
  ASSERT_EQ(r.leader_changes.size(), 1u) << s.text();
  EXPECT_EQ(r.leader_changes[0].epoch, 2);
  EXPECT_EQ(r.leader_changes[0].fault_ms, 301);
  EXPECT_EQ(r.leader_changes[0].gap_ms, 1481);
  EXPECT_EQ(r.leader_changes[0].first_commit_ms, 99);
}

TEST(CheckerTest, ACommitOfAnOlderEpochAfterANewerOnesIsTwoHolders) {
  Scenario s;
  TakeOver(s);
  s.Coord("commit", 1700, {{"us", 100}, {"epoch", 1}});
  Report r = s.Run();
  ASSERT_TRUE(r.Has("I10")) << s.text();
  EXPECT_NE(s.text().find("a commit of epoch 1 (pid 1) after a commit of epoch 2"),
            std::string::npos)
      << s.text();
}

TEST(CheckerTest, ACommitInAnotherEpochThanTheCoordinatorLoadedWithIsTwoHolders) {
  Scenario s;
  TakeOver(s);
  s.Coord("commit", 1700, {{"pid", 2}, {"us", 100}, {"epoch", 3}});
  Report r = s.Run();
  ASSERT_TRUE(r.Has("I10")) << s.text();
  EXPECT_NE(s.text().find("by a coordinator that loaded in epoch 2"), std::string::npos)
      << s.text();
}

TEST(CheckerTest, AHealthyAgentsShardEndedForALostLeaseIsReportedWhenAsked) {
  Scenario s;
  s.Agent("a", "kill", 150,
          {{"run", 1},
           {"shard", 0},
           {"attempt", 1},
           {"token", 1},
           {"pid", 101},
           {"why", "lease not renewed before its deadline"}});
  s.Agent("a", "kill", 1150,
          {{"run", 2},
           {"shard", 0},
           {"attempt", 1},
           {"token", 2},
           {"pid", 102},
           {"why", "canceled by the coordinator"}});
  s.Coord("lease_end", 2311,
          {{"run", 3}, {"shard", 0}, {"token", 3}, {"agent", "b"}, {"why", "expired"}});
  EXPECT_FALSE(s.Run().Has("I11")) << s.text();
  CheckOptions o;
  o.leader_changes_end_no_shard = true;
  Report r = s.Run(o);
  ASSERT_TRUE(r.Has("I11")) << s.text();
  EXPECT_NE(s.text().find("run 1 shard 0 attempt 1 token 1: healthy agent a stopped it"),
            std::string::npos)
      << s.text();
  EXPECT_NE(s.text().find("the lease of healthy agent b expired"), std::string::npos) << s.text();
  EXPECT_EQ(s.text().find("run 2 shard 0 attempt 1"), std::string::npos) << s.text();
  o.kills.push_back({"a", 100 * 1'000'000});
  o.kills.push_back({"b", 100 * 1'000'000});
  EXPECT_FALSE(s.Run(o).Has("I11")) << s.text();
}

// ---- I12: flows ----

// A diamond flow run as the coordinator records it: a, then b and c, then d, each a step run
// made after its needs ended; `d_when` and the states are what the tests change.
class FlowScenario {
 public:
  FlowScenario() {
    flow.name = "etl";
    flow.schedule = "@every 3s";
    for (const char* name : {"a", "b", "c", "d"}) {
      FlowStep step;
      step.name = name;
      step.job = std::string("etl:") + name;
      step.own = true;
      flow.steps.push_back(step);
    }
    flow.steps[1].needs = {"a"};
    flow.steps[2].needs = {"a"};
    flow.steps[3].needs = {"b", "c"};
    flow_run.id = 100;
    flow_run.job = "etl";
    flow_run.created_ms = kT0;
    flow_run.finished_ms = kT0 + 400;
    flow_run.state = RunState::kSucceeded;
    flow_run.flow_json = wire::FlowToJson(flow).dump();
    Step(0, 101, kT0, kT0 + 100, RunState::kSucceeded);
    Step(1, 102, kT0 + 100, kT0 + 200, RunState::kSucceeded);
    Step(2, 103, kT0 + 100, kT0 + 250, RunState::kSucceeded);
    Step(3, 104, kT0 + 250, kT0 + 400, RunState::kSucceeded);
  }
  RunRecord& Step(int step, int64_t id, int64_t created, int64_t finished, RunState state) {
    RunRecord r;
    r.id = id;
    r.job = flow.steps[static_cast<size_t>(step)].job;
    r.reason = RunReason::kFlow;
    r.created_ms = created;
    r.finished_ms = finished;
    r.state = state;
    r.flow_run_id = flow_run.id;
    r.flow_step = step;
    steps.push_back(r);
    return steps.back();
  }
  RunRecord* StepRun(int step) {
    for (RunRecord& r : steps) {
      if (r.flow_step == step) return &r;
    }
    return nullptr;
  }
  Report Run() {
    flow_run.flow_json = wire::FlowToJson(flow).dump();
    StoreView store;
    store.runs.push_back(flow_run);
    for (const RunRecord& r : steps) store.runs.push_back(r);
    Report r;
    CheckFlows(History{}, store, &r);
    text = r.ToString();
    return r;
  }
  Flow flow;
  RunRecord flow_run;
  std::vector<RunRecord> steps;
  std::string text;
};

TEST(CheckerTest, AFlowRunThatFollowedItsGraphPasses) {
  FlowScenario f;
  Report r = f.Run();
  EXPECT_TRUE(r.ok()) << f.text;
}

TEST(CheckerTest, AStepThatRanTwiceInOneFlowRunViolatesI12) {
  FlowScenario f;
  f.Step(1, 105, kT0 + 110, kT0 + 210, RunState::kSucceeded);
  ASSERT_TRUE(f.Run().Has("I12")) << f.text;
  EXPECT_NE(f.text.find("step \"b\" ran twice: runs 102 and 105"), std::string::npos) << f.text;
}

TEST(CheckerTest, AStepMadeBeforeItsNeedEndedViolatesI12) {
  FlowScenario f;
  f.StepRun(3)->created_ms = kT0 + 220;  // c ended at +250
  ASSERT_TRUE(f.Run().Has("I12")) << f.text;
  EXPECT_NE(f.text.find("step \"d\" (run 104) was made before \"c\""), std::string::npos) << f.text;
}

TEST(CheckerTest, AStepThatRanWhereItsGraphSaysSkipViolatesI12) {
  FlowScenario f;
  f.StepRun(1)->state = RunState::kFailed;  // d needs b's success: it must be skipped
  f.flow_run.state = RunState::kFailed;
  ASSERT_TRUE(f.Run().Has("I12")) << f.text;
  EXPECT_NE(f.text.find("step \"d\" should have been skipped"), std::string::npos) << f.text;
  // Skipped with its graph's reason, it passes.
  RunRecord* d = f.StepRun(3);
  d->state = RunState::kSkipped;
  d->note = "needs \"b\", which failed";
  Report again = f.Run();
  EXPECT_FALSE(again.Has("I12")) << f.text;
  d->note = "because";
  ASSERT_TRUE(f.Run().Has("I12")) << f.text;
  EXPECT_NE(f.text.find("skipped as \"because\""), std::string::npos) << f.text;
}

TEST(CheckerTest, AStepWhoseNeedsWereMetButNeverRanViolatesI12) {
  FlowScenario f;
  f.steps.pop_back();  // no run of d
  ASSERT_TRUE(f.Run().Has("I12")) << f.text;
  EXPECT_NE(f.text.find("step \"d\" had its needs met but never ran"), std::string::npos) << f.text;
}

TEST(CheckerTest, AFlowRunEndedInAnotherStateThanItsStepsSayViolatesI12) {
  FlowScenario f;
  f.StepRun(3)->state = RunState::kFailed;
  ASSERT_TRUE(f.Run().Has("I12")) << f.text;
  EXPECT_NE(f.text.find("ended succeeded but its steps say failed"), std::string::npos) << f.text;
  f.flow_run.state = RunState::kFailed;
  EXPECT_FALSE(f.Run().Has("I12")) << f.text;
  f.flow_run.finished_ms = kT0 + 300;  // before d ended
  ASSERT_TRUE(f.Run().Has("I12")) << f.text;
  EXPECT_NE(f.text.find("ended before its step run 104"), std::string::npos) << f.text;
}

TEST(CheckerTest, AFlowRunLeftOpenOrCanceledWithAStepUnrecordedViolatesI12) {
  FlowScenario f;
  f.flow_run.state = RunState::kRunning;
  f.flow_run.finished_ms.reset();
  ASSERT_TRUE(f.Run().Has("I12")) << f.text;
  EXPECT_NE(f.text.find("still running after the test"), std::string::npos) << f.text;
  f.flow_run.state = RunState::kCanceled;
  f.flow_run.finished_ms = kT0 + 400;
  f.steps.pop_back();
  ASSERT_TRUE(f.Run().Has("I12")) << f.text;
  EXPECT_NE(f.text.find("canceled with step \"d\" not recorded"), std::string::npos) << f.text;
}

}  // namespace
}  // namespace jobctl::fault
