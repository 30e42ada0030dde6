#include "config/cli_config.h"

#include <toml++/toml.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace jobctl {

Result<CliConfig> ParseCliConfig(std::string_view text, std::string_view filename) {
  toml::table root;
  try {
    root = toml::parse(text, filename);
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument(
        std::string(filename) + ":" + std::to_string(e.source().begin.line) + ":" +
        std::to_string(e.source().begin.column) + ": " + std::string(e.description()));
  }
  CliConfig c;
  c.path = std::string(filename);
  for (auto&& [k, node] : root) {
    std::string key(k.str());
    std::string* slot = key == "coordinator"   ? &c.coordinator
                        : key == "token"       ? &c.token
                        : key == "token_file"  ? &c.token_file
                        : key == "file"        ? &c.file
                        : key == "ca_file"     ? &c.ca_file
                        : key == "client_cert" ? &c.client_cert
                        : key == "client_key"  ? &c.client_key
                                               : nullptr;
    auto where = std::string(filename) + ":" + std::to_string(node.source().begin.line) + ":" +
                 std::to_string(node.source().begin.column);
    if (slot == nullptr) {
      return Status::InvalidArgument(where + ": unknown key \"" + key +
                                     "\" (expected coordinator, token, token_file, file, "
                                     "ca_file, client_cert or client_key)");
    }
    auto v = node.value<std::string>();
    if (!v) return Status::InvalidArgument(where + ": " + key + ": expected a string");
    *slot = *v;
  }
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
