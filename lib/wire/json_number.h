// Range checks for reading JSON numbers into C++ integers. nlohmann's get<int>() converts any
// number with a plain cast: an integer too large for the target wraps around, and a float
// outside its range is undefined behaviour. Decoders of untrusted JSON ask JsonNumberFits<T>
// before get<T>() and treat a number that does not fit as a bad field. Header only, pure, any
// thread.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <type_traits>
#include <utility>

namespace jobctl::wire {

// Whether get<T>() of `j` keeps the value: true for any non-number and for any T that is not
// an integer type; for an integer type, true when the number (a float after truncation toward
// zero, as get<T>() does it) lies within T's range.
template <typename T>
bool JsonNumberFits(const nlohmann::json& j) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (j.is_number_unsigned()) return std::in_range<T>(j.get<uint64_t>());
    if (j.is_number_integer()) return std::in_range<T>(j.get<int64_t>());
    if (j.is_number_float()) {
      // T's range as [lo, hi): both bounds are powers of two, so doubles hold them exactly.
      const double hi = std::ldexp(1.0, std::numeric_limits<T>::digits);
      const double lo = std::is_signed_v<T> ? -hi : 0.0;
      double t = std::trunc(j.get<double>());
      return t >= lo && t < hi;
    }
  }
  return true;
}

}  // namespace jobctl::wire
