// CronExpr is a parsed cron expression in either dialect, evaluated on local civil time
// (seconds counted as if the zone were UTC). It knows nothing of zones or DST: Schedule
// maps civil times to instants. Immutable after Parse; safe to share across threads.
//
// Dialects:
//   kCron   5 fields (min hour dom month dow) or 6 with seconds first; dow 0-7, 0 and 7 =
//           Sunday, and a dow range that ends on Sunday wraps ("sat-sun", "6-0" = 6-7);
//           cronie's day rule (dom OR dow when both are restricted, i.e. neither field
//           starts with '*' or is '?').
//   kQuartz 6 fields (seconds first) or 7 (plus year 1970-2199); dow 1-7 = SUN-SAT; exactly
//           one of dom and dow must be '?'.
// Both: names (JAN-DEC, SUN-SAT, any case), lists, ranges, steps ("*/7", "5-50/10",
// "5/10"), '?', L, L-n, nW, LW, nL (last weekday n), n#k (k-th weekday n), and Jenkins' H
// ("H", "H/15", "H(0-29)", "H(0-29)/10") hashed from CronOptions::hash_key.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace jobctl {

enum class Dialect { kCron, kQuartz };
std::string_view DialectName(Dialect d);
std::optional<Dialect> ParseDialect(std::string_view name);

struct CronOptions {
  Dialect dialect = Dialect::kCron;
  std::string_view hash_key;  // usually the job name; feeds H
};

class CronExpr {
 public:
  // Parses the fields only (no macros, no CRON_TZ: Schedule handles those). Errors read
  // "field 2 (hour): 25 is out of range 0-23".
  static Result<CronExpr> Parse(std::string_view expr, const CronOptions& options);

  // The first civil second >= t that matches, or nullopt if none within the search
  // horizon (a year field that has ended, or an expression that never matches). t and the
  // result are seconds since 1970-01-01T00:00:00 in local civil time.
  std::optional<int64_t> NextAtOrAfter(int64_t civil_s) const;

  // A wildcard job has a minute or hour field that begins with '*'; every other job is
  // fixed-time. The two follow different DST rules (see Schedule).
  bool wildcard() const { return wildcard_; }

 private:
  struct DaySpec {
    uint32_t dom = 0;              // bit d (1-31): day d
    uint32_t dom_before_last = 0;  // bit n: L-n (n = 0 is L)
    uint32_t dom_weekday = 0;      // bit d: nearest weekday to day d (dW)
    bool last_weekday = false;     // LW
    uint8_t dow = 0;               // bit w (0 = Sunday)
    uint8_t dow_last = 0;          // bit w: last weekday w of the month (wL)
    uint64_t dow_nth = 0;          // bit w*5+(k-1): k-th weekday w (w#k)
    bool dom_restricted = false;
    bool dow_restricted = false;
  };

  uint32_t DayMask(int year, unsigned month) const;  // bit d-1 for each matching day
  bool YearAllowed(int year) const;

  uint64_t seconds_ = 0;  // bit s
  uint64_t minutes_ = 0;  // bit m
  uint32_t hours_ = 0;    // bit h
  uint16_t months_ = 0;   // bit m (1-12)
  DaySpec days_;
  // Year bits for 1970..2199 (bit y-1970); only consulted when a year field was given.
  std::array<uint64_t, 4> years_{};
  bool has_years_ = false;
  bool wildcard_ = false;

  friend class CronParser;
};

}  // namespace jobctl
