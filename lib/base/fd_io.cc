#include "fd_io.h"

#include <unistd.h>

#include <cerrno>

namespace jobctl {

int ReadToEnd(int fd, std::string* out, size_t max_bytes) {
  char buf[65536];
  while (out->size() <= max_bytes) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  return 0;
}

int WriteToEnd(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return 0;
}

}  // namespace jobctl
