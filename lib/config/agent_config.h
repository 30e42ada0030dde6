// AgentConfig is what agentd reads from /etc/agentd/agentd.toml (or --config) before its
// command-line flags override it. Every key has a default except the token, so a host needs
// little more than `coordinator` and `token_file`. Documented in man/agentd.toml.5.
//
// The policy keys (allow_run_as, allow_commands) are the host's own limits: the coordinator
// cannot override them. Pure functions plus one file read; any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/duration.h"
#include "base/status.h"

namespace jobctl {

struct AgentConfig {
  std::vector<std::string> coordinators;  // base URLs, tried in order; empty = the default
  std::string token_file;                 // "" = only AGENTD_TOKEN
  std::string name;                       // "" = the host name
  std::map<std::string, std::string> labels;
  int slots = 0;  // max concurrent shards; 0 = the number of CPUs
  std::string state_dir = "/var/lib/agentd";
  std::string log_level = "info";
  std::string event_log;                            // "" = off; see lib/base/event_log.h
  std::vector<std::string> allow_run_as;            // users jobs may run as; root only when listed
  std::vector<std::string> allow_commands;          // program path prefixes; empty = any program
  std::string secrets_dir = "/etc/agentd/secrets";  // where jobs' `secrets` files are read
  // Where flow steps' $JOB_OUTPUT files are made; "" = $RUNTIME_DIRECTORY/outputs under
  // systemd, else <state_dir>/outputs.
  std::string output_dir;
  Millis drain_timeout = std::chrono::seconds(60);
  Millis kill_grace = std::chrono::seconds(10);  // when the coordinator does not say
  int64_t spool_max_bytes = int64_t{256} << 20;
  // TLS to an https:// coordinator: the CA that signed its certificate ("" = the system's
  // CAs), and this agent's certificate and key when the coordinator asks for one (mTLS).
  std::string ca_file;
  std::string client_cert;
  std::string client_key;
};

inline constexpr const char* kDefaultCoordinator = "http://127.0.0.1:7070";
inline constexpr int kMaxSlots = 4096;

// Parses the TOML text. Every problem is reported, one per line, as
// "agentd.toml:3:9: slots: expected an integer from 1 to 4096".
Result<AgentConfig> ParseAgentConfig(std::string_view text, std::string_view filename);

// Reads the file; a missing file is fine (defaults) unless `must_exist`.
Result<AgentConfig> LoadAgentConfig(const std::string& path, bool must_exist);

// "role=web,dc=fra1" (the --labels flag); an empty text is no labels.
Result<std::map<std::string, std::string>> ParseLabels(std::string_view text);

// Checks one label key or value: non-empty, at most 63 bytes, [A-Za-z0-9._-/]. The message
// says what was expected.
Status CheckLabel(std::string_view text, std::string_view what);

// Checks a coordinator base URL: http:// or https://, a host, no path beyond "/".
Status CheckCoordinatorUrl(std::string_view url);

}  // namespace jobctl
