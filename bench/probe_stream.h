// The byte stream bench_probe writes and agent_bench checks: xorshift64*, so any length is
// reproducible from its seed and every byte value (NULs, escapes) occurs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace jobctl::bench {

class ProbeStream {
 public:
  explicit ProbeStream(uint64_t seed) : state_(seed | 1) {}
  void Fill(char* out, size_t n) {
    for (size_t i = 0; i < n; i += 8) {
      state_ ^= state_ >> 12;
      state_ ^= state_ << 25;
      state_ ^= state_ >> 27;
      uint64_t v = state_ * 2685821657736338717ull;
      std::memcpy(out + i, &v, n - i < 8 ? n - i : 8);
    }
  }

 private:
  uint64_t state_;
};

}  // namespace jobctl::bench
