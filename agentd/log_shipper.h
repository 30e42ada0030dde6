// LogShipper sends each attempt's log chunks to the coordinator (POST /v1/agent/logs), in
// order per attempt (one request in flight per attempt, a few across attempts), numbering
// them seq 1, 2, ... per attempt. It never blocks a shard: chunks wait in memory while the
// coordinator keeps up, and go to the Spool (disk, bounded) when it does not answer or falls
// behind, to be resent in order when it answers again. Resending is safe: the coordinator
// stores each (run, shard, attempt, seq) once.
//
// An attempt ends with Finish(); once its last chunk is acknowledged on_drained fires, and the
// result may be sent. A 409 (stale token) drops the attempt's chunks and fires on_stale
// instead. Loop thread only; owned by the Agent.
#pragma once

#include <uv.h>

#include <deque>
#include <functional>
#include <map>
#include <optional>

#include "assignment.h"
#include "backoff.h"
#include "base/event_log.h"
#include "chunker.h"
#include "coordinator_link.h"
#include "spool.h"
#include "timer.h"

namespace jobctl::agentd {

class LogShipper {
 public:
  static constexpr int kMaxInFlight = 4;
  static constexpr size_t kMaxRequestBytes = 256 * 1024;      // the coordinator's limit
  static constexpr int64_t kMemoryBytes = int64_t{8} << 20;   // beyond this, chunks spool

  struct Callbacks {
    std::function<void(AttemptKey)> on_drained;
    std::function<void(AttemptKey)> on_stale;
  };
  LogShipper(uv_loop_t* loop, CoordinatorLink* link, Spool* spool, const EventLog* events,
             Callbacks callbacks);

  // Attempts left in the spool by an earlier agentd: resent, already finished.
  void Recover();
  void Open(AttemptKey key, int64_t token);
  void Push(AttemptKey key, Chunk chunk);
  // No more chunks will come. True: nothing is left to send (on_drained will not fire).
  bool Finish(AttemptKey key);
  // Stop sending for this attempt and forget its chunks (its lease is gone).
  void Discard(AttemptKey key);
  // Shutting down: everything still in memory goes to the spool, nothing more is sent.
  void Suspend();

  bool idle() const { return attempts_.empty(); }

 private:
  struct Attempt {
    AttemptKey key;
    int64_t token = 0;
    int64_t next_seq = 1;
    std::deque<Chunk> memory;    // not numbered yet; newer than everything spooled
    std::optional<Chunk> head;   // numbered; goes before the spool and memory
    bool head_spooled = false;   // head is the spool's front record
    int64_t head_marks = 0;      // head is a marker for this many dropped bytes
    bool in_flight = false;
    bool finished = false;
  };

  void ShipMore();
  bool LoadHead(Attempt& a);
  void Send(Attempt& a);
  void OnSent(AttemptKey key, int64_t seq, Result<http::HttpResponse> r);
  void Pause();
  void SpillAll();
  void Spill(Attempt& a);
  void SpoolChunk(Attempt& a, const Chunk& c);
  bool MaybeDrained(Attempt& a);  // true: erased

  CoordinatorLink* link_;
  Spool* spool_;
  const EventLog* events_;
  Callbacks cb_;
  std::map<AttemptKey, Attempt> attempts_;
  int in_flight_ = 0;
  int64_t memory_bytes_ = 0;
  bool paused_ = false;     // the coordinator failed us; retry at the timer
  bool suspended_ = false;  // shutting down
  bool warned_spool_ = false;
  Backoff backoff_{500, 30'000};
  Timer retry_timer_;
};

}  // namespace jobctl::agentd
