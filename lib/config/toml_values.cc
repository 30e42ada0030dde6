#include "config/toml_values.h"

#include <cctype>

namespace jobctl {

std::string Where(std::string_view file, const toml::source_region& r) {
  return std::string(file) + ":" + std::to_string(r.begin.line) + ":" +
         std::to_string(r.begin.column);
}

std::optional<int64_t> ParseSize(const toml::node& n) {
  if (auto v = n.value<int64_t>()) return *v >= 0 ? std::optional<int64_t>(*v) : std::nullopt;
  auto s = n.value<std::string>();
  if (!s) return std::nullopt;
  size_t i = 0;
  int64_t v = 0;
  while (i < s->size() && std::isdigit(static_cast<unsigned char>((*s)[i]))) {
    v = v * 10 + ((*s)[i++] - '0');
    if (v > (int64_t{1} << 40)) return std::nullopt;
  }
  if (i == 0) return std::nullopt;
  std::string unit = s->substr(i);
  if (unit.empty() || unit == "B") return v;
  if (unit == "KiB") return v << 10;
  if (unit == "MiB") return v << 20;
  if (unit == "GiB") return v << 30;
  return std::nullopt;
}

}  // namespace jobctl
