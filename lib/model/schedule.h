// Schedule turns a job's schedule text into fire instants: cron expressions in a time zone,
// the @-macros, and fixed-rate @every intervals. Immutable after Parse; Next() is a pure
// function of its argument, safe on any thread.
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
  std::string_view expr = {};      // "15 2 * * *", "@daily", "@every 90s", "CRON_TZ=Asia/Tokyo 0 9 * * *"
  Dialect dialect = Dialect::kCron;
  std::string_view timezone = {};  // IANA zone; "" = UTC. A CRON_TZ= prefix overrides it.
  std::string_view hash_key = {};  // the job name, for H
  WallTime anchor{};              // @every fires at anchor + k * period (default: the epoch)
};

class Schedule {
 public:
  // Errors read: schedule "0 25 * * *": field 2 (hour): 25 is out of range 0-23
  static Result<Schedule> Parse(const ScheduleSpec& spec);

  // The first fire instant strictly after `after`, or nullopt when the schedule has ended
  // (a quartz year field in the past). Never scans minute by minute.
  std::optional<WallTime> Next(WallTime after) const;

  const Zone& zone() const { return *zone_; }
  bool is_every() const { return std::holds_alternative<Every>(rule_); }

 private:
  struct Every {
    Millis period;
    int64_t anchor_ms;
  };
  std::optional<WallTime> NextCron(const CronExpr& cron, WallTime after) const;

  std::variant<CronExpr, Every> rule_;
  const Zone* zone_ = nullptr;
};

// The macro's 5-field expansion ("@daily" -> "0 0 * * *"), or nullopt for unknown names.
std::optional<std::string_view> ExpandMacro(std::string_view macro);

}  // namespace jobctl
