// BootTimer fires at an instant of CLOCK_BOOTTIME (Clock::MonotonicMs), through a timerfd
// watched by a uv_poll_t. libuv's own timers run on CLOCK_MONOTONIC, which stops while the
// machine is suspended; a lease deadline must not, so that an agent waking from suspend (or
// from SIGSTOP) learns at once that its leases are gone. Memory is handled like uvx::Timer's: the
// destructor closes, the close callback frees. Loop thread only.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>

#include "base/status.h"

namespace jobctl::agentd {

class BootTimer {
 public:
  explicit BootTimer(uv_loop_t* loop);
  ~BootTimer();
  BootTimer(const BootTimer&) = delete;
  BootTimer& operator=(const BootTimer&) = delete;

  // Creates the timerfd; fails when the kernel has none (Linux < 3.15).
  Status Init();
  // Runs `fn` once when CLOCK_BOOTTIME reaches `at_ms` (at once if it has), replacing any
  // earlier arming.
  void ArmAt(int64_t at_ms, std::function<void()> fn);
  // The same at `at_us` microseconds (Clock::MonotonicUs), for starts due at an instant.
  void ArmAtUs(int64_t at_us, std::function<void()> fn);
  void Disarm();

 private:
  struct Handle;
  void OnReadable();
  uv_loop_t* loop_;
  Handle* handle_ = nullptr;  // null until Init(); freed in the close callback
};

}  // namespace jobctl::agentd
