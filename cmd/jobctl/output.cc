#include "output.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <iterator>

#include "base/terminal_text.h"
#include "model/time_format.h"

namespace jobctl::cli {
namespace {

// Columns on screen: UTF-8 continuation bytes take none, colour escapes (ours) none.
size_t Visible(const std::string& s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\x1b') {
      while (i < s.size() && s[i] != 'm') ++i;
      continue;
    }
    if ((static_cast<unsigned char>(s[i]) & 0xc0) != 0x80) ++n;
  }
  return n;
}

}  // namespace

Cell Cell::Colored(std::string text, const char* sgr) {
  Cell c;
  c.parts_.push_back({std::move(text), sgr});
  return c;
}

Cell Cell::operator+(const std::string& more) const {
  Cell c = *this;
  c.parts_.push_back({more, nullptr});
  return c;
}

std::string Cell::Render(bool terminal) const {
  std::string out;
  for (const Part& p : parts_) {
    std::string text = terminal ? SanitizeForTerminal(p.text) : p.text;
    out += p.sgr == nullptr ? text : std::string("\x1b[") + p.sgr + "m" + text + "\x1b[0m";
  }
  return out;
}

void Table::Print(std::ostream& out) const {
  const bool terminal = IsTerminal(STDOUT_FILENO);
  std::vector<std::vector<std::string>> rows;
  rows.reserve(rows_.size());
  for (const auto& row : rows_) {
    std::vector<std::string> shown;
    for (const Cell& c : row) shown.push_back(c.Render(terminal));
    rows.push_back(std::move(shown));
  }
  std::vector<size_t> width(header_.size(), 0);
  for (size_t c = 0; c < header_.size(); ++c) width[c] = header_[c].size();
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size() && c < width.size(); ++c)
      width[c] = std::max(width[c], Visible(row[c]));
  }
  auto line = [&](const std::vector<std::string>& row) {
    std::string s;
    for (size_t c = 0; c < row.size(); ++c) {
      s += row[c];
      if (c + 1 < row.size())
        s += std::string(width[c] - std::min(width[c], Visible(row[c])) + 2, ' ');
    }
    out << s << '\n';
  };
  line(header_);
  for (const auto& row : rows) line(row);
}

bool IsTerminal(int fd) { return isatty(fd) != 0; }

std::string Shown(std::string_view data, int fd) {
  return IsTerminal(fd) ? SanitizeForTerminal(data) : std::string(data);
}

std::string Shown(std::string_view data) { return Shown(data, STDOUT_FILENO); }

void PrintJson(const nlohmann::json& j) {
  std::string text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  std::cout << (IsTerminal(STDOUT_FILENO) ? EscapeJsonForTerminal(text) : text) << '\n';
}

std::string JsonString(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return "";
  if (j[key].is_string()) return j[key].get<std::string>();
  return j[key].dump();
}

std::string UsageSize(const std::optional<int64_t>& bytes) {
  if (!bytes) return "-";
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(*bytes);
  size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(kUnits)) {
    v /= 1024;
    ++u;
  }
  char out[32];
  std::snprintf(out, sizeof out, u == 0 || v >= 100 ? "%.0f %s" : "%.1f %s", v, kUnits[u]);
  return out;
}

std::string UsageCpu(const std::optional<int64_t>& ms) {
  if (!ms) return "-";
  if (*ms < 1000) return std::to_string(*ms) + "ms";
  char out[32];
  std::snprintf(out, sizeof out, "%.1fs", static_cast<double>(*ms) / 1000);
  return out;
}

std::string LocalTime(const std::string& rfc3339) {
  if (rfc3339.empty()) return "-";
  Result<WallTime> t = ParseInstant(rfc3339);
  if (!t.ok()) return rfc3339;
  std::string local = FormatLocal(std::chrono::time_point_cast<std::chrono::seconds>(*t));
  // Drop the offset for the table; the hint says how far it is.
  std::string shown = local.substr(0, 10) + " " + local.substr(11, 8);
  return shown + " (" + RelativeHint(*t, SystemClock().Now()) + ")";
}

bool ColorEnabled(const GlobalOptions& g) {
  if (g.no_color) return false;
  const char* no = std::getenv("NO_COLOR");
  if (no != nullptr && *no != '\0') return false;
  const char* term = std::getenv("TERM");
  if (term != nullptr && std::string(term) == "dumb") return false;
  return isatty(STDOUT_FILENO) != 0;
}

Cell Colored(const std::string& state, const GlobalOptions& g) {
  if (!ColorEnabled(g)) return state;
  const char* code = state == "succeeded"                                             ? "32"
                     : (state == "failed" || state == "timed_out" || state == "lost") ? "31"
                     : (state == "running" || state == "pending")                     ? "36"
                     : (state == "canceled" || state == "skipped")                    ? "33"
                                                                                      : nullptr;
  if (code == nullptr) return state;
  return Cell::Colored(state, code);
}

}  // namespace jobctl::cli
