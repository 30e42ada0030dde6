#include "fence_command.h"

#include <charconv>
#include <climits>
#include <vector>

namespace jobctl::agentd {
namespace {

std::optional<int64_t> Number(std::string_view s, int64_t min, int64_t max) {
  // Digits only, no sign and no leading zero: one way to write each number.
  if (s.empty() || s.size() > 19 || s[0] < '0' || s[0] > '9' || (s[0] == '0' && s.size() > 1)) {
    return std::nullopt;
  }
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < min || v > max) return std::nullopt;
  return v;
}

std::vector<std::string_view> Words(std::string_view line) {
  std::vector<std::string_view> out;
  while (!line.empty() && out.size() <= 6) {
    size_t space = line.find(' ');
    out.push_back(line.substr(0, space));
    if (space == std::string_view::npos) break;
    line.remove_prefix(space + 1);
    if (line.empty()) out.push_back(line);  // a trailing space: an empty word, refused
  }
  return out;
}

}  // namespace

std::string FormatFenceCommand(const FenceCommand& c) {
  std::string key = std::to_string(c.key.run) + " " + std::to_string(c.key.shard) + " " +
                    std::to_string(c.key.attempt) + "\n";
  if (c.kind == FenceCommand::Kind::kDisarm) return "disarm " + std::to_string(c.pgid) + " " + key;
  return "arm " + std::to_string(c.pgid) + " " + std::to_string(c.deadline_ms) + " " + key;
}

std::optional<FenceCommand> ParseFenceCommand(std::string_view line) {
  if (line.size() > kMaxFenceLine) return std::nullopt;
  std::vector<std::string_view> w = Words(line);
  if (w.empty()) return std::nullopt;
  FenceCommand c;
  // pgid 1 is init: never a shard's group.
  std::optional<int64_t> pgid = w.size() > 1 ? Number(w[1], 2, INT_MAX) : std::nullopt;
  if (!pgid) return std::nullopt;
  c.pgid = *pgid;
  bool arm = w[0] == "arm";
  if ((!arm && w[0] != "disarm") || w.size() != (arm ? 6u : 5u)) return std::nullopt;
  size_t k = arm ? 3 : 2;  // where the attempt's key begins
  std::optional<int64_t> deadline = arm ? Number(w[2], 0, INT64_MAX) : 0;
  std::optional<int64_t> run = Number(w[k], 1, INT64_MAX);
  std::optional<int64_t> shard = Number(w[k + 1], 0, INT_MAX);
  std::optional<int64_t> attempt = Number(w[k + 2], 1, INT_MAX);
  if (!deadline || !run || !shard || !attempt) return std::nullopt;
  c.kind = arm ? FenceCommand::Kind::kArm : FenceCommand::Kind::kDisarm;
  c.deadline_ms = *deadline;
  c.key = {*run, static_cast<int>(*shard), static_cast<int>(*attempt)};
  return c;
}

}  // namespace jobctl::agentd
