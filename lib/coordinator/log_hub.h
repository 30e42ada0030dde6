// LogHub parks readers that follow a run's output (`jobctl logs -f`, `trigger --follow`) and
// callers waiting for a run's end (`/wait`) until new chunks of that run are committed, the
// run ends or their deadline passes, then lets them read again. A follower of a run that
// has ended but whose declared output is not all stored yet (Api::OutputComplete) parks
// here too, and the commit of that output wakes it. Each waiter is indexed by
// run and by deadline, so parking, waking, cancelling and re-arming the one timer cost
// O(log n) in the number of waiters. Loop thread only; owned by the Coordinator.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "coordinator/context.h"
#include "uvx/handles.h"

namespace jobctl::coordinator {

class LogHub {
 public:
  using WaiterId = uint64_t;

  explicit LogHub(Context* ctx) : ctx_(ctx) {}
  void Start();
  void Close();  // wakes every parked waiter
  // Calls `wake` once: when Notify(run_id) is called, or at the deadline, or at Close();
  // never after Cancel() of the id it returns.
  WaiterId Park(int64_t run_id, int64_t deadline_mono, std::function<void()> wake);
  // Forgets a waiter (its client went away) without calling it; no-op once it woke.
  void Cancel(WaiterId id);
  void Notify(int64_t run_id);
  size_t waiters() const { return waiters_.size(); }

 private:
  struct Waiter {
    int64_t run_id;
    int64_t deadline_mono;
    std::function<void()> wake;
  };
  // Removes the waiter and returns its callback.
  std::function<void()> Take(WaiterId id);
  void Arm();
  void OnTimer();

  Context* ctx_;
  WaiterId next_id_ = 1;
  std::map<WaiterId, Waiter> waiters_;
  std::multimap<int64_t, WaiterId> by_run_;
  std::set<std::pair<int64_t, WaiterId>> by_deadline_;
  int64_t armed_for_ = -1;  // the deadline the timer is set for; -1 when stopped
  std::unique_ptr<uvx::Timer> timer_;
  bool started_ = false;
};

}  // namespace jobctl::coordinator
