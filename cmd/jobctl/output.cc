#include "output.h"

#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "model/time_format.h"

namespace jobctl::cli {

void Table::Print(std::ostream& out) const {
  std::vector<size_t> width(header_.size(), 0);
  auto visible = [](const std::string& s) {
    // Colour escapes take no room on screen.
    size_t n = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '\x1b') {
        while (i < s.size() && s[i] != 'm') ++i;
        continue;
      }
      if ((static_cast<unsigned char>(s[i]) & 0xc0) != 0x80) ++n;
    }
    return n;
  };
  for (size_t c = 0; c < header_.size(); ++c) width[c] = header_[c].size();
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size() && c < width.size(); ++c) width[c] = std::max(width[c], visible(row[c]));
  }
  auto line = [&](const std::vector<std::string>& row) {
    std::string s;
    for (size_t c = 0; c < row.size(); ++c) {
      s += row[c];
      if (c + 1 < row.size()) s += std::string(width[c] - visible(row[c]) + 2, ' ');
    }
    out << s << '\n';
  };
  line(header_);
  for (const auto& row : rows_) line(row);
}

void PrintJson(const nlohmann::json& j) { std::cout << j.dump(2) << '\n'; }

std::string JsonString(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return "";
  if (j[key].is_string()) return j[key].get<std::string>();
  return j[key].dump();
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

std::string Colored(const std::string& state, const GlobalOptions& g) {
  if (!ColorEnabled(g)) return state;
  const char* code = state == "succeeded" ? "32"
                     : (state == "failed" || state == "timed_out" || state == "lost") ? "31"
                     : (state == "running" || state == "pending") ? "36"
                     : (state == "canceled" || state == "skipped") ? "33"
                                                                     : nullptr;
  if (code == nullptr) return state;
  return std::string("\x1b[") + code + "m" + state + "\x1b[0m";
}

}  // namespace jobctl::cli
