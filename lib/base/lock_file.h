// LockFile is one process's exclusive claim on something on disk (the coordinator's data
// directory): an flock(2) taken without waiting on a file, with the holder's pid written in
// it for whoever is refused. The claim lasts as long as the LockFile (its descriptor), and
// the kernel drops it when the process dies, kill -9 included: a lock file left behind never
// needs cleaning up, and the pid in it means nothing unless the lock is held. The descriptor
// is close-on-exec, so no child keeps the claim alive. An flock is advisory and local: it
// binds only processes that take it, on one host (NFS may not honour it). Any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "base/status.h"

namespace jobctl {

class LockFile {
 public:
  // Creates `path` (mode 0600) if missing, locks it and writes this process's pid in it.
  // kConflict when another open file holds the lock (another process, or this one through
  // another LockFile); kIo when the file cannot be opened or locked.
  static Result<LockFile> Acquire(const std::string& path);

  // The pid written in `path` by its holder; nullopt when the file is missing, empty or
  // holds no number (its holder may not have written it yet).
  static std::optional<int64_t> ReadHolder(const std::string& path);

  LockFile(LockFile&& other) noexcept;
  LockFile& operator=(LockFile&& other) noexcept;
  LockFile(const LockFile&) = delete;
  LockFile& operator=(const LockFile&) = delete;
  ~LockFile();  // releases the lock; the file stays

  const std::string& path() const { return path_; }

 private:
  LockFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_ = -1;
};

}  // namespace jobctl
