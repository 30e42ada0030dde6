#include "model/timing_wheel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <unordered_map>
#include <utility>
#include <vector>

namespace jobctl {
namespace {

using Fired = std::vector<std::pair<uint64_t, int64_t>>;  // (id, due_ms) in firing order

constexpr int64_t kStart = 1'700'000'000'123;  // a unix ms in November 2023
constexpr int64_t kSecond = 1000;
constexpr int64_t kMinute = 60 * kSecond;
constexpr int64_t kHour = 60 * kMinute;
constexpr int64_t kDay = 24 * kHour;
constexpr int64_t kYear = 365 * kDay;

Fired AdvanceTo(TimingWheel& wheel, int64_t now_ms) {
  Fired fired;
  wheel.Advance(now_ms, [&](uint64_t id, int64_t due_ms) { fired.emplace_back(id, due_ms); });
  return fired;
}

Fired Sorted(Fired f) {
  std::sort(f.begin(), f.end());
  return f;
}

TEST(TimingWheelTest, FiresAtDueTimeAndNotBefore) {
  TimingWheel wheel(kStart);
  wheel.Schedule(7, kStart + 50);
  EXPECT_TRUE(AdvanceTo(wheel, kStart + 49).empty());
  EXPECT_TRUE(wheel.Contains(7));
  EXPECT_EQ(AdvanceTo(wheel, kStart + 50), (Fired{{7, kStart + 50}}));
  EXPECT_FALSE(wheel.Contains(7));
  EXPECT_EQ(wheel.size(), 0u);
  EXPECT_TRUE(AdvanceTo(wheel, kStart + kDay).empty());
}

TEST(TimingWheelTest, FiresEachEntryInItsOwnMillisecondWhenSteppedOneMsAtATime) {
  // Offsets cross the level-0/level-1 boundary and several level-1 slots.
  TimingWheel wheel(kStart);
  for (uint64_t offset = 1; offset <= 1500; ++offset) wheel.Schedule(offset, kStart + offset);
  for (int64_t t = kStart + 1; t <= kStart + 1500; ++t) {
    ASSERT_EQ(AdvanceTo(wheel, t), (Fired{{t - kStart, t}})) << "at +" << t - kStart;
  }
  EXPECT_TRUE(wheel.empty());
}

TEST(TimingWheelTest, CancelPreventsFiring) {
  TimingWheel wheel(kStart);
  wheel.Schedule(1, kStart + 10);
  wheel.Schedule(2, kStart + 10);
  wheel.Schedule(3, kStart + kDay);
  EXPECT_TRUE(wheel.Cancel(1));
  EXPECT_TRUE(wheel.Cancel(3));
  EXPECT_FALSE(wheel.Contains(1));
  EXPECT_EQ(wheel.size(), 1u);
  EXPECT_EQ(AdvanceTo(wheel, kStart + 2 * kDay), (Fired{{2, kStart + 10}}));
}

TEST(TimingWheelTest, CancelOfUnknownIdReturnsFalse) {
  TimingWheel wheel(kStart);
  EXPECT_FALSE(wheel.Cancel(42));
  wheel.Schedule(42, kStart + 5);
  EXPECT_TRUE(wheel.Cancel(42));
  EXPECT_FALSE(wheel.Cancel(42));
}

TEST(TimingWheelTest, RescheduleMovesEntryEarlier) {
  TimingWheel wheel(kStart);
  wheel.Schedule(5, kStart + kHour);
  wheel.Schedule(5, kStart + 10);
  EXPECT_EQ(wheel.size(), 1u);
  EXPECT_EQ(wheel.DueOf(5), kStart + 10);
  EXPECT_EQ(AdvanceTo(wheel, kStart + 10), (Fired{{5, kStart + 10}}));
  EXPECT_TRUE(AdvanceTo(wheel, kStart + 2 * kHour).empty());
}

TEST(TimingWheelTest, RescheduleMovesEntryLater) {
  TimingWheel wheel(kStart);
  wheel.Schedule(5, kStart + 10);
  wheel.Schedule(5, kStart + kHour);
  EXPECT_EQ(wheel.size(), 1u);
  EXPECT_TRUE(AdvanceTo(wheel, kStart + kHour - 1).empty());
  EXPECT_EQ(AdvanceTo(wheel, kStart + kHour), (Fired{{5, kStart + kHour}}));
}

TEST(TimingWheelTest, CascadesFromCoarseLevelsWhenAdvancedInHourSteps) {
  TimingWheel wheel(kStart);
  const int64_t due = kStart + 3 * kDay + 7 * kHour + 123;
  wheel.Schedule(1, due);
  int fires = 0;
  for (int64_t t = kStart + kHour; t <= kStart + 5 * kDay; t += kHour) {
    Fired fired = AdvanceTo(wheel, t);
    if (t < due) {
      ASSERT_TRUE(fired.empty()) << "early at " << t;
    } else if (t - kHour < due) {
      EXPECT_EQ(fired, (Fired{{1, due}}));
    }
    fires += static_cast<int>(fired.size());
  }
  EXPECT_EQ(fires, 1);
}

TEST(TimingWheelTest, CascadesFromCoarseLevelsWhenAdvancedToTheLastMillisecond) {
  TimingWheel wheel(kStart);
  const int64_t due = kStart + 3 * kDay + 7 * kHour + 123;
  wheel.Schedule(1, due);
  EXPECT_TRUE(AdvanceTo(wheel, due - kHour).empty());
  EXPECT_TRUE(AdvanceTo(wheel, due - 300).empty());
  for (int64_t t = due - 299; t < due; ++t) ASSERT_TRUE(AdvanceTo(wheel, t).empty());
  EXPECT_EQ(AdvanceTo(wheel, due), (Fired{{1, due}}));
}

TEST(TimingWheelTest, OneLongAdvanceFiresEntriesAtEverySpan) {
  TimingWheel wheel(kStart);
  const std::vector<int64_t> spans = {1,          255,         256,           257,      kSecond,
                                      kMinute,    kHour + 1,   kDay,          3 * kDay, kYear,
                                      30 * kYear, 200 * kYear, 10'000 * kYear};
  Fired want;
  for (size_t i = 0; i < spans.size(); ++i) {
    wheel.Schedule(i, kStart + spans[i]);
    want.emplace_back(i, kStart + spans[i]);
  }
  EXPECT_TRUE(AdvanceTo(wheel, kStart).empty());
  EXPECT_EQ(Sorted(AdvanceTo(wheel, kStart + 10'000 * kYear)), want);
  EXPECT_TRUE(wheel.empty());
}

TEST(TimingWheelTest, EntriesScheduledInThePastFireOnNextAdvance) {
  TimingWheel wheel(kStart);
  wheel.Schedule(1, kStart - kDay);
  wheel.Schedule(2, kStart - 1);
  wheel.Schedule(3, kStart);
  EXPECT_EQ(Sorted(AdvanceTo(wheel, kStart)),
            (Fired{{1, kStart - kDay}, {2, kStart - 1}, {3, kStart}}));
  EXPECT_TRUE(wheel.empty());
}

TEST(TimingWheelTest, OverdueEntriesFireEvenWhenTheClockStepsBack) {
  TimingWheel wheel(kStart);
  wheel.Schedule(1, kStart - 10);
  wheel.Schedule(2, kStart + 10);
  EXPECT_EQ(AdvanceTo(wheel, kStart - kMinute), (Fired{{1, kStart - 10}}));
  EXPECT_EQ(wheel.now_ms(), kStart);  // time never moves back
  EXPECT_EQ(AdvanceTo(wheel, kStart + 10), (Fired{{2, kStart + 10}}));
}

TEST(TimingWheelTest, PeriodicCallbackFiresOncePerPeriod) {
  TimingWheel wheel(kStart);
  const int64_t period = 1500;
  std::vector<int64_t> dues;
  TimingWheel::OnDue on_due = [&](uint64_t id, int64_t due_ms) {
    dues.push_back(due_ms);
    wheel.Schedule(id, due_ms + period);
  };
  wheel.Schedule(9, kStart + period);
  // Steps shorter and longer than the period, then one jump over many periods.
  for (int64_t t = kStart; t < kStart + kMinute; t += 700) wheel.Advance(t, on_due);
  wheel.Advance(kStart + kMinute + 100, on_due);
  for (int64_t t = kStart + kMinute + 100; t < kStart + 2 * kMinute; t += 4000) {
    wheel.Advance(t, on_due);
  }
  wheel.Advance(kStart + kHour, on_due);
  ASSERT_EQ(dues.size(), static_cast<size_t>(kHour / period));
  for (size_t k = 0; k < dues.size(); ++k) {
    EXPECT_EQ(dues[k], kStart + static_cast<int64_t>(k + 1) * period) << k;
  }
  EXPECT_EQ(wheel.DueOf(9), kStart + kHour + period);
}

TEST(TimingWheelTest, CallbackSchedulingAtOrBeforeFireTimeWaitsForNextAdvance) {
  TimingWheel wheel(kStart);
  int fires = 0;
  TimingWheel::OnDue on_due = [&](uint64_t id, int64_t due_ms) {
    ++fires;
    wheel.Schedule(id, due_ms);  // a zero period must not spin
  };
  wheel.Schedule(1, kStart + 5);
  wheel.Advance(kStart + 100, on_due);
  EXPECT_EQ(fires, 1);
  wheel.Advance(kStart + 100, on_due);
  EXPECT_EQ(fires, 2);
  EXPECT_LE(*wheel.NextWakeup(), kStart + 5);
}

TEST(TimingWheelTest, CallbackMayCancelAnEntryDueAtTheSameTime) {
  TimingWheel wheel(kStart);
  wheel.Schedule(1, kStart + 300);
  wheel.Schedule(2, kStart + 300);
  Fired fired;
  wheel.Advance(kStart + kSecond, [&](uint64_t id, int64_t due_ms) {
    fired.emplace_back(id, due_ms);
    EXPECT_TRUE(wheel.Cancel(3 - id));  // whichever fires first cancels the other
  });
  EXPECT_EQ(fired.size(), 1u);
  EXPECT_TRUE(wheel.empty());
}

TEST(TimingWheelTest, CallbackMayScheduleOthersWithinTheSameAdvance) {
  TimingWheel wheel(kStart);
  wheel.Schedule(1, kStart + 10);
  Fired fired;
  auto on_due = [&](uint64_t id, int64_t due_ms) {
    fired.emplace_back(id, due_ms);
    if (id == 1) {
      wheel.Schedule(2, due_ms + kMinute);  // still within this Advance
      wheel.Schedule(3, due_ms - 1);        // overdue: the next Advance
    }
  };
  wheel.Advance(kStart + kHour, on_due);
  EXPECT_EQ(fired, (Fired{{1, kStart + 10}, {2, kStart + 10 + kMinute}}));
  fired.clear();
  wheel.Advance(kStart + kHour, on_due);
  EXPECT_EQ(fired, (Fired{{3, kStart + 9}}));
}

TEST(TimingWheelTest, NextWakeupIsEmptyWhenNothingIsScheduled) {
  TimingWheel wheel(kStart);
  EXPECT_EQ(wheel.NextWakeup(), std::nullopt);
  wheel.Schedule(1, kStart + kDay);
  wheel.Cancel(1);
  EXPECT_EQ(wheel.NextWakeup(), std::nullopt);
}

TEST(TimingWheelTest, NextWakeupEqualsEarliestDueForNearEntries) {
  const int64_t block_start = kStart - kStart % 256;  // level 0 spans this 256 ms block
  TimingWheel wheel(block_start + 10);
  wheel.Schedule(1, block_start + 200);
  wheel.Schedule(2, block_start + 110);
  wheel.Schedule(3, block_start + kDay);
  EXPECT_EQ(wheel.NextWakeup(), block_start + 110);
  wheel.Cancel(2);
  EXPECT_EQ(wheel.NextWakeup(), block_start + 200);
}

TEST(TimingWheelTest, NextWakeupIsAtOrBeforeOverdueEntries) {
  TimingWheel wheel(kStart);
  wheel.Schedule(1, kStart + kMinute);
  wheel.Schedule(2, kStart - kHour);
  EXPECT_LE(*wheel.NextWakeup(), kStart - kHour);
}

TEST(TimingWheelTest, NextWakeupForgetsCancelledOverdueEntries) {
  TimingWheel wheel(kStart);
  wheel.Schedule(1, kStart - kHour);
  wheel.Cancel(1);
  wheel.Schedule(2, kStart - kMinute);
  EXPECT_EQ(wheel.NextWakeup(), kStart - kMinute);
}

TEST(TimingWheelTest, SleepingUntilNextWakeupFiresEveryEntryOnTimeWithFewWakeups) {
  std::mt19937_64 rng(7);
  TimingWheel wheel(kStart);
  std::multimap<int64_t, uint64_t> ref;
  for (uint64_t id = 0; id < 1000; ++id) {
    int64_t due = kStart + 1 + static_cast<int64_t>(rng() % (10 * kYear));
    wheel.Schedule(id, due);
    ref.emplace(due, id);
  }
  int wakeups = 0;
  while (std::optional<int64_t> wake = wheel.NextWakeup()) {
    ASSERT_LE(*wake, ref.begin()->first);
    ASSERT_GT(*wake, wheel.now_ms());
    ++wakeups;
    for (const auto& [id, due] : AdvanceTo(wheel, *wake)) {
      EXPECT_EQ(due, *wake) << "a sleeper would have woken late for " << id;
      auto [lo, hi] = ref.equal_range(due);
      auto it = std::find_if(lo, hi, [id = id](const auto& e) { return e.second == id; });
      ASSERT_NE(it, hi);
      ref.erase(it);
    }
  }
  EXPECT_TRUE(ref.empty());
  EXPECT_LE(wakeups, 1000 * 11);  // at most one stop per level per entry, not one per tick
}

TEST(TimingWheelTest, AcceptsTheWholeInt64Range) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  TimingWheel wheel(0);
  wheel.Schedule(1, kMax);
  wheel.Schedule(2, kMin);
  wheel.Schedule(3, -1);
  wheel.Schedule(4, 1);
  wheel.Schedule(5, kMax - 1);
  EXPECT_EQ(Sorted(AdvanceTo(wheel, 1)), (Fired{{2, kMin}, {3, -1}, {4, 1}}));
  EXPECT_LE(*wheel.NextWakeup(), kMax - 1);
  EXPECT_TRUE(AdvanceTo(wheel, kMax - 2).empty());
  EXPECT_EQ(AdvanceTo(wheel, kMax - 1), (Fired{{5, kMax - 1}}));
  EXPECT_EQ(AdvanceTo(wheel, kMax), (Fired{{1, kMax}}));

  TimingWheel from_min(kMin);
  from_min.Schedule(1, kMin + 1);
  from_min.Schedule(2, 0);
  EXPECT_EQ(from_min.NextWakeup(), kMin + 1);
  EXPECT_EQ(Sorted(AdvanceTo(from_min, 0)), (Fired{{1, kMin + 1}, {2, 0}}));
}

TEST(TimingWheelTest, FindsManyIdsAfterInsertsAndCancels) {
  TimingWheel wheel(kStart);
  // Sequential ids and ids that differ only in high bits both stress the index's hashing.
  auto id_of = [](uint64_t i) { return i % 2 ? i : i << 40; };
  for (uint64_t i = 0; i < 100'000; ++i) wheel.Schedule(id_of(i), kStart + 1 + i);
  for (uint64_t i = 0; i < 100'000; i += 3) ASSERT_TRUE(wheel.Cancel(id_of(i)));
  for (uint64_t i = 0; i < 100'000; ++i) {
    ASSERT_EQ(wheel.Contains(id_of(i)), i % 3 != 0) << i;
    if (i % 3 != 0) {
      ASSERT_EQ(wheel.DueOf(id_of(i)), kStart + 1 + static_cast<int64_t>(i));
    }
  }
  EXPECT_EQ(wheel.size(), 100'000u - 33'334u);
}

TEST(TimingWheelTest, ReservedWheelUsesAtMost64BytesPerEntry) {
  constexpr size_t kEntries = 100'000;
  TimingWheel wheel(kStart);
  wheel.Reserve(kEntries);
  for (uint64_t id = 0; id < kEntries; ++id) wheel.Schedule(id, kStart + kMinute + id);
  EXPECT_LE(wheel.MemoryBytes(), 64 * kEntries);
}

// The reference model for the randomized tests: every scheduled entry, by due and by id.
class Reference {
 public:
  bool Contains(uint64_t id) const { return due_of_.count(id) > 0; }
  size_t size() const { return due_of_.size(); }
  std::optional<int64_t> Earliest() const {
    if (by_due_.empty()) return std::nullopt;
    return by_due_.begin()->first;
  }
  void Schedule(uint64_t id, int64_t due) {
    Cancel(id);
    by_due_.emplace(due, id);
    due_of_[id] = due;
  }
  bool Cancel(uint64_t id) {
    auto it = due_of_.find(id);
    if (it == due_of_.end()) return false;
    auto [lo, hi] = by_due_.equal_range(it->second);
    by_due_.erase(std::find_if(lo, hi, [id](const auto& e) { return e.second == id; }));
    due_of_.erase(it);
    return true;
  }
  // Removes and returns every entry due at or before now.
  Fired TakeDue(int64_t now) {
    Fired due;
    auto end = by_due_.upper_bound(now);
    for (auto it = by_due_.begin(); it != end; ++it) {
      due.emplace_back(it->second, it->first);
      due_of_.erase(it->second);
    }
    by_due_.erase(by_due_.begin(), end);
    return Sorted(due);
  }

 private:
  std::multimap<int64_t, uint64_t> by_due_;
  std::unordered_map<uint64_t, int64_t> due_of_;
};

int64_t RandomDue(std::mt19937_64& rng, int64_t now) {
  auto below = [&](int64_t n) { return static_cast<int64_t>(rng() % static_cast<uint64_t>(n)); };
  switch (rng() % 6) {
    case 0: return now - below(kHour);  // overdue
    case 1: return now;
    case 2: return now + 1 + below(300);  // level 0 and the first cascades
    case 3: return now + below(kHour);
    case 4: return now + below(3 * kDay);
    default: return now + below(10 * kYear);
  }
}

int64_t RandomStep(std::mt19937_64& rng) {
  uint64_t pick = rng() % 10;
  if (pick == 0) return 0;
  if (pick < 6) return static_cast<int64_t>(rng() % 300);
  if (pick < 9) return static_cast<int64_t>(rng() % (10 * kMinute));
  return static_cast<int64_t>(rng() % (3 * kDay));
}

TEST(TimingWheelTest, MatchesReferenceOverRandomOperations) {
  std::mt19937_64 rng(20231114);
  int64_t now = kStart;
  TimingWheel wheel(now);
  Reference ref;
  size_t total_fired = 0;
  for (int op = 0; op < 100'000; ++op) {
    uint64_t id = rng() % 4096;
    uint64_t kind = rng() % 100;
    if (kind < 50) {
      int64_t due = RandomDue(rng, now);
      wheel.Schedule(id, due);
      ref.Schedule(id, due);
    } else if (kind < 65) {
      ASSERT_EQ(wheel.Cancel(id), ref.Cancel(id)) << "op " << op;
    } else {
      now += RandomStep(rng);
      Fired fired = Sorted(AdvanceTo(wheel, now));
      ASSERT_EQ(fired, ref.TakeDue(now)) << "op " << op << " advancing to " << now;
      total_fired += fired.size();
    }
    ASSERT_EQ(wheel.size(), ref.size()) << "op " << op;
    ASSERT_EQ(wheel.Contains(id), ref.Contains(id)) << "op " << op;
    std::optional<int64_t> wake = wheel.NextWakeup();
    std::optional<int64_t> earliest = ref.Earliest();
    ASSERT_EQ(wake.has_value(), earliest.has_value());
    if (!earliest) continue;
    ASSERT_LE(*wake, *earliest) << "op " << op;
    // Level 0 is the wheel's current 256 ms block; there NextWakeup is exact.
    if (*earliest > now && *earliest / 256 == now / 256) {
      ASSERT_EQ(*wake, *earliest) << "op " << op;
    }
  }
  EXPECT_GT(total_fired, 10'000u);  // the mix really exercised firing
}

TEST(TimingWheelTest, MatchesReferenceWhenCallbacksScheduleAndCancel) {
  std::mt19937_64 rng(99);
  int64_t now = kStart;
  TimingWheel wheel(now);
  // Per id its one pending due, and whether it was scheduled during the current Advance (such an
  // entry may fire in this Advance or the next, if it is due by then).
  struct Pending {
    int64_t due;
    bool during_advance;
  };
  std::unordered_map<uint64_t, Pending> ref;
  auto on_due = [&](uint64_t id, int64_t due_ms) {
    auto it = ref.find(id);
    ASSERT_NE(it, ref.end()) << "fired an id that is not scheduled: " << id;
    ASSERT_EQ(it->second.due, due_ms) << "fired a stale due for " << id;
    ASSERT_LE(due_ms, now) << "fired early: " << id;
    ref.erase(it);
    if (rng() % 2) {  // periodic: the same id again, sometimes with a zero period
      int64_t next = due_ms + static_cast<int64_t>(rng() % 2000);
      wheel.Schedule(id, next);
      ref[id] = {next, true};
    }
    uint64_t other = rng() % 1024;
    if (rng() % 3 == 0) {
      ASSERT_EQ(wheel.Cancel(other), ref.erase(other) > 0);
    } else if (rng() % 2) {
      int64_t due = RandomDue(rng, now);
      wheel.Schedule(other, due);
      ref[other] = {due, true};
    }
  };
  for (int op = 0; op < 100'000; ++op) {
    uint64_t id = rng() % 1024;
    uint64_t kind = rng() % 100;
    if (kind < 50) {
      int64_t due = RandomDue(rng, now);
      wheel.Schedule(id, due);
      ref[id] = {due, false};
    } else if (kind < 60) {
      ASSERT_EQ(wheel.Cancel(id), ref.erase(id) > 0);
    } else {
      now += RandomStep(rng);
      wheel.Advance(now, on_due);
      if (HasFatalFailure()) return;
      for (auto& [pending_id, p] : ref) {
        ASSERT_FALSE(!p.during_advance && p.due <= now) << "lost " << pending_id << " op " << op;
        p.during_advance = false;
      }
    }
    ASSERT_EQ(wheel.size(), ref.size()) << "op " << op;
  }
}

}  // namespace
}  // namespace jobctl
