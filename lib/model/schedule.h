// Schedule turns a job's schedule text into fire instants: cron expressions in a time zone,
// the @-macros, fixed-rate @every intervals, one-shot @at instants and fixed-delay @delay
// (the next run starts a delay after the previous one ended: Next(end) is end + delay; the
// scheduler calls it when a run ends). Immutable after Parse; Next() is a pure function of
// its argument, safe on any thread.
//
// DST follows cronie (Vixie cron). Wildcard jobs (minute or hour field starts with '*')
// fire at every real instant whose local time matches: local times skipped by a spring-
// forward gap do not happen, and times repeated by a fall-back fire in both passes.
// Fixed-time jobs fire once per matching local time: a time inside a gap fires once at the
// first instant after the gap (several such times merge into that one fire), and a
// repeated time fires in the first pass only.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "base/clock.h"
#include "base/duration.h"
#include "base/status.h"
#include "model/cron.h"
#include "model/zone.h"

namespace jobctl {

struct ScheduleSpec {
  // "15 2 * * *", "@daily", "@every 90s", "CRON_TZ=Asia/Tokyo 0 9 * * *",
  // "@at 2026-12-01T03:00:00Z", "@at 2026-12-01 03:00" (in the zone), "@delay 10m"
  std::string_view expr = {};
  Dialect dialect = Dialect::kCron;
  std::string_view timezone = {};  // IANA zone; "" = UTC. A CRON_TZ= prefix overrides it.
  std::string_view hash_key = {};  // the job name, for H
  WallTime anchor{};               // @every fires at anchor + k * period (default: the epoch)
};

class Schedule {
 public:
  // Errors read: schedule "0 25 * * *": field 2 (hour): 25 is out of range 0-23
  static Result<Schedule> Parse(const ScheduleSpec& spec);

  // The first fire instant strictly after `after`, or nullopt when the schedule has ended
  // (a quartz year field in the past). Never scans minute by minute.
  std::optional<WallTime> Next(WallTime after) const;

  enum class Kind { kCron, kEvery, kAt, kDelay };
  Kind kind() const { return static_cast<Kind>(rule_.index()); }

  const Zone& zone() const { return *zone_; }
  bool is_every() const { return kind() == Kind::kEvery; }
  // @delay: the time from a run's end to the next fire.
  std::optional<Millis> delay() const;

 private:
  struct Every {
    Millis period;
    int64_t anchor_ms;
  };
  struct At {
    int64_t at_ms;
  };
  struct Delay {
    Millis delay;
  };
  std::optional<WallTime> NextCron(const CronExpr& cron, WallTime after) const;

  std::variant<CronExpr, Every, At, Delay> rule_;
  const Zone* zone_ = nullptr;
};

// The longest @delay: a year.
constexpr Millis kMaxDelay = std::chrono::hours(24 * 366);

// Whether the schedule text is a fixed delay (@delay), without compiling it: a run's end
// decides its next fire.
bool IsFixedDelay(std::string_view expr);

// The macro's 5-field expansion ("@daily" -> "0 0 * * *"), or nullopt for unknown names.
std::optional<std::string_view> ExpandMacro(std::string_view macro);

}  // namespace jobctl
