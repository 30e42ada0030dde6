// Random is the seam for randomness in decisions: the jitter of a retry delay, the pick of
// the `random` route. The object that owns a decision owns its Random (a SystemRandom unless
// a test hands it a FakeRandom), so no decision hides a static generator and a test can
// replay any draw. It is a uniform random bit generator, so std::shuffle and the <random>
// distributions take it as it is. Not thread-safe: each owner uses its own on one thread.
#pragma once

#include <cstdint>
#include <limits>
#include <random>

namespace jobctl {

class Random {
 public:
  using result_type = uint64_t;
  virtual ~Random() = default;
  // Uniform over every 64-bit value.
  virtual uint64_t Next() = 0;

  static constexpr uint64_t min() { return 0; }
  static constexpr uint64_t max() { return std::numeric_limits<uint64_t>::max(); }
  uint64_t operator()() { return Next(); }
};

// A Mersenne twister seeded from the operating system once, at construction.
class SystemRandom final : public Random {
 public:
  SystemRandom() : rng_(std::random_device{}()) {}
  uint64_t Next() override { return rng_(); }

 private:
  std::mt19937_64 rng_;
};

}  // namespace jobctl
