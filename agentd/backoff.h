// Backoff spaces retries to the coordinator: "full jitter", a uniform pick in
// [0, min(cap, base * 2^n)] after the n-th failure in a row, so that a fleet of agents does
// not return in step after an outage. Value type; the random source is injected for tests.
#pragma once

#include <cstdint>
#include <functional>
#include <random>

namespace jobctl::agentd {

class Backoff {
 public:
  // Uniform integer in [0, max].
  using Pick = std::function<int64_t(int64_t max)>;

  Backoff(int64_t base_ms, int64_t cap_ms, Pick pick = nullptr);

  // The delay before the next retry; each call counts one more failure.
  int64_t Next();
  // The largest delay Next() may return now (for tests and logs).
  int64_t Ceiling() const;
  void Reset() { failures_ = 0; }
  int failures() const { return failures_; }

 private:
  int64_t base_ms_;
  int64_t cap_ms_;
  int failures_ = 0;
  Pick pick_;
  std::mt19937_64 rng_;
};

}  // namespace jobctl::agentd
