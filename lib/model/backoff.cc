#include "model/backoff.h"

#include <algorithm>

namespace jobctl {

int64_t BackoffCeilingMs(const BackoffPolicy& policy, int64_t doublings) {
  // The cap is reached long before 2^62; stopping there also bounds a zero base.
  int64_t n = std::clamp<int64_t>(doublings, 0, 62);
  int64_t ceiling = policy.base_ms;
  for (int64_t i = 0; i < n && ceiling < policy.cap_ms; ++i) {
    ceiling = ceiling > policy.cap_ms / 2 ? policy.cap_ms : ceiling * 2;
  }
  return std::min(ceiling, policy.cap_ms);
}

int64_t BackoffDelayMs(const BackoffPolicy& policy, int64_t doublings, Random& random) {
  int64_t ceiling = BackoffCeilingMs(policy, doublings);
  if (ceiling <= 0) return std::max<int64_t>(ceiling, 0);
  switch (policy.jitter) {
    case Jitter::kNone: return ceiling;
    case Jitter::kFull:
      return static_cast<int64_t>(random.Next() % (static_cast<uint64_t>(ceiling) + 1));
    case Jitter::kUpperHalf:
      return ceiling / 2 +
             static_cast<int64_t>(random.Next() % static_cast<uint64_t>(ceiling / 2 + 1));
  }
  return ceiling;
}

int64_t RetryDelayMs(const RetryPolicy& retry, int attempt, Random& random) {
  if (retry.backoff == Backoff::kFixed) return retry.initial.count();
  BackoffPolicy policy{.base_ms = retry.initial.count(),
                       .cap_ms = retry.max_delay.count(),
                       .jitter = Jitter::kUpperHalf};
  return BackoffDelayMs(policy, attempt - 1, random);
}

}  // namespace jobctl
