// Chunker cuts a shard's stdout and stderr into log chunks: a chunk holds bytes of one stream,
// as they came (binary-safe), and is cut at 64 KiB or once its first byte is 200 ms old,
// whichever comes first. Bytes of the other stream end the current chunk, so the order in
// which the two streams were read is kept. The time rule needs a timer: OutputPump owns one.
// Pure; loop thread (not thread-safe).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jobctl::agentd {

enum class ChunkStream { kStdout, kStderr, kMarker };
std::string_view ChunkStreamName(ChunkStream s);

struct Chunk {
  ChunkStream stream = ChunkStream::kStdout;
  int64_t at_ms = 0;  // unix ms of the chunk's first byte
  std::string data;
  int64_t seq = 0;  // 0 until the LogShipper numbers it (from 1 per attempt)
};

class Chunker {
 public:
  static constexpr size_t kMaxBytes = 64 * 1024;
  static constexpr int64_t kMaxDelayMs = 200;

  // Takes bytes read at `now_ms`; returns the chunks completed by them, oldest first.
  std::vector<Chunk> Append(ChunkStream stream, std::string_view data, int64_t now_ms);
  // The chunk being filled, if any (at the 200 ms mark, and when the output ends).
  std::optional<Chunk> Flush();

  bool empty() const { return !current_.has_value(); }
  // When the chunk being filled got its first byte (unix ms); only when !empty().
  int64_t started_ms() const { return current_->at_ms; }

 private:
  std::optional<Chunk> current_;
};

}  // namespace jobctl::agentd
