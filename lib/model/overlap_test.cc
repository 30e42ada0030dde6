// The overlap rule: what a fire does while the job's earlier runs are still open
// (OverlapPolicies in the integration tests).
#include "model/overlap.h"

#include <gtest/gtest.h>

#include <ostream>

namespace jobctl {
namespace {

struct OverlapCase {
  const char* name;
  Overlap policy;
  int open_runs;
  OverlapAction action;
};

// ctest lists each row by its name.
void PrintTo(const OverlapCase& c, std::ostream* os) { *os << c.name; }

const OverlapCase kCases[] = {
    {"ForbidFiresWhenNoRunIsOpen", Overlap::kForbid, 0, OverlapAction::kFire},
    {"ForbidSkipsTheInstantWhileARunIsOpen", Overlap::kForbid, 1, OverlapAction::kSkip},
    {"ForbidSkipsTheInstantWhileSeveralRunsAreOpen", Overlap::kForbid, 3, OverlapAction::kSkip},
    {"AllowFiresWhenNoRunIsOpen", Overlap::kAllow, 0, OverlapAction::kFire},
    {"AllowFiresAlongsideAnOpenRun", Overlap::kAllow, 1, OverlapAction::kFire},
    {"AllowFiresAlongsideSeveralOpenRuns", Overlap::kAllow, 3, OverlapAction::kFire},
    {"ReplaceFiresWhenNoRunIsOpen", Overlap::kReplace, 0, OverlapAction::kFire},
    {"ReplaceCancelsTheOpenRunThenFires", Overlap::kReplace, 1, OverlapAction::kCancelAndFire},
    {"ReplaceCancelsEveryOpenRunThenFires", Overlap::kReplace, 3, OverlapAction::kCancelAndFire},
    {"ACountBelowZeroIsNoOpenRun", Overlap::kForbid, -1, OverlapAction::kFire},
};

class OverlapTest : public ::testing::TestWithParam<OverlapCase> {};

TEST_P(OverlapTest, Decides) {
  const OverlapCase& c = GetParam();
  EXPECT_EQ(DecideOverlap(c.policy, c.open_runs), c.action);
}

INSTANTIATE_TEST_SUITE_P(Rows, OverlapTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<OverlapCase>& i) {
                           return i.param.name;
                         });

}  // namespace
}  // namespace jobctl
