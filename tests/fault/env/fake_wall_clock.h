// FakeWallClock moves one daemon's wall clock with Debian's libfaketime, leaving its
// monotonic and boot-time clocks real: the daemon is started with launch() (LD_PRELOAD of
// libfaketime, FAKETIME_TIMESTAMP_FILE pointing at a file of the test's, FAKETIME_NO_CACHE=1
// so every clock read sees the file as it is now, FAKETIME_DONT_FAKE_MONOTONIC=1), and
// Jump() rewrites the file: "+0", "+3600", "-3600" are offsets from the real time.
//
// Sanitized builds: the ASan runtime must come first among the loaded libraries, and
// libfaketime preloaded ahead of it breaks that check, so launch() preloads the very libasan
// the binary links (found with ldd) before libfaketime. Test thread only.
#pragma once

#include <string>

#include "testlib/cluster.h"

namespace jobctl::testing {

class FakeWallClock {
 public:
  // Why libfaketime cannot be used here ("" when it can).
  static std::string Unavailable();

  // `file` is where the offset is kept; `binary` is the daemon that will be started (its ASan
  // runtime, if any, is preloaded first).
  FakeWallClock(std::string file, const std::string& binary);
  Launch launch() const { return launch_; }
  // Sets the offset from the real wall clock, in seconds; takes effect at the next clock read.
  void Jump(long offset_seconds);

 private:
  std::string file_;
  Launch launch_;
};

}  // namespace jobctl::testing
