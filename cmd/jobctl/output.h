// How jobctl prints: aligned tables for people (colour only on a terminal, never with
// NO_COLOR or --no-color), JSON for scripts, times in local time with a relative hint.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "cli.h"

namespace jobctl::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void Print(std::ostream& out) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

void PrintJson(const nlohmann::json& j);
// "2026-11-22 05:30:00 (in 3m)" from RFC 3339 text; "-" for an empty one.
std::string LocalTime(const std::string& rfc3339);
// Wraps text in a colour for a state (green succeeded, red failed...) when colour is on.
std::string Colored(const std::string& state, const GlobalOptions& g);
bool ColorEnabled(const GlobalOptions& g);
std::string JsonString(const nlohmann::json& j, const char* key);  // "" when absent or null

}  // namespace jobctl::cli
