#include "base/event_log.h"

#include <fcntl.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/log.h"

namespace jobctl {

void AppendJsonString(std::string* out, std::string_view s) {
  static const char* kHex = "0123456789abcdef";
  out->push_back('"');
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\t': *out += "\\t"; break;
      case '\r': *out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          *out += "\\u00";
          out->push_back(kHex[c >> 4]);
          out->push_back(kHex[c & 15]);
        } else {
          out->push_back(ch);
        }
    }
  }
  out->push_back('"');
}

namespace {

void AppendField(std::string* out, const EventField& f) {
  AppendJsonString(out, f.key);
  out->push_back(':');
  if (f.is_text) {
    AppendJsonString(out, f.text);
  } else if (f.is_bool) {
    *out += f.number != 0 ? "true" : "false";
  } else {
    *out += std::to_string(f.number);
  }
}

}  // namespace

int64_t MonotonicNs() {
  struct timespec ts {};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

EventLog::~EventLog() {
  if (fd_ >= 0) ::close(fd_);
}

Status EventLog::Open(const std::string& path, std::string_view src, EventFields fixed) {
  if (path.empty()) return Status::Ok();
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Io("cannot open event log " + path + ": " + std::strerror(errno));
  // A writer killed in the middle of a line (SIGKILL can cut a write short at a page boundary)
  // left it without its newline: end it, so that this process's lines start on their own.
  // Every writer holds the file's lock while it appends, so a line another live process is
  // still appending (its write extends the file page by page) is never taken for a torn one;
  // a killed writer's lock goes with its descriptor.
  ::flock(fd, LOCK_EX);
  char last = '\n';
  off_t size = ::lseek(fd, 0, SEEK_END);
  if (size > 0 && ::pread(fd, &last, 1, size - 1) == 1 && last != '\n') {
    if (::write(fd, "\n", 1) != 1)
      log::Warn("cannot end a torn line of the event log", {{"file", path}});
  }
  ::flock(fd, LOCK_UN);
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
  prefix_ = "{\"src\":";
  AppendJsonString(&prefix_, src);
  prefix_ += ",\"pid\":" + std::to_string(::getpid()) + ",";
  for (const EventField& f : fixed) {
    AppendField(&prefix_, f);
    prefix_.push_back(',');
  }
  return Status::Ok();
}

std::string EventLog::Render(std::string_view ev, EventFields fields) const {
  std::string out = "\"ev\":";
  AppendJsonString(&out, ev);
  for (const EventField& f : fields) {
    out.push_back(',');
    AppendField(&out, f);
  }
  return out;
}

void EventLog::WriteRendered(std::string_view rendered) const {
  if (fd_ < 0) return;
  struct timespec wall {};
  clock_gettime(CLOCK_REALTIME, &wall);
  int64_t wall_ms = static_cast<int64_t>(wall.tv_sec) * 1000 + wall.tv_nsec / 1'000'000;
  std::string line = prefix_;
  line.reserve(prefix_.size() + rendered.size() + 64);
  line += "\"mono_ns\":" + std::to_string(MonotonicNs()) +
          ",\"wall_ms\":" + std::to_string(wall_ms) + ",";
  line += rendered;
  line += "}\n";
  // One write: O_APPEND makes it one atomic append of the whole line; the lock keeps a process
  // that opens the file meanwhile from judging the line torn (see Open).
  ::flock(fd_, LOCK_EX);
  ssize_t n = ::write(fd_, line.data(), line.size());
  ::flock(fd_, LOCK_UN);
  if (n != static_cast<ssize_t>(line.size()) && !warned_) {
    warned_ = true;
    log::Warn("cannot write the event log",
              {{"error", n < 0 ? std::strerror(errno) : "short write"}});
  }
}

}  // namespace jobctl
