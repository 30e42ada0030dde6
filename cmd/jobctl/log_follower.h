// LogFollower reads a run's output from the coordinator and writes it out as it was printed:
// stdout chunks to stdout, stderr chunks to stderr, byte for byte. When the run has several
// shards (or attempts), each line is prefixed with "[shard N host] " so they can be told
// apart. With follow on, it long-polls until the run has ended and everything was read.
// Written to a terminal, the output is sanitized first (base/terminal_text.h: escape
// sequences shown, not obeyed; colours dropped or kept as `sgr` says), unless `raw`; written
// to a pipe or a file it stays byte for byte what the job printed.
#pragma once

#include <unistd.h>

#include <atomic>
#include <map>
#include <string>

#include "base/clock.h"
#include "base/terminal_text.h"
#include "client.h"

namespace jobctl::cli {

struct FollowOptions {
  bool follow = false;
  std::optional<int> shard;
  std::string stream;  // "", "stdout" or "stderr"
  bool prefix = false;
  std::optional<WallTime> since;            // skip output received before this
  const std::atomic<bool>* stop = nullptr;  // set from a signal handler: return early
  SgrPolicy sgr = SgrPolicy::kDrop;         // on a terminal: the job's colour sequences
  bool raw = false;                         // on a terminal too, the bytes as printed
};

class LogFollower {
 public:
  LogFollower(Client* client, int64_t run, FollowOptions options)
      : client_(client), run_(run), options_(std::move(options)) {
    terminal_[1] = !options_.raw && isatty(1) != 0;
    terminal_[2] = !options_.raw && isatty(2) != 0;
  }
  // Returns when the run's output is exhausted (follow: and the run ended), or on error.
  Status Run();
  struct Read {
    bool done = false;  // the run ended and nothing more will come
    size_t chunks = 0;
  };
  Result<Read> ReadOnce(int wait_ms);
  // Why retention deleted the run's output ("logs_for 7d"), once a read found it gone; "" else.
  const std::string& pruned() const { return pruned_; }

 private:
  void Emit(const std::string& key, bool to_stderr, const std::string& prefix,
            const std::string& data);
  void FlushPartials();

  Client* client_;
  int64_t run_;
  FollowOptions options_;
  int64_t after_ = 0;
  std::string pruned_;
  // Partial lines per (shard, stream), held until their newline when prefixing.
  std::map<std::string, std::string> partial_;
  // Per (shard, stream) written to a terminal: sequences may be cut between chunks.
  std::map<std::string, TerminalSanitizer> sanitizers_;
  bool terminal_[3] = {false, false, false};  // by fd
};

}  // namespace jobctl::cli
