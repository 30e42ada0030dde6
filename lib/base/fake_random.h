// FakeRandom replays the draws a test chose, in order and then again from the start, so a
// rule that jitters or shuffles gives one known answer. For tests only; one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "base/random.h"

namespace jobctl {

class FakeRandom final : public Random {
 public:
  // Draws `draws` in turn, cycling; a FakeRandom without draws always answers 0.
  explicit FakeRandom(std::vector<uint64_t> draws = {}) : draws_(std::move(draws)) {}
  uint64_t Next() override {
    ++calls_;
    if (draws_.empty()) return 0;
    uint64_t v = draws_[next_];
    next_ = (next_ + 1) % draws_.size();
    return v;
  }
  size_t calls() const { return calls_; }  // how many draws the code under test took

 private:
  std::vector<uint64_t> draws_;
  size_t next_ = 0;
  size_t calls_ = 0;
};

}  // namespace jobctl
