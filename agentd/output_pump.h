// OutputPump turns what a shard writes on its pipes into log chunks, with a Chunker for the
// size rule and a uvx::Timer for the 200 ms rule, and hands each chunk to a sink (the LogShipper)
// as soon as it is cut. One per running shard; loop thread only.
#pragma once

#include <uv.h>

#include <functional>
#include <string_view>

#include "base/clock.h"
#include "chunker.h"
#include "uvx/handles.h"

namespace jobctl::agentd {

class OutputPump {
 public:
  using Sink = std::function<void(Chunk)>;
  OutputPump(uv_loop_t* loop, const Clock* clock, Sink sink);

  void Append(ChunkStream stream, std::string_view data);
  // The output ended: hands over the last partial chunk and stops the timer.
  void Finish();

 private:
  void OnTimer();
  const Clock* clock_;
  Sink sink_;
  Chunker chunker_;
  uvx::Timer timer_;
};

}  // namespace jobctl::agentd
