#include "config/key_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <utility>

#include "config/toml_values.h"

namespace jobctl {
namespace {

// Optimal string alignment distance: Levenshtein plus swapping two neighbours, the typo
// people make most ("tiemout").
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// Words people bring from crontab, systemd and other schedulers that no edit distance finds.
// Each is suggested only where its key is one of the candidates.
// clang-format off
constexpr std::pair<std::string_view, std::string_view> kAliases[] = {
    {"cmd", "command"},      {"args", "command"},  {"argv", "command"},   {"script", "shell"},
    {"user", "run_as"},      {"tz", "timezone"},   {"zone", "timezone"},  {"cron", "schedule"},
    {"retries", "retry"},    {"labels", "on"},     {"selector", "on"},    {"workdir", "cwd"},
    {"directory", "cwd"},    {"dir", "cwd"},       {"environment", "env"}, {"disabled", "enabled"},
    {"concurrency", "overlap"},
};
// clang-format on

}  // namespace

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += {'\\', c};
    } else if (c == '\n' || c == '\t') {
      out += c == '\n' ? "\\n" : "\\t";
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      out += fmt::format("\\u{:04X}", static_cast<unsigned>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string DidYouMean(std::string_view word, std::span<const std::string_view> candidates) {
  auto listed = [&](std::string_view c) {
    return std::find(candidates.begin(), candidates.end(), c) != candidates.end();
  };
  for (const auto& [alias, key] : kAliases) {
    if (alias == word && listed(key)) return fmt::format(" (did you mean \"{}\"?)", key);
  }
  std::string_view best;
  size_t best_distance = SIZE_MAX;
  for (std::string_view c : candidates) {
    // Allow two edits in longer words, one in short ones, and never a complete rewrite. Words
    // whose lengths differ by more are never within the limit: skipped before the distance,
    // whose cost grows with both lengths.
    size_t limit = c.size() >= 5 ? 2 : 1;
    if ((word.size() > c.size() ? word.size() - c.size() : c.size() - word.size()) > limit) {
      continue;
    }
    size_t d = EditDistance(word, c);
    if (d <= limit && d < word.size() && d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  return best.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", best);
}

std::string ListOfNames(std::span<const std::string_view> names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    out += i == 0 ? "" : i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

std::string UnknownKeyMessage(std::string_view key, std::span<const std::string_view> known) {
  std::string hint = DidYouMean(key, known);
  if (hint.empty() && !known.empty()) hint = " (expected " + ListOfNames(known) + ")";
  return "unknown key " + Quote(key) + hint;
}

std::string KeyPath(std::string_view parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  if (key.empty()) return std::string(parent);
  return fmt::format("{}.{}", parent, key);
}

void KeyProblems::Fail(const toml::source_region& at, std::string_view key,
                       std::string_view message) {
  std::string text = Where(file_, at) + ": ";
  if (!key.empty()) text += fmt::format("{}: ", key);
  problems_.push_back({static_cast<int64_t>(at.begin.line), static_cast<int64_t>(at.begin.column),
                       text + std::string(message)});
}

void KeyProblems::Expected(const toml::node& at, std::string_view key, std::string_view what) {
  Fail(at, key, fmt::format("expected {}", what));
}

Status KeyProblems::ToStatus() const {
  if (problems_.empty()) return Status::Ok();
  std::vector<Problem> sorted = problems_;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Problem& a, const Problem& b) {
    return std::pair(a.line, a.column) < std::pair(b.line, b.column);
  });
  std::string out;
  for (const Problem& p : sorted) out += (out.empty() ? "" : "\n") + p.text;
  return Status::InvalidArgument(std::move(out));
}

Result<toml::table> ParseTomlFile(std::string_view text, std::string_view filename) {
  try {
    return toml::parse(text, filename);
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument(Where(filename, e.source()) + ": " +
                                   std::string(e.description()));
  }
}

}  // namespace jobctl
