// The routing rule for every route: which agent gets a shard. The rows and scenarios are
// those of tests/integration/routing_test.cc, decided here without agents or a loop.
#include "model/routing.h"

#include <gtest/gtest.h>

#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "base/fake_random.h"

namespace jobctl {
namespace {

struct AgentSpec {
  std::string name;
  std::map<std::string, std::string> labels;
  int free = 1;
  bool alive = true;
  bool draining = false;
  int slots = 1;
  size_t held = 0;
  int held_in_run = 0;
};

std::vector<AgentView> Views(const std::vector<AgentSpec>& agents) {
  std::vector<AgentView> out;
  for (const AgentSpec& a : agents) {
    out.push_back({.name = a.name,
                   .labels = &a.labels,
                   .draining = a.draining,
                   .alive = a.alive,
                   .free = a.free,
                   .slots = a.slots,
                   .held = a.held,
                   .held_in_run = a.held_in_run});
  }
  return out;
}

struct RouteCase {
  const char* name;
  Route route;
  std::vector<LabelSelector> on;
  std::string bound;
  int64_t waited_ms;
  uint64_t turn;
  std::vector<AgentSpec> agents;  // in name order
  RouteVerdict verdict;
  std::string agent;  // for kGrant
};

// ctest lists each row by its name.
void PrintTo(const RouteCase& c, std::ostream* os) { *os << c.name; }

const std::vector<AgentSpec> kAbc = {{.name = "a"}, {.name = "b"}, {.name = "c"}};

const RouteCase kCases[] = {
    // FailoverUsesTheFirstAgentByNameUntilItIsGoneAndAgainWhenItIsBack.
    {"FailoverTakesTheFirstAgentByName",
     Route::kFailover,
     {},
     "",
     0,
     0,
     {{.name = "alpha"}, {.name = "bravo"}, {.name = "charlie"}},
     RouteVerdict::kGrant,
     "alpha"},
    {"FailoverPassesOverAnAgentNoLongerAlive",
     Route::kFailover,
     {},
     "",
     0,
     0,
     {{.name = "alpha", .alive = false}, {.name = "bravo"}, {.name = "charlie"}},
     RouteVerdict::kGrant,
     "bravo"},
    {"FailoverHoldsTheShardForTheFirstAgentWhileItHasNoRoom",
     Route::kFailover,
     {},
     "",
     299,
     0,
     {{.name = "alpha", .free = 0}, {.name = "bravo"}},
     RouteVerdict::kHold,
     ""},
    {"FailoverGivesTheShardToTheNextAgentAfterTheHold",
     Route::kFailover,
     {},
     "",
     300,
     0,
     {{.name = "alpha", .free = 0}, {.name = "bravo"}},
     RouteVerdict::kGrant,
     "bravo"},
    // RoundRobinTakesTheAgentsInTurnFromRunToRun.
    {"RoundRobinTurnZeroIsTheFirstAgent",
     Route::kRoundRobin,
     {},
     "",
     0,
     0,
     kAbc,
     RouteVerdict::kGrant,
     "a"},
    {"RoundRobinTurnOneIsTheSecondAgent",
     Route::kRoundRobin,
     {},
     "",
     0,
     1,
     kAbc,
     RouteVerdict::kGrant,
     "b"},
    {"RoundRobinTurnTwoIsTheThirdAgent",
     Route::kRoundRobin,
     {},
     "",
     0,
     2,
     kAbc,
     RouteVerdict::kGrant,
     "c"},
    {"RoundRobinTurnThreeWrapsToTheFirstAgent",
     Route::kRoundRobin,
     {},
     "",
     0,
     3,
     kAbc,
     RouteVerdict::kGrant,
     "a"},
    {"RoundRobinTakesTurnsAmongEligibleAgentsOnly",
     Route::kRoundRobin,
     {},
     "",
     0,
     1,
     {{.name = "a"}, {.name = "b", .draining = true}, {.name = "c"}},
     RouteVerdict::kGrant,
     "c"},
    // BroadcastRunsOneShardOnEachEligibleAgentAtFireTime,
    // FailedBroadcastShardIsRetriedOnItsOwnAgent.
    {"ABroadcastShardGoesToItsOwnAgent",
     Route::kBroadcast,
     {},
     "b",
     0,
     0,
     kAbc,
     RouteVerdict::kGrant,
     "b"},
    {"ABroadcastShardWaitsForItsOwnAgentHoweverLong",
     Route::kBroadcast,
     {},
     "b",
     60'000,
     0,
     {{.name = "a"}, {.name = "b", .free = 0}, {.name = "c"}},
     RouteVerdict::kWait,
     ""},
    {"ABroadcastShardOfAnAgentThatIsGoneWaits",
     Route::kBroadcast,
     {},
     "z",
     60'000,
     0,
     kAbc,
     RouteVerdict::kWait,
     ""},
    // ShardsGoOnlyToAgentsMatchingEverySelector.
    {"ShardsGoOnlyToAgentsMatchingEverySelector",
     Route::kSpread,
     {{"role", "web"}, {"env", "test", true}},
     "",
     1000,
     0,
     {{.name = "db", .labels = {{"role", "db"}}, .free = 4},
      {.name = "web-1", .labels = {{"role", "web"}}},
      {.name = "web-test", .labels = {{"role", "web"}, {"env", "test"}}, .free = 4}},
     RouteVerdict::kGrant,
     "web-1"},
    {"MatchingAgentsWithoutRoomLeaveTheShardPendingWhileOthersHaveRoom",
     Route::kSpread,
     {{"role", "web"}, {"env", "test", true}},
     "",
     1000,
     0,
     {{.name = "db", .labels = {{"role", "db"}}, .free = 4},
      {.name = "web-1", .labels = {{"role", "web"}}, .free = 0},
      {.name = "web-test", .labels = {{"role", "web"}, {"env", "test"}}, .free = 4}},
     RouteVerdict::kWait,
     ""},
    // JobNobodyMatchesStaysPendingUntilAMatchingAgentArrives.
    {"AJobNobodyMatchesWaits",
     Route::kSpread,
     {{"gpu", "yes"}},
     "",
     1000,
     0,
     {{.name = "cpu-1", .labels = {{"gpu", "no"}}}, {.name = "cpu-2"}},
     RouteVerdict::kWait,
     ""},
    {"AJobNobodyMatchesGoesToTheMatchingAgentThatArrives",
     Route::kSpread,
     {{"gpu", "yes"}},
     "",
     1000,
     0,
     {{.name = "cpu-1", .labels = {{"gpu", "no"}}},
      {.name = "cpu-2"},
      {.name = "gpu-1", .labels = {{"gpu", "yes"}}}},
     RouteVerdict::kGrant,
     "gpu-1"},
    // RandomPicksAmongMatchingAgentsOnly.
    {"RandomPicksTheOnlyMatchingAgent",
     Route::kRandom,
     {{"role", "web"}},
     "",
     0,
     0,
     {{.name = "db", .labels = {{"role", "db"}}}, {.name = "web-1", .labels = {{"role", "web"}}}},
     RouteVerdict::kGrant,
     "web-1"},
    {"ADrainingAgentGetsNothing",
     Route::kSpread,
     {},
     "",
     1000,
     0,
     {{.name = "a", .draining = true}},
     RouteVerdict::kWait,
     ""},
    {"AnAgentNotHeardWithinATtlGetsNothing",
     Route::kSpread,
     {},
     "",
     1000,
     0,
     {{.name = "a", .alive = false}},
     RouteVerdict::kWait,
     ""},
    {"NoAgentAtAllWaits", Route::kHash, {}, "", 1000, 0, {}, RouteVerdict::kWait, ""},
    {"EligibleAgentsWithoutRoomPastTheHoldWait",
     Route::kSpread,
     {},
     "",
     1000,
     0,
     {{.name = "a", .free = 0}, {.name = "b", .free = 0}},
     RouteVerdict::kWait,
     ""},
    // Spread's order: fewest shards of this run, then fewest shards per slot.
    {"SpreadPrefersAnAgentWithoutAShardOfThisRun",
     Route::kSpread,
     {},
     "",
     0,
     0,
     {{.name = "a", .held = 1, .held_in_run = 1}, {.name = "b", .held = 3}},
     RouteVerdict::kGrant,
     "b"},
    {"SpreadPrefersTheAgentWithFewerShardsPerSlot",
     Route::kSpread,
     {},
     "",
     0,
     0,
     {{.name = "a", .slots = 1, .held = 1}, {.name = "b", .slots = 4, .held = 1}},
     RouteVerdict::kGrant,
     "b"},
    {"SpreadHoldsTheShardForItsPreferredAgentWithoutRoom",
     Route::kSpread,
     {},
     "",
     100,
     0,
     {{.name = "a", .free = 0}, {.name = "b", .held = 1}},
     RouteVerdict::kHold,
     ""},
};

class RouteTest : public ::testing::TestWithParam<RouteCase> {};

TEST_P(RouteTest, Picks) {
  const RouteCase& c = GetParam();
  std::vector<AgentView> views = Views(c.agents);
  FakeRandom random;
  RouteChoice choice = PickAgent({.job = "j",
                                  .run = 1,
                                  .index = 0,
                                  .on = c.on,
                                  .route = c.route,
                                  .bound_agent = c.bound,
                                  .waited_ms = c.waited_ms},
                                 views, c.turn, random);
  ASSERT_EQ(static_cast<int>(choice.verdict), static_cast<int>(c.verdict));
  if (c.verdict == RouteVerdict::kGrant) {
    EXPECT_EQ(views[choice.agent].name, c.agent);
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, RouteTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<RouteCase>& i) { return i.param.name; });

// The agent a shard goes to, with every view built from `agents`.
std::string Placed(Route route, const std::vector<AgentSpec>& agents, int index = 0,
                   Random* random = nullptr) {
  std::vector<AgentView> views = Views(agents);
  FakeRandom none;
  RouteChoice c = PickAgent({.job = "wide", .run = 1, .index = index, .route = route}, views, 0,
                            random ? *random : none);
  return c.verdict == RouteVerdict::kGrant ? std::string(views[c.agent].name) : "";
}

AgentSpec* Find(std::vector<AgentSpec>& agents, const std::string& name) {
  for (AgentSpec& a : agents) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

TEST(RouteScenarioTest, SpreadPutsEachShardOfARunOnADifferentAgent) {
  std::vector<AgentSpec> agents = {
      {.name = "a", .free = 3}, {.name = "b", .free = 3}, {.name = "c", .free = 3}};
  std::set<std::string> used;
  for (int index = 0; index < 3; ++index) {
    std::string to = Placed(Route::kSpread, agents, index);
    ASSERT_NE(to, "");
    used.insert(to);
    AgentSpec* a = Find(agents, to);
    ++a->held;
    ++a->held_in_run;
    --a->free;
  }
  EXPECT_EQ(used, (std::set<std::string>{"a", "b", "c"}));
}

TEST(RouteScenarioTest, SpreadAndHashPlaceEachShardOnTheSameAgentRunAfterRun) {
  std::vector<AgentSpec> agents = {{.name = "a", .free = 4},
                                   {.name = "b", .free = 4},
                                   {.name = "c", .free = 4},
                                   {.name = "d", .free = 4}};
  for (Route route : {Route::kSpread, Route::kHash}) {
    for (int index = 0; index < 4; ++index) {
      std::string first = Placed(route, agents, index);
      EXPECT_NE(first, "");
      for (int run = 2; run <= 5; ++run) {
        EXPECT_EQ(Placed(route, agents, index), first) << RouteName(route) << " shard " << index;
      }
    }
  }
}

// RouteAroundBusyAgent: a one-shard job's agent, then that agent busy with another job's
// shard, then idle again.
TEST(RouteScenarioTest, SpreadMovesARunOffItsAgentWhileThatAgentIsBusierAndBackAfter) {
  std::vector<AgentSpec> agents = {
      {.name = "a", .free = 2}, {.name = "b", .free = 2}, {.name = "c", .free = 2}};
  std::string idle = Placed(Route::kSpread, agents);
  ASSERT_NE(idle, "");
  Find(agents, idle)->held = 1;
  Find(agents, idle)->free = 1;
  std::string busy = Placed(Route::kSpread, agents);
  EXPECT_NE(busy, idle);
  EXPECT_NE(busy, "");
  Find(agents, idle)->held = 0;
  Find(agents, idle)->free = 2;
  EXPECT_EQ(Placed(Route::kSpread, agents), idle);
}

TEST(RouteScenarioTest, HashKeepsARunOnItsAgentEvenWhileThatAgentIsBusier) {
  std::vector<AgentSpec> agents = {
      {.name = "a", .free = 2}, {.name = "b", .free = 2}, {.name = "c", .free = 2}};
  std::string idle = Placed(Route::kHash, agents);
  ASSERT_NE(idle, "");
  Find(agents, idle)->held = 1;
  Find(agents, idle)->free = 1;
  EXPECT_EQ(Placed(Route::kHash, agents), idle);
}

TEST(RouteScenarioTest, HashDoesNotDependOnTheOrderAgentsAreListedIn) {
  std::vector<AgentSpec> agents = {{.name = "a"}, {.name = "b"}, {.name = "c"}};
  std::vector<AgentSpec> reversed(agents.rbegin(), agents.rend());
  for (int index = 0; index < 8; ++index) {
    EXPECT_EQ(Placed(Route::kHash, agents, index), Placed(Route::kHash, reversed, index)) << index;
  }
}

TEST(RouteScenarioTest, RandomPicksAmongMatchingAgentsOnlyWithTheInjectedSource) {
  std::vector<AgentSpec> agents = {{.name = "db", .labels = {{"role", "db"}}},
                                   {.name = "web-1", .labels = {{"role", "web"}}},
                                   {.name = "web-2", .labels = {{"role", "web"}}},
                                   {.name = "web-3", .labels = {{"role", "web"}}}};
  std::vector<AgentView> views = Views(agents);
  std::vector<LabelSelector> on = {{"role", "web"}};
  std::map<std::string, int> count;
  for (uint64_t seed = 0; seed < 15; ++seed) {
    FakeRandom random({seed * 0x9E3779B97F4A7C15ull, ~seed * 0xBF58476D1CE4E5B9ull});
    RouteChoice c =
        PickAgent({.job = "dice", .run = 1, .on = on, .route = Route::kRandom}, views, 0, random);
    ASSERT_EQ(static_cast<int>(c.verdict), static_cast<int>(RouteVerdict::kGrant));
    ++count[std::string(views[c.agent].name)];
    EXPECT_GT(random.calls(), 0u) << "the random route drew nothing from its source";
    // The same draws, the same agent.
    FakeRandom again({seed * 0x9E3779B97F4A7C15ull, ~seed * 0xBF58476D1CE4E5B9ull});
    EXPECT_EQ(
        PickAgent({.job = "dice", .run = 1, .on = on, .route = Route::kRandom}, views, 0, again)
            .agent,
        c.agent);
  }
  EXPECT_EQ(count.count("db"), 0u);
  EXPECT_GE(count.size(), 2u) << "15 different draws all chose " << count.begin()->first;
}

TEST(RouteScenarioTest, OnlyTheRandomRouteDraws) {
  for (Route route : {Route::kSpread, Route::kHash, Route::kRoundRobin, Route::kFailover}) {
    FakeRandom random;
    std::vector<AgentSpec> agents = {{.name = "a"}, {.name = "b"}};
    Placed(route, agents, 0, &random);
    EXPECT_EQ(random.calls(), 0u) << RouteName(route);
  }
}

struct LabelCase {
  const char* name;
  std::vector<LabelSelector> on;
  std::map<std::string, std::string> labels;
  bool matches;
};

// ctest lists each row by its name.
void PrintTo(const LabelCase& c, std::ostream* os) { *os << c.name; }

const LabelCase kLabels[] = {
    {"NoSelectorMatchesEveryAgent", {}, {}, true},
    {"AnEqualValueMatches", {{"role", "web"}}, {{"role", "web"}}, true},
    {"AnotherValueDoesNotMatch", {{"role", "web"}}, {{"role", "db"}}, false},
    {"AMissingLabelDoesNotMatch", {{"role", "web"}}, {}, false},
    {"NotEqualExcludesThatValue", {{"env", "test", true}}, {{"env", "test"}}, false},
    {"NotEqualAdmitsAnotherValue", {{"env", "test", true}}, {{"env", "prod"}}, true},
    {"NotEqualAdmitsAnAgentWithoutTheLabel", {{"env", "test", true}}, {}, true},
    {"EverySelectorMustHold",
     {{"role", "web"}, {"env", "test", true}},
     {{"role", "web"}, {"env", "test"}},
     false},
};

class LabelMatchTest : public ::testing::TestWithParam<LabelCase> {};

TEST_P(LabelMatchTest, Is) {
  const LabelCase& c = GetParam();
  EXPECT_EQ(MatchesLabels(c.on, c.labels), c.matches);
}

INSTANTIATE_TEST_SUITE_P(Rows, LabelMatchTest, ::testing::ValuesIn(kLabels),
                         [](const ::testing::TestParamInfo<LabelCase>& i) { return i.param.name; });

}  // namespace
}  // namespace jobctl
