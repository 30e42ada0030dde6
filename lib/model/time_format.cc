#include "model/time_format.h"

#include <date/date.h>
#include <date/tz.h>
#include <fmt/format.h>

#include <cstdlib>

#include "model/zone.h"

namespace jobctl {
namespace {

// UTC itself is written with "Z"; a zone that happens to be at +00:00 keeps its offset.
std::string FormatWithOffset(WallTime t, std::chrono::seconds offset, bool utc) {
  auto local = date::local_time<std::chrono::milliseconds>(t.time_since_epoch() + offset);
  auto day = date::floor<date::days>(local);
  date::year_month_day ymd(day);
  date::hh_mm_ss<std::chrono::milliseconds> hms(local - day);
  std::string out = fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", int(ymd.year()),
                                unsigned(ymd.month()), unsigned(ymd.day()), hms.hours().count(),
                                hms.minutes().count(), hms.seconds().count());
  if (hms.subseconds().count() != 0) out += fmt::format(".{:03}", hms.subseconds().count());
  if (utc) return out + "Z";
  int64_t off = offset.count();
  char sign = off < 0 ? '-' : '+';
  if (off < 0) off = -off;
  return out + fmt::format("{}{:02}:{:02}", sign, off / 3600, (off % 3600) / 60);
}

}  // namespace

std::string FormatUtc(WallTime t) { return FormatWithOffset(t, std::chrono::seconds(0), true); }

Result<std::string> FormatInZone(WallTime t, std::string_view zone) {
  Result<const Zone*> z = LookupZone(zone);
  if (!z.ok()) return z.status();
  return FormatWithOffset(t, (*z)->OffsetAt(t), (*z)->is_utc());
}

std::string FormatLocal(WallTime t) {
  Result<const Zone*> z = LocalZone();
  if (!z.ok()) return FormatUtc(t);
  return FormatWithOffset(t, (*z)->OffsetAt(t), (*z)->is_utc());
}

Result<WallTime> ParseInstant(std::string_view text) {
  auto bad = [&] {
    return Status::InvalidArgument(
        "expected an instant like 2024-03-10T07:00:00Z or "
        "2024-03-10T02:00:00-05:00, got \"" +
        std::string(text) + "\"");
  };
  if (!text.empty() && text[0] == '@') {
    char* end = nullptr;
    std::string digits(text.substr(1));
    long long secs = std::strtoll(digits.c_str(), &end, 10);
    if (digits.empty() || *end != '\0') return bad();
    return FromUnixMs(secs * 1000);
  }
  int y, mo, d, h, mi, s;
  int consumed = 0;
  std::string str(text);
  if (std::sscanf(str.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &consumed) !=
          6 ||
      consumed != 19) {
    return bad();
  }
  std::string_view rest = text.substr(19);
  int64_t ms = 0;
  if (!rest.empty() && rest[0] == '.') {
    size_t i = 1;
    int64_t scale = 100;
    while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9') {
      ms += (rest[i] - '0') * scale;
      scale /= 10;
      ++i;
    }
    if (i == 1) return bad();
    rest = rest.substr(i);
  }
  int64_t offset_s = 0;
  if (rest == "Z" || rest == "z") {
    offset_s = 0;
  } else if (rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':') {
    int oh = 0, om = 0;
    if (std::sscanf(std::string(rest.substr(1)).c_str(), "%2d:%2d", &oh, &om) != 2) return bad();
    offset_s = (oh * 3600 + om * 60) * (rest[0] == '-' ? -1 : 1);
  } else {
    return bad();
  }
  date::year_month_day ymd{date::year(y), date::month(unsigned(mo)), date::day(unsigned(d))};
  if (!ymd.ok() || h > 23 || mi > 59 || s > 60) return bad();
  auto secs = date::sys_days(ymd).time_since_epoch() + std::chrono::hours(h) +
              std::chrono::minutes(mi) + std::chrono::seconds(s) - std::chrono::seconds(offset_s);
  return WallTime(std::chrono::duration_cast<std::chrono::milliseconds>(secs) +
                  std::chrono::milliseconds(ms));
}

std::string RelativeHint(WallTime t, WallTime now) {
  int64_t diff = (t - now).count() / 1000;
  bool future = diff > 0;
  int64_t a = future ? diff : -diff;
  if (a < 1) return "now";
  std::string amount;
  if (a < 60) {
    amount = fmt::format("{}s", a);
  } else if (a < 3600) {
    amount = fmt::format("{}m", a / 60);
  } else if (a < 86400) {
    amount = fmt::format("{}h", a / 3600);
  } else {
    amount = fmt::format("{}d", a / 86400);
  }
  return future ? "in " + amount : amount + " ago";
}

}  // namespace jobctl
