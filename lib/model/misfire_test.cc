// The misfire rule, case by case: each row is a situation a user relies on (an outage, a
// pause, a clock jump) and what each policy makes of it.
#include "model/misfire.h"

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

namespace jobctl {
namespace {

constexpr int64_t kS = 1000;
constexpr int64_t kNow = 1'000'000 * kS;
constexpr int64_t kGrace = 30 * kS;  // misfire_grace's default

struct MisfireCase {
  const char* name;
  Misfire policy;
  int cap;
  DueInstants due;
  int64_t grace_ms;
  std::vector<int64_t> fire;
  std::vector<int64_t> missed;
  int64_t extra_missed;
  const char* reason;  // nullptr: nothing recorded
};

// ctest lists each row by its name.
void PrintTo(const MisfireCase& c, std::ostream* os) { *os << c.name; }

// Instants `ago` seconds before kNow.
int64_t Ago(int64_t seconds) { return kNow - seconds * kS; }

const char* const kFireOnce = "misfire=fire-once: folded into one run";
const char* const kSkip = "misfire=skip";
const char* const kFireAll = "misfire=fire-all: over misfire_cap";

const MisfireCase kCases[] = {
    {"NothingDueFiresNothingAndRecordsNothing",
     Misfire::kFireOnce,
     100,
     {},
     kGrace,
     {},
     {},
     0,
     nullptr},
    {"FireOnceFiresAnInstantLateWithinTheGrace",
     Misfire::kFireOnce,
     100,
     {{Ago(5)}},
     kGrace,
     {Ago(5)},
     {},
     0,
     nullptr},
    {"SkipFiresAnInstantLateWithinTheGrace",
     Misfire::kSkip,
     100,
     {{Ago(5)}},
     kGrace,
     {Ago(5)},
     {},
     0,
     nullptr},
    {"FireAllFiresAnInstantLateWithinTheGrace",
     Misfire::kFireAll,
     0,
     {{Ago(5)}},
     kGrace,
     {Ago(5)},
     {},
     0,
     nullptr},
    {"AnInstantExactlyGraceLateIsOnTime",
     Misfire::kSkip,
     100,
     {{Ago(30)}},
     kGrace,
     {Ago(30)},
     {},
     0,
     nullptr},
    {"AnInstantOneMillisecondPastTheGraceIsMissed",
     Misfire::kSkip,
     100,
     {{Ago(30) - 1}},
     kGrace,
     {},
     {Ago(30) - 1},
     0,
     kSkip},
    // An outage (KillNineDuringFiresLosesAndDoublesNoInstant, clock_jump forward).
    {"FireOnceFoldsAnOutagesInstantsIntoOneRunForTheLatest",
     Misfire::kFireOnce,
     100,
     {{Ago(300), Ago(200), Ago(100)}},
     kGrace,
     {Ago(100)},
     {Ago(300), Ago(200)},
     0,
     kFireOnce},
    {"FireOnceWithAnOnTimeInstantFiresOnlyThatOneAndRecordsTheMissed",
     Misfire::kFireOnce,
     100,
     {{Ago(300), Ago(200), Ago(10)}},
     kGrace,
     {Ago(10)},
     {Ago(300), Ago(200)},
     0,
     kFireOnce},
    {"FireOnceOfASingleMissedInstantFiresItAndRecordsNothing",
     Misfire::kFireOnce,
     100,
     {{Ago(100)}},
     kGrace,
     {Ago(100)},
     {},
     0,
     nullptr},
    {"SkipRunsNoMissedInstantAndRecordsEach",
     Misfire::kSkip,
     100,
     {{Ago(300), Ago(200), Ago(100)}},
     kGrace,
     {},
     {Ago(300), Ago(200), Ago(100)},
     0,
     kSkip},
    {"SkipStillFiresTheOnTimeInstant",
     Misfire::kSkip,
     100,
     {{Ago(300), Ago(200), Ago(10)}},
     kGrace,
     {Ago(10)},
     {Ago(300), Ago(200)},
     0,
     kSkip},
    {"FireAllRunsMissedInstantsUpToTheCapOldestFirstAndRecordsTheRest",
     Misfire::kFireAll,
     2,
     {{Ago(400), Ago(300), Ago(200), Ago(100), Ago(10)}},
     kGrace,
     {Ago(400), Ago(300), Ago(10)},
     {Ago(200), Ago(100)},
     0,
     kFireAll},
    {"FireAllWithinTheCapRunsEveryMissedInstantAndRecordsNothing",
     Misfire::kFireAll,
     5,
     {{Ago(300), Ago(200), Ago(100)}},
     kGrace,
     {Ago(300), Ago(200), Ago(100)},
     {},
     0,
     nullptr},
    {"FireAllWithACapOfZeroRunsOnlyTheOnTimeInstant",
     Misfire::kFireAll,
     0,
     {{Ago(200), Ago(100), Ago(10)}},
     kGrace,
     {Ago(10)},
     {Ago(200), Ago(100)},
     0,
     kFireAll},
    {"FireAllWithANegativeCapRunsNoMissedInstant",
     Misfire::kFireAll,
     -1,
     {{Ago(200)}},
     kGrace,
     {},
     {Ago(200)},
     0,
     kFireAll},
    // Resume after a pause: grace 0, every held-back instant is missed however recent
    // (PauseTest in run_control_test).
    {"ResumeOfAFireOnceJobMakesOneRunForThePausedInstants",
     Misfire::kFireOnce,
     100,
     {{Ago(3), Ago(2), Ago(1)}},
     0,
     {Ago(1)},
     {Ago(3), Ago(2)},
     0,
     kFireOnce},
    {"ResumeOfASkipJobRunsNothingAndRecordsEveryPausedInstant",
     Misfire::kSkip,
     100,
     {{Ago(3), Ago(2), Ago(1)}},
     0,
     {},
     {Ago(3), Ago(2), Ago(1)},
     0,
     kSkip},
    {"ResumeOfAFireAllJobRunsThePausedInstantsUpToTheCap",
     Misfire::kFireAll,
     2,
     {{Ago(3), Ago(2), Ago(1)}},
     0,
     {Ago(3), Ago(2)},
     {Ago(1)},
     0,
     kFireAll},
    {"ResumeFiresAnInstantDueThisVeryMillisecond",
     Misfire::kSkip,
     100,
     {{kNow}},
     0,
     {kNow},
     {},
     0,
     nullptr},
    // A backlog beyond what is listed: everything is missed, even the listed on-time ones.
    {"AHugeBacklogOfAFireOnceJobFiresTheLatestListedAndCountsTheRest",
     Misfire::kFireOnce,
     100,
     {{Ago(20), Ago(10)}, 1000},
     kGrace,
     {Ago(10)},
     {Ago(20)},
     1000,
     kFireOnce},
    {"AHugeBacklogOfASkipJobFiresNothingEvenOnTime",
     Misfire::kSkip,
     100,
     {{Ago(20), Ago(10)}, 1000},
     kGrace,
     {},
     {Ago(20), Ago(10)},
     1000,
     kSkip},
    {"AHugeBacklogOfAFireAllJobRunsTheCapAndCountsTheRest",
     Misfire::kFireAll,
     1,
     {{Ago(20), Ago(10)}, 1000},
     kGrace,
     {Ago(20)},
     {Ago(10)},
     1000,
     kFireAll},
};

class MisfireTest : public ::testing::TestWithParam<MisfireCase> {};

TEST_P(MisfireTest, Decides) {
  const MisfireCase& c = GetParam();
  MisfireDecision d = DecideMisfire(c.policy, c.cap, c.due, kNow, c.grace_ms);
  EXPECT_EQ(d.fire, c.fire);
  EXPECT_EQ(d.missed, c.missed);
  EXPECT_EQ(d.extra_missed, c.extra_missed);
  EXPECT_EQ(std::string(d.reason ? d.reason : "(none)"),
            std::string(c.reason ? c.reason : "(none)"));
  // Nothing due is dropped: every instant fires or is recorded.
  EXPECT_EQ(d.fire.size() + d.missed.size(), c.due.listed.size());
}

INSTANTIATE_TEST_SUITE_P(Rows, MisfireTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<MisfireCase>& i) {
                           return i.param.name;
                         });

}  // namespace
}  // namespace jobctl
