#include "settings.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/secret_file.h"
#include "base/version.h"
#include "config/agent_config.h"

namespace jobctl::agentd {
namespace {

std::string Trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

Result<std::string> ReadToken(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::InvalidArgument(path + ": cannot read the token file");
  if (std::optional<std::string> loose = LooseSecretFileMode(path, "token file")) {
    log::Warn(*loose, {{"path", path}});
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::string token = Trim(ss.str());
  if (token.empty()) return Status::InvalidArgument(path + ": the token file is empty");
  return token;
}

// A TLS file that cannot be read is a configuration error at start, not a coordinator that
// looks unreachable forever.
Status CheckReadable(const std::string& path, std::string_view key) {
  if (path.empty() || access(path.c_str(), R_OK) == 0) return Status::Ok();
  return Status::InvalidArgument(std::string(key) + ": cannot read " + path + ": " +
                                 std::strerror(errno));
}

Result<log::Level> ParseLevel(const std::string& s) {
  if (s == "debug") return log::Level::kDebug;
  if (s == "info") return log::Level::kInfo;
  if (s == "warn") return log::Level::kWarn;
  if (s == "error") return log::Level::kError;
  return Status::InvalidArgument("--log-level: expected one of debug, info, warn, error");
}

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

}  // namespace

Result<LoadedSettings> LoadSettings(const Flags& flags, const char* token_env,
                                    const std::string& exe_path) {
  bool explicit_config = !flags.config.empty();
  Result<AgentConfig> file =
      LoadAgentConfig(explicit_config ? flags.config : kDefaultConfig, explicit_config);
  if (!file.ok()) return file.status();
  AgentConfig& c = *file;

  LoadedSettings out;
  AgentSettings& s = out.agent;
  s.coordinators = !flags.coordinators.empty() ? flags.coordinators : c.coordinators;
  if (s.coordinators.empty()) s.coordinators = {kDefaultCoordinator};
  for (const std::string& url : s.coordinators) {
    if (Status st = CheckCoordinatorUrl(url); !st.ok())
      return st.WithContext("--coordinator: expected");
  }
  if (!flags.token_file.empty()) {
    Result<std::string> t = ReadToken(flags.token_file);
    if (!t.ok()) return t.status();
    s.token = *t;
  } else if (token_env != nullptr && *token_env != '\0') {
    s.token = Trim(token_env);
  } else if (!c.token_file.empty()) {
    Result<std::string> t = ReadToken(c.token_file);
    if (!t.ok()) return t.status();
    s.token = *t;
  } else {
    return Status::InvalidArgument("no agent token: set AGENTD_TOKEN, --token-file or token_file");
  }
  s.identity.name = !flags.name.empty() ? flags.name : !c.name.empty() ? c.name : HostName();
  if (Status st = CheckLabel(s.identity.name, "agent name"); !st.ok()) {
    return st.WithContext("--name: expected");
  }
  // The coordinator knows an agent by a credential bound to its name, and names it in URLs.
  if (s.identity.name.find('/') != std::string::npos) {
    return Status::InvalidArgument("--name: an agent name may not contain '/'");
  }
  s.identity.labels = c.labels;
  if (flags.labels_set) {
    Result<std::map<std::string, std::string>> l = ParseLabels(flags.labels);
    if (!l.ok()) return l.status().WithContext("--labels");
    s.identity.labels = *l;
  }
  int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  s.identity.slots = flags.slots != 0 ? flags.slots : c.slots != 0 ? c.slots : cpus;
  if (s.identity.slots < 1 || s.identity.slots > kMaxSlots) {
    return Status::InvalidArgument("--slots: expected an integer from 1 to " +
                                   std::to_string(kMaxSlots));
  }
  s.identity.version = kVersion;
  s.state_dir = !flags.state_dir.empty() ? flags.state_dir : c.state_dir;
  s.exe_path = exe_path;
  s.policy = {c.allow_run_as, c.allow_commands};
  s.secrets_dir = c.secrets_dir;
  // Under systemd the unit's RuntimeDirectory (/run/agentd) holds the step output files, so
  // that steps running as other users can reach theirs; else a directory in the state dir.
  if (!c.output_dir.empty()) {
    s.output_dir = c.output_dir;
  } else if (const char* run = std::getenv("RUNTIME_DIRECTORY");
             run != nullptr && *run == '/' && std::strchr(run, ':') == nullptr) {
    s.output_dir = std::string(run) + "/outputs";
  } else {
    s.output_dir = s.state_dir + "/outputs";
  }
  s.drain_timeout = c.drain_timeout;
  s.kill_grace = c.kill_grace;
  s.spool_max_bytes = c.spool_max_bytes;
  s.event_log = !flags.event_log.empty() ? flags.event_log : c.event_log;
  s.tls = {c.ca_file, c.client_cert, c.client_key};
  for (const auto& [path, key] : {std::pair{s.tls.ca_file, "ca_file"},
                                  {s.tls.client_cert, "client_cert"},
                                  {s.tls.client_key, "client_key"}}) {
    if (Status st = CheckReadable(path, key); !st.ok()) return st;
  }
  Result<log::Level> level = ParseLevel(!flags.log_level.empty() ? flags.log_level : c.log_level);
  if (!level.ok()) return level.status();
  out.log_level = *level;
  return out;
}

}  // namespace jobctl::agentd
