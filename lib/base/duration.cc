#include "base/duration.h"

#include <cstdint>
#include <limits>

namespace jobctl {
namespace {

struct Unit {
  std::string_view name;
  int64_t ms;
};
// Longest names first so "ms" is not read as "m" followed by garbage.
constexpr Unit kUnits[] = {
    {"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}, {"d", 86'400'000}};

Status Expected(std::string_view text) {
  return Status::InvalidArgument(
      "expected a duration like \"90s\" or \"1h30m\" (units ms, s, m, "
      "h, d), got \"" +
      std::string(text) + "\"");
}

}  // namespace

Result<Millis> ParseDuration(std::string_view text) {
  if (text.empty()) return Expected(text);
  int64_t total = 0;
  int64_t last_unit = std::numeric_limits<int64_t>::max();
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] < '0' || text[i] > '9') return Expected(text);
    int64_t n = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (n > std::numeric_limits<int64_t>::max() / 10 - 10) return Expected(text);
      n = n * 10 + (text[i] - '0');
      ++i;
    }
    const Unit* unit = nullptr;
    for (const Unit& u : kUnits) {
      if (text.substr(i, u.name.size()) == u.name) {
        unit = &u;
        break;
      }
    }
    if (unit == nullptr) return Expected(text);
    // Units must shrink from left to right: "1h30m", never "30m1h" or "1m1m".
    if (unit->ms >= last_unit) return Expected(text);
    last_unit = unit->ms;
    i += unit->name.size();
    if (n > (std::numeric_limits<int64_t>::max() - total) / unit->ms) return Expected(text);
    total += n * unit->ms;
  }
  return Millis(total);
}

std::string FormatDuration(Millis d) {
  int64_t ms = d.count();
  if (ms == 0) return "0s";
  std::string out;
  if (ms < 0) {
    out = "-";
    ms = -ms;
  }
  for (int k = 4; k >= 0; --k) {
    const Unit& u = kUnits[k];
    if (ms >= u.ms) {
      out += std::to_string(ms / u.ms);
      out += u.name;
      ms %= u.ms;
    }
  }
  return out;
}

}  // namespace jobctl
