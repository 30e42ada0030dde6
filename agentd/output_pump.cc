#include "output_pump.h"

#include <algorithm>
#include <utility>

namespace jobctl::agentd {

OutputPump::OutputPump(uv_loop_t* loop, const Clock* clock, Sink sink)
    : clock_(clock), sink_(std::move(sink)), timer_(loop) {}

void OutputPump::Append(ChunkStream stream, std::string_view data) {
  int64_t now = ToUnixMs(clock_->Now());
  std::vector<Chunk> done = chunker_.Append(stream, data, now);
  bool new_chunk = !done.empty();
  for (Chunk& c : done) sink_(std::move(c));
  if (chunker_.empty()) {
    timer_.Stop();
  } else if (new_chunk || !timer_.active()) {
    // Armed when a chunk starts, so a steady trickle is still sent every 200 ms.
    int64_t due = chunker_.started_ms() + Chunker::kMaxDelayMs - now;
    timer_.Once(static_cast<uint64_t>(std::max<int64_t>(due, 0)), [this] { OnTimer(); });
  }
}

void OutputPump::OnTimer() {
  if (std::optional<Chunk> c = chunker_.Flush()) sink_(std::move(*c));
}

void OutputPump::Finish() {
  timer_.Stop();
  if (std::optional<Chunk> c = chunker_.Flush()) sink_(std::move(*c));
}

}  // namespace jobctl::agentd
