#include "config/coordinator_config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "config/toml_values.h"

namespace jobctl {

Result<CoordinatorConfig> ParseCoordinatorConfig(std::string_view text, std::string_view filename) {
  toml::table root;
  try {
    root = toml::parse(text, filename);
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument(Where(filename, e.source()) + ": " +
                                   std::string(e.description()));
  }
  CoordinatorConfig c;
  std::string errors;
  auto fail = [&](const toml::node& n, std::string_view key, std::string_view expected) {
    errors += (errors.empty() ? "" : "\n") + Where(filename, n.source()) + ": " + std::string(key) +
              ": expected " + std::string(expected);
  };
  auto str = [&](const toml::node& n, std::string_view key, std::string* out) {
    if (auto v = n.value<std::string>())
      *out = *v;
    else
      fail(n, key, "a string");
  };
  auto dur = [&](const toml::node& n, std::string_view key, Millis* out) {
    auto v = n.value<std::string>();
    Result<Millis> d = v ? ParseDuration(*v) : Result<Millis>(Status::InvalidArgument(""));
    if (d.ok() && d->count() > 0)
      *out = *d;
    else
      fail(n, key, "a duration like \"15s\"");
  };
  auto count = [&](const toml::node& n, std::string_view key, int64_t* out) {
    if (auto v = n.value<int64_t>(); v && *v > 0)
      *out = *v;
    else
      fail(n, key, "a positive integer");
  };
  auto size = [&](const toml::node& n, std::string_view key, int64_t* out) {
    if (auto v = ParseSize(n); v && *v > 0)
      *out = *v;
    else
      fail(n, key, "a size like \"32MiB\"");
  };
  auto rate = [&](const toml::node& n, std::string_view key, double* out) {
    if (auto v = n.value<double>(); v && *v >= 0)
      *out = *v;
    else
      fail(n, key, "a number of requests per second (0: no limit)");
  };
  for (auto&& [k, node] : root) {
    std::string key(k.str());
    if (key == "listen")
      str(node, key, &c.listen);
    else if (key == "data_dir")
      str(node, key, &c.data_dir);
    else if (key == "log_level")
      str(node, key, &c.log_level);
    else if (key == "event_log")
      str(node, key, &c.event_log);
    else if (key == "tls_cert")
      str(node, key, &c.tls_cert);
    else if (key == "tls_key")
      str(node, key, &c.tls_key);
    else if (key == "tls_client_ca")
      str(node, key, &c.tls_client_ca);
    else if (key == "lease_ttl")
      dur(node, key, &c.lease_ttl);
    else if (key == "heartbeat")
      dur(node, key, &c.heartbeat);
    else if (key == "misfire_grace")
      dur(node, key, &c.misfire_grace);
    else if (key == "timeout_grace")
      dur(node, key, &c.timeout_grace);
    else if (key == "header_timeout")
      dur(node, key, &c.header_timeout);
    else if (key == "idle_timeout")
      dur(node, key, &c.idle_timeout);
    else if (key == "agent_expiry")
      dur(node, key, &c.agent_expiry);
    else if (key == "body_timeout")
      dur(node, key, &c.body_timeout);
    else if (key == "max_connections")
      count(node, key, &c.max_connections);
    else if (key == "max_connections_per_client")
      count(node, key, &c.max_connections_per_client);
    else if (key == "max_inflight")
      size(node, key, &c.max_inflight_bytes);
    else if (key == "max_inflight_per_client")
      size(node, key, &c.max_inflight_bytes_per_client);
    else if (key == "rate_limit")
      rate(node, key, &c.rate_limit);
    else if (key == "rate_burst")
      rate(node, key, &c.rate_burst);
    else if (key == "trigger_rate_limit")
      rate(node, key, &c.trigger_rate_limit);
    else if (key == "trigger_burst")
      rate(node, key, &c.trigger_burst);
    else if (key == "agent_rate_limit")
      rate(node, key, &c.agent_rate_limit);
    else if (key == "agent_burst")
      rate(node, key, &c.agent_burst);
    else if (key == "log_cap") {
      if (auto v = ParseSize(node))
        c.log_cap_bytes = *v;
      else
        fail(node, key, "a size like \"64MiB\"");
    } else if (key == "max_jobfile") {
      if (auto v = ParseSize(node); v && *v > 0)
        c.max_jobfile_bytes = *v;
      else
        fail(node, key, "a size like \"8MiB\"");
    } else {
      fail(node, key,
           "one of listen, data_dir, log_level, event_log, lease_ttl, heartbeat, "
           "misfire_grace, timeout_grace, header_timeout, idle_timeout, "
           "body_timeout, log_cap, max_jobfile, agent_expiry, max_connections, "
           "max_connections_per_client, max_inflight, max_inflight_per_client, "
           "rate_limit, rate_burst, trigger_rate_limit, trigger_burst, "
           "agent_rate_limit, agent_burst, tls_cert, tls_key, tls_client_ca "
           "(unknown key)");
    }
  }
  if (errors.empty() && c.heartbeat * 2 > c.lease_ttl) {
    errors = std::string(filename) + ": heartbeat must be at most half of lease_ttl";
  }
  // A job file travels as a JSON string (escapes add up to a quarter): it must fit. Limits
  // left unset grow with max_jobfile; set ones too small are an error.
  int64_t jobfile_body = c.max_jobfile_bytes + c.max_jobfile_bytes / 4 + 4096;
  if (!root.contains("max_inflight_per_client")) {
    c.max_inflight_bytes_per_client = std::max(c.max_inflight_bytes_per_client, jobfile_body);
  }
  if (!root.contains("max_inflight")) {
    c.max_inflight_bytes = std::max(c.max_inflight_bytes, c.max_inflight_bytes_per_client);
  }
  if (errors.empty() && c.max_inflight_bytes_per_client < jobfile_body) {
    errors = std::string(filename) +
             ": max_inflight_per_client must hold a whole job file "
             "(max_jobfile plus a quarter)";
  }
  if (errors.empty() && c.max_inflight_bytes < c.max_inflight_bytes_per_client) {
    errors = std::string(filename) + ": max_inflight must be at least max_inflight_per_client";
  }
  if (Status s = CheckTlsFiles(c); errors.empty() && !s.ok())
    errors = std::string(filename) + ": " + s.message();
  if (!errors.empty()) return Status::InvalidArgument(errors);
  return c;
}

Status CheckTlsFiles(const CoordinatorConfig& c) {
  if (c.tls_cert.empty() != c.tls_key.empty())
    return Status::InvalidArgument("tls_cert and tls_key go together: set both or neither");
  if (!c.tls_client_ca.empty() && c.tls_cert.empty())
    return Status::InvalidArgument("tls_client_ca needs tls_cert and tls_key (mTLS is TLS)");
  return Status::Ok();
}

Result<CoordinatorConfig> LoadCoordinatorConfig(const std::string& path, bool must_exist) {
  std::ifstream in(path);
  if (!in) {
    if (!must_exist) return CoordinatorConfig{};
    return Status::Io("cannot read " + path);
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ParseCoordinatorConfig(ss.str(), path);
}

}  // namespace jobctl
