// Backoff spaces retries to the coordinator: "full jitter", a uniform pick in
// [0, min(cap, base * 2^n)] after the n-th failure in a row, so that a fleet of agents does
// not return in step after an outage. It counts the failures; the delay itself is the one
// backoff rule of the tree (model/backoff.h). The random source is the one its owner passes
// (the Agent's, which a test may replace with a FakeRandom); without one, its own
// SystemRandom. Loop thread only, like its owner.
#pragma once

#include <cstdint>

#include "base/random.h"
#include "model/backoff.h"

namespace jobctl::agentd {

// How claims, results and output are retried while the coordinator does not answer: from
// 500 ms, doubling, up to 5 s. The cap bounds how long an agent takes to come back after the
// coordinator's return, however long it was gone; full jitter spreads a fleet's retries, so
// N agents send a down coordinator about N / 2.5 requests a second.
inline constexpr int64_t kRetryBaseMs = 500;
inline constexpr int64_t kRetryCapMs = 5'000;

class Backoff {
 public:
  // `random` (not owned) must outlive this; nullptr: this Backoff's own SystemRandom.
  Backoff(int64_t base_ms, int64_t cap_ms, Random* random = nullptr);
  Backoff(const Backoff&) = delete;
  Backoff& operator=(const Backoff&) = delete;

  // The delay before the next retry, and at least `at_least_ms` (what the coordinator asked
  // for: RetryAfterMs); each call counts one more failure.
  int64_t Next(int64_t at_least_ms = 0);
  // The largest delay Next() may return now (for tests and logs).
  int64_t Ceiling() const;
  void Reset() { failures_ = 0; }
  int failures() const { return failures_; }

 private:
  BackoffPolicy policy_;
  int failures_ = 0;
  SystemRandom own_random_;
  Random* random_;
};

}  // namespace jobctl::agentd
