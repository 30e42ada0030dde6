#include "timer.h"

#include <utility>

namespace jobctl::agentd {

struct Timer::Handle {
  uv_timer_t timer;
  std::function<void()> fn;
};

Timer::Timer(uv_loop_t* loop) : handle_(new Handle) {
  uv_timer_init(loop, &handle_->timer);
  handle_->timer.data = handle_;
}

Timer::~Timer() {
  uv_close(reinterpret_cast<uv_handle_t*>(&handle_->timer),
           [](uv_handle_t* h) { delete static_cast<Handle*>(h->data); });
}

void Timer::Once(uint64_t delay_ms, std::function<void()> fn) { Start(delay_ms, 0, std::move(fn)); }

void Timer::Every(uint64_t every_ms, std::function<void()> fn) {
  Start(every_ms, every_ms, std::move(fn));
}

void Timer::Start(uint64_t delay_ms, uint64_t repeat_ms, std::function<void()> fn) {
  handle_->fn = std::move(fn);
  uv_timer_start(
      &handle_->timer,
      [](uv_timer_t* t) {
        // Copy first: the callback may restart this timer (replacing fn) or destroy its owner.
        std::function<void()> run = static_cast<Handle*>(t->data)->fn;
        run();
      },
      delay_ms, repeat_ms);
}

void Timer::Stop() { uv_timer_stop(&handle_->timer); }

bool Timer::active() const {
  return uv_is_active(reinterpret_cast<const uv_handle_t*>(&handle_->timer)) != 0;
}

}  // namespace jobctl::agentd
