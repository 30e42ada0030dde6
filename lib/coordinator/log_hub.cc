#include "coordinator/log_hub.h"

#include <algorithm>
#include <vector>

namespace jobctl::coordinator {

void LogHub::Start() {
  timer_ = std::make_unique<uvx::Timer>(ctx_->loop);
  started_ = true;
}

void LogHub::Close() {
  std::vector<std::function<void()>> wake;
  for (auto& [id, w] : waiters_) wake.push_back(std::move(w.wake));
  waiters_.clear();
  by_run_.clear();
  by_deadline_.clear();
  timer_.reset();
  started_ = false;
  for (auto& w : wake) w();
}

LogHub::WaiterId LogHub::Park(int64_t run_id, int64_t deadline_mono, std::function<void()> wake) {
  WaiterId id = next_id_++;
  waiters_.emplace(id, Waiter{run_id, deadline_mono, std::move(wake)});
  by_run_.emplace(run_id, id);
  by_deadline_.emplace(deadline_mono, id);
  Arm();
  return id;
}

std::function<void()> LogHub::Take(WaiterId id) {
  auto it = waiters_.find(id);
  if (it == waiters_.end()) return nullptr;
  Waiter w = std::move(it->second);
  waiters_.erase(it);
  by_deadline_.erase({w.deadline_mono, id});
  auto [first, last] = by_run_.equal_range(w.run_id);
  for (auto r = first; r != last; ++r) {
    if (r->second == id) {
      by_run_.erase(r);
      break;
    }
  }
  return std::move(w.wake);
}

void LogHub::Cancel(WaiterId id) {
  Take(id);
  Arm();
}

void LogHub::Notify(int64_t run_id) {
  std::vector<WaiterId> ids;
  auto [first, last] = by_run_.equal_range(run_id);
  for (auto it = first; it != last; ++it) ids.push_back(it->second);
  std::vector<std::function<void()>> wake;
  for (WaiterId id : ids) wake.push_back(Take(id));
  for (auto& w : wake) w();
  Arm();
}

void LogHub::OnTimer() {
  armed_for_ = -1;
  int64_t now = ctx_->MonoMs();
  std::vector<std::function<void()>> wake;
  while (!by_deadline_.empty() && by_deadline_.begin()->first <= now) {
    wake.push_back(Take(by_deadline_.begin()->second));
  }
  for (auto& w : wake) w();
  Arm();
}

void LogHub::Arm() {
  if (!started_) return;
  if (by_deadline_.empty()) {
    timer_->Stop();
    armed_for_ = -1;
    return;
  }
  int64_t earliest = by_deadline_.begin()->first;
  if (earliest == armed_for_) return;
  armed_for_ = earliest;
  int64_t in = std::max<int64_t>(earliest - ctx_->MonoMs(), 0);
  timer_->Once(static_cast<uint64_t>(in), [this] { OnTimer(); });
}

}  // namespace jobctl::coordinator
