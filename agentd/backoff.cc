#include "backoff.h"

#include <algorithm>

namespace jobctl::agentd {

Backoff::Backoff(int64_t base_ms, int64_t cap_ms, Random* random)
    : policy_{.base_ms = base_ms, .cap_ms = cap_ms, .jitter = Jitter::kFull},
      random_(random != nullptr ? random : &own_random_) {}

int64_t Backoff::Ceiling() const { return BackoffCeilingMs(policy_, failures_); }

int64_t Backoff::Next(int64_t at_least_ms) {
  return std::max(BackoffDelayMs(policy_, failures_++, *random_), at_least_ms);
}

}  // namespace jobctl::agentd
