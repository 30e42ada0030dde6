#include "http/path_pattern.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace jobctl::http {
namespace {

TEST(PathPatternTest, LiteralPatternsMatchOnlyTheirPath) {
  PathPattern p("/v1/agent/claim");
  EXPECT_TRUE(p.Match("/v1/agent/claim"));
  EXPECT_FALSE(p.Match("/v1/agent/claims"));
  EXPECT_FALSE(p.Match("/v1/agent"));
  EXPECT_FALSE(p.Match("/v1/agent/claim/x"));
  EXPECT_FALSE(p.Match(""));
}

TEST(PathPatternTest, ParamsTakeOneNonEmptySegmentEach) {
  PathPattern p("/v1/jobs/{name}/trigger");
  PathPattern::Params params;
  ASSERT_TRUE(p.Match("/v1/jobs/backup/trigger", &params));
  ASSERT_EQ(params.size, 1u);
  EXPECT_EQ(params.items[0].first, "name");
  EXPECT_EQ(params.items[0].second, "backup");
  EXPECT_FALSE(p.Match("/v1/jobs//trigger"));
  EXPECT_FALSE(p.Match("/v1/jobs/a/b/trigger"));
  PathPattern two("/v1/{kind}/{id}");
  ASSERT_TRUE(two.Match("/v1/runs/42", &params));
  ASSERT_EQ(params.size, 2u);
  EXPECT_EQ(params.items[1].first, "id");
  EXPECT_EQ(params.items[1].second, "42");
}

TEST(PathPatternTest, EmptySegmentsAreIgnoredOnBothSides) {
  PathPattern p("/v1/jobs/");
  EXPECT_TRUE(p.Match("/v1/jobs"));
  EXPECT_TRUE(p.Match("//v1//jobs/"));
  PathPattern root("/");
  EXPECT_TRUE(root.Match("/"));
  EXPECT_TRUE(root.Match(""));
  EXPECT_FALSE(root.Match("/x"));
}

TEST(PathPatternTest, BracesThatAreNotAWholeSegmentAreLiteral) {
  PathPattern p("/v1/{}/x{y}");
  EXPECT_TRUE(p.Match("/v1/{}/x{y}"));
  EXPECT_FALSE(p.Match("/v1/a/x{y}"));
}

TEST(PathPatternTest, PatternsKeepWorkingWhenMovedAround) {
  std::vector<PathPattern> patterns;
  for (int i = 0; i < 50; ++i) patterns.emplace_back("/v1/{x}/" + std::to_string(i));
  PathPattern::Params params;
  EXPECT_TRUE(patterns[0].Match("/v1/a/0", &params));
  EXPECT_EQ(params.items[0].first, "x");
  EXPECT_TRUE(patterns[49].Match("/v1/b/49"));
}

TEST(PathPatternTest, AFailedMatchLeavesParamsAlone) {
  PathPattern p("/v1/runs/{id}/wait");
  PathPattern::Params params;
  params.size = 3;
  EXPECT_FALSE(p.Match("/v1/runs/7/logs", &params));
  EXPECT_EQ(params.size, 3u);
}

}  // namespace
}  // namespace jobctl::http
