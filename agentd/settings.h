// Settings turns agentd's command line, its config file and its environment into the
// AgentSettings the Agent runs with. Flags override the file; the token comes from
// --token-file, else AGENTD_TOKEN, else the file's token_file. Also used on SIGHUP to re-read
// labels and slots. Every error is a configuration error (exit 78).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "agent.h"
#include "base/log.h"
#include "base/status.h"

namespace jobctl::agentd {

struct Flags {
  std::string config;  // "" = /etc/agentd/agentd.toml, if it exists
  std::vector<std::string> coordinators;
  std::string token_file;
  std::string name;
  std::string labels;  // "k=v,k=v"
  bool labels_set = false;
  int slots = 0;  // 0 = not given
  std::string state_dir;
  std::string log_level;
  std::string event_log;
};

inline constexpr const char* kDefaultConfig = "/etc/agentd/agentd.toml";

struct LoadedSettings {
  AgentSettings agent;
  log::Level log_level = log::Level::kInfo;
};

// `token_env` is AGENTD_TOKEN's value (nullptr when unset); `exe_path` is agentd itself.
Result<LoadedSettings> LoadSettings(const Flags& flags, const char* token_env,
                                    const std::string& exe_path);

}  // namespace jobctl::agentd
