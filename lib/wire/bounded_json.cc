#include "wire/bounded_json.h"

#include <string>

namespace jobctl::wire {

bool JsonDepthWithin(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"': in_string = true; break;
      case '[':
      case '{':
        if (++depth > max_depth) return false;
        break;
      // Unbalanced closers make the text invalid JSON, which the parser refuses anyway.
      case ']':
      case '}': --depth; break;
      default: break;
    }
  }
  return true;
}

nlohmann::json ParseJson(std::string_view text, int max_depth) {
  if (!JsonDepthWithin(text, max_depth)) return nlohmann::json(nlohmann::json::value_t::discarded);
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
}

Result<nlohmann::json> ParseJsonOr(std::string_view text, int max_depth) {
  if (!JsonDepthWithin(text, max_depth)) {
    return Status::InvalidArgument("JSON nested deeper than " + std::to_string(max_depth) +
                                   " levels");
  }
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::InvalidArgument("not JSON");
  return j;
}

}  // namespace jobctl::wire
