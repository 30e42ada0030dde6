// Owned libuv handles: the one way both daemons hold a timer, an idle or check handle, a
// signal watcher or a poll. Each object owns one handle whose memory outlives the object
// itself: the destructor stops and closes the handle, and the memory is freed in the close
// callback, as libuv requires. So an owner may destroy its handle at any moment, even from
// inside the handle's own callback, and the callback never runs afterwards. The loop must run
// once more after the last handle is destroyed (uv_run) before uv_loop_close. Loop thread
// only.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>

namespace jobctl::uvx {

namespace internal {

// A handle of type H and the callback it runs, freed together in the close callback.
template <typename H, typename Fn>
struct Box {
  H handle{};
  std::function<Fn> fn;
};

template <typename H, typename Fn>
class Owned {
 public:
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() {
    uv_close(reinterpret_cast<uv_handle_t*>(&box_->handle),
             [](uv_handle_t* h) { delete static_cast<Box<H, Fn>*>(h->data); });
  }
  bool active() const {
    return uv_is_active(reinterpret_cast<const uv_handle_t*>(&box_->handle)) != 0;
  }
  // Unref: the handle alone does not keep the loop running; Ref undoes it.
  void Unref() { uv_unref(reinterpret_cast<uv_handle_t*>(&box_->handle)); }
  void Ref() { uv_ref(reinterpret_cast<uv_handle_t*>(&box_->handle)); }

 protected:
  Owned() : box_(new Box<H, Fn>) { box_->handle.data = box_; }
  // The callback of the box behind `h`, copied first: it may restart this handle (replacing
  // the callback) or destroy the handle's owner.
  static std::function<Fn> CallbackOf(H* h) { return static_cast<Box<H, Fn>*>(h->data)->fn; }
  Box<H, Fn>* box_;  // freed in the close callback
};

}  // namespace internal

class Timer : public internal::Owned<uv_timer_t, void()> {
 public:
  explicit Timer(uv_loop_t* loop);
  // Runs `fn` once after `delay_ms`, replacing any earlier start.
  void Once(uint64_t delay_ms, std::function<void()> fn);
  // Runs `fn` every `every_ms`, the first time after `every_ms`.
  void Every(uint64_t every_ms, std::function<void()> fn);
  void Stop();
  // Milliseconds until it runs (0 when due or stopped).
  uint64_t due_in() const { return uv_timer_get_due_in(&box_->handle); }
};

// Runs its callback once per loop iteration while started; an active idle handle also makes
// the loop poll without blocking.
class Idle : public internal::Owned<uv_idle_t, void()> {
 public:
  explicit Idle(uv_loop_t* loop);
  void Start(std::function<void()> fn);
  void Stop();
};

// Runs its callback at the end of every loop iteration, after I/O, while started.
class Check : public internal::Owned<uv_check_t, void()> {
 public:
  explicit Check(uv_loop_t* loop);
  void Start(std::function<void()> fn);
  void Stop();
};

class Signal : public internal::Owned<uv_signal_t, void(int)> {
 public:
  explicit Signal(uv_loop_t* loop);
  // Runs `fn` with the signal number each time `signum` arrives.
  void Start(int signum, std::function<void(int)> fn);
  void Stop();
};

// Watches a file descriptor the caller keeps open for as long as the Poll lives.
class Poll : public internal::Owned<uv_poll_t, void(int status, int events)> {
 public:
  Poll(uv_loop_t* loop, int fd);
  // Runs `fn(status, events)` when the descriptor is ready for any of `events`
  // (UV_READABLE, UV_WRITABLE).
  void Start(int events, std::function<void(int status, int events)> fn);
  void Stop();
  // Whether uv_poll_init accepted the descriptor (it refuses regular files).
  bool ok() const { return init_status_ == 0; }
  int init_status() const { return init_status_; }

 private:
  int init_status_ = 0;
};

}  // namespace jobctl::uvx
