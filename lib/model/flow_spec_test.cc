// The names a flow's steps go by: in jobs.toml, as jobs of their own, and in the environment.
#include "model/flow_spec.h"

#include <gtest/gtest.h>

namespace jobctl {
namespace {

TEST(FlowSpecTest, StepNamesAreLowercaseWordsOfAtMost64Characters) {
  for (const char* ok : {"extract", "load-2.x", "0", "a_b"}) EXPECT_TRUE(IsValidStepName(ok)) << ok;
  for (const char* bad : {"", "Load", "-x", ".x", "a b", "a:b", "a/b"}) {
    EXPECT_FALSE(IsValidStepName(bad)) << bad;
  }
  EXPECT_TRUE(IsValidStepName(std::string(kMaxStepNameLength, 'a')));
  EXPECT_FALSE(IsValidStepName(std::string(kMaxStepNameLength + 1, 'a')));
}

TEST(FlowSpecTest, AStepsOwnJobHasANameNoJobOfTheFileCanHave) {
  EXPECT_EQ(StepJobName("nightly-etl", "transform"), "nightly-etl:transform");
  EXPECT_FALSE(IsValidJobName(StepJobName("nightly-etl", "transform")));
}

TEST(FlowSpecTest, StepsAreNamedInTheEnvironmentInCapitals) {
  EXPECT_EQ(StepEnvName("load-2.x"), "LOAD_2_X");
  EXPECT_EQ(StepEnvName("extract"), "EXTRACT");
  EXPECT_EQ(StepEnvName("a_b"), StepEnvName("a-b"));  // the reader refuses such a pair
  EXPECT_TRUE(IsEnvName("JOB_NEED_" + StepEnvName("0x") + "_RUN_ID"));
}

TEST(FlowSpecTest, TheGraphKeepsEachStepsNeedsAndWhenInOrder) {
  Flow flow{.name = "f"};
  flow.steps = {{.name = "a", .job = "f:a", .own = true},
                {.name = "b", .job = "x", .needs = {"a"}, .when = StepWhen::kAlways}};
  std::vector<FlowNode> graph = GraphOf(flow);
  ASSERT_EQ(graph.size(), 2u);
  EXPECT_EQ(graph[0], (FlowNode{"a", {}, StepWhen::kSuccess}));
  EXPECT_EQ(graph[1], (FlowNode{"b", {"a"}, StepWhen::kAlways}));
}

TEST(FlowSpecTest, KindsReadBackByName) {
  for (JobKind k : {JobKind::kJob, JobKind::kFlow, JobKind::kStep}) {
    EXPECT_EQ(ParseJobKind(JobKindName(k)), k);
  }
  EXPECT_EQ(ParseJobKind("flows"), std::nullopt);
}

}  // namespace
}  // namespace jobctl
