// LogShipper sends each attempt's log chunks to the coordinator (POST /v1/agent/logs), in
// order per attempt, numbering them seq 1, 2, ... per attempt. It never blocks a shard: chunks
// wait in memory while the coordinator keeps up, and go to the Spool (disk, bounded) when it
// does not answer or falls behind, to be resent in order when it answers again. Resending is
// safe: the coordinator stores each (run, shard, attempt, seq) once.
//
// Each attempt has a window: the numbered chunks taken from the spool or from memory that
// await acknowledgement, oldest first. One request per attempt is in flight at a time (a
// few across attempts): the coordinator stores chunks in the order they arrive, which is the
// order readers page through them, so two requests of one attempt in flight at once could
// store seq n+1 before n. A request carries the whole window as one log batch when the
// coordinator takes batches (it says so in its claim replies: SetBatchLimit), else the
// window's first chunk alone; its answer acknowledges what it carried, a prefix of the window.
// A backlog thus goes out in requests of up to the batch limit, and one commit on the
// coordinator covers all of it.
//
// An attempt ends with Finish(); once its last chunk is acknowledged on_drained fires, and the
// result may be sent, saying where the attempt's output ends: the seq of the last chunk the
// coordinator took (its readers wait for that chunk, so output that reaches the coordinator
// after the result is still shown; a chunk it refused as malformed is not counted). A 409 (stale
// token) drops the attempt's chunks and fires on_stale instead. Once an answer says the run reached
// the coordinator's log cap ("truncated"), the attempt's further output is dropped at once: a job
// printing gigabytes is drained at pipe speed and costs neither the network nor the spool. Loop
// thread only; owned by the Agent.
#pragma once

#include <uv.h>

#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "assignment.h"
#include "backoff.h"
#include "base/event_log.h"
#include "chunker.h"
#include "coordinator_link.h"
#include "spool.h"
#include "uvx/handles.h"

namespace jobctl::agentd {

class LogShipper {
 public:
  static constexpr int kMaxInFlight = 4;
  static constexpr size_t kMaxRequestBytes = 256 * 1024;     // one chunk per request
  static constexpr size_t kMaxBatchBytes = size_t{4} << 20;  // a batch, if the coordinator agrees
  static constexpr int64_t kMemoryBytes = int64_t{8} << 20;  // beyond this, chunks spool

  struct Callbacks {
    std::function<void(AttemptKey, int64_t last_seq)> on_drained;
    std::function<void(AttemptKey)> on_stale;
  };
  // `random` (not owned; nullptr: the retry backoff's own) draws the retry delays.
  LogShipper(uv_loop_t* loop, CoordinatorLink* link, Spool* spool, const EventLog* events,
             Callbacks callbacks, Random* random = nullptr);

  // Attempts left in the spool by an earlier agentd: resent, already finished.
  void Recover();
  void Open(AttemptKey key, int64_t token);
  void Push(AttemptKey key, Chunk chunk);
  // No more chunks will come. When nothing is left to send, the seq of the last chunk the
  // coordinator took (0: none, or an attempt this shipper does not know) and on_drained will
  // not fire; else nullopt, and on_drained fires once the rest is taken.
  std::optional<int64_t> Finish(AttemptKey key);
  // Stop sending for this attempt and forget its chunks (its lease is gone).
  void Discard(AttemptKey key);
  // Shutting down: everything still in memory goes to the spool, nothing more is sent.
  void Suspend();
  // The largest log batch the coordinator takes (0: one chunk per request), capped at
  // kMaxBatchBytes.
  void SetBatchLimit(size_t bytes);

  bool idle() const { return attempts_.empty(); }
  size_t batch_limit() const { return batch_limit_; }
  // Bytes dropped because their run had reached the coordinator's log cap (all attempts).
  int64_t capped_bytes() const { return capped_bytes_; }

 private:
  enum class From { kNone, kMemory, kSpool, kMarker };
  struct Attempt {
    AttemptKey key;
    int64_t token = 0;
    int64_t next_seq = 1;
    int64_t taken_seq = 0;     // the highest seq the coordinator took (stored or not new)
    std::deque<Chunk> memory;  // not numbered yet; newer than everything spooled
    std::deque<Chunk> window;  // numbered, ascending; goes before the spool and memory
    From from = From::kNone;   // where the window came from
    int64_t marks = 0;         // the window is a marker for this many dropped bytes
    size_t sending = 0;        // the window's first chunks carried by the request in flight
    bool sent_as_batch = false;
    bool finished = false;
    // The coordinator said the run reached its log cap: it keeps nothing more of it, so the
    // attempt's output is counted and dropped here instead of shipped (or spooled) for nothing.
    bool capped = false;
    bool in_flight() const { return sending > 0; }
    bool empty() const { return window.empty() && memory.empty(); }
  };

  void ShipMore();
  bool LoadWindow(Attempt& a);
  void TakeFromMemory(Attempt& a);
  void Send(Attempt& a);
  void OnSent(AttemptKey key, Result<http::HttpResponse> r);
  // The window's first `count` chunks were answered (`stored`: accepted, not skipped).
  void Acknowledge(Attempt& a, size_t count, bool stored);
  // Ships nothing until a retry, at least `at_least_ms` away (RetryAfterMs).
  void Pause(int64_t at_least_ms = 0);
  void SpillAll(bool suspending);
  void Spill(Attempt& a, bool suspending);
  void ForgetWindow(Attempt& a);
  void SpoolChunk(Attempt& a, const Chunk& c);
  void Cap(Attempt& a);
  bool MaybeDrained(Attempt& a);  // true: erased

  CoordinatorLink* link_;
  Spool* spool_;
  const EventLog* events_;
  Callbacks cb_;
  std::map<AttemptKey, Attempt> attempts_;
  int in_flight_ = 0;
  int64_t memory_bytes_ = 0;
  int64_t capped_bytes_ = 0;
  size_t batch_limit_ = 0;
  bool paused_ = false;     // the coordinator failed us; retry at the timer
  bool suspended_ = false;  // shutting down
  bool warned_spool_ = false;
  Backoff backoff_;  // kRetryBaseMs doubling up to kRetryCapMs
  uvx::Timer retry_timer_;
};

}  // namespace jobctl::agentd
