// The coordinator as agents and users see it: the real `jobctl serve` on loopback, driven
// over HTTP by a test agent that speaks the agent protocol by hand.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "store/store.h"
#include "testlib/cluster.h"
#include "testlib/coordinator_fixture.h"

namespace jobctl::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

class CoordinatorTest : public CoordinatorFixture {};

// With early dispatch off, a run is created at its instant, never before; on (the default,
// 1 s), it is created within that window ahead of it, and its shard does not start before it
// (AgentTest.ShardsGrantedAheadStartAtTheirInstant...).
class EverySecondTest : public CoordinatorFixture, public ::testing::WithParamInterface<int> {};

TEST_P(EverySecondTest, AJobMakesOneRunPerSecondNeverBeforeItsWindowNeverTwice) {
  const int64_t early_ms = GetParam();
  Start(early_ms == 0 ? "early_dispatch = \"0s\"\n" : "");
  coord_->Apply(
      "[[job]]\nname = \"tick\"\nschedule = \"*/1 * * * * *\"\nshell = \"true\"\n"
      "overlap = \"allow\"\n");
  ASSERT_TRUE(
      Coordinator::Eventually([&] { return coord_->Runs("tick").size() >= 5; }, seconds(10)));
  json runs = coord_->Runs("tick");
  std::set<int64_t> instants;
  for (const auto& r : runs) {
    int64_t scheduled = UnixMs(r["scheduled_at"]);
    EXPECT_EQ(scheduled % 1000, 0);
    EXPECT_GE(UnixMs(r["created_at"]), scheduled - early_ms)
        << "fired before its instant (less early_dispatch, " << early_ms << " ms): " << r.dump();
    EXPECT_TRUE(instants.insert(scheduled).second) << "instant fired twice: " << r.dump();
  }
  // Consecutive seconds, none missing.
  EXPECT_EQ(*instants.rbegin() - *instants.begin(),
            1000 * static_cast<int64_t>(instants.size() - 1));
}

INSTANTIATE_TEST_SUITE_P(EarlyDispatch, EverySecondTest, ::testing::Values(0, 1000),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return i.param == 0 ? std::string("Off") : std::string("On");
                         });

// Every due instant of each job is exactly one run (or skipped run) or is inside a recorded
// miss range, across repeated kill -9 of the coordinator.
void CheckInstantsAccountedFor(Coordinator& c, const std::string& job, int64_t from_ms,
                               int64_t to_ms) {
  std::map<int64_t, int> seen;
  for (const auto& r : c.Runs(job, 10000)) {
    if (r["reason"] == "schedule") ++seen[UnixMs(r["scheduled_at"])];
  }
  json misses = c.GetJson("/v1/misses?job=" + job);
  for (int64_t t = from_ms; t <= to_ms; t += 1000) {
    int runs = seen.count(t) ? seen[t] : 0;
    int missed = 0;
    for (const auto& m : misses) {
      if (m["first_ms"].get<int64_t>() <= t && t <= m["last_ms"].get<int64_t>()) ++missed;
    }
    EXPECT_EQ(runs + missed, 1) << job << ": instant " << t << " has " << runs << " runs and is in "
                                << missed << " miss ranges";
  }
}

// A burst larger than one fire slice: every job fires exactly once, at or after its instant,
// and anchored @every jobs fire at their millisecond.
TEST_F(CoordinatorTest, BurstOfAnchoredJobsFiresEachOnceInSlices) {
  Start();
  const int n = 1500;  // about three slices
  auto now = std::chrono::system_clock::now().time_since_epoch();
  int64_t due = (std::chrono::duration_cast<milliseconds>(now).count() / 1000 + 3) * 1000 + 250;
  std::time_t secs = due / 1000;
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", std::gmtime(&secs));
  std::string toml;
  for (int i = 0; i < n; ++i) {
    toml += "[[job]]\nname = \"b" + std::to_string(i) +
            "\"\nschedule = \"@every 1h\"\nanchor = \"" + stamp + ".250Z\"\nshell = \"true\"\n";
  }
  coord_->Apply(toml);
  ASSERT_TRUE(Coordinator::Eventually(
      [&] { return coord_->GetJson("/v1/runs?limit=5000").size() >= static_cast<size_t>(n); },
      seconds(20)));
  json runs = coord_->GetJson("/v1/runs?limit=5000");
  std::set<std::string> jobs;
  for (const auto& r : runs) {
    EXPECT_EQ(UnixMs(r["scheduled_at"]), due) << r.dump();
    // Created within early_dispatch (1 s) of its instant, never sooner.
    EXPECT_GE(UnixMs(r["created_at"]), due - 1000) << "fired before its window: " << r.dump();
    EXPECT_TRUE(jobs.insert(r["job"].get<std::string>()).second) << "fired twice: " << r.dump();
  }
  EXPECT_EQ(jobs.size(), static_cast<size_t>(n));
}

// Each slice of a burst is committed before the next slice's runs are created: the event
// log's `commit` lines are each followed by at most one slice of `fire` lines, and every run
// was created after the previous commit of the burst was durable.
TEST_F(CoordinatorTest, EachBurstSliceIsDurableBeforeTheNextIsFired) {
  std::string events = dir_.path() + "/events.jsonl";
  Start("event_log = \"" + events + "\"\n");
  const int n = 1500;  // three slices of 512
  int64_t now =
      std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  int64_t due = (now / 1000 + 3) * 1000;
  std::time_t secs = due / 1000;
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&secs));
  std::string toml;
  for (int i = 0; i < n; ++i) {
    toml += "[[job]]\nname = \"s" + std::to_string(i) +
            "\"\nschedule = \"@every 1h\"\nanchor = \"" + stamp + "\"\nshell = \"true\"\n";
  }
  coord_->Apply(toml);
  ASSERT_TRUE(Coordinator::Eventually(
      [&] { return coord_->GetJson("/v1/runs?limit=5000").size() >= static_cast<size_t>(n); },
      seconds(20)));
  std::map<int64_t, int64_t> created;  // run -> created_ms
  for (const auto& r : coord_->GetJson("/v1/runs?limit=5000")) {
    created[r["id"].get<int64_t>()] = UnixMs(r["created_at"]);
  }
  // Group the burst's fires by the commit line before them.
  std::vector<std::pair<int64_t, std::vector<int64_t>>> commits;  // commit wall_ms, runs
  std::istringstream in(ReadFile(events));
  for (std::string line; std::getline(in, line);) {
    json e = json::parse(line);
    if (e["ev"] == "commit") commits.push_back({e["wall_ms"].get<int64_t>(), {}});
    if (e["ev"] == "fire" && e["scheduled_ms"] == due) {
      ASSERT_FALSE(commits.empty()) << line;
      commits.back().second.push_back(e["run"].get<int64_t>());
    }
  }
  std::erase_if(commits, [](const auto& c) { return c.second.empty(); });
  size_t fired = 0;
  for (size_t i = 0; i < commits.size(); ++i) {
    fired += commits[i].second.size();
    EXPECT_LE(commits[i].second.size(), 512u) << "commit " << i << " holds more than one slice";
    if (i == 0) continue;
    for (int64_t run : commits[i].second) {
      EXPECT_GE(created.at(run), commits[i - 1].first)
          << "run " << run << " of commit " << i << " was created before commit " << i - 1
          << " was durable";
    }
  }
  EXPECT_EQ(fired, static_cast<size_t>(n));
  EXPECT_GE(commits.size(), 3u);
}

TEST_F(CoordinatorTest, KillNineDuringFiresLosesAndDoublesNoInstant) {
  // A short misfire grace so that the outages below count as missed instants.
  Start("misfire_grace = \"1s\"\n");
  coord_->Apply(
      "[defaults]\noverlap = \"allow\"\n"
      "[[job]]\nname = \"once\"\nschedule = \"*/1 * * * * *\"\nmisfire = \"fire-once\"\nshell = "
      "\"true\"\n"
      "[[job]]\nname = \"skip\"\nschedule = \"*/1 * * * * *\"\nmisfire = \"skip\"\nshell = "
      "\"true\"\n"
      "[[job]]\nname = \"all\"\nschedule = \"*/1 * * * * *\"\nmisfire = \"fire-all\"\nshell = "
      "\"true\"\n"
      "misfire_cap = 2\n");
  ASSERT_TRUE(
      Coordinator::Eventually([&] { return coord_->Runs("once").size() >= 1; }, seconds(5)));
  int64_t first = UnixMs(coord_->Runs("once").back()["scheduled_at"]);
  std::mt19937 rng(7);
  for (int cycle = 0; cycle < 5; ++cycle) {
    std::this_thread::sleep_for(milliseconds(std::uniform_int_distribution<int>(200, 1200)(rng)));
    coord_->Kill9();
    std::this_thread::sleep_for(milliseconds(std::uniform_int_distribution<int>(100, 3000)(rng)));
    coord_->Start();
  }
  // Let the last restart catch up, then account for every instant up to a settled point.
  int64_t settled = 0;
  ASSERT_TRUE(Coordinator::Eventually(
      [&] {
        json r = coord_->Runs("once", 1);
        if (r.empty()) return false;
        settled = UnixMs(r[0]["scheduled_at"]);
        return settled > first + 5000;
      },
      seconds(10)));
  settled -= 2000;  // every job has passed this instant
  for (const char* job : {"once", "skip", "all"})
    CheckInstantsAccountedFor(*coord_, job, first, settled);
  json misses = coord_->GetJson("/v1/misses?job=skip");
  EXPECT_FALSE(misses.empty())
      << "outages of up to 3 s should have made the skip job miss instants";
}

TEST_F(CoordinatorTest, TwoAgentsClaimingConcurrentlyNeverShareAShard) {
  Start();
  coord_->Apply(
      "[[job]]\nname = \"wide\"\nschedule = \"@yearly\"\nshell = \"true\"\nshards = 40\n");
  coord_->PostJson("/v1/jobs/wide/trigger", json::object());
  std::vector<json> got[2];
  std::atomic<int> total{0};
  std::thread agents[2];
  for (int i = 0; i < 2; ++i) {
    agents[i] = std::thread([&, i] {
      TestAgent a(*coord_, "agent-" + std::to_string(i));
      while (total < 40) {
        for (auto& x : a.Claim(3, 300)) {
          got[i].push_back(x);
          ++total;
        }
      }
    });
  }
  for (auto& t : agents) t.join();
  std::set<int> shards;
  std::vector<int64_t> tokens;
  for (int i = 0; i < 2; ++i) {
    EXPECT_FALSE(got[i].empty()) << "agent " << i << " got nothing";
    for (const auto& a : got[i]) {
      EXPECT_TRUE(shards.insert(a["shard"].get<int>()).second)
          << "shard leased twice: " << a.dump();
      tokens.push_back(a["token"]);
    }
  }
  EXPECT_EQ(shards.size(), 40u);
  std::sort(tokens.begin(), tokens.end());
  EXPECT_EQ(std::adjacent_find(tokens.begin(), tokens.end()), tokens.end()) << "a token was reused";
}

TEST_F(CoordinatorTest, StaleTokensAreRefused) {
  Start();
  coord_->Apply("[[job]]\nname = \"j\"\nschedule = \"@yearly\"\nshell = \"true\"\n");
  coord_->PostJson("/v1/jobs/j/trigger", json::object());
  TestAgent agent(*coord_, "a");
  std::vector<json> a = agent.Claim(1, 5000);
  ASSERT_EQ(a.size(), 1u);
  int64_t stale = a[0]["token"].get<int64_t>() + 1000;
  EXPECT_EQ(agent.Log(a[0], 1, "stdout", "x", stale).status, 409);
  EXPECT_EQ(agent.Finish(a[0], 0, "exited", stale).status, 409);
  json hb =
      json::parse(agent.Heartbeat({{{"run", a[0]["run"]}, {"shard", 0}, {"token", stale}}}).body);
  ASSERT_EQ(hb["revoked"].size(), 1u);
  EXPECT_EQ(hb["revoked"][0]["reason"], "stale");
  // The real token still works, and a repeated result gets the same answer.
  EXPECT_EQ(agent.Log(a[0], 1, "stdout", "x").status, 200);
  http::HttpResponse first = agent.Finish(a[0], 0);
  http::HttpResponse again = agent.Finish(a[0], 0);
  EXPECT_EQ(first.status, 200);
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(json::parse(first.body)["state"], json::parse(again.body)["state"]);
}

// An agent lists a lease in its heartbeats until its result is acknowledged, so a heartbeat
// that crosses the result names a lease that just ended. The coordinator answers "finished"
// (for a finished run, an open run and an attempt being retried) and counts no stale token;
// a lease that expired, or a token that was never granted, is still stale.
TEST_F(CoordinatorTest, HeartbeatCrossingAResultIsFinishedNotStale) {
  Start("lease_ttl = \"2s\"\nheartbeat = \"1s\"\n");
  coord_->Apply(
      "[[job]]\nname = \"one\"\nschedule = \"@yearly\"\nshell = \"true\"\n"
      "[[job]]\nname = \"two\"\nschedule = \"@yearly\"\nshell = \"true\"\nshards = 2\n"
      "[[job]]\nname = \"retry\"\nschedule = \"@yearly\"\nshell = \"true\"\n"
      "retry = { max = 1, initial = \"1m\", max_delay = \"1m\" }\n"
      "[[job]]\nname = \"lapse\"\nschedule = \"@yearly\"\nshell = \"true\"\n");
  TestAgent agent(*coord_, "a");
  auto claim = [&](const std::string& job, size_t n) {
    coord_->PostJson("/v1/jobs/" + job + "/trigger", json::object());
    return agent.ClaimUpTo(n);
  };
  std::vector<json> one = claim("one", 1), two = claim("two", 2), retry = claim("retry", 1);
  ASSERT_EQ(one.size(), 1u);
  ASSERT_EQ(two.size(), 2u);
  ASSERT_EQ(retry.size(), 1u);
  ASSERT_EQ(agent.Finish(one[0], 0).status, 200);    // its run is finished
  ASSERT_EQ(agent.Finish(two[0], 0).status, 200);    // its run is still open
  ASSERT_EQ(agent.Finish(retry[0], 1).status, 200);  // failed: waits for its retry
  json hb = json::parse(agent.Heartbeat({one[0], two[0], two[1], retry[0]}).body);
  ASSERT_EQ(hb["revoked"].size(), 3u) << hb.dump();
  for (const json& r : hb["revoked"]) EXPECT_EQ(r["reason"], "finished") << hb.dump();
  ASSERT_EQ(hb["renewed"].size(), 1u) << hb.dump();
  EXPECT_EQ(hb["renewed"][0]["shard"], two[1]["shard"]);
  EXPECT_EQ(coord_->Metric("jobctl_stale_token_total"), 0);

  // A token never granted, and a lease that expired: stale, and counted.
  json made_up = one[0];
  made_up["token"] = one[0]["token"].get<int64_t>() + 1000;
  hb = json::parse(agent.Heartbeat({made_up}).body);
  ASSERT_EQ(hb["revoked"].size(), 1u);
  EXPECT_EQ(hb["revoked"][0]["reason"], "stale");
  EXPECT_EQ(coord_->Metric("jobctl_stale_token_total"), 1);
  std::vector<json> lapse = claim("lapse", 1);
  ASSERT_EQ(lapse.size(), 1u);
  ASSERT_TRUE(Coordinator::Eventually(
      [&] { return coord_->Metric("jobctl_leases_expired_total") >= 2; }, seconds(10)));
  hb = json::parse(agent.Heartbeat({lapse[0]}).body);
  ASSERT_EQ(hb["revoked"].size(), 1u);
  EXPECT_EQ(hb["revoked"][0]["reason"], "stale");
  EXPECT_EQ(coord_->Metric("jobctl_stale_token_total"), 2);
}

// A batch of results is answered item by item, as if each had come alone: taken, refused as
// stale, and the same answer again for a repeat; a malformed batch takes nothing.
TEST_F(CoordinatorTest, ResultBatchAnswersEachResultAsIfItCameAlone) {
  Start();
  coord_->Apply("[[job]]\nname = \"j\"\nschedule = \"@yearly\"\nshell = \"true\"\nshards = 3\n");
  json run = coord_->PostJson("/v1/jobs/j/trigger", json::object());
  TestAgent agent(*coord_, "a");
  std::vector<json> a;
  while (a.size() < 3) {
    std::vector<json> more = agent.Claim(static_cast<int>(3 - a.size()), 5000);
    ASSERT_FALSE(more.empty());
    a.insert(a.end(), more.begin(), more.end());
  }
  int64_t stale = a[1]["token"].get<int64_t>() + 1000;
  http::HttpResponse bad = agent.FinishAll({json(1)});
  EXPECT_EQ(bad.status, 400) << bad.body;
  http::HttpResponse r =
      agent.FinishAll({agent.ResultBody(a[0], 0), agent.ResultBody(a[1], 0, "exited", stale),
                       agent.ResultBody(a[2], 3)});
  ASSERT_EQ(r.status, 200) << r.body;
  json answers = json::parse(r.body)["results"];
  ASSERT_EQ(answers.size(), 3u) << r.body;
  EXPECT_EQ(answers[0]["accepted"], true);
  EXPECT_EQ(answers[1]["status"], 409);
  EXPECT_EQ(answers[1]["error"], "conflict");
  EXPECT_EQ(answers[2]["accepted"], true);
  // The stale one is still running under its real token; its result ends the run, and a
  // repeat of the whole batch is answered the same for the results taken before.
  r = agent.FinishAll({agent.ResultBody(a[1], 0), agent.ResultBody(a[0], 0)});
  ASSERT_EQ(r.status, 200) << r.body;
  answers = json::parse(r.body)["results"];
  EXPECT_EQ(answers[0]["accepted"], true);
  EXPECT_EQ(answers[1]["accepted"], true);
  json end = coord_->GetJson("/v1/runs/" + std::to_string(run["id"].get<int64_t>()));
  EXPECT_EQ(end["state"], "failed");
  ASSERT_EQ(end["shards"].size(), 3u);
  EXPECT_EQ(end["shards"][0]["exit_code"], 0);
  EXPECT_EQ(end["shards"][1]["exit_code"], 0);
  EXPECT_EQ(end["shards"][2]["exit_code"], 3);
}

TEST_F(CoordinatorTest, ExpiredLeaseGoesToTheOtherAgentWithinTtlPlusHeartbeatPlusOneSecond) {
  Start("lease_ttl = \"3s\"\nheartbeat = \"1s\"\n");
  coord_->Apply("[[job]]\nname = \"j\"\nschedule = \"@yearly\"\nshell = \"true\"\n");
  coord_->PostJson("/v1/jobs/j/trigger", json::object());
  TestAgent dead(*coord_, "dead"), alive(*coord_, "alive");
  std::vector<json> a = dead.Claim(1, 5000);
  ASSERT_EQ(a.size(), 1u);
  auto claimed = std::chrono::steady_clock::now();
  // "dead" never renews; "alive" waits for the shard.
  std::vector<json> b;
  while (b.empty() && std::chrono::steady_clock::now() - claimed < seconds(10))
    b = alive.Claim(1, 1000);
  auto elapsed = std::chrono::steady_clock::now() - claimed;
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0]["shard"], a[0]["shard"]);
  EXPECT_EQ(b[0]["attempt"], 2);
  EXPECT_GT(b[0]["token"].get<int64_t>(), a[0]["token"].get<int64_t>());
  EXPECT_LE(elapsed, seconds(3 + 1 + 1));
  // Whatever the dead agent sends now is refused.
  EXPECT_EQ(dead.Finish(a[0], 0).status, 409);
  EXPECT_EQ(dead.Log(a[0], 1, "stdout", "late").status, 409);
}

TEST_F(CoordinatorTest, OverlapPolicies) {
  Start();
  coord_->Apply(
      "[[job]]\nname = \"forbid\"\nschedule = \"*/1 * * * * *\"\noverlap = \"forbid\"\nshell = "
      "\"true\"\n"
      "[[job]]\nname = \"allow\"\nschedule = \"*/1 * * * * *\"\noverlap = \"allow\"\nshell = "
      "\"true\"\n"
      "[[job]]\nname = \"replace\"\nschedule = \"*/1 * * * * *\"\noverlap = \"replace\"\nshell = "
      "\"true\"\n");
  // No agent: every run stays open, so each later fire meets an active run.
  ASSERT_TRUE(
      Coordinator::Eventually([&] { return coord_->Runs("allow").size() >= 3; }, seconds(8)));
  ASSERT_TRUE(
      Coordinator::Eventually([&] { return coord_->Runs("forbid").size() >= 3; }, seconds(4)));
  json forbid = coord_->Runs("forbid");
  int skipped = 0, open = 0;
  for (const auto& r : forbid) {
    skipped += r["state"] == "skipped";
    open += r["state"] == "pending";
    if (r["state"] == "skipped") {
      EXPECT_NE(r["note"].get<std::string>().find("overlap=forbid"), std::string::npos);
    }
  }
  EXPECT_EQ(open, 1);
  EXPECT_GE(skipped, 2);
  for (const auto& r : coord_->Runs("allow")) EXPECT_EQ(r["state"], "pending");
  ASSERT_TRUE(
      Coordinator::Eventually([&] { return coord_->Runs("replace").size() >= 3; }, seconds(4)));
  json replace = coord_->Runs("replace");
  EXPECT_EQ(replace[0]["state"], "pending");
  for (size_t i = 1; i < replace.size(); ++i) {
    if (replace[i]["state"] != "pending") {
      EXPECT_EQ(replace[i]["state"], "canceled") << replace[i].dump();
    }
  }
  EXPECT_EQ(replace[1]["state"], "canceled");
}

TEST_F(CoordinatorTest, FailedShardIsRetriedWithBackoffThenTheRunFails) {
  Start();
  coord_->Apply(
      "[[job]]\nname = \"flaky\"\nschedule = \"@yearly\"\nshell = \"false\"\n"
      "retry = { max = 2, initial = \"400ms\", max_delay = \"2s\" }\n");
  json run = coord_->PostJson("/v1/jobs/flaky/trigger", json::object());
  TestAgent agent(*coord_, "a");
  std::vector<std::chrono::steady_clock::time_point> granted;
  for (int attempt = 1; attempt <= 3; ++attempt) {
    std::vector<json> a;
    while (a.empty()) a = agent.Claim(1, 5000);
    granted.push_back(std::chrono::steady_clock::now());
    EXPECT_EQ(a[0]["attempt"], attempt);
    EXPECT_EQ(agent.Finish(a[0], 1).status, 200);
  }
  // Exponential backoff with jitter over the upper half: >= 200 ms, then >= 400 ms.
  EXPECT_GE(granted[1] - granted[0], milliseconds(200));
  EXPECT_GE(granted[2] - granted[1], milliseconds(400));
  json final = coord_->GetJson("/v1/runs/" + std::to_string(run["id"].get<int64_t>()));
  EXPECT_EQ(final["state"], "failed");
  EXPECT_EQ(final["shards"][0]["attempt"], 3);
  // A failed run can be retried by hand: a new run with reason retry.
  json retry = coord_->PostJson("/v1/runs/" + std::to_string(run["id"].get<int64_t>()) + "/retry",
                                json::object());
  EXPECT_EQ(retry["reason"], "retry");
}

// A shard backing off for an hour must not hold up a new shard for a waiting agent.
TEST_F(CoordinatorTest, ABackedOffShardDoesNotDelayNewWork) {
  Start();
  coord_->Apply(
      "[[job]]\nname = \"slow-retry\"\nschedule = \"@yearly\"\nshell = \"false\"\n"
      "retry = { max = 1, initial = \"1h\", max_delay = \"1h\" }\n"
      "[[job]]\nname = \"urgent\"\nschedule = \"@yearly\"\nshell = \"true\"\n");
  coord_->PostJson("/v1/jobs/slow-retry/trigger", json::object());
  TestAgent agent(*coord_, "a");
  std::vector<json> first;
  while (first.empty()) first = agent.Claim(1, 5000);
  ASSERT_EQ(agent.Finish(first[0], 1).status, 200);  // attempt 2 waits an hour
  std::vector<json> second;
  auto t0 = std::chrono::steady_clock::now();
  std::thread claim([&] { second = agent.Claim(1, 10'000); });
  // The claim is waiting once the coordinator counts it.
  ASSERT_TRUE(Coordinator::Eventually([&] { return coord_->Metric("jobctl_claims_total") == 2; },
                                      seconds(5)));
  coord_->PostJson("/v1/jobs/urgent/trigger", json::object());
  claim.join();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0]["job"], "urgent");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, seconds(5));
}

// /metrics counts what happened: a fire, its commit, a claim and a grant.
TEST_F(CoordinatorTest, MetricsCountFiresCommitsAndGrants) {
  Start();
  coord_->Apply("[[job]]\nname = \"tick\"\nschedule = \"*/1 * * * * *\"\nshell = \"true\"\n");
  TestAgent agent(*coord_, "a");
  std::vector<json> a;
  while (a.empty()) a = agent.Claim(1, 5000);
  ASSERT_EQ(agent.Finish(a[0], 0).status, 200);
  std::string m = coord_->Request("GET", "/metrics").body;
  auto value = [&m](const std::string& name) { return MetricValue(m, name); };
  EXPECT_GE(value("jobctl_fires_total"), 1) << m;
  EXPECT_GE(value("jobctl_fire_lateness_seconds_count"), 1) << m;
  EXPECT_GE(value("jobctl_store_commit_seconds_count"), 1) << m;
  EXPECT_GE(value("jobctl_grants_total"), 1) << m;
  EXPECT_GE(value("jobctl_claim_latency_seconds_count"), 1) << m;
  EXPECT_NE(m.find("jobctl_runs_finished_total{state=\"succeeded\"} 1"), std::string::npos) << m;
}

int64_t NowUnixMs() {
  return std::chrono::duration_cast<milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Per-job health on /metrics: one series per job of the file, labelled by its name only.
TEST_F(CoordinatorTest, MetricsShowEachJobsLastRunAndLastSuccessAndForgetRemovedJobs) {
  Start();
  const std::string good = "[[job]]\nname = \"good\"\nschedule = \"@yearly\"\nshell = \"true\"\n";
  const std::string idle =
      "[[job]]\nname = \"idle\"\nschedule = \"@yearly\"\nshell = \"true\"\n"
      "expect_success_within = \"1h\"\n";
  coord_->Apply(good + idle +
                "[[job]]\nname = \"bad\"\nschedule = \"@yearly\"\nshell = \"false\"\n");
  int64_t before = NowUnixMs();
  coord_->PostJson("/v1/jobs/good/trigger", json::object());
  coord_->PostJson("/v1/jobs/bad/trigger", json::object());
  TestAgent agent(*coord_, "a");
  std::vector<json> a = agent.ClaimUpTo(2);
  ASSERT_EQ(a.size(), 2u);
  for (const json& shard : a)
    ASSERT_EQ(agent.Finish(shard, shard["job"] == "good" ? 0 : 2).status, 200);
  coord_->PostJson("/v1/jobs/idle/trigger", json::object());  // left pending: no agent asks
  std::string m;
  auto value = [&m](const std::string& name) { return MetricValue(m, name); };
  ASSERT_TRUE(Coordinator::Eventually(
      [&] {
        m = coord_->Request("GET", "/metrics").body;
        return value("jobctl_job_last_run_succeeded{job_name=\"bad\"}") == 0 &&
               value("jobctl_shards_pending") == 1;
      },
      seconds(10)))
      << m;
  EXPECT_EQ(value("jobctl_job_last_run_succeeded{job_name=\"good\"}"), 1) << m;
  double success = value("jobctl_job_last_success_timestamp_seconds{job_name=\"good\"}");
  EXPECT_GE(success * 1000, static_cast<double>(before - 1)) << m;
  EXPECT_LE(success * 1000, static_cast<double>(NowUnixMs() + 1)) << m;
  EXPECT_GE(value("jobctl_job_last_run_duration_seconds{job_name=\"good\"}"), 0) << m;
  EXPECT_GE(value("jobctl_job_last_run_duration_seconds{job_name=\"bad\"}"), 0) << m;
  EXPECT_EQ(value("jobctl_job_last_success_timestamp_seconds{job_name=\"bad\"}"), 0) << m;
  // A job none of whose runs ended has no last run, and is not overdue an hour early.
  EXPECT_EQ(value("jobctl_job_last_run_succeeded{job_name=\"idle\"}"), -1) << m;
  EXPECT_EQ(value("jobctl_job_last_success_timestamp_seconds{job_name=\"idle\"}"), 0) << m;
  EXPECT_EQ(value("jobctl_job_overdue{job_name=\"idle\"}"), 0) << m;
  EXPECT_EQ(value("jobctl_job_overdue{job_name=\"bad\"}"), 0) << m;
  // The API's job list says the same.
  json jobs = coord_->GetJson("/v1/jobs");
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_EQ(jobs[0]["name"], "bad");
  EXPECT_EQ(jobs[0]["last_state"], "failed");
  EXPECT_TRUE(jobs[0]["last_success"].is_null());
  EXPECT_EQ(jobs[0]["overdue"], false);
  EXPECT_EQ(jobs[1]["name"], "good");
  EXPECT_EQ(UnixMs(jobs[1]["last_success"]) / 1000, static_cast<int64_t>(success));

  // A job removed from the file leaves /metrics.
  coord_->Apply(good + idle);
  m = coord_->Request("GET", "/metrics").body;
  EXPECT_EQ(m.find("job_name=\"bad\""), std::string::npos) << m;
  EXPECT_NE(m.find("job_name=\"good\""), std::string::npos) << m;
}

// The dead-man's switch: a job whose last success is older than its expect_success_within
// is overdue, from what the store says at start (here, a success five minutes old).
TEST_F(CoordinatorTest, AJobWithoutASuccessWithinItsExpectationIsOverdueAfterARestart) {
  Start();
  coord_->Apply(
      "[[job]]\nname = \"stale\"\nschedule = \"@yearly\"\nshell = \"true\"\n"
      "expect_success_within = \"1m\"\n"
      "[[job]]\nname = \"fresh\"\nschedule = \"@yearly\"\nshell = \"true\"\n"
      "expect_success_within = \"1m\"\n");
  int64_t stale_run = coord_->PostJson("/v1/jobs/stale/trigger", json::object())["id"];
  coord_->PostJson("/v1/jobs/fresh/trigger", json::object());
  {
    TestAgent agent(*coord_, "a");
    std::vector<json> a = agent.ClaimUpTo(2);
    ASSERT_EQ(a.size(), 2u);
    for (const json& shard : a) ASSERT_EQ(agent.Finish(shard, 0).status, 200);
  }
  ASSERT_TRUE(Coordinator::Eventually(
      [&] { return coord_->Metric("jobctl_job_last_run_succeeded{job_name=\"stale\"}") == 1; },
      seconds(10)));
  EXPECT_EQ(coord_->Metric("jobctl_job_overdue{job_name=\"stale\"}"), 0);
  coord_->Stop();
  int64_t five_minutes_ago = NowUnixMs() - 300'000;
  {
    Result<std::unique_ptr<store::Store>> st =
        store::OpenStore({.path = coord_->data_dir() + "/jobctl.db"});
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    ASSERT_TRUE((*st)->Begin().ok());
    ASSERT_TRUE((*st)->UpdateRunState(stale_run, RunState::kSucceeded, five_minutes_ago, "").ok());
    ASSERT_TRUE((*st)->Commit().ok());
  }
  coord_->Start();
  std::string m = coord_->Request("GET", "/metrics").body;
  EXPECT_EQ(MetricValue(m, "jobctl_job_overdue{job_name=\"stale\"}"), 1) << m;
  EXPECT_EQ(MetricValue(m, "jobctl_job_overdue{job_name=\"fresh\"}"), 0) << m;
  EXPECT_NEAR(MetricValue(m, "jobctl_job_last_success_timestamp_seconds{job_name=\"stale\"}"),
              static_cast<double>(five_minutes_ago) / 1000, 0.002)
      << m;
  json stale = coord_->GetJson("/v1/jobs/stale");
  EXPECT_EQ(stale["overdue"], true) << stale.dump();
  EXPECT_NEAR(UnixMs(stale["last_success"]), five_minutes_ago, 1000) << stale.dump();
  // Paused, it is not overdue.
  coord_->PostJson("/v1/jobs/stale/pause", json::object());
  EXPECT_EQ(coord_->Metric("jobctl_job_overdue{job_name=\"stale\"}"), 0);
}

// promtool's own linter on a live /metrics page with every family populated.
TEST_F(CoordinatorTest, MetricsPassPromtoolCheck) {
  std::string promtool = std::getenv("PROMTOOL") ? std::getenv("PROMTOOL") : PROMTOOL_BIN;
  if (::access(promtool.c_str(), X_OK) != 0) {
    GTEST_SKIP() << "promtool not found at " << promtool
                 << " (packaging/install-deps extracts it from Debian's prometheus package; "
                    "or set PROMTOOL)";
  }
  Start();
  coord_->Apply("[[job]]\nname = \"tick\"\nschedule = \"*/1 * * * * *\"\nshell = \"true\"\n");
  TestAgent agent(*coord_, "a");
  std::vector<json> a;
  while (a.empty()) a = agent.Claim(1, 5000);
  ASSERT_EQ(agent.Finish(a[0], 0).status, 200);
  http::HttpResponse reply = coord_->Request("GET", "/metrics");
  ASSERT_EQ(reply.status, 200);
  std::string page = dir_.Write("metrics.txt", reply.body);
  std::string cmd = "'" + promtool + "' check metrics < '" + page + "' 2>&1";
  std::string said;
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) said.append(buf, n);
  int rc = ::pclose(p);
  EXPECT_EQ(rc, 0) << said << "\n---- /metrics ----\n" << reply.body;
  EXPECT_EQ(said, "") << reply.body;  // no lint findings either
}

// The alert rules man jobctl-api(7) offers load in Prometheus (promtool check rules).
TEST(MetricsDocTest, TheManPagesExampleAlertRulesPassPromtoolCheck) {
  std::string promtool = std::getenv("PROMTOOL") ? std::getenv("PROMTOOL") : PROMTOOL_BIN;
  if (::access(promtool.c_str(), X_OK) != 0) GTEST_SKIP() << "promtool not found at " << promtool;
  std::ifstream page(MAN_API_PAGE);
  ASSERT_TRUE(page) << MAN_API_PAGE;
  std::string rules, line;
  bool in = false;
  while (std::getline(page, line)) {
    if (line == "groups:") in = true;
    if (in && line.starts_with("```")) break;
    if (in) rules += line + "\n";
  }
  ASSERT_NE(rules.find("jobctl_job_overdue"), std::string::npos) << rules;
  TempDir dir;
  std::string file = dir.Write("rules.yml", rules);
  std::string cmd = "'" + promtool + "' check rules '" + file + "' 2>&1";
  std::string said;
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) said.append(buf, n);
  EXPECT_EQ(::pclose(p), 0) << said << "\n---- rules ----\n" << rules;
  EXPECT_NE(said.find("SUCCESS: 3 rules found"), std::string::npos) << said;
}

TEST_F(CoordinatorTest, ManualTriggerWithTheSameKeyIsTheSameRun) {
  Start();
  coord_->Apply("[[job]]\nname = \"deploy\"\nschedule = \"@yearly\"\nshell = \"true\"\n");
  json a = coord_->PostJson("/v1/jobs/deploy/trigger", {{"idempotency_key", "build-77"}});
  json b = coord_->PostJson("/v1/jobs/deploy/trigger", {{"idempotency_key", "build-77"}});
  json c = coord_->PostJson("/v1/jobs/deploy/trigger", {{"idempotency_key", "build-78"}});
  EXPECT_EQ(a["id"], b["id"]);
  EXPECT_TRUE(b["existing"].get<bool>());
  EXPECT_NE(a["id"], c["id"]);
  EXPECT_EQ(coord_->Runs("deploy").size(), 2u);
  EXPECT_EQ(a["reason"], "manual");
}

TEST_F(CoordinatorTest, EveryRouteNeedsAToken401AndTheRightRole403) {
  Start();
  coord_->Apply("[[job]]\nname = \"j\"\nschedule = \"@yearly\"\nshell = \"true\"\n");
  json read = coord_->PostJson("/v1/tokens", {{"role", "read"}});
  const std::vector<std::pair<std::string, std::string>> routes = {{"GET", "/metrics"},
                                                                   {"GET", "/v1/jobfile"},
                                                                   {"POST", "/v1/jobfile"},
                                                                   {"GET", "/v1/jobs"},
                                                                   {"GET", "/v1/jobs/j"},
                                                                   {"POST", "/v1/jobs/j/trigger"},
                                                                   {"POST", "/v1/jobs/j/pause"},
                                                                   {"POST", "/v1/jobs/j/resume"},
                                                                   {"GET", "/v1/runs"},
                                                                   {"GET", "/v1/runs/1"},
                                                                   {"GET", "/v1/runs/1/wait"},
                                                                   {"GET", "/v1/runs/1/logs"},
                                                                   {"POST", "/v1/runs/1/cancel"},
                                                                   {"POST", "/v1/runs/1/retry"},
                                                                   {"GET", "/v1/misses?job=j"},
                                                                   {"GET", "/v1/agents"},
                                                                   {"POST", "/v1/agents/x/drain"},
                                                                   {"GET", "/v1/tokens"},
                                                                   {"POST", "/v1/tokens"},
                                                                   {"DELETE", "/v1/tokens/1"},
                                                                   {"POST", "/v1/agent/claim"},
                                                                   {"POST", "/v1/agent/heartbeat"},
                                                                   {"POST", "/v1/agent/logs"},
                                                                   {"POST", "/v1/agent/result"}};
  for (const auto& [method, path] : routes) {
    EXPECT_EQ(coord_->Request(method, path, "{}", "").status, 401) << method << " " << path;
    EXPECT_EQ(coord_->Request(method, path, "{}", "jc_wrong").status, 401) << method << " " << path;
  }
  EXPECT_EQ(coord_->Request("GET", "/healthz", "", "").status, 200);
  EXPECT_EQ(coord_->Request("GET", "/readyz", "", "").status, 200);
  std::string r = read["token"];
  EXPECT_EQ(coord_->Request("GET", "/v1/jobs", "", r).status, 200);
  EXPECT_EQ(coord_->Request("POST", "/v1/jobs/j/trigger", "{}", r).status, 403);
  EXPECT_EQ(coord_->Request("POST", "/v1/jobfile", "{}", r).status, 403);
  EXPECT_EQ(coord_->Request("POST", "/v1/agent/claim", "{}", r).status, 403);
  EXPECT_EQ(coord_->Request("GET", "/v1/jobs", "", "agent").status, 403);
  // A trigger token limited to a glob.
  json t = coord_->PostJson("/v1/tokens", {{"role", "trigger"}, {"jobs", "deploy-*"}});
  EXPECT_EQ(coord_->Request("POST", "/v1/jobs/j/trigger", "{}", t["token"]).status, 403);
  // Revoked tokens stop working at once.
  coord_->Request("DELETE", "/v1/tokens/" + std::to_string(read["id"].get<int64_t>()));
  EXPECT_EQ(coord_->Request("GET", "/v1/jobs", "", r).status, 401);
}

TEST_F(CoordinatorTest, ApplyWithAStaleRevisionIsRefusedWithWhoAppliedIt) {
  Start();
  json first = coord_->Apply("[[job]]\nname = \"a\"\nschedule = \"@daily\"\nshell = \"true\"\n");
  int64_t rev = first["revision"];
  coord_->PostJson("/v1/jobfile",
                   {{"text", "[[job]]\nname = \"b\"\nschedule = \"@daily\"\nshell = \"true\"\n"},
                    {"base_revision", rev},
                    {"author", "alice"}});
  http::HttpResponse stale = coord_->Request(
      "POST", "/v1/jobfile",
      json{{"text", "[[job]]\nname = \"c\"\nschedule = \"@daily\"\nshell = \"true\"\n"},
           {"base_revision", rev}}
          .dump());
  EXPECT_EQ(stale.status, 409);
  EXPECT_NE(stale.body.find("alice"), std::string::npos) << stale.body;
  // Removed jobs stop firing but keep their history; the file round-trips byte-exact.
  json file = coord_->GetJson("/v1/jobfile");
  EXPECT_EQ(file["text"], "[[job]]\nname = \"b\"\nschedule = \"@daily\"\nshell = \"true\"\n");
  json jobs = coord_->GetJson("/v1/jobs");
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0]["name"], "b");
}

TEST_F(CoordinatorTest, StopsCleanlyOnSigterm) {
  Start();
  TestAgent agent(*coord_, "a");
  std::string claim_error = "not answered";
  std::thread waiting([&] {
    try {
      (void)agent.Claim(1, 20'000);
      claim_error.clear();
    } catch (const std::exception& e) {
      claim_error = e.what();
    }
  });
  // Stop while the agent's long-poll claim is parked: it is answered, not cut off.
  ASSERT_TRUE(
      Coordinator::Eventually([&] { return !coord_->GetJson("/v1/agents").empty(); }, seconds(5)));
  coord_->Stop();  // throws unless it exits 0 in time
  waiting.join();
  EXPECT_EQ(claim_error, "");
  EXPECT_NE(coord_->Logs().find("coordinator stopped"), std::string::npos);
}

}  // namespace
}  // namespace jobctl::testing
