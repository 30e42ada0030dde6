// ResultJournal keeps the results agentd has not reported yet in one append-only file,
// STATE_DIR/results/journal: a line "+<result JSON>" when a result is written or rewritten,
// "-<run> <shard> <attempt>" when it is settled. Appending costs a write; a file per result
// (create, rename, unlink) cost the file system an inode for every shard, which at a thousand
// shards a second was most of agentd's time.
//
// Nothing is lost to a crash of agentd: each record is one write(2), and Open skips a last line
// left without its newline by a writer killed mid-write. A write that fails (disk full) is cut
// off again, so the next record starts on a line of its own. Like the files before it, the
// journal is not fsync'd: a power loss may lose its tail. Open also takes the per-result files
// (r<run>-s<shard>-a<attempt>.json) an older agentd left, then rewrites the journal with what
// is still unreported and removes them; when it cannot (a full disk), it appends to the
// journal as it is. The journal is rewritten the same way (to a temporary file, renamed over
// it) once it holds four times more than is live and at least 1 MiB. A journal that cannot be
// read fails Open: it is never taken for an empty one.
//
// Loop thread only; owned by the RunReporter.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "assignment.h"
#include "base/status.h"

namespace jobctl::agentd {

// A journal's text as Open reads it (pure): the results still unreported, by key, their
// JSON as written, over `live` (what older result files said). Counts the lines that do not
// read (empty ones aside), and the bytes of a last line left without its newline.
struct JournalText {
  std::map<AttemptKey, std::string> live;
  size_t skipped = 0;
  size_t torn_bytes = 0;
};
JournalText ReadJournal(std::string_view text, std::map<AttemptKey, std::string> live = {});

class ResultJournal {
 public:
  static constexpr int64_t kMinRewriteBytes = 1 << 20;

  explicit ResultJournal(std::string dir);
  ~ResultJournal();
  ResultJournal(const ResultJournal&) = delete;
  ResultJournal& operator=(const ResultJournal&) = delete;

  // Creates the directory (0700) if need be, reads what a previous agentd left, rewrites the
  // journal with it (or, failing that, goes on with it as it is) and opens it for appending. The
  // unreported results: their JSON by key, each as ResultFromJson reads it (lines that do not read
  // are logged and skipped).
  Result<std::map<AttemptKey, std::string>> Open();
  // Writes or rewrites the result of `key`; `json` is one line (ResultToJson).
  Status Put(AttemptKey key, const std::string& json);
  // The result of `key` is settled: a restart must not report it.
  Status Remove(AttemptKey key);
  // Put or Remove left the journal mostly dead: the owner calls Rewrite with every live
  // result. After a rewrite that failed, not again before the journal grew by
  // kMinRewriteBytes more.
  bool WantsRewrite() const;
  Status Rewrite(const std::vector<std::pair<AttemptKey, const std::string*>>& live);

  const std::string& path() const { return path_; }
  int64_t bytes() const { return bytes_; }

 private:
  Status Append(std::string record);
  // Open's fallback when the journal cannot be rewritten: append to it as it is.
  Status AppendToExisting(const JournalText& read, size_t length);

  std::string dir_, path_;
  int fd_ = -1;
  int64_t bytes_ = 0;                    // the journal's length
  int64_t live_bytes_ = 0;               // of its "+" lines still live
  std::map<AttemptKey, int64_t> sizes_;  // each live result's line length
  bool newline_first_ = false;           // the journal ends in a line cut short
  int64_t retry_rewrite_at_ = 0;         // bytes_ before which a failed rewrite is not retried
  std::vector<std::string> old_files_;   // an older agentd's result files, until rewritten
};

}  // namespace jobctl::agentd
