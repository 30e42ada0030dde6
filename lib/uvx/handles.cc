#include "uvx/handles.h"

#include <utility>

namespace jobctl::uvx {

Timer::Timer(uv_loop_t* loop) { uv_timer_init(loop, &box_->handle); }

void Timer::Once(uint64_t delay_ms, std::function<void()> fn) {
  box_->fn = std::move(fn);
  uv_timer_start(
      &box_->handle, [](uv_timer_t* t) { CallbackOf(t)(); }, delay_ms, 0);
}

void Timer::Every(uint64_t every_ms, std::function<void()> fn) {
  box_->fn = std::move(fn);
  uv_timer_start(
      &box_->handle, [](uv_timer_t* t) { CallbackOf(t)(); }, every_ms, every_ms);
}

void Timer::Stop() { uv_timer_stop(&box_->handle); }

Idle::Idle(uv_loop_t* loop) { uv_idle_init(loop, &box_->handle); }

void Idle::Start(std::function<void()> fn) {
  box_->fn = std::move(fn);
  uv_idle_start(&box_->handle, [](uv_idle_t* h) { CallbackOf(h)(); });
}

void Idle::Stop() { uv_idle_stop(&box_->handle); }

Check::Check(uv_loop_t* loop) { uv_check_init(loop, &box_->handle); }

void Check::Start(std::function<void()> fn) {
  box_->fn = std::move(fn);
  uv_check_start(&box_->handle, [](uv_check_t* h) { CallbackOf(h)(); });
}

void Check::Stop() { uv_check_stop(&box_->handle); }

Signal::Signal(uv_loop_t* loop) { uv_signal_init(loop, &box_->handle); }

void Signal::Start(int signum, std::function<void(int)> fn) {
  box_->fn = std::move(fn);
  uv_signal_start(
      &box_->handle, [](uv_signal_t* h, int sig) { CallbackOf(h)(sig); }, signum);
}

void Signal::Stop() { uv_signal_stop(&box_->handle); }

Poll::Poll(uv_loop_t* loop, int fd) { init_status_ = uv_poll_init(loop, &box_->handle, fd); }

void Poll::Start(int events, std::function<void(int, int)> fn) {
  box_->fn = std::move(fn);
  uv_poll_start(&box_->handle, events,
                [](uv_poll_t* h, int status, int ready) { CallbackOf(h)(status, ready); });
}

void Poll::Stop() { uv_poll_stop(&box_->handle); }

}  // namespace jobctl::uvx
