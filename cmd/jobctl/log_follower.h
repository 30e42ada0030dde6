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
  // Each line prefixed with "[label] " ("[label shard N] " past shard 0 or attempt 1): a flow
  // step's name (FlowFollower). Implies prefix.
  std::string label;
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
  // Writes out what is held back (a last line without its newline).
  void FlushPartials();

 private:
  void Emit(const std::string& key, bool to_stderr, const std::string& prefix,
            const std::string& data);

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

// FlowFollower writes out the output of each step of a flow run as LogFollower does, each line
// prefixed with its step's name, the steps in the order they started; with follow on, until
// the flow run has ended and every step's output was read.
class FlowFollower {
 public:
  FlowFollower(Client* client, int64_t flow_run, FollowOptions options)
      : client_(client), run_(flow_run), options_(std::move(options)) {}
  Status Run();

 private:
  Client* client_;
  int64_t run_;
  FollowOptions options_;
};

}  // namespace jobctl::cli
