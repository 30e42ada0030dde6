// FakeClock is the Clock tests set by hand: its wall time and its monotonic time only move
// when the test moves them. Advance() moves both, as real time passing does; SetWall()
// steps the wall clock alone, as NTP or an administrator does, while the monotonic clock
// keeps its count. For tests only; one thread (unlike SystemClock it is not safe to share).
#pragma once

#include <cstdint>

#include "base/clock.h"
#include "base/duration.h"

namespace jobctl {

class FakeClock final : public Clock {
 public:
  explicit FakeClock(WallTime wall = FromUnixMs(0), int64_t monotonic_ms = 0)
      : wall_(wall), monotonic_ms_(monotonic_ms) {}

  WallTime Now() const override { return wall_; }
  int64_t MonotonicMs() const override { return monotonic_ms_; }

  // Time passes: both clocks move on by `d` (d >= 0; a backward wall step is SetWall's).
  void Advance(Millis d) {
    wall_ += d;
    monotonic_ms_ += d.count();
  }
  // The wall clock is stepped (forward or back); the monotonic clock does not notice.
  void SetWall(WallTime wall) { wall_ = wall; }

 private:
  WallTime wall_;
  int64_t monotonic_ms_;
};

}  // namespace jobctl
