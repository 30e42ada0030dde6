#include "model/schedule.h"

#include <cctype>
#include <string>

#include "model/time_format.h"

namespace jobctl {
namespace {

constexpr int64_t kMinEvery = 1000;
// Segments that start before this are the zone's first (its begin is "forever ago").
constexpr int64_t kEarliest = -(int64_t{1} << 50);

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Splits "CRON_TZ=Zone rest" (also "TZ=Zone rest"); returns false when there is no prefix.
bool SplitZonePrefix(std::string_view text, std::string_view* zone, std::string_view* rest) {
  for (std::string_view prefix : {std::string_view("CRON_TZ="), std::string_view("TZ=")}) {
    if (text.substr(0, prefix.size()) == prefix) {
      std::string_view after = text.substr(prefix.size());
      size_t space = after.find_first_of(" \t");
      *zone = after.substr(0, space);
      *rest = space == std::string_view::npos ? std::string_view() : Trim(after.substr(space));
      return true;
    }
  }
  return false;
}

int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// "2026-12-01T03:00:00Z" or with an offset: that instant. "2026-12-01 03:00[:SS]" (or with a
// T): that local time in `zone`; a time repeated by a fall-back is its first pass, a time in
// a spring-forward gap is an error.
Result<int64_t> ParseAt(std::string_view arg, const Zone& zone) {
  if (arg.empty())
    return Status::InvalidArgument("@at needs an instant, e.g. @at 2026-12-01T03:00:00Z");
  if (Result<WallTime> exact = ParseInstant(arg); exact.ok()) return ToUnixMs(*exact);
  std::string local(arg);
  if (local.size() > 10 && local[10] == ' ') local[10] = 'T';
  if (local.size() == 16) local += ":00";  // no seconds
  Result<WallTime> as_utc = ParseInstant(local + "Z");
  if (local.size() != 19 || !as_utc.ok()) {
    return Status::InvalidArgument("@at: \"" + std::string(arg) +
                                   "\" is not an instant (expected 2026-12-01T03:00:00Z, an "
                                   "offset such as +01:00, or a local time 2026-12-01 03:00)");
  }
  const int64_t l = ToUnixMs(*as_utc) / 1000;  // the local time's fields, counted as UTC
  std::optional<int64_t> best;
  for (int64_t probe : {l - 86400, l + 86400}) {
    int64_t off = zone.OffsetAt(FromUnixMs(probe * 1000)).count();
    int64_t u = l - off;
    if (zone.OffsetAt(FromUnixMs(u * 1000)).count() + u == l && (!best || u < *best)) best = u;
  }
  if (!best) {
    return Status::InvalidArgument("@at: " + std::string(arg) + " does not happen in " +
                                   (zone.is_utc() ? std::string("UTC") : zone.name()) +
                                   " (the clocks skip it)");
  }
  return *best * 1000;
}

}  // namespace

bool IsFixedDelay(std::string_view expr) {
  std::string_view text = Trim(expr);
  if (std::string_view zone, rest; SplitZonePrefix(text, &zone, &rest)) text = rest;
  return Lower(text.substr(0, text.find_first_of(" \t"))) == "@delay";
}

std::optional<std::string_view> ExpandMacro(std::string_view macro) {
  std::string m = Lower(macro);
  if (m == "@yearly" || m == "@annually") return "0 0 1 1 *";
  if (m == "@monthly") return "0 0 1 * *";
  if (m == "@weekly") return "0 0 * * 0";
  if (m == "@daily" || m == "@midnight") return "0 0 * * *";
  if (m == "@hourly") return "0 * * * *";
  return std::nullopt;
}

Result<Schedule> Schedule::Parse(const ScheduleSpec& spec) {
  const std::string quoted = "schedule \"" + std::string(spec.expr) + "\"";
  auto fail = [&quoted](const Status& s) {
    return Status::InvalidArgument(quoted + ": " + s.message());
  };
  std::string_view text = Trim(spec.expr);
  std::string_view zone_name = spec.timezone;
  std::string_view zone_prefix;
  if (std::string_view rest; SplitZonePrefix(text, &zone_prefix, &rest)) {
    if (zone_prefix.empty()) return fail(Status::InvalidArgument("CRON_TZ= needs a zone name"));
    zone_name = zone_prefix;
    text = rest;
  }
  if (text.empty()) return fail(Status::InvalidArgument("empty schedule"));

  Schedule out;
  Result<const Zone*> zone = LookupZone(zone_name);
  if (!zone.ok()) return fail(zone.status());
  out.zone_ = *zone;

  CronOptions options{spec.dialect, spec.hash_key};
  if (text[0] == '@') {
    size_t space = text.find_first_of(" \t");
    std::string word = Lower(text.substr(0, space));
    std::string_view arg = space == std::string_view::npos ? "" : Trim(text.substr(space));
    if (word == "@every") {
      Result<Millis> period = ParseDuration(arg);
      if (!period.ok())
        return fail(Status::InvalidArgument("@every: " + period.status().message()));
      if (period->count() < kMinEvery) {
        return fail(Status::InvalidArgument("@every: the period must be at least 1s"));
      }
      out.rule_ = Every{*period, ToUnixMs(spec.anchor)};
      return out;
    }
    if (word == "@at") {
      Result<int64_t> at = ParseAt(arg, **zone);
      if (!at.ok()) return fail(at.status());
      out.rule_ = At{*at};
      return out;
    }
    if (word == "@delay") {
      Result<Millis> delay = ParseDuration(arg);
      if (!delay.ok()) return fail(Status::InvalidArgument("@delay: " + delay.status().message()));
      if (delay->count() < kMinEvery || *delay > kMaxDelay) {
        return fail(Status::InvalidArgument("@delay: the delay must be from 1s to 366d"));
      }
      out.rule_ = Delay{*delay};
      return out;
    }
    if (word == "@reboot") {
      return fail(Status::InvalidArgument(
          "@reboot is not supported: jobctl schedules by time (run it from a systemd unit)"));
    }
    std::optional<std::string_view> expansion = ExpandMacro(word);
    if (!expansion || !arg.empty()) {
      return fail(Status::InvalidArgument(
          "unknown macro \"" + word +
          "\" (expected @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or "
          "@every <duration>, @delay <duration> or @at <instant>)"));
    }
    text = *expansion;
    options.dialect = Dialect::kCron;
  }
  Result<CronExpr> cron = CronExpr::Parse(text, options);
  if (!cron.ok()) return fail(cron.status());
  // Reject what can never fire (Feb 30, a 5th Monday of February in a non-leap year only...).
  // 1970 is the earliest year a quartz year field accepts, so this is a pure check.
  if (!cron->NextAtOrAfter(0).has_value()) {
    return fail(Status::InvalidArgument("never fires (no date matches all its fields)"));
  }
  out.rule_ = std::move(*cron);
  return out;
}

std::optional<WallTime> Schedule::Next(WallTime after) const {
  if (const Every* every = std::get_if<Every>(&rule_)) {
    int64_t period = every->period.count();
    int64_t k = FloorDiv(ToUnixMs(after) - every->anchor_ms, period) + 1;
    // A period of centuries runs past the last representable instant: no next fire then.
    int64_t offset = 0, next = 0;
    if (__builtin_mul_overflow(k, period, &offset) ||
        __builtin_add_overflow(every->anchor_ms, offset, &next)) {
      return std::nullopt;
    }
    return FromUnixMs(next);
  }
  if (const At* at = std::get_if<At>(&rule_)) {
    if (ToUnixMs(after) < at->at_ms) return FromUnixMs(at->at_ms);
    return std::nullopt;
  }
  if (const Delay* delay = std::get_if<Delay>(&rule_)) {
    int64_t next = 0;
    if (__builtin_add_overflow(ToUnixMs(after), delay->delay.count(), &next)) return std::nullopt;
    return FromUnixMs(next);
  }
  return NextCron(std::get<CronExpr>(rule_), after);
}

std::optional<Millis> Schedule::delay() const {
  if (const Delay* d = std::get_if<Delay>(&rule_)) return d->delay;
  return std::nullopt;
}

std::optional<WallTime> Schedule::NextCron(const CronExpr& cron, WallTime after) const {
  // Fires are whole seconds; the first candidate is the second after `after`.
  int64_t t = FloorDiv(ToUnixMs(after), 1000) + 1;
  if (zone_->is_utc()) {
    std::optional<int64_t> c = cron.NextAtOrAfter(t);
    if (!c) return std::nullopt;
    return FromUnixMs(*c * 1000);
  }
  // Walk the zone's offset segments: inside one segment local time runs straight, so the
  // cron search is plain civil arithmetic; only a segment's start needs the DST rules.
  for (int guard = 0; guard < 4096; ++guard) {
    const Zone::Segment seg = zone_->SegmentAt(t);
    const int64_t first_local = seg.begin_s + seg.offset_s;  // local time at the segment's start
    int64_t local_start = t + seg.offset_s;
    if (!cron.wildcard() && seg.begin_s > kEarliest) {
      const Zone::Segment prev = zone_->SegmentAt(seg.begin_s - 1);
      if (prev.end_s == seg.begin_s && prev.offset_s > seg.offset_s) {
        // After a fall-back the local times up to the previous offset's end were already
        // passed once; a fixed-time job does not fire them again.
        local_start = std::max(local_start, seg.begin_s + prev.offset_s);
      } else if (prev.end_s == seg.begin_s && prev.offset_s < seg.offset_s && t == seg.begin_s) {
        // After a spring-forward the local times of the gap never happen; a fixed-time job
        // fires them at the segment's first instant. Only a search that reaches that instant
        // (t == begin) may return it, whether it began in the previous segment or at the gap.
        local_start = seg.begin_s + prev.offset_s;
      }
    }
    std::optional<int64_t> c = cron.NextAtOrAfter(local_start);
    if (!c) return std::nullopt;
    if (*c < first_local) return FromUnixMs(seg.begin_s * 1000);  // a time inside the gap
    int64_t u = *c - seg.offset_s;
    if (u < seg.end_s) return FromUnixMs(u * 1000);
    t = seg.end_s;
  }
  return std::nullopt;
}

}  // namespace jobctl
