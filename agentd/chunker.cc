#include "chunker.h"

#include <algorithm>
#include <utility>

namespace jobctl::agentd {

std::string_view ChunkStreamName(ChunkStream s) {
  switch (s) {
    case ChunkStream::kStdout: return "stdout";
    case ChunkStream::kStderr: return "stderr";
    case ChunkStream::kMarker: return "marker";
  }
  return "stdout";
}

std::vector<Chunk> Chunker::Append(ChunkStream stream, std::string_view data, int64_t now_ms) {
  std::vector<Chunk> done;
  if (current_ && current_->stream != stream)
    done.push_back(*std::exchange(current_, std::nullopt));
  while (!data.empty()) {
    if (!current_) {
      current_ = Chunk{stream, now_ms, {}, 0};
      current_->data.reserve(std::min(kMaxBytes, std::max<size_t>(data.size(), 4096)));
    }
    size_t take = std::min(kMaxBytes - current_->data.size(), data.size());
    current_->data.append(data.substr(0, take));
    data.remove_prefix(take);
    if (current_->data.size() == kMaxBytes) done.push_back(*std::exchange(current_, std::nullopt));
  }
  return done;
}

std::optional<Chunk> Chunker::Flush() { return std::exchange(current_, std::nullopt); }

}  // namespace jobctl::agentd
