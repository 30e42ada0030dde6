// Timer owns one uv_timer_t whose memory outlives the Timer itself: the destructor stops and
// closes the handle, and the handle is freed in its close callback, as libuv requires. So an
// owner may destroy its Timer at any moment, even from inside the Timer's own callback, and
// the callback never runs afterwards. Loop thread only.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>

namespace jobctl::agentd {

class Timer {
 public:
  explicit Timer(uv_loop_t* loop);
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // Runs `fn` once after `delay_ms`, replacing any earlier start.
  void Once(uint64_t delay_ms, std::function<void()> fn);
  // Runs `fn` every `every_ms`, the first time after `every_ms`.
  void Every(uint64_t every_ms, std::function<void()> fn);
  void Stop();
  bool active() const;

 private:
  struct Handle;
  void Start(uint64_t delay_ms, uint64_t repeat_ms, std::function<void()> fn);
  Handle* handle_;  // freed in the close callback
};

}  // namespace jobctl::agentd
