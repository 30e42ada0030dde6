// Zone is an IANA time zone as the schedule engine needs it: the UTC offset in force at an
// instant and the span of instants over which that offset holds (a "segment" between two
// transitions). UTC takes a fast path with no table lookups. Past 2037, where the OS tz
// files stop listing transitions, a zone that still observes DST repeats the rules of 28
// years earlier (the calendar's weekday and leap-year cycle), as its current rules would.
//
// Zones are looked up once and live for the whole process (the OS tz database is read on
// first use); the pointers LookupZone returns stay valid forever. Lookups are not
// thread-safe; every daemon has one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/status.h"

namespace date {
class time_zone;
}

namespace jobctl {

class Zone {
 public:
  // Instants are unix seconds; [begin_s, end_s) is the span over which offset_s holds.
  struct Segment {
    int64_t begin_s;
    int64_t end_s;
    int64_t offset_s;  // local = utc + offset_s
  };

  const std::string& name() const { return name_; }
  bool is_utc() const { return tz_ == nullptr; }
  Segment SegmentAt(int64_t unix_s) const;
  std::chrono::seconds OffsetAt(WallTime t) const;

 private:
  friend Result<const Zone*> LookupZone(std::string_view name);
  friend Result<const Zone*> LocalZone();
  Zone(std::string name, const date::time_zone* tz);
  Segment TableSegmentAt(int64_t unix_s) const;
  std::string name_;
  const date::time_zone* tz_;  // nullptr for UTC
  // The OS tz files list transitions up to 2037 only; for later instants a zone that still
  // observes DST then repeats its rules (see SegmentAt).
  bool extrapolate_ = false;
};

// "" and "UTC" (also "Etc/UTC", "Z") give the UTC zone. Unknown names -> kInvalidArgument
// with a message that names the zone.
Result<const Zone*> LookupZone(std::string_view name);
// The machine's zone: $TZ if set, else /etc/localtime.
Result<const Zone*> LocalZone();

}  // namespace jobctl
