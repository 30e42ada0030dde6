#include "boot_timer.h"

#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace jobctl::agentd {

struct BootTimer::Handle {
  uv_poll_t poll;
  int fd = -1;
  BootTimer* owner = nullptr;  // null once the owner is gone
  std::function<void()> fn;
};

BootTimer::BootTimer(uv_loop_t* loop) : loop_(loop) {}

BootTimer::~BootTimer() {
  if (handle_ == nullptr) return;
  handle_->owner = nullptr;
  uv_close(reinterpret_cast<uv_handle_t*>(&handle_->poll), [](uv_handle_t* h) {
    auto* handle = static_cast<Handle*>(h->data);
    close(handle->fd);
    delete handle;
  });
}

Status BootTimer::Init() {
  int fd = timerfd_create(CLOCK_BOOTTIME, TFD_NONBLOCK | TFD_CLOEXEC);
  if (fd < 0) return Status::Internal(std::string("timerfd_create: ") + std::strerror(errno));
  handle_ = new Handle;
  handle_->fd = fd;
  handle_->owner = this;
  if (int rc = uv_poll_init(loop_, &handle_->poll, fd); rc != 0) {
    close(fd);
    delete handle_;
    handle_ = nullptr;
    return Status::Internal(std::string("uv_poll_init: ") + uv_strerror(rc));
  }
  handle_->poll.data = handle_;
  return Status::Ok();
}

void BootTimer::ArmAt(int64_t at_ms, std::function<void()> fn) {
  ArmAtUs(at_ms * 1000, std::move(fn));
}

void BootTimer::ArmAtUs(int64_t at_us, std::function<void()> fn) {
  handle_->fn = std::move(fn);
  // An absolute expiry of 0 would disarm the timerfd; anything past is "now".
  if (at_us <= 0) at_us = 1;
  itimerspec spec{};
  spec.it_value.tv_sec = at_us / 1'000'000;
  spec.it_value.tv_nsec = (at_us % 1'000'000) * 1000;
  timerfd_settime(handle_->fd, TFD_TIMER_ABSTIME, &spec, nullptr);
  uv_poll_start(&handle_->poll, UV_READABLE, [](uv_poll_t* p, int, int) {
    auto* handle = static_cast<Handle*>(p->data);
    if (handle->owner != nullptr) handle->owner->OnReadable();
  });
}

void BootTimer::Disarm() {
  if (handle_ == nullptr) return;
  itimerspec spec{};
  timerfd_settime(handle_->fd, 0, &spec, nullptr);
  uv_poll_stop(&handle_->poll);
  handle_->fn = nullptr;
}

void BootTimer::OnReadable() {
  uint64_t expirations = 0;
  if (read(handle_->fd, &expirations, sizeof expirations) != sizeof expirations) return;
  uv_poll_stop(&handle_->poll);
  std::function<void()> fn = std::move(handle_->fn);
  handle_->fn = nullptr;
  if (fn) fn();
}

}  // namespace jobctl::agentd
