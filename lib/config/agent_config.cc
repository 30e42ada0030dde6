#include "config/agent_config.h"

#include <toml++/toml.h>

#include <cctype>
#include <fstream>
#include <optional>
#include <sstream>

#include "config/key_table.h"
#include "config/toml_values.h"

namespace jobctl {
namespace {

constexpr int64_t kMinSpoolBytes = int64_t{1} << 20;  // room for a few chunks

bool IsLabelChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ||
         c == '/';
}

using Node = toml::node;
using Key = std::string_view;

// The kinds of value this file has, each with what its error says it expected.
void ReadName(const Node& n, Key k, KeyProblems& p, std::string& out) {
  if (auto v = n.value<std::string>(); v && !v->empty())
    out = *v;
  else
    p.Expected(n, k, "a non-empty string");
}

void ReadDuration(const Node& n, Key k, KeyProblems& p, Millis& out) {
  auto v = n.value<std::string>();
  Result<Millis> d = v ? ParseDuration(*v) : Result<Millis>(Status::InvalidArgument(""));
  if (d.ok())
    out = *d;
  else
    p.Expected(n, k, "a duration like \"60s\" or \"1m30s\"");
}

enum class Single { kAllowed, kRejected };

// An array of non-empty strings, or with kAllowed one string.
void ReadStrings(const Node& n, Key k, KeyProblems& p, std::vector<std::string>& out,
                 Single single) {
  out.clear();
  if (auto v = n.value<std::string>(); v && single == Single::kAllowed) {
    out.push_back(*v);
    return;
  }
  const toml::array* a = n.as_array();
  if (a == nullptr) {
    p.Expected(
        n, k,
        single == Single::kAllowed ? "a string or an array of strings" : "an array of strings");
    return;
  }
  for (const Node& item : *a) {
    if (auto s = item.value<std::string>(); s && !s->empty())
      out.push_back(*s);
    else
      p.Expected(item, k, "a non-empty string");
  }
}

void ReadCoordinators(const Node& n, Key k, KeyProblems& p, AgentConfig& c) {
  ReadStrings(n, k, p, c.coordinators, Single::kAllowed);
  for (const std::string& url : c.coordinators) {
    if (Status s = CheckCoordinatorUrl(url); !s.ok()) p.Expected(n, k, s.message());
  }
}

void ReadLogLevel(const Node& n, Key k, KeyProblems& p, AgentConfig& c) {
  ReadName(n, k, p, c.log_level);
  const std::string& l = c.log_level;
  if (l != "debug" && l != "info" && l != "warn" && l != "error") {
    p.Expected(n, k, "one of debug, info, warn, error");
  }
}

void ReadSlots(const Node& n, Key k, KeyProblems& p, AgentConfig& c) {
  auto v = n.value<int64_t>();
  if (v && *v >= 1 && *v <= kMaxSlots)
    c.slots = static_cast<int>(*v);
  else
    p.Expected(n, k, "an integer from 1 to " + std::to_string(kMaxSlots));
}

void ReadLabels(const Node& n, Key k, KeyProblems& p, AgentConfig& c) {
  const toml::table* t = n.as_table();
  if (t == nullptr) return p.Expected(n, k, "a table like { role = \"web\" }");
  for (auto&& [key, v] : *t) {
    std::string name(key.str());
    std::string path = KeyPath(k, name);
    auto value = v.value<std::string>();
    if (Status s = CheckLabel(name, "label name"); !s.ok())
      p.Expected(v, path, s.message());
    else if (!value)
      p.Expected(v, path, "a string");
    else if (Status sv = CheckLabel(*value, "label value"); !sv.ok())
      p.Expected(v, path, sv.message());
    else
      c.labels[name] = *value;
  }
}

void ReadAllowCommands(const Node& n, Key k, KeyProblems& p, AgentConfig& c) {
  ReadStrings(n, k, p, c.allow_commands, Single::kRejected);
  for (const std::string& prefix : c.allow_commands) {
    if (prefix.front() != '/') p.Expected(n, k, "absolute path prefixes, got \"" + prefix + "\"");
  }
}

void ReadSecretsDir(const Node& n, Key k, KeyProblems& p, AgentConfig& c) {
  ReadName(n, k, p, c.secrets_dir);
  if (c.secrets_dir.empty() || c.secrets_dir.front() != '/') p.Expected(n, k, "an absolute path");
}

void ReadOutputDir(const Node& n, Key k, KeyProblems& p, AgentConfig& c) {
  ReadName(n, k, p, c.output_dir);
  if (c.output_dir.empty() || c.output_dir.front() != '/') p.Expected(n, k, "an absolute path");
}

void ReadSpoolMax(const Node& n, Key k, KeyProblems& p, AgentConfig& c) {
  std::optional<int64_t> v = ParseSize(n);
  if (v && *v >= kMinSpoolBytes)
    c.spool_max_bytes = *v;
  else
    p.Expected(n, k, "a size of at least 1MiB like \"256MiB\"");
}

// The keys of agentd.toml, in the order of man/agentd.toml.5.
// clang-format off
constexpr KeySpec<AgentConfig, KeyProblems> kAgentKeys[] = {
    {"coordinator", ReadCoordinators},
    {"token_file", [](const Node& n, Key k, KeyProblems& p, AgentConfig& c) {
       ReadName(n, k, p, c.token_file); }},
    {"name", [](const Node& n, Key k, KeyProblems& p, AgentConfig& c) {
       ReadName(n, k, p, c.name); }},
    {"labels", ReadLabels},
    {"slots", ReadSlots},
    {"state_dir", [](const Node& n, Key k, KeyProblems& p, AgentConfig& c) {
       ReadName(n, k, p, c.state_dir); }},
    {"log_level", ReadLogLevel},
    {"event_log", [](const Node& n, Key k, KeyProblems& p, AgentConfig& c) {
       ReadName(n, k, p, c.event_log); }},
    {"allow_run_as", [](const Node& n, Key k, KeyProblems& p, AgentConfig& c) {
       ReadStrings(n, k, p, c.allow_run_as, Single::kRejected); }},
    {"allow_commands", ReadAllowCommands},
    {"secrets_dir", ReadSecretsDir},
    {"output_dir", ReadOutputDir},
    {"drain_timeout", [](const Node& n, Key k, KeyProblems& p, AgentConfig& c) {
       ReadDuration(n, k, p, c.drain_timeout); }},
    {"kill_grace", [](const Node& n, Key k, KeyProblems& p, AgentConfig& c) {
       ReadDuration(n, k, p, c.kill_grace); }},
    {"spool_max", ReadSpoolMax},
    {"ca_file", [](const Node& n, Key k, KeyProblems& p, AgentConfig& c) {
       ReadName(n, k, p, c.ca_file); }},
    {"client_cert", [](const Node& n, Key k, KeyProblems& p, AgentConfig& c) {
       ReadName(n, k, p, c.client_cert); }},
    {"client_key", [](const Node& n, Key k, KeyProblems& p, AgentConfig& c) {
       ReadName(n, k, p, c.client_key); }},
};
// clang-format on

}  // namespace

Status CheckLabel(std::string_view text, std::string_view what) {
  if (text.empty() || text.size() > 63) {
    return Status::InvalidArgument(std::string(what) + " of 1 to 63 characters");
  }
  for (char ch : text) {
    if (!IsLabelChar(ch)) {
      return Status::InvalidArgument(std::string(what) + " of letters, digits and . _ - /, got \"" +
                                     std::string(text) + "\"");
    }
  }
  return Status::Ok();
}

Status CheckCoordinatorUrl(std::string_view url) {
  std::string_view rest;
  if (url.rfind("http://", 0) == 0)
    rest = url.substr(7);
  else if (url.rfind("https://", 0) == 0)
    rest = url.substr(8);
  else
    return Status::InvalidArgument("a URL like http://coordinator:7070, got \"" + std::string(url) +
                                   "\"");
  size_t slash = rest.find('/');
  std::string_view host = rest.substr(0, slash);
  if (host.empty() || (slash != std::string_view::npos && slash + 1 != rest.size())) {
    return Status::InvalidArgument(
        "a URL with a host and no path, like http://coordinator:7070, "
        "got \"" +
        std::string(url) + "\"");
  }
  return Status::Ok();
}

Result<std::map<std::string, std::string>> ParseLabels(std::string_view text) {
  std::map<std::string, std::string> labels;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return Status::InvalidArgument("labels: expected k=v[,k=v...], got \"" + std::string(item) +
                                     "\"");
    }
    std::string_view k = item.substr(0, eq), v = item.substr(eq + 1);
    if (Status s = CheckLabel(k, "label name"); !s.ok()) return s.WithContext("labels: expected");
    if (Status s = CheckLabel(v, "label value"); !s.ok()) return s.WithContext("labels: expected");
    labels[std::string(k)] = std::string(v);
  }
  return labels;
}

Result<AgentConfig> ParseAgentConfig(std::string_view text, std::string_view filename) {
  Result<toml::table> root = ParseTomlFile(text, filename);
  if (!root.ok()) return root.status();
  AgentConfig cfg;
  KeyProblems problems(filename);
  ReadKeys(*root, kAgentKeys, problems, cfg);
  if (!problems.empty()) return problems.ToStatus();
  if (cfg.client_cert.empty() != cfg.client_key.empty()) {
    return Status::InvalidArgument(std::string(filename) +
                                   ": client_cert and client_key go together: set both or neither");
  }
  return cfg;
}

Result<AgentConfig> LoadAgentConfig(const std::string& path, bool must_exist) {
  std::ifstream in(path);
  if (!in) {
    if (!must_exist) return AgentConfig{};
    return Status::InvalidArgument(path + ": cannot read the config file");
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ParseAgentConfig(ss.str(), path);
}

}  // namespace jobctl
