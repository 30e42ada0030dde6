// Order per attempt is head, then the spool, then memory. The head is the next chunk to send
// (numbered, maybe in flight). Memory chunks are numbered only when they become the head or
// are spilled, so that a backlog of small chunks can go out as one request of up to 256 KiB.
// Invariant: memory is newer than the spool, and a head taken from memory means the spool
// had nothing for that attempt; Spill keeps it by writing the head first.
#include "log_shipper.h"

#include "base/log.h"

namespace jobctl::agentd {

LogShipper::LogShipper(uv_loop_t* loop, CoordinatorLink* link, Spool* spool,
                       const EventLog* events, Callbacks callbacks)
    : link_(link), spool_(spool), events_(events), cb_(std::move(callbacks)), retry_timer_(loop) {}

void LogShipper::Recover() {
  for (const Spool::AttemptInfo& info : spool_->Attempts()) {
    Attempt& a = attempts_[info.key];
    a.key = info.key;
    a.token = info.token;
    a.next_seq = info.next_seq;
    a.finished = true;
  }
  if (!attempts_.empty()) {
    log::Info("resending spooled output", {{"attempts", static_cast<uint64_t>(attempts_.size())},
                                           {"bytes", spool_->bytes()}});
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
  if (paused_ || suspended_) {
    Spill(a);
    chunk.seq = a.next_seq++;
    SpoolChunk(a, chunk);
    return;
  }
  memory_bytes_ += static_cast<int64_t>(chunk.data.size());
  a.memory.push_back(std::move(chunk));
  if (memory_bytes_ > kMemoryBytes) Spill(a);
  ShipMore();
}

bool LogShipper::Finish(AttemptKey key) {
  auto it = attempts_.find(key);
  if (it == attempts_.end()) return true;
  it->second.finished = true;
  if (it->second.in_flight || it->second.head || !it->second.memory.empty() ||
      spool_->Has(key)) {
    return false;
  }
  attempts_.erase(it);
  return true;
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
  SpillAll();
  // A head the spool no longer has (a marker, or a chunk whose segment was dropped while it
  // was being sent) would vanish silently: count it for the marker of the next start.
  for (auto& [key, a] : attempts_) {
    if (!a.head || (a.head_spooled && spool_->Holds(key, a.head->seq))) continue;
    spool_->AddDropped(key, a.token,
                       a.head_marks > 0 ? a.head_marks : static_cast<int64_t>(a.head->data.size()));
  }
}

void LogShipper::ShipMore() {
  if (paused_ || suspended_) return;
  for (auto& [key, a] : attempts_) {
    if (in_flight_ >= kMaxInFlight) return;
    if (!a.in_flight && LoadHead(a)) Send(a);
  }
}

bool LogShipper::LoadHead(Attempt& a) {
  if (a.head) return true;
  if (spool_->Has(a.key)) {
    if (int64_t dropped = spool_->TakeDropped(a.key); dropped > 0) {
      a.head = Chunk{ChunkStream::kMarker, 0, "[agentd: " + std::to_string(dropped) +
                     " bytes of output dropped: the spool was full]\n", a.next_seq++};
      a.head_spooled = false;
      a.head_marks = dropped;
      return true;
    }
    Result<std::optional<Chunk>> front = spool_->Front(a.key);
    if (front.ok() && front->has_value()) {
      a.head = std::move(**front);
      a.head_spooled = true;
      a.head_marks = 0;
      return true;
    }
  }
  if (a.memory.empty()) return false;
  // Coalesce a backlog of one stream into one request.
  Chunk c = std::move(a.memory.front());
  a.memory.pop_front();
  memory_bytes_ -= static_cast<int64_t>(c.data.size());
  while (!a.memory.empty() && a.memory.front().stream == c.stream &&
         c.data.size() + a.memory.front().data.size() <= kMaxRequestBytes) {
    memory_bytes_ -= static_cast<int64_t>(a.memory.front().data.size());
    c.data += a.memory.front().data;
    a.memory.pop_front();
  }
  c.seq = a.next_seq++;
  a.head = std::move(c);
  a.head_spooled = false;
  a.head_marks = 0;
  return true;
}

void LogShipper::Send(Attempt& a) {
  const Chunk& c = *a.head;
  std::string path = "/v1/agent/logs?run=" + std::to_string(a.key.run) +
                     "&shard=" + std::to_string(a.key.shard) +
                     "&attempt=" + std::to_string(a.key.attempt) + "&seq=" + std::to_string(c.seq) +
                     "&stream=" + std::string(ChunkStreamName(c.stream)) +
                     "&token=" + std::to_string(a.token);
  // A marker has no time of its own; the coordinator then uses its own clock.
  if (c.at_ms > 0) path += "&at_ms=" + std::to_string(c.at_ms);
  a.in_flight = true;
  ++in_flight_;
  AttemptKey key = a.key;
  int64_t seq = c.seq;
  link_->Post(std::move(path), c.data, "application/octet-stream", std::chrono::seconds(30),
              [this, key, seq](Result<http::HttpResponse> r) { OnSent(key, seq, std::move(r)); });
}

void LogShipper::OnSent(AttemptKey key, int64_t seq, Result<http::HttpResponse> r) {
  --in_flight_;
  auto it = attempts_.find(key);
  if (it == attempts_.end()) {
    ShipMore();
    return;
  }
  Attempt& a = it->second;
  a.in_flight = false;
  if (suspended_) return;
  Reply reply = Classify(r);
  switch (reply) {
    case Reply::kRejected:
      log::Warn("log chunk rejected; skipping it", {{"run", key.run}, {"shard", key.shard},
                                                     {"seq", seq}, {"error", Describe(r)}});
      [[fallthrough]];
    case Reply::kOk:
      if (reply == Reply::kOk) events_->Write("log_acked", {{"run", key.run}, {"shard", key.shard}, {"attempt", key.attempt}, {"seq", seq}, {"token", a.token}, {"bytes", static_cast<uint64_t>(a.head->data.size())}});
      backoff_.Reset();
      if (a.head_spooled) spool_->Pop(key, seq);
      a.head.reset();
      a.head_spooled = false;
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
    case Reply::kRetry:
      Pause();
      return;
  }
}

bool LogShipper::MaybeDrained(Attempt& a) {
  if (!a.finished || a.in_flight || a.head || !a.memory.empty() || spool_->Has(a.key)) {
    return false;
  }
  AttemptKey key = a.key;
  attempts_.erase(key);
  cb_.on_drained(key);
  return true;
}

void LogShipper::Pause() {
  if (!paused_) {
    paused_ = true;
    SpillAll();
  }
  if (retry_timer_.active()) return;
  retry_timer_.Once(static_cast<uint64_t>(backoff_.Next()), [this] {
    paused_ = false;
    ShipMore();
  });
}

void LogShipper::SpillAll() {
  for (auto& [key, a] : attempts_) Spill(a);
}

void LogShipper::Spill(Attempt& a) {
  if (a.head && !a.head_spooled && !spool_->Has(a.key)) {
    // The head goes first so that the spool keeps the order; it stays the head.
    SpoolChunk(a, *a.head);
    Result<std::optional<Chunk>> front = spool_->Front(a.key);
    a.head_spooled = front.ok() && front->has_value() && (*front)->seq == a.head->seq;
  }
  while (!a.memory.empty()) {
    Chunk c = std::move(a.memory.front());
    a.memory.pop_front();
    memory_bytes_ -= static_cast<int64_t>(c.data.size());
    c.seq = a.next_seq++;
    SpoolChunk(a, c);
  }
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
