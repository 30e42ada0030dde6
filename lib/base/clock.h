// Clock is the seam for time: wall time decides which instants are due, the monotonic
// (boot-time) clock measures durations such as lease deadlines. Production code uses
// SystemClock (safe on any thread); tests set a FakeClock (base/fake_clock.h) by hand.
#pragma once

#include <chrono>
#include <cstdint>

namespace jobctl {

using WallTime = std::chrono::time_point<std::chrono::system_clock, std::chrono::milliseconds>;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual WallTime Now() const = 0;  // CLOCK_REALTIME
  // The same in microseconds since the epoch, where the clock has them (a FakeClock's
  // whole milliseconds otherwise).
  virtual int64_t NowUs() const { return Now().time_since_epoch().count() * 1000; }
  // CLOCK_BOOTTIME in ms: keeps counting while the machine is suspended, never jumps.
  virtual int64_t MonotonicMs() const = 0;
  // The same in microseconds, where the clock has them (a FakeClock's whole milliseconds
  // otherwise).
  virtual int64_t MonotonicUs() const { return MonotonicMs() * 1000; }
};

class SystemClock final : public Clock {
 public:
  WallTime Now() const override;
  int64_t NowUs() const override;
  int64_t MonotonicMs() const override;
  int64_t MonotonicUs() const override;
};

inline int64_t ToUnixMs(WallTime t) { return t.time_since_epoch().count(); }
inline WallTime FromUnixMs(int64_t ms) { return WallTime(std::chrono::milliseconds(ms)); }

}  // namespace jobctl
