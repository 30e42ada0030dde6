// Small readers shared by the config files that lib/config parses with toml++: where a node
// is ("file:line:column") and sizes written as bytes or as "256MiB". Only lib/config uses it.
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace jobctl {

std::string Where(std::string_view file, const toml::source_region& r);
// Bytes (268435456) or text ("256MiB", "512KiB", "1GiB", "64B"); nullopt when malformed or
// above 1 TiB.
std::optional<int64_t> ParseSize(const toml::node& n);

}  // namespace jobctl
