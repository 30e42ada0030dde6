#include "config/agent_config.h"

#include <toml++/toml.h>

#include <cctype>
#include <fstream>
#include <optional>
#include <sstream>

#include "config/toml_values.h"

namespace jobctl {
namespace {

constexpr int64_t kMinSpoolBytes = int64_t{1} << 20;  // room for a few chunks

bool IsLabelChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ||
         c == '/';
}

// Collects every problem of one file, each with its position.
class Checker {
 public:
  explicit Checker(std::string_view filename) : filename_(filename) {}

  void Fail(const toml::node& n, std::string_view key, std::string_view expected) {
    errors_ += (errors_.empty() ? "" : "\n") + Where(filename_, n.source()) + ": " +
               std::string(key) + ": expected " + std::string(expected);
  }
  void Str(const toml::node& n, std::string_view key, std::string* out) {
    if (auto v = n.value<std::string>(); v && !v->empty())
      *out = *v;
    else
      Fail(n, key, "a non-empty string");
  }
  void Dur(const toml::node& n, std::string_view key, Millis* out) {
    auto v = n.value<std::string>();
    Result<Millis> d = v ? ParseDuration(*v) : Result<Millis>(Status::InvalidArgument(""));
    if (d.ok())
      *out = *d;
    else
      Fail(n, key, "a duration like \"60s\" or \"1m30s\"");
  }
  // A string or an array of non-empty strings.
  void Strings(const toml::node& n, std::string_view key, std::vector<std::string>* out,
               bool allow_single) {
    out->clear();
    if (auto v = n.value<std::string>(); v && allow_single) {
      out->push_back(*v);
      return;
    }
    const toml::array* a = n.as_array();
    if (a == nullptr) {
      Fail(n, key, allow_single ? "a string or an array of strings" : "an array of strings");
      return;
    }
    for (const toml::node& item : *a) {
      if (auto s = item.value<std::string>(); s && !s->empty())
        out->push_back(*s);
      else
        Fail(item, key, "a non-empty string");
    }
  }
  const std::string& errors() const { return errors_; }

 private:
  std::string_view filename_;
  std::string errors_;
};

void ParseKey(Checker& c, std::string_view key, const toml::node& node, AgentConfig* cfg) {
  if (key == "coordinator") {
    c.Strings(node, key, &cfg->coordinators, /*allow_single=*/true);
    for (const std::string& url : cfg->coordinators) {
      if (Status s = CheckCoordinatorUrl(url); !s.ok()) c.Fail(node, key, s.message());
    }
  } else if (key == "token_file") {
    c.Str(node, key, &cfg->token_file);
  } else if (key == "name") {
    c.Str(node, key, &cfg->name);
  } else if (key == "state_dir") {
    c.Str(node, key, &cfg->state_dir);
  } else if (key == "log_level") {
    c.Str(node, key, &cfg->log_level);
    const std::string& l = cfg->log_level;
    if (l != "debug" && l != "info" && l != "warn" && l != "error") {
      c.Fail(node, key, "one of debug, info, warn, error");
    }
  } else if (key == "event_log") {
    c.Str(node, key, &cfg->event_log);
  } else if (key == "slots") {
    auto v = node.value<int64_t>();
    if (v && *v >= 1 && *v <= kMaxSlots)
      cfg->slots = static_cast<int>(*v);
    else
      c.Fail(node, key, "an integer from 1 to " + std::to_string(kMaxSlots));
  } else if (key == "labels") {
    const toml::table* t = node.as_table();
    if (t == nullptr) return c.Fail(node, key, "a table like { role = \"web\" }");
    for (auto&& [k, v] : *t) {
      std::string name(k.str());
      std::string path = "labels." + name;
      auto value = v.value<std::string>();
      if (Status s = CheckLabel(name, "label name"); !s.ok())
        c.Fail(v, path, s.message());
      else if (!value)
        c.Fail(v, path, "a string");
      else if (Status sv = CheckLabel(*value, "label value"); !sv.ok())
        c.Fail(v, path, sv.message());
      else
        cfg->labels[name] = *value;
    }
  } else if (key == "allow_run_as") {
    c.Strings(node, key, &cfg->allow_run_as, /*allow_single=*/false);
  } else if (key == "allow_commands") {
    c.Strings(node, key, &cfg->allow_commands, /*allow_single=*/false);
    for (const std::string& p : cfg->allow_commands) {
      if (p.front() != '/') c.Fail(node, key, "absolute path prefixes, got \"" + p + "\"");
    }
  } else if (key == "secrets_dir") {
    c.Str(node, key, &cfg->secrets_dir);
    if (cfg->secrets_dir.empty() || cfg->secrets_dir.front() != '/') {
      c.Fail(node, key, "an absolute path");
    }
  } else if (key == "drain_timeout") {
    c.Dur(node, key, &cfg->drain_timeout);
  } else if (key == "kill_grace") {
    c.Dur(node, key, &cfg->kill_grace);
  } else if (key == "ca_file") {
    c.Str(node, key, &cfg->ca_file);
  } else if (key == "client_cert") {
    c.Str(node, key, &cfg->client_cert);
  } else if (key == "client_key") {
    c.Str(node, key, &cfg->client_key);
  } else if (key == "spool_max") {
    std::optional<int64_t> v = ParseSize(node);
    if (v && *v >= kMinSpoolBytes)
      cfg->spool_max_bytes = *v;
    else
      c.Fail(node, key, "a size of at least 1MiB like \"256MiB\"");
  } else {
    c.Fail(node, key,
           "one of coordinator, token_file, name, labels, slots, state_dir, log_level, event_log, "
           "allow_run_as, allow_commands, secrets_dir, drain_timeout, kill_grace, spool_max, "
           "ca_file, client_cert, client_key (unknown key)");
  }
}

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
  toml::table root;
  try {
    root = toml::parse(text, filename);
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument(Where(filename, e.source()) + ": " +
                                   std::string(e.description()));
  }
  AgentConfig cfg;
  Checker checker(filename);
  for (auto&& [k, node] : root) ParseKey(checker, k.str(), node, &cfg);
  if (!checker.errors().empty()) return Status::InvalidArgument(checker.errors());
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
