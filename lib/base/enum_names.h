// A table of (enum value, name) pairs and the two lookups every enum with a text form
// needs. One definition for the job, run and role vocabularies.
#pragma once

#include <array>
#include <optional>
#include <string_view>
#include <utility>

namespace jobctl {

template <typename E, size_t N>
using EnumNames = std::array<std::pair<E, std::string_view>, N>;

template <typename E, size_t N>
constexpr std::string_view NameOf(const EnumNames<E, N>& table, E e) {
  for (const auto& [v, name] : table) {
    if (v == e) return name;
  }
  return "?";
}

template <typename E, size_t N>
constexpr std::optional<E> ValueOf(const EnumNames<E, N>& table, std::string_view s) {
  for (const auto& [v, name] : table) {
    if (name == s) return v;
  }
  return std::nullopt;
}

}  // namespace jobctl
