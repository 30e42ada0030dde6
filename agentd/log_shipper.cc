// Order per attempt is the window, then the spool, then memory. The window holds numbered
// chunks awaiting acknowledgement (from the spool, from memory, or a marker for dropped
// bytes); memory chunks are numbered only when they join the window or are spilled.
// Invariant: memory is newer than the spool, and a window taken from memory is older than
// anything the spool has for that attempt. Spill keeps this by writing such a window to the
// spool first when the spool has nothing for the attempt, and otherwise leaving it the window.
#include "log_shipper.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/log.h"
#include "wire/agent_messages.h"
#include "wire/bounded_json.h"
#include "wire/log_batch.h"

namespace jobctl::agentd {
namespace {

// {"stored": ..., "truncated": true}: the run is at its log cap on the coordinator.
bool ReachedCap(const std::string& body) {
  Result<wire::LogAppendReply> r = wire::LogAppendReply::FromJson(body);
  return r.ok() && r->truncated;
}

}  // namespace

LogShipper::LogShipper(uv_loop_t* loop, CoordinatorLink* link, Spool* spool, const EventLog* events,
                       Callbacks callbacks, Random* random)
    : link_(link),
      spool_(spool),
      events_(events),
      cb_(std::move(callbacks)),
      backoff_(kRetryBaseMs, kRetryCapMs, random),
      retry_timer_(loop) {}

void LogShipper::SetBatchLimit(size_t bytes) {
  // A batch must hold the largest single chunk, or it is no use.
  batch_limit_ =
      bytes < wire::LogRecordSize(kMaxRequestBytes) ? 0 : std::min(bytes, kMaxBatchBytes);
}

void LogShipper::Recover() {
  for (const Spool::AttemptInfo& info : spool_->Attempts()) {
    Attempt& a = attempts_[info.key];
    a.key = info.key;
    a.token = info.token;
    a.next_seq = info.next_seq;
    a.finished = true;
  }
  if (!attempts_.empty()) {
    log::Info("resending spooled output",
              {{"attempts", static_cast<uint64_t>(attempts_.size())}, {"bytes", spool_->bytes()}});
  }
  ShipMore();
}

void LogShipper::Open(AttemptKey key, int64_t token) {
  Attempt& a = attempts_[key];
  a.key = key;
  a.token = token;
}

void LogShipper::Push(AttemptKey key, Chunk chunk) {
  auto it = attempts_.find(key);
  if (it == attempts_.end()) return;  // discarded
  Attempt& a = it->second;
  if (a.capped) {
    capped_bytes_ += static_cast<int64_t>(chunk.data.size());
    return;
  }
  if (paused_ || suspended_) {
    Spill(a, suspended_);
    chunk.seq = a.next_seq++;
    SpoolChunk(a, chunk);
    return;
  }
  memory_bytes_ += static_cast<int64_t>(chunk.data.size());
  a.memory.push_back(std::move(chunk));
  if (memory_bytes_ > kMemoryBytes) Spill(a, false);
  ShipMore();
}

std::optional<int64_t> LogShipper::Finish(AttemptKey key) {
  auto it = attempts_.find(key);
  if (it == attempts_.end()) return 0;
  it->second.finished = true;
  if (it->second.in_flight() || !it->second.empty() || spool_->Has(key)) return std::nullopt;
  int64_t last = it->second.taken_seq;
  attempts_.erase(it);
  return last;
}

void LogShipper::Discard(AttemptKey key) {
  auto it = attempts_.find(key);
  if (it == attempts_.end()) return;
  for (const Chunk& c : it->second.memory) memory_bytes_ -= static_cast<int64_t>(c.data.size());
  spool_->Remove(key);
  // An answer still in flight finds no attempt and is ignored.
  attempts_.erase(it);
}

void LogShipper::Suspend() {
  suspended_ = true;
  retry_timer_.Stop();
  SpillAll(/*suspending=*/true);
  // A window the spool does not hold (a marker, chunks older than what the spool has, or
  // spooled chunks whose segment was dropped while being sent) would vanish silently: it is
  // counted for the marker of the next start.
  for (auto& [key, a] : attempts_) ForgetWindow(a);
}

void LogShipper::ShipMore() {
  if (paused_ || suspended_) return;
  for (auto& [key, a] : attempts_) {
    if (in_flight_ >= kMaxInFlight) return;
    if (!a.in_flight() && LoadWindow(a)) Send(a);
  }
}

bool LogShipper::LoadWindow(Attempt& a) {
  if (!a.window.empty()) return true;  // not acknowledged yet: sent again
  if (spool_->Has(a.key)) {
    if (int64_t dropped = spool_->TakeDropped(a.key); dropped > 0) {
      a.window.push_back(Chunk{
          ChunkStream::kMarker, 0,
          "[agentd: " + std::to_string(dropped) + " bytes of output dropped: the spool was full]\n",
          a.next_seq++});
      a.from = From::kMarker;
      a.marks = dropped;
      return true;
    }
    Result<std::vector<Chunk>> front =
        batch_limit_ > 0 ? spool_->Front(a.key, batch_limit_, wire::kMaxLogRecordHeader)
                         : spool_->Front(a.key, 0);
    if (front.ok() && !front->empty()) {
      a.window.assign(std::make_move_iterator(front->begin()),
                      std::make_move_iterator(front->end()));
      a.from = From::kSpool;
      a.marks = 0;
      return true;
    }
  }
  if (a.memory.empty()) return false;
  TakeFromMemory(a);
  return true;
}

void LogShipper::TakeFromMemory(Attempt& a) {
  auto take = [&]() {
    Chunk c = std::move(a.memory.front());
    a.memory.pop_front();
    memory_bytes_ -= static_cast<int64_t>(c.data.size());
    return c;
  };
  a.from = From::kMemory;
  a.marks = 0;
  if (batch_limit_ > 0) {
    // The backlog as it is, chunk by chunk, up to one batch.
    size_t total = 0;
    while (!a.memory.empty()) {
      size_t need = wire::LogRecordSize(a.memory.front().data.size());
      if (!a.window.empty() && total + need > batch_limit_) break;
      total += need;
      a.window.push_back(take());
      a.window.back().seq = a.next_seq++;
    }
    return;
  }
  // One chunk per request: coalesce a backlog of one stream into one.
  Chunk c = take();
  while (!a.memory.empty() && a.memory.front().stream == c.stream &&
         c.data.size() + a.memory.front().data.size() <= kMaxRequestBytes) {
    c.data += take().data;
  }
  c.seq = a.next_seq++;
  a.window.push_back(std::move(c));
}

void LogShipper::Send(Attempt& a) {
  std::string path =
      "/v1/agent/logs?run=" + std::to_string(a.key.run) + "&shard=" + std::to_string(a.key.shard) +
      "&attempt=" + std::to_string(a.key.attempt) + "&token=" + std::to_string(a.token);
  std::string body, type;
  if (batch_limit_ > 0) {
    size_t total = 0;
    a.sending = 0;
    for (const Chunk& c : a.window) {
      size_t need = wire::LogRecordSize(c.data.size());
      if (a.sending > 0 && total + need > batch_limit_) break;
      total += need;
      ++a.sending;
    }
    body.reserve(total);
    for (size_t i = 0; i < a.sending; ++i) {
      const Chunk& c = a.window[i];
      wire::AppendLogRecord(&body, c.seq, ChunkStreamName(c.stream), c.at_ms, c.data);
    }
    path += "&batch=1";
    type = wire::kLogBatchContentType;
    a.sent_as_batch = true;
  } else {
    const Chunk& c = a.window.front();
    path += "&seq=" + std::to_string(c.seq) + "&stream=" + std::string(ChunkStreamName(c.stream));
    // A marker has no time of its own; the coordinator then uses its own clock.
    if (c.at_ms > 0) path += "&at_ms=" + std::to_string(c.at_ms);
    body = c.data;
    type = "application/octet-stream";
    a.sending = 1;
    a.sent_as_batch = false;
  }
  ++in_flight_;
  AttemptKey key = a.key;
  link_->Post(std::move(path), std::move(body), std::move(type), std::chrono::seconds(30),
              [this, key](Result<http::HttpResponse> r) { OnSent(key, std::move(r)); });
}

void LogShipper::OnSent(AttemptKey key, Result<http::HttpResponse> r) {
  --in_flight_;
  auto it = attempts_.find(key);
  if (it == attempts_.end()) {
    ShipMore();
    return;
  }
  Attempt& a = it->second;
  size_t carried = std::exchange(a.sending, 0);
  if (suspended_) return;
  Reply reply = Classify(r);
  switch (reply) {
    case Reply::kRejected:
      if (a.sent_as_batch) {
        // A coordinator that takes no batches (an older one, after a failover): the same
        // chunks go again, one per request, until a claim reply says otherwise.
        log::Warn("log batch refused; sending one chunk per request",
                  {{"run", key.run}, {"shard", key.shard}, {"error", Describe(r)}});
        batch_limit_ = 0;
        ShipMore();
        return;
      }
      log::Warn("log chunk rejected; skipping it",
                {{"run", key.run},
                 {"shard", key.shard},
                 {"seq", a.window.empty() ? int64_t{0} : a.window.front().seq},
                 {"error", Describe(r)}});
      [[fallthrough]];
    case Reply::kOk:
      backoff_.Reset();
      Acknowledge(a, carried, reply == Reply::kOk);
      if (reply == Reply::kOk && ReachedCap(r->body)) Cap(a);
      MaybeDrained(a);  // may erase `a`
      ShipMore();
      return;
    case Reply::kStale:
      log::Info("log chunk refused: stale token; dropping the attempt's output",
                {{"run", key.run}, {"shard", key.shard}, {"attempt", key.attempt}});
      Discard(key);
      cb_.on_stale(key);
      ShipMore();
      return;
    case Reply::kRetry: Pause(RetryAfterMs(r)); return;
  }
}

void LogShipper::Acknowledge(Attempt& a, size_t count, bool stored) {
  int64_t last = 0;
  for (size_t i = 0; i < count && !a.window.empty(); ++i) {
    const Chunk& c = a.window.front();
    last = c.seq;
    if (stored) {
      a.taken_seq = std::max(a.taken_seq, c.seq);
      events_->Write("log_acked", {{"run", a.key.run},
                                   {"shard", a.key.shard},
                                   {"attempt", a.key.attempt},
                                   {"seq", c.seq},
                                   {"token", a.token},
                                   {"bytes", static_cast<uint64_t>(c.data.size())}});
    }
    a.window.pop_front();
  }
  if (a.from == From::kSpool && last > 0) spool_->Pop(a.key, last);
  if (a.window.empty()) {
    a.from = From::kNone;
    a.marks = 0;
  }
}

bool LogShipper::MaybeDrained(Attempt& a) {
  if (!a.finished || a.in_flight() || !a.empty() || spool_->Has(a.key)) return false;
  AttemptKey key = a.key;
  int64_t last = a.taken_seq;
  attempts_.erase(key);
  cb_.on_drained(key, last);
  return true;
}

void LogShipper::Cap(Attempt& a) {
  if (a.capped) return;
  a.capped = true;
  for (const Chunk& c : a.memory) {
    memory_bytes_ -= static_cast<int64_t>(c.data.size());
    capped_bytes_ += static_cast<int64_t>(c.data.size());
  }
  a.memory.clear();
  for (const Chunk& c : a.window) capped_bytes_ += static_cast<int64_t>(c.data.size());
  if (a.from == From::kSpool) spool_->Release(a.key);
  a.window.clear();
  a.from = From::kNone;
  a.marks = 0;
  spool_->Remove(a.key);
  log::Info("the run reached the coordinator's log cap; dropping the rest of its output",
            {{"run", a.key.run}, {"shard", a.key.shard}, {"attempt", a.key.attempt}});
}

void LogShipper::Pause(int64_t at_least_ms) {
  if (!paused_) {
    paused_ = true;
    SpillAll(/*suspending=*/false);
  }
  if (retry_timer_.active()) return;
  retry_timer_.Once(static_cast<uint64_t>(backoff_.Next(at_least_ms)), [this] {
    paused_ = false;
    ShipMore();
  });
}

void LogShipper::SpillAll(bool suspending) {
  for (auto& [key, a] : attempts_) Spill(a, suspending);
}

void LogShipper::Spill(Attempt& a, bool suspending) {
  // A window in flight stays as it is (its answer decides), unless nothing will listen.
  if (!a.window.empty() && (!a.in_flight() || suspending)) {
    if (a.from == From::kMemory && !spool_->Has(a.key)) {
      for (const Chunk& c : a.window) SpoolChunk(a, c);
      a.window.clear();
      a.from = From::kNone;
    } else if (a.from == From::kSpool) {
      ForgetWindow(a);  // the spool still has it, and hands it out again
    }
    // A marker, or memory chunks older than what the spool has: they stay the window.
  }
  while (!a.memory.empty()) {
    Chunk c = std::move(a.memory.front());
    a.memory.pop_front();
    memory_bytes_ -= static_cast<int64_t>(c.data.size());
    c.seq = a.next_seq++;
    SpoolChunk(a, c);
  }
}

void LogShipper::ForgetWindow(Attempt& a) {
  if (a.window.empty()) return;
  int64_t lost = 0;
  if (a.from == From::kMarker) {
    lost = a.marks;
  } else {
    for (const Chunk& c : a.window) {
      if (a.from != From::kSpool || !spool_->Holds(a.key, c.seq)) {
        lost += static_cast<int64_t>(c.data.size());
      }
    }
  }
  if (a.from == From::kSpool) spool_->Release(a.key);
  spool_->AddDropped(a.key, a.token, lost);
  a.window.clear();
  a.from = From::kNone;
  a.marks = 0;
}

void LogShipper::SpoolChunk(Attempt& a, const Chunk& c) {
  Status s = spool_->Append(a.key, a.token, c);
  if (!s.ok() && !warned_spool_) {
    warned_spool_ = true;
    log::Warn("cannot spool output; it is dropped", {{"error", s.message()}});
  } else if (s.ok()) {
    warned_spool_ = false;
  }
}

}  // namespace jobctl::agentd
