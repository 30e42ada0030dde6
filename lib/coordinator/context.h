// Context: what every part of the coordinator shares — the loop, the clocks, the
// configuration, the stores and the group commit. Owned by the Coordinator; parts keep a
// pointer to it. Loop thread only.
#pragma once

#include <uv.h>

#include "base/clock.h"
#include "base/event_log.h"
#include "config/coordinator_config.h"
#include "coordinator/write_batch.h"
#include "model/ids.h"
#include "store/log_store.h"
#include "store/store.h"

namespace jobctl::coordinator {

struct Metrics;

struct Context {
  uv_loop_t* loop = nullptr;
  const Clock* clock = nullptr;
  CoordinatorConfig config;
  store::Store* store = nullptr;
  store::LogStore* logs = nullptr;
  WriteBatch* batch = nullptr;
  Metrics* metrics = nullptr;
  const EventLog* events = nullptr;  // disabled unless --event-log

  int64_t NowMs() const { return ToUnixMs(clock->Now()); }
  // Appends an event once this turn's commit succeeded, never before: the event log only
  // says what the store already holds. Free when the event log is off.
  void EventAfterCommit(std::string_view ev, EventFields fields) const {
    if (!events->enabled()) return;
    batch->OnCommit([log = events, line = events->Render(ev, fields)](const Status& s) {
      if (s.ok()) log->WriteRendered(line);
    });
  }
  int64_t MonoMs() const { return clock->MonotonicMs(); }
};

}  // namespace jobctl::coordinator
