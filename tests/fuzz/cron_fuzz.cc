// libFuzzer target: any text through Schedule::Parse in both dialects, and for whatever
// parses, a few Next() calls that must move strictly forward, and the text-only test for a
// fixed delay must agree with the parser.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "model/schedule.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (jobctl::Dialect d : {jobctl::Dialect::kCron, jobctl::Dialect::kQuartz}) {
    for (const char* zone : {"UTC", "America/New_York", "Australia/Lord_Howe"}) {
      jobctl::Result<jobctl::Schedule> s = jobctl::Schedule::Parse({text, d, zone, "fuzz"});
      if (!s.ok()) continue;
      // The coordinator tells fixed-delay jobs by their text alone: it must agree with Parse.
      if (jobctl::IsFixedDelay(text) != (s->kind() == jobctl::Schedule::Kind::kDelay)) std::abort();
      jobctl::WallTime t = jobctl::FromUnixMs(1'700'000'000'000);
      for (int i = 0; i < 8; ++i) {
        std::optional<jobctl::WallTime> n = s->Next(t);
        if (!n) break;
        if (*n <= t) std::abort();  // Next must be strictly after its argument.
        t = *n;
      }
    }
  }
  return 0;
}
