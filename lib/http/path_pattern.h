// PathPattern matches request paths against a route pattern such as "/v1/jobs/{name}/trigger"
// without allocating: the pattern is split into segments once, a path is compared segment by
// segment in place, and a {param} segment matches any one non-empty segment. Empty segments
// are ignored on both sides ("/v1//jobs/" is "/v1/jobs"), as the coordinator always did.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jobctl::http {

class PathPattern {
 public:
  explicit PathPattern(std::string_view pattern);

  // Up to this many params per pattern.
  static constexpr size_t kMaxParams = 4;
  struct Params {
    std::pair<std::string_view, std::string_view> items[kMaxParams];  // {name, value}
    size_t size = 0;
  };
  // True when `path` matches; then `params` (if given) holds the {name} values, viewing
  // `path` and this pattern (valid while both are).
  bool Match(std::string_view path, Params* params = nullptr) const;
  const std::string& pattern() const { return pattern_; }

 private:
  struct Segment {
    std::string text;  // the literal, or the param name
    bool param = false;
  };
  std::string pattern_;
  std::vector<Segment> segments_;
};

}  // namespace jobctl::http
