// How jobctl prints: aligned tables for people (colour only on a terminal, never with
// NO_COLOR or --no-color), JSON for scripts, times in local time with a relative hint.
//
// Names, labels, notes, messages and output come from the coordinator, and some of them from
// remote hosts: on a terminal their control characters and escape sequences are shown, not
// obeyed (base/terminal_text.h); into a pipe or a file they are written byte for byte.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli.h"

namespace jobctl::cli {

// One table cell: text (data, made safe when printed on a terminal) in parts, each with
// jobctl's own colour or none. Converts from a string, so rows stay {"a", JsonString(...)}.
class Cell {
 public:
  Cell(std::string text) { parts_.push_back({std::move(text), nullptr}); }  // NOLINT
  Cell(const char* text) : Cell(std::string(text)) {}                       // NOLINT
  static Cell Colored(std::string text, const char* sgr);
  Cell operator+(const std::string& more) const;
  // The cell as printed: each part sanitized when `terminal`, coloured parts wrapped.
  std::string Render(bool terminal) const;

 private:
  Cell() = default;
  struct Part {
    std::string text;
    const char* sgr;  // "31" or nullptr
  };
  std::vector<Part> parts_;
};

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void Add(std::vector<Cell> row) { rows_.push_back(std::move(row)); }
  // Prints to `out`, which is stdout: cells are sanitized when stdout is a terminal.
  void Print(std::ostream& out) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<Cell>> rows_;
};

// Whether fd (STDOUT_FILENO, STDERR_FILENO) is a terminal.
bool IsTerminal(int fd);
// Data as it may be written to fd: sanitized when fd is a terminal, else unchanged.
std::string Shown(std::string_view data, int fd);
std::string Shown(std::string_view data);  // for stdout

// Pretty JSON on stdout; on a terminal, the C1 controls and bidirectional overrides a
// serializer leaves raw inside strings are written as \u escapes (same value).
void PrintJson(const nlohmann::json& j);
// "2026-11-22 05:30:00 (in 3m)" from RFC 3339 text; "-" for an empty one.
std::string LocalTime(const std::string& rfc3339);
// A state in its colour (green succeeded, red failed...) when colour is on.
Cell Colored(const std::string& state, const GlobalOptions& g);
bool ColorEnabled(const GlobalOptions& g);
// "512 KiB", "1.4 GiB": a shard's peak memory; "-" when not reported.
std::string UsageSize(const std::optional<int64_t>& bytes);
// "850ms", "12.5s": a shard's CPU time; "-" when not reported.
std::string UsageCpu(const std::optional<int64_t>& ms);
std::string JsonString(const nlohmann::json& j, const char* key);  // "" when absent or null

}  // namespace jobctl::cli
