#include "coordinator/rate_limiter.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace jobctl::coordinator {

int64_t RateLimiter::Take(const std::string& key, const RateLimit& limit, int64_t now) {
  if (limit.per_second <= 0) return 0;
  double burst = std::max(limit.burst, 1.0);
  if (now - last_sweep_ms_ >= 10'000) ForgetFull(now);
  auto [it, fresh] = buckets_.try_emplace(key, Bucket{burst, now, limit});
  Bucket& b = it->second;
  b.limit = limit;
  if (!fresh) {
    double elapsed_s = static_cast<double>(std::max<int64_t>(now - b.at_ms, 0)) / 1000.0;
    b.tokens = std::min(burst, b.tokens + elapsed_s * limit.per_second);
    b.at_ms = now;
  }
  if (b.tokens >= 1.0) {
    b.tokens -= 1.0;
    return 0;
  }
  double wait_ms = (1.0 - b.tokens) / limit.per_second * 1000.0;
  // The epsilon keeps rounding noise from adding a millisecond.
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(wait_ms - 1e-6)));
}

// A bucket that would be full by now is the same as no bucket.
void RateLimiter::ForgetFull(int64_t now) {
  last_sweep_ms_ = now;
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    const Bucket& b = it->second;
    double elapsed_s = static_cast<double>(now - b.at_ms) / 1000.0;
    bool full = b.tokens + elapsed_s * b.limit.per_second >= std::max(b.limit.burst, 1.0);
    it = full ? buckets_.erase(it) : std::next(it);
  }
}

}  // namespace jobctl::coordinator
