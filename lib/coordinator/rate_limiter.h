// RateLimiter is a set of token buckets, one per key (an API token, a token's triggers),
// that the coordinator's Api consults once per request, when its headers arrive. A bucket
// holds up to `burst` requests and refills at `per_second`; a request finding it empty is
// refused with 429 and told when the next one would pass. Buckets are created on first use
// and forgotten once full again, so memory follows the tokens active in the last seconds.
// Pure (time is passed in), loop thread only; owned by the Api.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace jobctl::coordinator {

struct RateLimit {
  double per_second = 0;  // 0: no limit
  double burst = 1;       // requests a full bucket lets through at once
};

class RateLimiter {
 public:
  // 0 when the request may pass (a token was taken from `key`'s bucket), else the
  // milliseconds until it would (at least 1).
  int64_t Take(const std::string& key, const RateLimit& limit, int64_t now_mono_ms);
  size_t buckets() const { return buckets_.size(); }

 private:
  struct Bucket {
    double tokens;
    int64_t at_ms;  // when `tokens` was last brought up to date
    RateLimit limit;
  };
  void ForgetFull(int64_t now_mono_ms);

  std::map<std::string, Bucket> buckets_;
  int64_t last_sweep_ms_ = 0;
};

}  // namespace jobctl::coordinator
