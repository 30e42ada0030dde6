#include "fault/env/fake_wall_clock.h"

#include <unistd.h>

#include <fstream>
#include <stdexcept>

#include "testlib/subprocess.h"

namespace jobctl::testing {
namespace {

constexpr const char* kLibFaketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

// The sanitizer runtime `binary` links, from ldd ("libasan.so.8 => /usr/lib/.../libasan.so.8").
std::string AsanRuntimeOf(const std::string& binary) {
  ProcessResult r = Run({"/usr/bin/ldd", binary});
  size_t at = r.out.find("libasan.so");
  if (at == std::string::npos) return "";
  size_t arrow = r.out.find("=> ", at);
  size_t end = r.out.find(' ', arrow + 3);
  return r.out.substr(arrow + 3, end - arrow - 3);
}

}  // namespace

std::string FakeWallClock::Unavailable() {
  if (::access(kLibFaketime, R_OK) != 0) return "needs libfaketime (Debian package faketime)";
  return "";
}

FakeWallClock::FakeWallClock(std::string file, const std::string& binary) : file_(std::move(file)) {
  Jump(0);
  std::string preload = kLibFaketime;
  if (std::string asan = AsanRuntimeOf(binary); !asan.empty()) preload = asan + ":" + preload;
  launch_.env = {{"LD_PRELOAD", preload},
                 {"FAKETIME_TIMESTAMP_FILE", file_},
                 {"FAKETIME_NO_CACHE", "1"},
                 {"FAKETIME_DONT_FAKE_MONOTONIC", "1"}};
}

void FakeWallClock::Jump(long offset_seconds) {
  // Written to a new file and renamed over the old one, so a reader never sees half of it.
  std::string tmp = file_ + ".new";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << (offset_seconds >= 0 ? "+" : "") << offset_seconds << "\n";
    if (!out) throw std::runtime_error("cannot write " + tmp);
  }
  if (::rename(tmp.c_str(), file_.c_str()) != 0) throw std::runtime_error("cannot rename " + tmp);
}

}  // namespace jobctl::testing
