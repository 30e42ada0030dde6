// Test helper: the next fires of a schedule as ISO-8601 text in its zone, the same text
// `jobctl schedule next` prints. Shared by the schedule tests.
#pragma once

#include <string>
#include <vector>

#include "model/schedule.h"
#include "model/time_format.h"

namespace jobctl::testing {

struct NextQuery {
  std::string expr = {};
  std::string from = {};  // RFC 3339
  std::string zone = {};
  int count = 5;
  Dialect dialect = Dialect::kCron;
  std::string name = {};
};

// Returns the fires, or a single string "error: <message>" when parsing fails.
inline std::vector<std::string> NextFires(const NextQuery& q) {
  Result<Schedule> s = Schedule::Parse({q.expr, q.dialect, q.zone, q.name});
  if (!s.ok()) return {"error: " + s.status().message()};
  Result<WallTime> from = ParseInstant(q.from);
  if (!from.ok()) return {"error: " + from.status().message()};
  std::vector<std::string> out;
  WallTime t = *from;
  for (int i = 0; i < q.count; ++i) {
    std::optional<WallTime> n = s->Next(t);
    if (!n) break;
    out.push_back(*FormatInZone(*n, s->zone().name()));
    t = *n;
  }
  return out;
}

}  // namespace jobctl::testing
