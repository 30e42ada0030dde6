#include "model/misfire.h"

#include <algorithm>

namespace jobctl {

MisfireDecision DecideMisfire(Misfire policy, int misfire_cap, const DueInstants& due,
                              int64_t now_ms, int64_t grace_ms) {
  const std::vector<int64_t>& instants = due.listed;
  auto first_on_time = std::find_if(instants.begin(), instants.end(),
                                    [&](int64_t i) { return now_ms - i <= grace_ms; });
  MisfireDecision d;
  d.missed.assign(instants.begin(), first_on_time);
  std::vector<int64_t> on_time(first_on_time, instants.end());
  d.extra_missed = due.extra;
  if (due.extra > 0) {
    // Everything counted but not listed is missed too (it is older than `now - grace`
    // only if the listed ones are; treat it as missed regardless: it is a huge backlog).
    d.missed.insert(d.missed.end(), on_time.begin(), on_time.end());
    on_time.clear();
  }
  d.fire = std::move(on_time);
  if (d.missed.empty() && d.extra_missed == 0) return d;
  switch (policy) {
    case Misfire::kFireOnce:
      if (d.fire.empty() && !d.missed.empty()) {
        d.fire.push_back(d.missed.back());
        d.missed.pop_back();
      }
      d.reason = "misfire=fire-once: folded into one run";
      break;
    case Misfire::kSkip: d.reason = "misfire=skip"; break;
    case Misfire::kFireAll: {
      size_t n = std::min(d.missed.size(), static_cast<size_t>(std::max(misfire_cap, 0)));
      d.fire.insert(d.fire.begin(), d.missed.begin(), d.missed.begin() + static_cast<long>(n));
      d.missed.erase(d.missed.begin(), d.missed.begin() + static_cast<long>(n));
      d.reason = "misfire=fire-all: over misfire_cap";
      break;
    }
  }
  // Fire-once folding a lone missed instant, or fire-all within its cap: nothing is missed.
  if (d.missed.empty() && d.extra_missed == 0) d.reason = nullptr;
  return d;
}

}  // namespace jobctl
