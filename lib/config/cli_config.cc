#include "config/cli_config.h"

#include <toml++/toml.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "config/key_table.h"

namespace jobctl {

namespace {

// Every key of jobctl's config file is a string.
template <std::string CliConfig::*Field>
void ReadString(const toml::node& n, std::string_view k, KeyProblems& p, CliConfig& c) {
  if (auto v = n.value<std::string>())
    c.*Field = *v;
  else
    p.Expected(n, k, "a string");
}

// The keys, in the order of FILES in man/jobctl.1.
constexpr KeySpec<CliConfig, KeyProblems> kCliKeys[] = {
    {"coordinator", ReadString<&CliConfig::coordinator>},
    {"token", ReadString<&CliConfig::token>},
    {"token_file", ReadString<&CliConfig::token_file>},
    {"file", ReadString<&CliConfig::file>},
    {"ca_file", ReadString<&CliConfig::ca_file>},
    {"client_cert", ReadString<&CliConfig::client_cert>},
    {"client_key", ReadString<&CliConfig::client_key>},
};

}  // namespace

Result<CliConfig> ParseCliConfig(std::string_view text, std::string_view filename) {
  Result<toml::table> root = ParseTomlFile(text, filename);
  if (!root.ok()) return root.status();
  CliConfig c;
  c.path = std::string(filename);
  KeyProblems problems(filename);
  ReadKeys(*root, kCliKeys, problems, c);
  if (!problems.empty()) return problems.ToStatus();
  return c;
}

Result<CliConfig> LoadCliConfig() {
  std::vector<std::string> paths;
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg) {
    paths.push_back(std::string(xdg) + "/jobctl/config.toml");
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    paths.push_back(std::string(home) + "/.config/jobctl/config.toml");
  }
  paths.push_back("/etc/jobctl/jobctl.toml");
  for (const std::string& p : paths) {
    std::ifstream in(p);
    if (!in) continue;
    std::ostringstream ss;
    ss << in.rdbuf();
    return ParseCliConfig(ss.str(), p);
  }
  return CliConfig{};
}

}  // namespace jobctl
