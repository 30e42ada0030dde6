#include "http/path_pattern.h"

namespace jobctl::http {
namespace {

// The next non-empty segment of `path` at or after `*at`; empty when none is left.
std::string_view NextSegment(std::string_view path, size_t* at) {
  while (*at < path.size() && path[*at] == '/') ++*at;
  size_t end = path.find('/', *at);
  if (end == std::string_view::npos) end = path.size();
  std::string_view seg = path.substr(*at, end - *at);
  *at = end;
  return seg;
}

}  // namespace

PathPattern::PathPattern(std::string_view pattern) : pattern_(pattern) {
  std::string_view p = pattern_;
  size_t at = 0;
  for (std::string_view seg = NextSegment(p, &at); !seg.empty(); seg = NextSegment(p, &at)) {
    bool param = seg.size() > 2 && seg.front() == '{' && seg.back() == '}';
    segments_.push_back({std::string(param ? seg.substr(1, seg.size() - 2) : seg), param});
  }
}

bool PathPattern::Match(std::string_view path, Params* params) const {
  Params found;
  size_t at = 0;
  for (const Segment& s : segments_) {
    std::string_view seg = NextSegment(path, &at);
    if (seg.empty()) return false;
    if (s.param) {
      if (found.size == kMaxParams) return false;
      found.items[found.size++] = {s.text, seg};
    } else if (seg != s.text) {
      return false;
    }
  }
  if (!NextSegment(path, &at).empty()) return false;
  if (params != nullptr) *params = found;
  return true;
}

}  // namespace jobctl::http
