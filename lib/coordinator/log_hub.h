// LogHub parks readers that follow a run's output (`jobctl logs -f`, `trigger --follow`)
// until new chunks of that run are committed or the run ends, then lets them read again.
// Loop thread only; owned by the Coordinator.
#pragma once

#include <uv.h>

#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "coordinator/context.h"

namespace jobctl::coordinator {

class LogHub {
 public:
  explicit LogHub(Context* ctx) : ctx_(ctx) {}
  void Start();
  void Close();  // wakes every parked reader
  // Calls `wake` once: when Notify(run_id) is called, or at the deadline, or at Close().
  void Park(int64_t run_id, int64_t deadline_mono, std::function<void()> wake);
  void Notify(int64_t run_id);

 private:
  struct Waiter {
    int64_t deadline_mono;
    std::function<void()> wake;
  };
  void Arm();
  void OnTimer();
  Context* ctx_;
  std::multimap<int64_t, Waiter> by_run_;
  uv_timer_t timer_{};
  bool started_ = false;
};

}  // namespace jobctl::coordinator
