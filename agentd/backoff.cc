#include "backoff.h"

#include <algorithm>
#include <utility>

namespace jobctl::agentd {

Backoff::Backoff(int64_t base_ms, int64_t cap_ms, Pick pick)
    : base_ms_(base_ms), cap_ms_(cap_ms), pick_(std::move(pick)), rng_(std::random_device{}()) {}

int64_t Backoff::Ceiling() const {
  // base * 2^n without overflow: the cap is reached long before 2^40.
  int shift = std::min(failures_, 40);
  int64_t ceiling = base_ms_;
  for (int i = 0; i < shift && ceiling < cap_ms_; ++i) ceiling *= 2;
  return std::min(ceiling, cap_ms_);
}

int64_t Backoff::Next() {
  int64_t ceiling = Ceiling();
  ++failures_;
  if (pick_) return std::clamp<int64_t>(pick_(ceiling), 0, ceiling);
  return std::uniform_int_distribution<int64_t>(0, ceiling)(rng_);
}

}  // namespace jobctl::agentd
