#include "base/lock_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace jobctl {

Result<LockFile> LockFile::Acquire(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Io("cannot open " + path + ": " + std::strerror(errno));
  // Non-blocking: a second claimant is told at once who holds it, rather than waiting
  // for the holder to die.
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) return Status::Conflict(path + " is locked by another process");
    return Status::Io("cannot lock " + path + ": " + std::strerror(err));
  }
  // The pid goes over the start of the file before the rest is cut, so a reader sees the old
  // holder's pid or ours, never an empty file between the two.
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size()) ||
      ::ftruncate(fd, static_cast<off_t>(pid.size())) != 0) {
    int err = errno;
    ::close(fd);
    return Status::Io("cannot write " + path + ": " + std::strerror(err));
  }
  return LockFile(path, fd);
}

std::optional<int64_t> LockFile::ReadHolder(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char buf[32] = {};
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return std::nullopt;
  char* end = nullptr;
  long long pid = std::strtoll(buf, &end, 10);
  if (end == buf || pid <= 0 || (*end != '\n' && *end != '\0')) return std::nullopt;
  return static_cast<int64_t>(pid);
}

LockFile::LockFile(LockFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)) {}

LockFile& LockFile::operator=(LockFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

// Closing the last descriptor of the open file releases the flock. The file is not removed:
// unlinking it would let a newcomer lock a fresh file while a late claimant still holds the
// old one open, and both would believe they hold the directory.
LockFile::~LockFile() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace jobctl
