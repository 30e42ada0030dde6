// Routing as users rely on it: which agent runs each shard of a run, for every route, and
// label selectors that keep shards off agents that do not match. The real `jobctl serve` is
// driven by test agents whose long-poll claims are all open when a run is made, so the
// agent that gets a shard is the one its route chose, not whichever agent asked first (a
// shard waits up to 300 ms for the agent its route prefers, then any eligible agent may
// take it).
#include <gtest/gtest.h>

#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "testlib/cluster.h"
#include "testlib/coordinator_fixture.h"

namespace jobctl::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

// What each agent was granted, by agent name.
using Grants = std::map<std::string, std::vector<json>>;

// One test agent of a scenario: `agent` claims from a thread of its own; `twin` is the same
// agent (same name and labels) for the test thread, to end a claim that is still waiting.
struct Member {
  Member(const Coordinator& c, const std::string& name,
         const std::map<std::string, std::string>& labels, int free_slots)
      : agent(c, name, labels), twin(c, name, labels), free(free_slots) {}
  TestAgent agent;
  TestAgent twin;
  int free;  // shards one claim may take
};

// One long-poll claim from each of several agents, all open at once. The constructor returns
// once the coordinator holds every one of them (its claim counter says so), so whatever is
// made next is placed among exactly these agents.
class OpenClaims {
 public:
  OpenClaims(Coordinator& c, std::vector<Member*> who, int wait_ms = 10'000)
      : who_(std::move(who)), got_(who_.size()), errors_(who_.size()) {
    double before = c.Metric("jobctl_claims_total");
    for (size_t i = 0; i < who_.size(); ++i) {
      threads_.emplace_back([this, i, wait_ms] {
        try {
          got_[i] = who_[i]->agent.Claim(who_[i]->free, wait_ms);
        } catch (const std::exception& e) {
          errors_[i] = e.what();
        }
      });
    }
    bool held = Coordinator::Eventually(
        [&] {
          return c.Metric("jobctl_claims_total") >= before + static_cast<double>(who_.size());
        },
        seconds(5));
    EXPECT_TRUE(held) << "the coordinator never held all " << who_.size() << " claims";
  }
  ~OpenClaims() {
    if (threads_.empty()) return;
    try {
      End();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "ending claims: " << e.what();
    }
  }
  OpenClaims(const OpenClaims&) = delete;
  OpenClaims& operator=(const OpenClaims&) = delete;

  // Waits for each claim's own answer: its grants, or nothing at the end of its wait.
  Grants Join() {
    for (auto& t : threads_) t.join();
    threads_.clear();
    Grants out;
    for (size_t i = 0; i < who_.size(); ++i) {
      EXPECT_EQ(errors_[i], "") << who_[i]->agent.name();
      out[who_[i]->agent.name()] = got_[i];
    }
    return out;
  }
  // Ends the claims still waiting: a newer claim of the same agent replaces its open one
  // (answered empty), and with nothing free and no wait it takes nothing itself.
  Grants End() {
    for (Member* m : who_) EXPECT_TRUE(m->twin.Claim(0, 0).empty()) << m->agent.name();
    return Join();
  }

 private:
  std::vector<Member*> who_;
  std::vector<std::vector<json>> got_;
  std::vector<std::string> errors_;
  std::vector<std::thread> threads_;
};

// Shard index -> agent name, for one run, from the grants.
std::map<int, std::string> Placement(const Grants& g, int64_t run) {
  std::map<int, std::string> out;
  for (const auto& [agent, list] : g) {
    for (const json& a : list) {
      if (a["run"].get<int64_t>() != run) continue;
      EXPECT_TRUE(out.emplace(a["shard"].get<int>(), agent).second)
          << "shard granted twice: " << a.dump();
    }
  }
  return out;
}

std::string Job(const std::string& name, const std::string& keys) {
  return "[[job]]\nname = \"" + name + "\"\nschedule = \"@yearly\"\nshell = \"true\"\n" + keys;
}

class RoutingTest : public CoordinatorFixture {
 protected:
  Member& Add(const std::string& name, const std::map<std::string, std::string>& labels = {},
              int free = 1) {
    members_.push_back(std::make_unique<Member>(*coord_, name, labels, free));
    return *members_.back();
  }
  Member& Get(const std::string& name) {
    for (auto& m : members_) {
      if (m->agent.name() == name) return *m;
    }
    throw std::runtime_error("no member " + name);
  }
  std::vector<Member*> All() {
    std::vector<Member*> out;
    for (auto& m : members_) out.push_back(m.get());
    return out;
  }

  int64_t Trigger(const std::string& job) {
    return coord_->PostJson("/v1/jobs/" + job + "/trigger", json::object())["id"].get<int64_t>();
  }
  json RunOf(int64_t run) { return coord_->GetJson("/v1/runs/" + std::to_string(run)); }
  // Waits until no shard of `run` is pending (each is granted or done).
  void AwaitPlaced(int64_t run) {
    bool placed = Coordinator::Eventually(
        [&] {
          json rec = RunOf(run);
          for (const json& s : rec["shards"]) {
            if (s["state"] == "pending") return false;
          }
          return true;
        },
        seconds(5));
    EXPECT_TRUE(placed) << "run " << run << " still has pending shards: " << RunOf(run).dump();
  }
  // Every claim of `who` open, then one run of `job` (its id in *run) placed among them;
  // returns what each was granted.
  Grants TriggerAmong(const std::vector<Member*>& who, const std::string& job, int64_t* run) {
    OpenClaims claims(*coord_, who);
    *run = Trigger(job);
    AwaitPlaced(*run);
    return claims.End();
  }
  // Whether the coordinator stops counting agent `name` as connected within `timeout`.
  bool Disconnected(const std::string& name, std::chrono::seconds timeout) {
    return Coordinator::Eventually(
        [&] {
          for (const json& agent : coord_->GetJson("/v1/agents")) {
            if (agent["name"] == name) return !agent["connected"].get<bool>();
          }
          return false;
        },
        timeout);
  }
  // Agents "a" and "b", each granted its shard of a run of the broadcast job "everywhere"
  // (the run's id in *run), and b's shard ended well. Returns a's grant (null when the run
  // was not placed so).
  json BroadcastToTwo(int64_t* run) {
    Member& a = Add("a");
    Member& b = Add("b");
    Grants got = TriggerAmong({&a, &b}, "everywhere", run);
    EXPECT_EQ(got["a"].size(), 1u);
    EXPECT_EQ(got["b"].size(), 1u);
    if (got["a"].size() != 1 || got["b"].size() != 1) return json();
    EXPECT_EQ(b.agent.Finish(got["b"][0], 0).status, 200);
    return got["a"][0];
  }
  // The same, with every shard then finished; returns the run's shard -> agent.
  std::map<int, std::string> PlaceOneRun(const std::vector<Member*>& who, const std::string& job) {
    int64_t run = 0;
    Grants got = TriggerAmong(who, job, &run);
    FinishAll(got);
    return Placement(got, run);
  }
  void FinishAll(const Grants& g) {
    for (const auto& [agent, list] : g) {
      for (const json& a : list) EXPECT_EQ(Get(agent).agent.Finish(a, 0).status, 200) << a.dump();
    }
  }

  std::vector<std::unique_ptr<Member>> members_;
};

TEST_F(RoutingTest, SpreadPutsEachShardOfARunOnADifferentAgent) {
  Start();
  coord_->Apply(Job("wide", "shards = 3\n"));  // spread is the default
  // Each agent could take the whole run by itself.
  for (const char* name : {"a", "b", "c"}) Add(name, {}, 3);
  std::map<int, std::string> placed = PlaceOneRun(All(), "wide");
  ASSERT_EQ(placed.size(), 3u);
  std::set<std::string> agents;
  for (const auto& [shard, agent] : placed) agents.insert(agent);
  EXPECT_EQ(agents, (std::set<std::string>{"a", "b", "c"}));
}

TEST_F(RoutingTest, SpreadPlacesEachShardOnTheSameAgentRunAfterRun) {
  Start();
  coord_->Apply(Job("wide", "shards = 3\nroute = \"spread\"\n"));
  for (const char* name : {"a", "b", "c", "d"}) Add(name, {}, 3);
  std::map<int, std::string> first = PlaceOneRun(All(), "wide");
  ASSERT_EQ(first.size(), 3u);
  std::set<std::string> agents;
  for (const auto& [shard, agent] : first) agents.insert(agent);
  EXPECT_EQ(agents.size(), 3u) << "shards of one run share an agent while one is idle";
  for (int run = 2; run <= 5; ++run) EXPECT_EQ(PlaceOneRun(All(), "wide"), first) << "run " << run;
}

// Where a one-shard job's run goes with every agent idle, then while that agent also runs a
// shard of another job, then with it idle again.
struct BusyPlacement {
  std::string idle, busy, idle_again;
};

class RouteAroundBusyAgent : public RoutingTest {
 protected:
  BusyPlacement Place(const std::string& route) {
    Start();
    coord_->Apply(Job("j", "route = \"" + route + "\"\n") + Job("hog", ""));
    for (const char* name : {"a", "b", "c"}) Add(name, {}, 2);
    BusyPlacement out;
    out.idle = PlaceOneRun(All(), "j")[0];
    if (out.idle.empty()) return out;
    // Only the agent the job went to is asking, so the hog's shard ends up there.
    Grants hog;
    {
      OpenClaims claims(*coord_, {&Get(out.idle)});
      AwaitPlaced(Trigger("hog"));
      hog = claims.End();
    }
    EXPECT_EQ(hog[out.idle].size(), 1u);
    out.busy = PlaceOneRun(All(), "j")[0];
    FinishAll(hog);
    out.idle_again = PlaceOneRun(All(), "j")[0];
    return out;
  }
};

TEST_F(RouteAroundBusyAgent, SpreadMovesARunOffItsAgentWhileThatAgentIsBusier) {
  BusyPlacement p = Place("spread");
  ASSERT_NE(p.idle, "");
  EXPECT_NE(p.busy, p.idle) << "spread chose the busy agent over two idle ones";
  EXPECT_NE(p.busy, "");
  EXPECT_EQ(p.idle_again, p.idle) << "with loads equal again, spread should go back";
}

TEST_F(RouteAroundBusyAgent, HashKeepsARunOnItsAgentEvenWhileThatAgentIsBusier) {
  BusyPlacement p = Place("hash");
  ASSERT_NE(p.idle, "");
  EXPECT_EQ(p.busy, p.idle) << "hash moved with the load";
  EXPECT_EQ(p.idle_again, p.idle);
}

TEST_F(RoutingTest, HashSendsEachShardToTheSameAgentRunAfterRun) {
  Start();
  coord_->Apply(Job("cached", "shards = 4\nroute = \"hash\"\n"));
  for (const char* name : {"a", "b", "c"}) Add(name, {}, 4);
  std::map<int, std::string> first = PlaceOneRun(All(), "cached");
  ASSERT_EQ(first.size(), 4u);
  for (int run = 2; run <= 5; ++run)
    EXPECT_EQ(PlaceOneRun(All(), "cached"), first) << "run " << run;
}

TEST_F(RoutingTest, RoundRobinTakesTheAgentsInTurnFromRunToRun) {
  Start();
  coord_->Apply(Job("turns", "route = \"round-robin\"\n"));
  for (const char* name : {"a", "b", "c"}) Add(name);
  std::vector<std::string> order;
  for (int run = 0; run < 6; ++run) order.push_back(PlaceOneRun(All(), "turns")[0]);
  EXPECT_EQ(std::set<std::string>(order.begin(), order.begin() + 3),
            (std::set<std::string>{"a", "b", "c"}))
      << "three runs in a row did not visit each agent once";
  for (size_t i = 3; i < order.size(); ++i) {
    EXPECT_EQ(order[i], order[i - 3]) << "run " << i << " broke the turn order";
  }
}

TEST_F(RoutingTest, RandomPicksAmongMatchingAgentsOnly) {
  Start();
  coord_->Apply(Job("dice", "route = \"random\"\non = [\"role=web\"]\n"));
  for (const char* name : {"web-1", "web-2", "web-3"}) Add(name, {{"role", "web"}});
  Add("db", {{"role", "db"}});
  std::map<std::string, int> count;
  for (int run = 0; run < 15; ++run) ++count[PlaceOneRun(All(), "dice")[0]];
  EXPECT_EQ(count.count("db"), 0u) << "a shard went to an agent the selector excludes";
  EXPECT_EQ(count.count(""), 0u) << "a run was not placed";
  // Three agents at random: all 15 runs on one of them has odds of 1 in 4.8 million.
  EXPECT_GE(count.size(), 2u) << "15 random placements all chose " << count.begin()->first;
}

TEST_F(RoutingTest, FailoverUsesTheFirstAgentByNameUntilItIsGoneAndAgainWhenItIsBack) {
  // A short TTL: an agent unheard for that long is no longer eligible.
  Start("lease_ttl = \"2s\"\nheartbeat = \"1s\"\n");
  coord_->Apply(Job("p1", "route = \"failover\"\n") + Job("p2", "route = \"failover\"\n"));
  // Added out of name order: the order that counts is by name.
  Member& charlie = Add("charlie");
  Member& alpha = Add("alpha");
  Member& bravo = Add("bravo");
  for (const char* job : {"p1", "p2", "p1"}) {
    EXPECT_EQ(PlaceOneRun(All(), job)[0], "alpha") << job;
  }
  // alpha falls silent; bravo and charlie keep claims open until it no longer counts.
  for (const char* job : {"p2", "p1"}) {
    OpenClaims claims(*coord_, {&bravo, &charlie});
    ASSERT_TRUE(Disconnected("alpha", seconds(5)));
    int64_t run = Trigger(job);
    AwaitPlaced(run);
    Grants got = claims.End();
    FinishAll(got);
    EXPECT_EQ(Placement(got, run)[0], "bravo") << job;
  }
  EXPECT_EQ(PlaceOneRun({&alpha, &bravo, &charlie}, "p2")[0], "alpha") << "did not fail back";
}

TEST_F(RoutingTest, BroadcastRunsOneShardOnEachEligibleAgentAtFireTime) {
  Start();
  coord_->Apply(Job("everywhere", "route = \"broadcast\"\non = [\"role=web\"]\nshards = 5\n"));
  Member& web1 = Add("web-1", {{"role", "web"}});
  Member& web2 = Add("web-2", {{"role", "web"}});
  Member& web3 = Add("web-3", {{"role", "web"}});
  Member& db = Add("db", {{"role", "db"}});
  for (Member* m : {&web1, &web2, &web3, &db}) ASSERT_TRUE(m->agent.Claim(1, 0).empty());
  int64_t run = Trigger("everywhere");
  json rec = RunOf(run);
  EXPECT_EQ(rec["shard_total"], 3) << rec.dump();  // `shards` is ignored
  // An agent arriving after the fire has no shard of that run, even while the others'
  // shards wait for them well past the 300 ms any other route would hold them.
  Member& web4 = Add("web-4", {{"role", "web"}});
  {
    OpenClaims late(*coord_, {&web4, &db}, 1000);
    Grants got = late.Join();
    EXPECT_TRUE(got["web-4"].empty()) << got["web-4"][0].dump();
    EXPECT_TRUE(got["db"].empty()) << got["db"][0].dump();
  }
  Grants got;
  {
    OpenClaims claims(*coord_, {&web1, &web2, &web3});
    AwaitPlaced(run);
    got = claims.End();
  }
  FinishAll(got);
  std::map<int, std::string> placed = Placement(got, run);
  EXPECT_EQ(placed.size(), 3u);
  for (const char* name : {"web-1", "web-2", "web-3"}) EXPECT_EQ(got[name].size(), 1u) << name;
  EXPECT_EQ(coord_->WaitRun(run, seconds(5))["state"], "succeeded");

  // The next run counts web-4 and still not db.
  std::map<int, std::string> next = PlaceOneRun(All(), "everywhere");
  std::set<std::string> agents;
  for (const auto& [shard, agent] : next) agents.insert(agent);
  EXPECT_EQ(next.size(), 4u);
  EXPECT_EQ(agents, (std::set<std::string>{"web-1", "web-2", "web-3", "web-4"}));
}

TEST_F(RoutingTest, ShardsGoOnlyToAgentsMatchingEverySelector) {
  Start();
  coord_->Apply(Job("web-only", "shards = 4\non = [\"role=web\", \"env!=test\"]\n"));
  Member& web1 = Add("web-1", {{"role", "web"}});
  Member& web2 = Add("web-2", {{"role", "web"}, {"env", "prod"}});
  Member& test = Add("web-test", {{"role", "web"}, {"env", "test"}}, 4);
  Member& db = Add("db", {{"role", "db"}}, 4);
  // The matching agents have room for two of the four shards; the others, with room for all
  // of them, wait well past the 300 ms hold and must get none.
  int64_t run = 0;
  Grants first;
  {
    OpenClaims idle(*coord_, {&test, &db}, 1000);
    OpenClaims busy(*coord_, {&web1, &web2});
    run = Trigger("web-only");
    first = busy.Join();
    Grants none = idle.Join();
    EXPECT_TRUE(none["web-test"].empty()) << "web-test matches role=web but not env!=test";
    EXPECT_TRUE(none["db"].empty());
  }
  EXPECT_EQ(first["web-1"].size(), 1u);
  EXPECT_EQ(first["web-2"].size(), 1u);
  json rec = RunOf(run);
  int pending = 0;
  for (const json& s : rec["shards"]) pending += s["state"] == "pending";
  EXPECT_EQ(pending, 2) << rec.dump();
  // The rest go to the matching agents once they have room.
  Grants second;
  {
    OpenClaims claims(*coord_, {&web1, &web2});
    AwaitPlaced(run);
    second = claims.End();
  }
  FinishAll(first);
  FinishAll(second);
  std::map<int, std::string> placed = Placement(first, run);
  placed.merge(Placement(second, run));
  EXPECT_EQ(placed.size(), 4u);
  EXPECT_EQ(coord_->WaitRun(run, seconds(5))["state"], "succeeded");
}

TEST_F(RoutingTest, JobNobodyMatchesStaysPendingUntilAMatchingAgentArrives) {
  Start();
  coord_->Apply(Job("needs-gpu", "on = [\"gpu=yes\"]\n"));
  Member& cpu1 = Add("cpu-1", {{"gpu", "no"}});
  Member& cpu2 = Add("cpu-2");
  int64_t run = 0;
  {
    OpenClaims claims(*coord_, {&cpu1, &cpu2}, 1000);
    run = Trigger("needs-gpu");
    Grants got = claims.Join();
    EXPECT_TRUE(got["cpu-1"].empty());
    EXPECT_TRUE(got["cpu-2"].empty());
  }
  json rec = RunOf(run);
  EXPECT_EQ(rec["state"], "pending") << rec.dump();
  EXPECT_EQ(rec["shards"][0]["agent"], "") << rec.dump();
  Member& gpu = Add("gpu-1", {{"gpu", "yes"}});
  std::vector<json> a = gpu.agent.Claim(1, 5000);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0]["run"], run);
  EXPECT_EQ(gpu.agent.Finish(a[0], 0).status, 200);
  EXPECT_EQ(coord_->WaitRun(run, seconds(5))["state"], "succeeded");
}

// A broadcast shard is its agent's: when it fails, the retry runs there again, not on an
// agent that already ran its own shard of the run.
TEST_F(RoutingTest, FailedBroadcastShardIsRetriedOnItsOwnAgent) {
  Start();
  coord_->Apply(Job("everywhere",
                    "route = \"broadcast\"\n"
                    "retry = { max = 1, initial = \"100ms\", max_delay = \"100ms\" }\n"));
  int64_t run = 0;
  json of_a = BroadcastToTwo(&run);
  ASSERT_FALSE(of_a.is_null());
  Member& a = Get("a");
  Member& b = Get("b");
  int shard_of_a = of_a["shard"].get<int>();
  ASSERT_EQ(a.agent.Finish(of_a, 1).status, 200);  // failed: retried after ~100 ms
  {
    // Only b asks, for longer than the backoff plus the 300 ms hold.
    OpenClaims only_b(*coord_, {&b}, 1000);
    Grants none = only_b.Join();
    EXPECT_TRUE(none["b"].empty()) << "a's retry went to b: " << none["b"][0].dump();
  }
  std::vector<json> retry = a.agent.Claim(1, 5000);
  ASSERT_EQ(retry.size(), 1u);
  EXPECT_EQ(retry[0]["shard"], shard_of_a);
  EXPECT_EQ(retry[0]["attempt"], 2);
  EXPECT_EQ(a.agent.Finish(retry[0], 0).status, 200);
  EXPECT_EQ(coord_->WaitRun(run, seconds(5))["state"], "succeeded");
}

// A retry of a broadcast run's failed shards runs each on the agent it failed on: not on the
// agent whose shard succeeded, nor on one that joined since (the run keeps its shard count).
TEST_F(RoutingTest, RetryOfTheFailedShardsOfABroadcastRunRunsThemOnTheirAgents) {
  Start();
  coord_->Apply(Job("everywhere", "route = \"broadcast\"\n"));
  int64_t run = 0;
  json of_a = BroadcastToTwo(&run);
  ASSERT_FALSE(of_a.is_null());
  Member& a = Get("a");
  Member& b = Get("b");
  int shard_of_a = of_a["shard"].get<int>();
  ASSERT_EQ(a.agent.Finish(of_a, 1).status, 200);
  ASSERT_EQ(coord_->WaitRun(run, seconds(5))["state"], "failed");

  Member& c = Add("c");
  ASSERT_TRUE(c.agent.Claim(1, 0).empty());
  json retry =
      coord_->PostJson("/v1/runs/" + std::to_string(run) + "/retry", {{"failed_shards", true}});
  int64_t second = retry["id"];
  EXPECT_EQ(retry["shard_total"], 2) << retry.dump();
  EXPECT_EQ(retry["trace_id"], coord_->GetJson("/v1/runs/" + std::to_string(run))["trace_id"]);
  // The binding is in the store: a restart keeps it.
  coord_->Stop();
  coord_->Start();
  {
    OpenClaims others(*coord_, {&b, &c}, 1000);
    Grants none = others.Join();
    EXPECT_TRUE(none["b"].empty()) << "a's shard went to b: " << none["b"][0].dump();
    EXPECT_TRUE(none["c"].empty()) << "a's shard went to c: " << none["c"][0].dump();
  }
  std::vector<json> again = a.agent.Claim(1, 5000);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0]["run"], second);
  EXPECT_EQ(again[0]["shard"], shard_of_a);
  EXPECT_EQ(a.agent.Finish(again[0], 0).status, 200);
  json done = coord_->WaitRun(second, seconds(5));
  EXPECT_EQ(done["state"], "succeeded") << done.dump();
  const json& kept = done["shards"][1 - shard_of_a];
  EXPECT_EQ(kept["outcome"], "kept");
  EXPECT_EQ(kept["agent"], "b");
}

// A retry of a broadcast shard whose agent is gone is refused, and says so: the shard would
// wait for that agent for ever (and, with overlap = "forbid", hold up the job's fires).
TEST_F(RoutingTest, RetryOfAFailedBroadcastShardWhoseAgentIsGoneIsRefused) {
  Start("lease_ttl = \"2s\"\nheartbeat = \"1s\"\n");
  coord_->Apply(Job("everywhere", "route = \"broadcast\"\n"));
  int64_t run = 0;
  json of_a = BroadcastToTwo(&run);
  ASSERT_FALSE(of_a.is_null());
  ASSERT_EQ(Get("a").agent.Finish(of_a, 1).status, 200);
  ASSERT_EQ(coord_->WaitRun(run, seconds(5))["state"], "failed");
  // a goes quiet until the coordinator no longer counts it as connected.
  ASSERT_TRUE(Disconnected("a", seconds(20)));
  const std::string path = "/v1/runs/" + std::to_string(run) + "/retry";
  http::HttpResponse r = coord_->Request("POST", path, R"({"failed_shards": true})");
  EXPECT_EQ(r.status, 409) << r.body;
  EXPECT_NE(r.body.find("agent \\\"a\\\""), std::string::npos) << r.body;
  // A whole retry goes to the agents there now.
  EXPECT_EQ(coord_->Request("POST", path, "{}").status, 201);
}

// A broadcast shard whose agent vanished (its lease expired) is lost: it is not run on
// another agent, which has a shard of its own, and the run ends instead of waiting for an
// agent that may never return.
TEST_F(RoutingTest, BroadcastShardOfAVanishedAgentIsLostNotRunElsewhere) {
  Start("lease_ttl = \"2s\"\nheartbeat = \"1s\"\n");
  coord_->Apply(Job("everywhere", "route = \"broadcast\"\n"));
  int64_t run = 0;
  json of_a = BroadcastToTwo(&run);
  ASSERT_FALSE(of_a.is_null());
  Member& b = Get("b");
  int shard_of_a = of_a["shard"].get<int>();
  // a goes quiet; b stays, asking for work all along.
  json end;
  Grants to_b;
  {
    OpenClaims only_b(*coord_, {&b}, 10'000);
    end = coord_->WaitRun(run, seconds(8));
    to_b = only_b.End();
  }
  EXPECT_TRUE(to_b["b"].empty()) << "a's shard went to b: " << to_b["b"][0].dump();
  ASSERT_FALSE(end["finished_at"].get<std::string>().empty())
      << "the run waits for a: " << end.dump();
  const json& lost = end["shards"][shard_of_a];
  EXPECT_EQ(lost["state"], "lost") << end.dump();
  EXPECT_EQ(lost["agent"], "a") << end.dump();
  EXPECT_EQ(lost["attempt"], 1) << end.dump();
  EXPECT_NE(lost["message"].get<std::string>().find("only on its own agent"), std::string::npos)
      << end.dump();
  // Ended when the lease expired: within TTL + 1 s of the grant.
  EXPECT_LE(UnixMs(end["finished_at"]) - UnixMs(lost["started_at"]), 2000 + 1000) << end.dump();
}

}  // namespace
}  // namespace jobctl::testing
