// Base64 (RFC 4648, with padding) for job output carried inside JSON. Pure functions.
#pragma once

#include <string>
#include <string_view>

namespace jobctl {

std::string Base64Encode(std::string_view bytes);
// Skips characters outside the alphabet (line breaks, padding).
std::string Base64Decode(std::string_view text);

}  // namespace jobctl
