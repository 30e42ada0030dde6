#include "notify/text.h"

#include <chrono>
#include <ctime>

#include "base/duration.h"
#include "base/terminal_text.h"
#include "model/time_format.h"

namespace jobctl::notify::internal {
namespace {

// CRLF and a lone CR as '\n': a progress bar's carriage returns start lines of their own.
std::string UnifyLineEnds(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\r') {
      out += text[i];
    } else if (i + 1 >= text.size() || text[i + 1] != '\n') {
      out += '\n';
    }
  }
  return out;
}

bool IsShellSafe(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("._-:/=@%+,").find(c) != std::string_view::npos;
}

}  // namespace

std::string OneLine(std::string_view text) {
  std::string out = SanitizeForTerminal(UnifyLineEnds(text));
  for (char& c : out) {
    if (c == '\n' || c == '\t' || c == '\r') c = ' ';
  }
  return out;
}

std::string Lines(std::string_view text) { return SanitizeForTerminal(UnifyLineEnds(text)); }

std::string Truncate(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  static constexpr std::string_view kEllipsis = "\xe2\x80\xa6";
  if (max_bytes < kEllipsis.size()) return "";
  size_t cut = max_bytes - kEllipsis.size();
  // Back up over continuation bytes so that no character is split.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + std::string(kEllipsis);
}

std::string TailOf(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  size_t start = text.size() - max_bytes;
  // Start at the next line when it begins within the first quarter, else at a character.
  size_t line = text.find('\n', start);
  if (line != std::string_view::npos && line - start < max_bytes / 4) {
    start = line + 1;
  } else {
    while (start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) {
      ++start;
    }
  }
  return std::string(text.substr(start));
}

Notification Bounded(const Notification& n) {
  Notification b = n;
  if (b.shards.size() > kMaxShards) b.shards.resize(kMaxShards);
  for (ShardFacts& s : b.shards) {
    s.host = Truncate(s.host, kMaxFieldBytes);
    s.outcome = Truncate(s.outcome, kMaxFieldBytes);
    s.output_tail = TailOf(s.output_tail, kMaxTailBytes);
  }
  for (std::string* field : {&b.delivery_id, &b.event, &b.job, &b.run_state, &b.run_reason,
                             &b.trace_id, &b.detail, &b.coordinator, &b.channel}) {
    *field = Truncate(*field, kMaxFieldBytes);
  }
  return b;
}

std::string Token(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 200)) {
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '.' || c == '_' || c == '-' || c == '+';
    out += keep ? c : '_';
  }
  // A dot-atom (RFC 5322 3.2.3) neither starts nor ends with a dot, nor has two in a row.
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == '.' && (i == 0 || i + 1 == out.size() || out[i - 1] == '.')) out[i] = '_';
  }
  return out.empty() ? "_" : out;
}

std::string PeopleTime(int64_t unix_ms) {
  std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  if (unix_ms < 0 && unix_ms % 1000 != 0) --t;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  const char* format = tm.tm_sec == 0 ? "%Y-%m-%d %H:%M UTC" : "%Y-%m-%d %H:%M:%S UTC";
  size_t n = std::strftime(buf, sizeof(buf), format, &tm);
  return std::string(buf, n);
}

std::string Rfc3339(int64_t unix_ms) { return FormatUtc(FromUnixMs(unix_ms)); }

std::string PeopleDuration(int64_t ms) {
  if (ms < 1000) return "0s";
  return FormatDuration(Millis(ms / 1000 * 1000));
}

std::string ShellWord(std::string_view word) {
  std::string line = OneLine(word);
  bool safe = !line.empty();
  for (char c : line) safe = safe && IsShellSafe(c);
  if (safe) return line;
  std::string out = "'";
  for (char c : line) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string RunLink(const Notification& n) {
  if (n.coordinator.empty() || n.run_id <= 0) return "";
  std::string base = OneLine(n.coordinator);
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/v1/runs/" + std::to_string(n.run_id);
}

}  // namespace jobctl::notify::internal
