// Where a retention slice fits between fires (Pruner::Plan): the rule that keeps pruning from
// holding up a fire.
#include "coordinator/pruner.h"

#include <gtest/gtest.h>

#include <optional>

namespace jobctl::coordinator {
namespace {

constexpr int64_t kNow = 1'767'225'600'000;    // ms
constexpr int64_t kNowUs = kNow * 1000 + 300;  // 0.3 ms into that millisecond

struct Case {
  const char* what;
  std::optional<int64_t> next_fire_in_ms;  // from kNow; nullopt: nothing scheduled
  bool turn_fired;
  int64_t waited_ms;
  int64_t work_us;   // expected
  int64_t defer_ms;  // expected
};

TEST(PrunerPlanTest, ASliceRunsOnlyWhereItAndItsCommitEndBeforeTheNextFire) {
  const Case cases[] = {
      {"nothing scheduled: a whole slice", std::nullopt, false, 0, Pruner::kSliceWorkUs, 0},
      {"the next fire far away: a whole slice", 60'000, false, 0, Pruner::kSliceWorkUs, 0},
      {"5 ms away (4.7): at most 2 ms of work", 5, false, 0, 2000, 0},
      {"3 ms away (2.7): 1.35 ms of work", 3, false, 0, 1350, 0},
      {"2 ms away (1.7): 0.85 ms of work", 2, false, 0, 850, 0},
      {"1 ms away (0.7): 0.35 ms of work", 1, false, 0, 350, 0},
      {"due now: after it", 0, false, 0, 0, 1},
      {"overdue (a burst firing): as soon as it is fired", -30, false, 0, 0, 1},
      {"this turn fired: a turn of its own", 60'000, true, 0, 0, 1},
      {"no gap for kMaxWaitMs: a least slice anyway", 0, false, Pruner::kMaxWaitMs,
       Pruner::kMinWorkUs, 0},
      {"fires in every turn for kMaxWaitMs: a least slice anyway", std::nullopt, true,
       Pruner::kMaxWaitMs, Pruner::kMinWorkUs, 0},
      {"waited less than kMaxWaitMs: still waits", 0, false, Pruner::kMaxWaitMs - 1, 0, 1},
  };
  for (const Case& c : cases) {
    std::optional<int64_t> next;
    if (c.next_fire_in_ms) next = kNow + *c.next_fire_in_ms;
    Pruner::Window w = Pruner::Plan(kNowUs, next, c.turn_fired, c.waited_ms);
    EXPECT_EQ(w.work_us, c.work_us) << c.what;
    EXPECT_EQ(w.defer_ms, c.defer_ms) << c.what;
    // A slice either runs now, within the bounds, or waits; never both, never neither.
    EXPECT_NE(w.work_us == 0, w.defer_ms == 0) << c.what;
    if (w.work_us != 0) {
      EXPECT_GE(w.work_us, Pruner::kMinWorkUs) << c.what;
      EXPECT_LE(w.work_us, Pruner::kSliceWorkUs) << c.what;
    }
  }
}

TEST(PrunerPlanTest, TheLeastWorkNeedsAGapOfTwiceItAndALongerWaitEndsJustAfterTheFire) {
  const int64_t next = kNow + 7;
  Pruner::Window fits = Pruner::Plan(next * 1000 - 2 * Pruner::kMinWorkUs, next, false, 0);
  EXPECT_EQ(fits.work_us, Pruner::kMinWorkUs);
  Pruner::Window too_short = Pruner::Plan(next * 1000 - 2 * Pruner::kMinWorkUs + 2, next, false, 0);
  EXPECT_EQ(too_short.work_us, 0);
  // 498 us before the fire: the timer's next whole millisecond after it.
  EXPECT_EQ(too_short.defer_ms, 2);
}

}  // namespace
}  // namespace jobctl::coordinator
