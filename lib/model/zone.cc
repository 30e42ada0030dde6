#include "model/zone.h"

#include <date/tz.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>

namespace jobctl {
namespace {

constexpr int64_t kForever = std::numeric_limits<int64_t>::max() / 4;

// Zones are immutable and few; interning them keeps one copy per process. This is a cache of
// constants, not state: nothing ever changes an entry once made.
std::map<std::string, std::unique_ptr<Zone>, std::less<>>& Registry() {
  static std::map<std::string, std::unique_ptr<Zone>, std::less<>> zones;
  return zones;
}

bool IsUtcName(std::string_view name) {
  return name.empty() || name == "UTC" || name == "Etc/UTC" || name == "Z" || name == "GMT" ||
         name == "Etc/GMT" || name == "Etc/Universal" || name == "Universal" || name == "Zulu";
}

}  // namespace

// 2037-01-01T00:00:00Z: the tz files' explicit transitions stop during 2037.
constexpr int64_t kTableEnd = 2114380800;
// 28 Gregorian years (1901-2099) hold exactly 1461 weeks, so every weekday-based DST rule
// falls on the same dates 28 years apart.
constexpr int64_t kCycle = 10227LL * 86400;

Zone::Zone(std::string name, const date::time_zone* tz) : name_(std::move(name)), tz_(tz) {
  if (tz_ != nullptr) extrapolate_ = TableSegmentAt(kTableEnd).end_s < kForever;
}

Zone::Segment Zone::TableSegmentAt(int64_t unix_s) const {
  date::sys_info info = tz_->get_info(date::sys_seconds(std::chrono::seconds(unix_s)));
  auto clamp = [](int64_t v) { return std::max(-kForever, std::min(kForever, v)); };
  return {clamp(info.begin.time_since_epoch().count()), clamp(info.end.time_since_epoch().count()),
          info.offset.count()};
}

Zone::Segment Zone::SegmentAt(int64_t unix_s) const {
  if (tz_ == nullptr) return {-kForever, kForever, 0};
  if (!extrapolate_ || unix_s < kTableEnd) return TableSegmentAt(unix_s);
  int64_t k = (unix_s - (kTableEnd - kCycle)) / kCycle;
  Segment seg = TableSegmentAt(unix_s - k * kCycle);
  return {seg.begin_s + k * kCycle, seg.end_s + k * kCycle, seg.offset_s};
}

std::chrono::seconds Zone::OffsetAt(WallTime t) const {
  if (tz_ == nullptr) return std::chrono::seconds(0);
  auto secs = std::chrono::floor<std::chrono::seconds>(t.time_since_epoch()).count();
  return std::chrono::seconds(SegmentAt(secs).offset_s);
}

Result<const Zone*> LookupZone(std::string_view name) {
  auto& zones = Registry();
  std::string key = IsUtcName(name) ? std::string("UTC") : std::string(name);
  if (auto it = zones.find(key); it != zones.end()) return it->second.get();
  const date::time_zone* tz = nullptr;
  if (key != "UTC") {
    // The date library reports unknown zones by throwing; keep that inside this file.
    try {
      tz = date::locate_zone(key);
    } catch (const std::exception&) {
      return Status::InvalidArgument("unknown time zone \"" + key +
                                     "\" (expected an IANA name like \"Europe/Berlin\")");
    }
  }
  auto zone = std::unique_ptr<Zone>(new Zone(key, tz));
  const Zone* out = zone.get();
  zones.emplace(key, std::move(zone));
  return out;
}

Result<const Zone*> LocalZone() {
  if (const char* tz = std::getenv("TZ"); tz != nullptr && *tz != '\0') {
    std::string_view name(tz);
    if (name[0] == ':') name.remove_prefix(1);
    return LookupZone(name);
  }
  try {
    const date::time_zone* local = date::current_zone();
    return LookupZone(local->name());
  } catch (const std::exception&) {
    return LookupZone("UTC");
  }
}

}  // namespace jobctl
