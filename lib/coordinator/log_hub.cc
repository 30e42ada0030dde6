#include "coordinator/log_hub.h"

#include <algorithm>

namespace jobctl::coordinator {

void LogHub::Start() {
  uv_timer_init(ctx_->loop, &timer_);
  timer_.data = this;
  started_ = true;
}

void LogHub::Close() {
  auto all = std::move(by_run_);
  by_run_.clear();
  for (auto& [run, w] : all) w.wake();
  if (started_) uv_close(reinterpret_cast<uv_handle_t*>(&timer_), nullptr);
  started_ = false;
}

void LogHub::Park(int64_t run_id, int64_t deadline_mono, std::function<void()> wake) {
  by_run_.insert({run_id, Waiter{deadline_mono, std::move(wake)}});
  Arm();
}

void LogHub::Notify(int64_t run_id) {
  auto [first, last] = by_run_.equal_range(run_id);
  std::vector<std::function<void()>> wake;
  for (auto it = first; it != last; ++it) wake.push_back(std::move(it->second.wake));
  by_run_.erase(first, last);
  for (auto& w : wake) w();
  Arm();
}

void LogHub::OnTimer() {
  int64_t now = ctx_->MonoMs();
  std::vector<std::function<void()>> wake;
  for (auto it = by_run_.begin(); it != by_run_.end();) {
    if (it->second.deadline_mono <= now) {
      wake.push_back(std::move(it->second.wake));
      it = by_run_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& w : wake) w();
  Arm();
}

void LogHub::Arm() {
  if (!started_) return;
  if (by_run_.empty()) {
    uv_timer_stop(&timer_);
    return;
  }
  int64_t earliest = by_run_.begin()->second.deadline_mono;
  for (const auto& [run, w] : by_run_) earliest = std::min(earliest, w.deadline_mono);
  int64_t in = std::max<int64_t>(earliest - ctx_->MonoMs(), 0);
  uv_timer_start(&timer_, [](uv_timer_t* t) { static_cast<LogHub*>(t->data)->OnTimer(); },
                 static_cast<uint64_t>(in), 0);
}

}  // namespace jobctl::coordinator
