// The flow rules: which graphs are refused and why, and what a flow run does next for every
// combination of how the steps it needs ended and when a step runs, for fan-in and fan-out.
#include "model/flow.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <ostream>
#include <random>

namespace jobctl {
namespace {

using S = StepState;
using W = StepWhen;
using Kind = FlowGraphProblem::Kind;

FlowNode Step(std::string name, std::vector<std::string> needs = {},
              StepWhen when = StepWhen::kSuccess) {
  return {std::move(name), std::move(needs), when};
}

std::string Describe(const FlowAdvance& a) {
  std::string out = "start [";
  for (int s : a.start) out += std::to_string(s) + " ";
  out += "] skip [";
  for (const StepSkip& s : a.skip) out += std::to_string(s.step) + ": " + s.reason + "; ";
  out += "]";
  return out + (a.ended ? (a.succeeded ? " ended, succeeded" : " ended, failed") : "");
}

// ---- AdvanceFlow: fan-in ------------------------------------------------------------------

// "d" needs "b" and "c", which have ended as given; what happens to "d".
struct FanInCase {
  const char* name;
  S b, c;
  W when;
  const char* expect;  // "start", or the skip reason
};

void PrintTo(const FanInCase& c, std::ostream* os) { *os << c.name; }

const FanInCase kFanIn[] = {
    {"SuccessBothSucceeded", S::kSucceeded, S::kSucceeded, W::kSuccess, "start"},
    {"SuccessFirstFailed", S::kFailed, S::kSucceeded, W::kSuccess, "needs \"b\", which failed"},
    {"SuccessSecondFailed", S::kSucceeded, S::kFailed, W::kSuccess, "needs \"c\", which failed"},
    {"SuccessBothFailed", S::kFailed, S::kFailed, W::kSuccess, "needs \"b\", which failed"},
    {"SuccessFirstSkipped", S::kSkipped, S::kSucceeded, W::kSuccess,
     "needs \"b\", which was skipped"},
    {"SuccessSecondSkipped", S::kSucceeded, S::kSkipped, W::kSuccess,
     "needs \"c\", which was skipped"},
    {"SuccessBothSkipped", S::kSkipped, S::kSkipped, W::kSuccess, "needs \"b\", which was skipped"},
    {"SuccessSkippedAndFailed", S::kSkipped, S::kFailed, W::kSuccess,
     "needs \"b\", which was skipped"},
    {"SuccessFailedAndSkipped", S::kFailed, S::kSkipped, W::kSuccess, "needs \"b\", which failed"},

    {"FailureBothSucceeded", S::kSucceeded, S::kSucceeded, W::kFailure,
     "when = \"failure\", and no step it needs failed"},
    {"FailureFirstFailed", S::kFailed, S::kSucceeded, W::kFailure, "start"},
    {"FailureSecondFailed", S::kSucceeded, S::kFailed, W::kFailure, "start"},
    {"FailureBothFailed", S::kFailed, S::kFailed, W::kFailure, "start"},
    {"FailureFirstSkipped", S::kSkipped, S::kSucceeded, W::kFailure,
     "when = \"failure\", and no step it needs failed"},
    {"FailureSecondSkipped", S::kSucceeded, S::kSkipped, W::kFailure,
     "when = \"failure\", and no step it needs failed"},
    {"FailureBothSkipped", S::kSkipped, S::kSkipped, W::kFailure,
     "when = \"failure\", and no step it needs failed"},
    {"FailureSkippedAndFailed", S::kSkipped, S::kFailed, W::kFailure, "start"},
    {"FailureFailedAndSkipped", S::kFailed, S::kSkipped, W::kFailure, "start"},

    {"AlwaysBothSucceeded", S::kSucceeded, S::kSucceeded, W::kAlways, "start"},
    {"AlwaysFirstFailed", S::kFailed, S::kSucceeded, W::kAlways, "start"},
    {"AlwaysSecondFailed", S::kSucceeded, S::kFailed, W::kAlways, "start"},
    {"AlwaysBothFailed", S::kFailed, S::kFailed, W::kAlways, "start"},
    {"AlwaysFirstSkipped", S::kSkipped, S::kSucceeded, W::kAlways, "start"},
    {"AlwaysSecondSkipped", S::kSucceeded, S::kSkipped, W::kAlways, "start"},
    {"AlwaysBothSkipped", S::kSkipped, S::kSkipped, W::kAlways, "start"},
    {"AlwaysSkippedAndFailed", S::kSkipped, S::kFailed, W::kAlways, "start"},
    {"AlwaysFailedAndSkipped", S::kFailed, S::kSkipped, W::kAlways, "start"},
};

class FlowFanInTest : public ::testing::TestWithParam<FanInCase> {};

TEST_P(FlowFanInTest, DecidesTheStepThatNeedsBoth) {
  const FanInCase& c = GetParam();
  // "a", the step both come from, succeeded.
  std::vector<FlowNode> flow = {Step("a"), Step("b", {"a"}), Step("c", {"a"}),
                                Step("d", {"b", "c"}, c.when)};
  FlowAdvance got = AdvanceFlow(flow, std::vector<S>{S::kSucceeded, c.b, c.c, S::kWaiting});
  FlowAdvance want;
  if (std::string(c.expect) == "start") {
    want.start = {3};
  } else {
    want.skip = {{3, c.expect}};
    want.ended = true;
    want.succeeded = c.b != S::kFailed && c.c != S::kFailed;
  }
  EXPECT_EQ(got, want) << Describe(got);
}

INSTANTIATE_TEST_SUITE_P(Rows, FlowFanInTest, ::testing::ValuesIn(kFanIn),
                         [](const ::testing::TestParamInfo<FanInCase>& i) { return i.param.name; });

TEST(FlowFanInTest, WaitsWhileAnyNeedIsWaitingOrRunning) {
  for (W when : {W::kSuccess, W::kFailure, W::kAlways}) {
    for (S other : {S::kSucceeded, S::kFailed, S::kSkipped, S::kRunning, S::kWaiting}) {
      std::vector<FlowNode> flow = {Step("b"), Step("c"), Step("d", {"b", "c"}, when)};
      FlowAdvance got = AdvanceFlow(flow, std::vector<S>{S::kRunning, other, S::kWaiting});
      EXPECT_TRUE(got.skip.empty()) << Describe(got);
      EXPECT_FALSE(got.ended);
      // Only "c" may start (when it was waiting): never "d".
      for (int s : got.start) EXPECT_EQ(s, 1) << StepWhenName(when);
    }
  }
}

// ---- AdvanceFlow: fan-out -----------------------------------------------------------------

// "a" ended as given; "b", "c" and "d" need it, with when success, failure and always.
struct FanOutCase {
  const char* name;
  S a;
  std::vector<int> start;
  std::vector<StepSkip> skip;
  bool succeeded;  // the flow run, when everything started has succeeded
};

void PrintTo(const FanOutCase& c, std::ostream* os) { *os << c.name; }

const FanOutCase kFanOut[] = {
    {"RootSucceeded",
     S::kSucceeded,
     {1, 3},
     {{2, "when = \"failure\", and no step it needs failed"}},
     true},
    {"RootFailed", S::kFailed, {2, 3}, {{1, "needs \"a\", which failed"}}, false},
    {"RootSkipped",
     S::kSkipped,
     {3},
     {{1, "needs \"a\", which was skipped"},
      {2, "when = \"failure\", and no step it needs failed"}},
     true},
};

class FlowFanOutTest : public ::testing::TestWithParam<FanOutCase> {};

TEST_P(FlowFanOutTest, DecidesEveryStepThatNeedsIt) {
  const FanOutCase& c = GetParam();
  std::vector<FlowNode> flow = {Step("a"), Step("b", {"a"}, W::kSuccess),
                                Step("c", {"a"}, W::kFailure), Step("d", {"a"}, W::kAlways)};
  std::vector<S> states = {c.a, S::kWaiting, S::kWaiting, S::kWaiting};
  FlowAdvance got = AdvanceFlow(flow, states);
  std::sort(got.skip.begin(), got.skip.end(),
            [](const StepSkip& x, const StepSkip& y) { return x.step < y.step; });
  EXPECT_EQ(got.start, c.start) << Describe(got);
  EXPECT_EQ(got.skip, c.skip) << Describe(got);
  EXPECT_FALSE(got.ended);

  // Once every started step has succeeded, the flow run ends, and succeeded unless a step
  // failed.
  for (int s : got.start) states[s] = S::kSucceeded;
  for (const StepSkip& s : got.skip) states[s.step] = S::kSkipped;
  FlowAdvance after = AdvanceFlow(flow, states);
  EXPECT_TRUE(after.start.empty() && after.skip.empty()) << Describe(after);
  EXPECT_TRUE(after.ended);
  EXPECT_EQ(after.succeeded, c.succeeded);
}

INSTANTIATE_TEST_SUITE_P(Rows, FlowFanOutTest, ::testing::ValuesIn(kFanOut),
                         [](const ::testing::TestParamInfo<FanOutCase>& i) {
                           return i.param.name;
                         });

// ---- AdvanceFlow: whole runs --------------------------------------------------------------

TEST(FlowAdvanceTest, AFreshRunStartsEveryStepWithoutNeeds) {
  std::vector<FlowNode> flow = {Step("extract"), Step("transform", {"extract"}), Step("lookup"),
                                Step("load", {"transform", "lookup"})};
  FlowAdvance got = AdvanceFlow(flow, std::vector<S>(4, S::kWaiting));
  EXPECT_EQ(got.start, (std::vector<int>{0, 2}));
  EXPECT_TRUE(got.skip.empty());
  EXPECT_FALSE(got.ended);
}

TEST(FlowAdvanceTest, SkipsCascadeInOneCall) {
  // a failed: b is skipped, so c (needs b) is skipped, so d (always, needs c) starts, and
  // e (failure, needs a) starts; all in the same call, whatever the file order.
  std::vector<FlowNode> flow = {Step("d", {"c"}, W::kAlways), Step("c", {"b"}), Step("b", {"a"}),
                                Step("a"), Step("e", {"a"}, W::kFailure)};
  FlowAdvance got = AdvanceFlow(
      flow, std::vector<S>{S::kWaiting, S::kWaiting, S::kWaiting, S::kFailed, S::kWaiting});
  EXPECT_EQ(got.start, (std::vector<int>{0, 4})) << Describe(got);
  EXPECT_EQ(got.skip, (std::vector<StepSkip>{{2, "needs \"a\", which failed"},
                                             {1, "needs \"b\", which was skipped"}}))
      << Describe(got);
  EXPECT_FALSE(got.ended);
}

TEST(FlowAdvanceTest, AFlowWhoseLastStepsAreSkippedEndsInTheSameCall) {
  std::vector<FlowNode> flow = {Step("a"), Step("b", {"a"}), Step("c", {"b"})};
  FlowAdvance got = AdvanceFlow(flow, std::vector<S>{S::kFailed, S::kWaiting, S::kWaiting});
  EXPECT_TRUE(got.start.empty());
  EXPECT_EQ(got.skip.size(), 2u);
  EXPECT_TRUE(got.ended);
  EXPECT_FALSE(got.succeeded);
}

TEST(FlowAdvanceTest, AStepThatRanOnFailureDoesNotMakeTheFlowSucceed) {
  std::vector<FlowNode> flow = {Step("a"), Step("page", {"a"}, W::kFailure),
                                Step("cleanup", {"a"}, W::kAlways)};
  FlowAdvance got = AdvanceFlow(flow, std::vector<S>{S::kFailed, S::kSucceeded, S::kSucceeded});
  EXPECT_TRUE(got.ended);
  EXPECT_FALSE(got.succeeded);
}

TEST(FlowAdvanceTest, RunningAndEndedStepsAreLeftAlone) {
  std::vector<FlowNode> flow = {Step("a"), Step("b", {"a"}), Step("c", {"a"})};
  // b was started by an earlier call; a later call does not start it again.
  FlowAdvance got = AdvanceFlow(flow, std::vector<S>{S::kSucceeded, S::kRunning, S::kWaiting});
  EXPECT_EQ(got.start, (std::vector<int>{2}));
  got = AdvanceFlow(flow, std::vector<S>{S::kSucceeded, S::kRunning, S::kRunning});
  EXPECT_TRUE(got.start.empty() && got.skip.empty() && !got.ended);
  got = AdvanceFlow(flow, std::vector<S>{S::kSucceeded, S::kSucceeded, S::kSucceeded});
  EXPECT_TRUE(got.ended && got.succeeded);
}

TEST(FlowAdvanceTest, ADiamondRunsToTheEnd) {
  std::vector<FlowNode> flow = {Step("a"), Step("b", {"a"}), Step("c", {"a"}),
                                Step("d", {"b", "c"})};
  std::vector<S> states(4, S::kWaiting);
  std::vector<std::vector<int>> waves;
  for (int turn = 0; turn < 10; ++turn) {
    FlowAdvance got = AdvanceFlow(flow, states);
    if (got.ended) {
      EXPECT_TRUE(got.succeeded);
      break;
    }
    waves.push_back(got.start);
    for (int s : got.start) states[s] = S::kSucceeded;
  }
  EXPECT_EQ(waves, (std::vector<std::vector<int>>{{0}, {1, 2}, {3}}));
}

// ---- StepStateOf and RerunFrom ------------------------------------------------------------

TEST(FlowStepStateTest, FollowsTheStepsRun) {
  const std::pair<RunState, S> kRows[] = {
      {RunState::kPending, S::kRunning},     {RunState::kRunning, S::kRunning},
      {RunState::kSucceeded, S::kSucceeded}, {RunState::kSkipped, S::kSkipped},
      {RunState::kFailed, S::kFailed},       {RunState::kTimedOut, S::kFailed},
      {RunState::kCanceled, S::kFailed},     {RunState::kLost, S::kFailed}};
  for (auto [run, step] : kRows) EXPECT_EQ(StepStateOf(run), step) << RunStateName(run);
}

// extract -> transform -> load -> report, lookup -> load, cleanup (always, after load).
std::vector<FlowNode> Etl() {
  return {Step("extract"),          Step("transform", {"extract"}),
          Step("lookup"),           Step("load", {"transform", "lookup"}),
          Step("report", {"load"}), Step("cleanup", {"load"}, W::kAlways)};
}

TEST(FlowRerunTest, RerunsTheStepAndEverythingAfterItAndKeepsTheRest) {
  // load failed: report was skipped, cleanup ran.
  std::vector<S> ended = {S::kSucceeded, S::kSucceeded, S::kSucceeded,
                          S::kFailed,    S::kSkipped,   S::kSucceeded};
  Result<std::vector<S>> got = RerunFrom(Etl(), ended, std::vector<int>{3});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, (std::vector<S>{S::kSucceeded, S::kSucceeded, S::kSucceeded, S::kWaiting,
                                  S::kWaiting, S::kWaiting}));
  // The retry starts with load alone.
  EXPECT_EQ(AdvanceFlow(Etl(), *got).start, (std::vector<int>{3}));
}

TEST(FlowRerunTest, FollowsNeedsTransitively) {
  std::vector<S> ended = {S::kFailed,  S::kSkipped, S::kSucceeded,
                          S::kSkipped, S::kSkipped, S::kSucceeded};
  Result<std::vector<S>> got = RerunFrom(Etl(), ended, std::vector<int>{0});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, (std::vector<S>{S::kWaiting, S::kWaiting, S::kSucceeded, S::kWaiting, S::kWaiting,
                                  S::kWaiting}));
}

TEST(FlowRerunTest, RefusesAStepThatWouldBeSkippedAgain) {
  // extract failed: rerunning load alone would skip it again.
  std::vector<S> ended = {S::kFailed,  S::kSkipped, S::kSucceeded,
                          S::kSkipped, S::kSkipped, S::kSucceeded};
  Result<std::vector<S>> got = RerunFrom(Etl(), ended, std::vector<int>{3});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), Status::Code::kConflict);
  EXPECT_EQ(got.status().message(),
            "step \"load\" would be skipped again: needs \"transform\", which was skipped");
  // From both transform's cause and load: load waits for the rerun steps, and is not refused.
  got = RerunFrom(Etl(), ended, std::vector<int>{0, 3});
  EXPECT_TRUE(got.ok()) << got.status().ToString();
}

TEST(FlowRerunTest, RefusesARunThatHasNotEndedAndBadSteps) {
  std::vector<S> open = {S::kSucceeded, S::kRunning, S::kSucceeded,
                         S::kWaiting,   S::kWaiting, S::kWaiting};
  EXPECT_EQ(RerunFrom(Etl(), open, std::vector<int>{1}).status().code(), Status::Code::kConflict);
  std::vector<S> ended(6, S::kSucceeded);
  EXPECT_EQ(RerunFrom(Etl(), ended, std::vector<int>{6}).status().code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(RerunFrom(Etl(), ended, std::vector<int>{}).status().code(),
            Status::Code::kInvalidArgument);
}

// ---- AdvanceFlow over random graphs -------------------------------------------------------

// Random DAGs of up to 12 steps (a step needs only earlier ones, then the order is shuffled),
// random whens, and random outcomes of every step that starts, with AdvanceFlow called after
// each step's end as the coordinator does: no step starts twice, none is left waiting with all
// its needs ended, every step is decided, and the run ends exactly when nothing waits or runs.
TEST(FlowPropertyTest, RandomFlowsRunToTheirEnd) {
  std::mt19937 rng(20261127);
  for (int trial = 0; trial < 2000; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 12);
    std::vector<FlowNode> flow;
    for (int i = 0; i < n; ++i) {
      FlowNode step = Step("s" + std::to_string(i));
      for (int j = 0; j < i; ++j) {
        if (rng() % 3 == 0) step.needs.push_back("s" + std::to_string(j));
      }
      int when = static_cast<int>(rng() % 4);  // success twice as often
      step.when = when == 2 ? W::kFailure : when == 3 ? W::kAlways : W::kSuccess;
      if (step.when == W::kFailure && step.needs.empty()) step.when = W::kAlways;
      flow.push_back(std::move(step));
    }
    std::shuffle(flow.begin(), flow.end(), rng);
    ASSERT_TRUE(CheckFlowGraph(flow).empty());
    std::map<std::string, int> index;
    for (int i = 0; i < n; ++i) index[flow[i].name] = i;

    std::vector<S> states(n, S::kWaiting);
    std::vector<int> starts(n, 0);
    std::vector<int> running;
    bool ended = false;
    // Each round ends one step: n of them, and one more to see the end.
    for (int round = 0; round <= n && !ended; ++round) {
      FlowAdvance a = AdvanceFlow(flow, states);
      for (int s : a.start) {
        ASSERT_EQ(states[s], S::kWaiting) << "trial " << trial;
        states[s] = S::kRunning;
        ++starts[s];
        running.push_back(s);
      }
      for (const StepSkip& k : a.skip) {
        ASSERT_EQ(states[k.step], S::kWaiting) << "trial " << trial;
        states[k.step] = S::kSkipped;
      }
      // Nothing waits whose needs have all ended.
      for (int i = 0; i < n; ++i) {
        if (states[i] != S::kWaiting) continue;
        bool all_ended = std::all_of(flow[i].needs.begin(), flow[i].needs.end(), [&](auto& w) {
          S st = states[index[w]];
          return st != S::kWaiting && st != S::kRunning;
        });
        ASSERT_FALSE(all_ended) << "trial " << trial << ": step " << i << " forgotten";
      }
      bool open = std::any_of(states.begin(), states.end(),
                              [](S st) { return st == S::kWaiting || st == S::kRunning; });
      ASSERT_EQ(a.ended, !open) << "trial " << trial;
      ended = a.ended;
      if (ended) {
        bool failed = std::count(states.begin(), states.end(), S::kFailed) > 0;
        EXPECT_EQ(a.succeeded, !failed);
        break;
      }
      ASSERT_FALSE(running.empty()) << "trial " << trial << ": open, but nothing runs";
      // One running step ends, picked at random.
      size_t pick = rng() % running.size();
      int s = running[pick];
      running.erase(running.begin() + static_cast<long>(pick));
      states[s] = rng() % 3 == 0 ? S::kFailed : S::kSucceeded;
    }
    ASSERT_TRUE(ended) << "trial " << trial;
    for (int i = 0; i < n; ++i) EXPECT_LE(starts[i], 1);
  }
}

// ---- CheckFlowGraph -----------------------------------------------------------------------

std::vector<Kind> Kinds(const std::vector<FlowGraphProblem>& problems) {
  std::vector<Kind> out;
  for (const FlowGraphProblem& p : problems) out.push_back(p.kind);
  return out;
}

TEST(FlowGraphTest, AcceptsADiamondAndACleanupAndAPager) {
  std::vector<FlowNode> flow = {Step("extract"),
                                Step("transform", {"extract"}),
                                Step("lookup"),
                                Step("load", {"transform", "lookup"}),
                                Step("page", {"extract", "transform", "load"}, W::kFailure),
                                Step("cleanup", {"load"}, W::kAlways)};
  EXPECT_TRUE(CheckFlowGraph(flow).empty());
}

TEST(FlowGraphTest, NamesAnUnknownNeedAtTheNeed) {
  std::vector<FlowNode> flow = {Step("a"), Step("b", {"a", "lod"})};
  EXPECT_EQ(CheckFlowGraph(flow),
            (std::vector<FlowGraphProblem>{
                {Kind::kUnknownNeed, 1, 1, "needs \"lod\", which is not a step of this flow"}}));
}

TEST(FlowGraphTest, RefusesASelfNeedARepeatedNeedAndADuplicateStep) {
  std::vector<FlowNode> flow = {Step("a", {"a"}), Step("b"), Step("c", {"b", "b"}), Step("b")};
  EXPECT_EQ(CheckFlowGraph(flow), (std::vector<FlowGraphProblem>{
                                      {Kind::kSelfNeed, 0, 0, "a step cannot need itself"},
                                      {Kind::kRepeatedNeed, 2, 1, "names \"b\" twice"},
                                      {Kind::kDuplicateStep, 3, -1, "a second step named \"b\""}}));
}

TEST(FlowGraphTest, ReportsEachCycleOnceWithItsPath) {
  // a -> b -> c -> a, and x <-> y; z needs the first cycle and is not reported on its own.
  std::vector<FlowNode> flow = {Step("root"),     Step("a", {"root", "c"}), Step("b", {"a"}),
                                Step("c", {"b"}), Step("x", {"y"}),         Step("y", {"x"}),
                                Step("z", {"c"})};
  EXPECT_EQ(
      CheckFlowGraph(flow),
      (std::vector<FlowGraphProblem>{
          {Kind::kCycle, 1, -1, "cycle: \"a\" -> \"c\" -> \"b\" -> \"a\" (each needs the next)"},
          {Kind::kCycle, 4, -1, "cycle: \"x\" -> \"y\" -> \"x\" (each needs the next)"}}));
}

TEST(FlowGraphTest, ReportsStepsThatCanNeverRun) {
  std::vector<FlowNode> flow = {
      Step("orphan-pager", {}, W::kFailure),               // needs nothing, so nothing can fail
      Step("after-pager", {"orphan-pager"}),               // needs a step that never runs
      Step("cleanup", {"orphan-pager"}, W::kAlways),       // runs: its need is skipped
      Step("second-pager", {"after-pager"}, W::kFailure),  // its only need never runs
      Step("ok"),
      Step("pager", {"ok", "orphan-pager"}, W::kFailure)};  // "ok" may fail
  std::vector<FlowGraphProblem> got = CheckFlowGraph(flow);
  EXPECT_EQ(Kinds(got), (std::vector<Kind>{Kind::kNeverRuns, Kind::kNeverRuns, Kind::kNeverRuns}));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].step, 0);
  EXPECT_EQ(got[0].message,
            "can never run: when = \"failure\" runs a step after a step it needs failed, and it "
            "needs none");
  EXPECT_EQ(got[1].step, 1);
  EXPECT_EQ(got[1].message,
            "can never run: it needs \"orphan-pager\" to succeed, which can never run");
  EXPECT_EQ(got[2].step, 3);
  EXPECT_EQ(got[2].message,
            "can never run: when = \"failure\", and none of the steps it needs can run, so none "
            "can fail");
}

TEST(FlowGraphTest, StepsAfterABrokenStepAreNotReportedAgain) {
  std::vector<FlowNode> flow = {Step("a", {"missing"}, W::kFailure), Step("b", {"a"})};
  EXPECT_EQ(Kinds(CheckFlowGraph(flow)), (std::vector<Kind>{Kind::kUnknownNeed}));
}

TEST(FlowGraphTest, WhenNamesRoundTrip) {
  for (W w : {W::kSuccess, W::kFailure, W::kAlways}) EXPECT_EQ(ParseStepWhen(StepWhenName(w)), w);
  EXPECT_EQ(ParseStepWhen("sucess"), std::nullopt);
  EXPECT_EQ(ParseStepWhen(""), std::nullopt);
}

}  // namespace
}  // namespace jobctl
