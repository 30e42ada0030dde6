// CliConfig is jobctl's own settings file (~/.config/jobctl/config.toml, then
// /etc/jobctl/jobctl.toml): where the coordinator is and which token to use. jobctl resolves
// each setting as flag > environment > this file > built-in default.
#pragma once

#include <string>

#include "base/status.h"

namespace jobctl {

struct CliConfig {
  std::string coordinator;  // http://host:port
  std::string token;
  std::string token_file;
  std::string file;         // default job file
  std::string ca_file;      // TLS: the CA that signed the coordinator's certificate
  std::string client_cert;  // TLS: this user's certificate, when the coordinator asks (mTLS)
  std::string client_key;
  std::string path;  // the file these came from ("" = none found)
};

// Reads the first of the standard files that exists; none is fine (all empty).
Result<CliConfig> LoadCliConfig();
Result<CliConfig> ParseCliConfig(std::string_view text, std::string_view filename);

}  // namespace jobctl
