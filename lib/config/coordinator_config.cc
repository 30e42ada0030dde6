#include "config/coordinator_config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "config/key_table.h"
#include "config/toml_values.h"
#include "model/notify.h"

namespace jobctl {

namespace {

using Node = toml::node;
using Key = std::string_view;
using Config = CoordinatorConfig;

// The kinds of value this file has, each with what its error says it expected. Each is a
// template on the field it sets, so that the table below names one function per key.
template <std::string Config::*Field>
void ReadString(const Node& n, Key k, KeyProblems& p, Config& c) {
  if (auto v = n.value<std::string>())
    c.*Field = *v;
  else
    p.Expected(n, k, "a string");
}

// A duration > 0.
template <Millis Config::*Field>
void ReadDuration(const Node& n, Key k, KeyProblems& p, Config& c) {
  auto v = n.value<std::string>();
  Result<Millis> d = v ? ParseDuration(*v) : Result<Millis>(Status::InvalidArgument(""));
  if (d.ok() && d->count() > 0)
    c.*Field = *d;
  else
    p.Expected(n, k, "a duration like \"15s\"");
}

template <int64_t Config::*Field>
void ReadCount(const Node& n, Key k, KeyProblems& p, Config& c) {
  if (auto v = n.value<int64_t>(); v && *v > 0)
    c.*Field = *v;
  else
    p.Expected(n, k, "a positive integer");
}

// A size > 0 of a limit on bodies in flight.
template <int64_t Config::*Field>
void ReadInflight(const Node& n, Key k, KeyProblems& p, Config& c) {
  if (auto v = ParseSize(n); v && *v > 0)
    c.*Field = *v;
  else
    p.Expected(n, k, "a size like \"32MiB\"");
}

// Requests per second, 0 or more.
template <double Config::*Field>
void ReadRate(const Node& n, Key k, KeyProblems& p, Config& c) {
  if (auto v = n.value<double>(); v && *v >= 0)
    c.*Field = *v;
  else
    p.Expected(n, k, "a number of requests per second (0: no limit)");
}

// 0 is a size here: no output is kept.
void ReadLogCap(const Node& n, Key k, KeyProblems& p, Config& c) {
  if (auto v = ParseSize(n))
    c.log_cap_bytes = *v;
  else
    p.Expected(n, k, "a size like \"64MiB\"");
}

void ReadMaxJobfile(const Node& n, Key k, KeyProblems& p, Config& c) {
  if (auto v = ParseSize(n); v && *v > 0)
    c.max_jobfile_bytes = *v;
  else
    p.Expected(n, k, "a size like \"8MiB\"");
}

void ReadStore(const Node& n, Key k, KeyProblems& p, Config& c) {
  auto v = n.value<std::string>();
  if (v && CheckStoreUrl(*v).ok())
    c.store = *v;
  else
    p.Expected(n, k, "a postgresql:// URL of at most 4 KiB (or no key: the embedded store)");
}

// At least 3 s: the holder renews every second, and a loop turn may take a while.
void ReadHoldTtl(const Node& n, Key k, KeyProblems& p, Config& c) {
  auto v = n.value<std::string>();
  Result<Millis> d = v ? ParseDuration(*v) : Result<Millis>(Status::InvalidArgument(""));
  if (d.ok() && *d >= std::chrono::seconds(3) && *d <= std::chrono::hours(1))
    c.hold_ttl = *d;
  else
    p.Expected(n, k, "a duration from \"3s\" to \"1h\"");
}

void ReadEarlyDispatch(const Node& n, Key k, KeyProblems& p, Config& c) {
  auto v = n.value<std::string>();
  Result<Millis> d = v ? ParseDuration(*v) : Result<Millis>(Status::InvalidArgument(""));
  if (d.ok() && d->count() >= 0 && *d <= std::chrono::seconds(10))
    c.early_dispatch = *d;
  else
    p.Expected(n, k, "a duration from \"0s\" (off) to \"10s\"");
}

// A retention age: 0 (keep whatever the age) or from a second to ten years.
template <Millis Config::*Field>
void ReadRetention(const Node& n, Key k, KeyProblems& p, Config& c) {
  constexpr Millis kMax = std::chrono::hours(24 * 3650);
  auto v = n.value<std::string>();
  Result<Millis> d = v ? ParseDuration(*v) : Result<Millis>(Status::InvalidArgument(""));
  if (d.ok() && (d->count() == 0 || (*d >= std::chrono::seconds(1) && *d <= kMax)))
    c.*Field = *d;
  else
    p.Expected(n, k, "a duration from \"1s\" to \"3650d\", or \"0s\" to keep whatever the age");
}

void ReadKeepLast(const Node& n, Key k, KeyProblems& p, Config& c) {
  if (auto v = n.value<int64_t>(); v && *v >= 0 && *v <= 1'000'000)
    c.keep_last = *v;
  else
    p.Expected(n, k, "a number of runs from 0 to 1000000");
}

// 0 is no bound here.
void ReadLogsMax(const Node& n, Key k, KeyProblems& p, Config& c) {
  if (auto v = ParseSize(n))
    c.logs_max_bytes = *v;
  else
    p.Expected(n, k, "a size like \"1GiB\" (0: no bound)");
}

void ReadPruneEvery(const Node& n, Key k, KeyProblems& p, Config& c) {
  auto v = n.value<std::string>();
  Result<Millis> d = v ? ParseDuration(*v) : Result<Millis>(Status::InvalidArgument(""));
  if (d.ok() && *d >= Millis(100) && *d <= std::chrono::hours(1))
    c.prune_every = *d;
  else
    p.Expected(n, k, "a duration from \"100ms\" to \"1h\"");
}

// ---- [notify.NAME] ------------------------------------------------------------------------

using Channel = NotifyChannelConfig;

template <std::string Channel::*Field>
void ReadChannelString(const Node& n, Key k, KeyProblems& p, Channel& c) {
  auto v = n.value<std::string>();
  if (v && !v->empty() && v->size() <= 2048)
    c.*Field = *v;
  else
    p.Expected(n, k, "a non-empty string of at most 2048 bytes");
}

// An absolute path to a file the coordinator reads at start.
template <std::string Channel::*Field>
void ReadChannelFile(const Node& n, Key k, KeyProblems& p, Channel& c) {
  auto v = n.value<std::string>();
  if (v && v->starts_with('/') && v->size() <= 4096)
    c.*Field = *v;
  else
    p.Expected(n, k, "an absolute path to a file, like \"/etc/jobctl/smtp-password\"");
}

bool IsAddress(std::string_view a) {
  return NotifyTargetProblem("mailto:" + std::string(a)).empty();
}

void ReadChannelFrom(const Node& n, Key k, KeyProblems& p, Channel& c) {
  auto v = n.value<std::string>();
  if (v && IsAddress(*v))
    c.from = *v;
  else
    p.Expected(n, k, "an address like \"jobctl@example.com\"");
}

void ReadChannelTo(const Node& n, Key k, KeyProblems& p, Channel& c) {
  const toml::array* a = n.as_array();
  std::vector<std::string> to;
  for (size_t i = 0; a != nullptr && i < a->size() && a->size() <= 100; ++i) {
    auto v = a->get(i)->value<std::string>();
    if (!v || !IsAddress(*v)) break;
    to.push_back(*v);
  }
  if (a != nullptr && to.size() == a->size())
    c.to = std::move(to);
  else
    p.Expected(n, k, "an array of at most 100 addresses like [\"ops@example.com\"]");
}

void ReadChannelType(const Node& n, Key k, KeyProblems& p, Channel& c) {
  auto v = n.value<std::string>();
  if (v && (*v == "email" || *v == "webhook"))
    c.type = *v;
  else
    p.Expected(n, k, "\"email\" or \"webhook\"");
}

void ReadChannelStarttls(const Node& n, Key k, KeyProblems& p, Channel& c) {
  auto v = n.value<std::string>();
  if (v && (*v == "required" || *v == "try" || *v == "no"))
    c.starttls = *v;
  else
    p.Expected(n, k, "\"required\", \"try\" or \"no\"");
}

void ReadChannelTimeout(const Node& n, Key k, KeyProblems& p, Channel& c) {
  auto v = n.value<std::string>();
  Result<Millis> d = v ? ParseDuration(*v) : Result<Millis>(Status::InvalidArgument(""));
  if (d.ok() && *d >= std::chrono::seconds(1) && *d <= std::chrono::minutes(5))
    c.timeout = *d;
  else
    p.Expected(n, k, "a duration from \"1s\" to \"5m\"");
}

constexpr KeySpec<Channel, KeyProblems> kChannelKeys[] = {
    {"type", ReadChannelType},
    {"url", ReadChannelString<&Channel::url>},
    {"from", ReadChannelFrom},
    {"to", ReadChannelTo},
    {"username", ReadChannelString<&Channel::username>},
    {"password_file", ReadChannelFile<&Channel::password_file>},
    {"starttls", ReadChannelStarttls},
    {"secret_file", ReadChannelFile<&Channel::secret_file>},
    {"ca_file", ReadChannelFile<&Channel::ca_file>},
    {"timeout", ReadChannelTimeout},
};

// What a channel needs once its keys are read; "" when it is complete.
std::string ChannelProblem(const Channel& c) {
  auto scheme = [&c](std::string_view s) { return c.url.rfind(s, 0) == 0; };
  if (c.type.empty()) return "missing \"type\" (\"email\" or \"webhook\")";
  if (c.url.empty()) return "missing \"url\"";
  if (c.type == "email") {
    if (!scheme("smtp://") && !scheme("smtps://")) return "url: expected smtp:// or smtps://";
    if (c.from.empty()) return "missing \"from\" (the sender's address)";
    if (!c.secret_file.empty()) return "secret_file is for webhooks";
    if (c.password_file.empty() != c.username.empty())
      return "username and password_file go together";
  } else {
    if (!scheme("https://") && !scheme("http://")) return "url: expected https:// or http://";
    if (!c.from.empty() || !c.to.empty() || !c.username.empty() || !c.password_file.empty())
      return "from, to, username and password_file are for email";
  }
  return "";
}

// [notify.ops-mail], [notify.chat]: one table per channel.
void ReadNotify(const Node& n, Key k, KeyProblems& p, Config& c) {
  const toml::table* t = n.as_table();
  if (t == nullptr) return p.Expected(n, k, "tables like [notify.ops-mail]");
  if (t->size() > kMaxNotifyChannels) return p.Expected(n, k, "at most 64 channels");
  for (auto&& [name, value] : *t) {
    std::string path = KeyPath(k, name.str());
    const toml::table* table = value.as_table();
    if (!IsValidChannelName(name.str())) {
      p.Fail(name.source(), path, "expected a name like ops-mail ([a-z0-9][a-z0-9._-]*)");
      continue;
    }
    if (table == nullptr) {
      p.Expected(value, path, "a table like [notify." + std::string(name.str()) + "]");
      continue;
    }
    Channel channel;
    channel.name = name.str();
    size_t before = p.size();
    ReadKeys(*table, kChannelKeys, p, channel, {.parent = path});
    if (p.size() != before) continue;
    if (std::string why = ChannelProblem(channel); !why.empty()) {
      p.Fail(value, path, why);
      continue;
    }
    c.notify_channels.push_back(std::move(channel));
  }
}

void ReadMailtoChannel(const Node& n, Key k, KeyProblems& p, Config& c) {
  auto v = n.value<std::string>();
  if (v && IsValidChannelName(*v))
    c.mailto_channel = *v;
  else
    p.Expected(n, k, "the name of an email channel of [notify]");
}

void ReadPublicUrl(const Node& n, Key k, KeyProblems& p, Config& c) {
  auto v = n.value<std::string>();
  if (v && (v->starts_with("https://") || v->starts_with("http://")) && v->size() <= 2048 &&
      v->find_first_of(" \r\n\t\"<>") == std::string::npos)
    c.public_url = *v;
  else
    p.Expected(n, k, "an http:// or https:// URL like \"https://jobctl.example.com:7070\"");
}

// The keys of coordinator.toml, in the order of man/jobctl-coordinator.toml.5.
constexpr KeySpec<Config, KeyProblems> kCoordinatorKeys[] = {
    {"listen", ReadString<&Config::listen>},
    {"data_dir", ReadString<&Config::data_dir>},
    {"store", ReadStore},
    {"hold_ttl", ReadHoldTtl},
    {"lease_ttl", ReadDuration<&Config::lease_ttl>},
    {"heartbeat", ReadDuration<&Config::heartbeat>},
    {"misfire_grace", ReadDuration<&Config::misfire_grace>},
    {"early_dispatch", ReadEarlyDispatch},
    {"timeout_grace", ReadDuration<&Config::timeout_grace>},
    {"header_timeout", ReadDuration<&Config::header_timeout>},
    {"idle_timeout", ReadDuration<&Config::idle_timeout>},
    {"body_timeout", ReadDuration<&Config::body_timeout>},
    {"max_connections", ReadCount<&Config::max_connections>},
    {"max_connections_per_client", ReadCount<&Config::max_connections_per_client>},
    {"max_inflight", ReadInflight<&Config::max_inflight_bytes>},
    {"max_inflight_per_client", ReadInflight<&Config::max_inflight_bytes_per_client>},
    {"rate_limit", ReadRate<&Config::rate_limit>},
    {"rate_burst", ReadRate<&Config::rate_burst>},
    {"trigger_rate_limit", ReadRate<&Config::trigger_rate_limit>},
    {"trigger_burst", ReadRate<&Config::trigger_burst>},
    {"agent_rate_limit", ReadRate<&Config::agent_rate_limit>},
    {"agent_burst", ReadRate<&Config::agent_burst>},
    {"agent_expiry", ReadDuration<&Config::agent_expiry>},
    {"log_cap", ReadLogCap},
    {"max_jobfile", ReadMaxJobfile},
    {"runs_for", ReadRetention<&Config::runs_for>},
    {"keep_last", ReadKeepLast},
    {"logs_for", ReadRetention<&Config::logs_for>},
    {"logs_max", ReadLogsMax},
    {"prune_every", ReadPruneEvery},
    {"notify", ReadNotify},
    {"mailto_channel", ReadMailtoChannel},
    {"public_url", ReadPublicUrl},
    {"log_level", ReadString<&Config::log_level>},
    {"event_log", ReadString<&Config::event_log>},
    {"tls_cert", ReadString<&Config::tls_cert>},
    {"tls_key", ReadString<&Config::tls_key>},
    {"tls_client_ca", ReadString<&Config::tls_client_ca>},
};

// The checks of keys together, once each key is valid on its own; the first that fails.
Status CheckTogether(const toml::table& root, Config& c) {
  if (c.heartbeat * 2 > c.lease_ttl) {
    return Status::InvalidArgument("heartbeat must be at most half of lease_ttl");
  }
  if (!root.contains("early_dispatch")) {
    c.early_dispatch = std::min<Millis>(c.early_dispatch, c.lease_ttl / 4);
  } else if (c.early_dispatch * 4 > c.lease_ttl) {
    return Status::InvalidArgument("early_dispatch must be at most a quarter of lease_ttl");
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
  if (c.max_inflight_bytes_per_client < jobfile_body) {
    return Status::InvalidArgument(
        "max_inflight_per_client must hold a whole job file (max_jobfile plus a quarter)");
  }
  if (c.max_inflight_bytes < c.max_inflight_bytes_per_client) {
    return Status::InvalidArgument("max_inflight must be at least max_inflight_per_client");
  }
  if (!c.mailto_channel.empty()) {
    const NotifyChannelConfig* m = FindChannel(c, c.mailto_channel);
    if (m == nullptr || m->type != "email") {
      return Status::InvalidArgument("mailto_channel: \"" + c.mailto_channel +
                                     "\" is not an email channel of [notify]");
    }
  }
  return CheckTlsFiles(c);
}

}  // namespace

const NotifyChannelConfig* FindChannel(const CoordinatorConfig& c, std::string_view name) {
  for (const NotifyChannelConfig& ch : c.notify_channels) {
    if (ch.name == name) return &ch;
  }
  return nullptr;
}

Status CheckStoreUrl(const std::string& url) {
  if (url.empty()) return Status::Ok();
  if (url.size() > 4096) return Status::InvalidArgument("store: the URL is longer than 4 KiB");
  if (url.rfind("postgresql://", 0) != 0 && url.rfind("postgres://", 0) != 0) {
    return Status::InvalidArgument(
        "store: expected a postgresql:// URL, e.g. postgresql://jobctl@db1,db2/jobctl?"
        "target_session_attrs=read-write (without --store, the embedded store in the data "
        "directory)");
  }
  return Status::Ok();
}

std::string RedactStoreUrl(const std::string& url) {
  std::string out = url;
  // postgresql://user:password@host...: the password ends at the last '@' of the authority.
  size_t scheme = out.find("://");
  if (scheme != std::string::npos) {
    size_t start = scheme + 3;
    size_t end = out.find_first_of("/?", start);
    size_t at = out.rfind('@', end == std::string::npos ? out.size() : end);
    if (at != std::string::npos && at >= start) {
      size_t colon = out.find(':', start);
      if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
    }
  }
  // ...?password=secret&...
  for (size_t p = out.find("password="); p != std::string::npos; p = out.find("password=", p)) {
    size_t begin = p + 9;
    size_t end = out.find('&', begin);
    out.replace(begin, (end == std::string::npos ? out.size() : end) - begin, "***");
    p = begin + 3;
  }
  return out;
}

Result<CoordinatorConfig> ParseCoordinatorConfig(std::string_view text, std::string_view filename) {
  Result<toml::table> root = ParseTomlFile(text, filename);
  if (!root.ok()) return root.status();
  CoordinatorConfig c;
  KeyProblems problems(filename);
  ReadKeys(*root, kCoordinatorKeys, problems, c);
  if (!problems.empty()) return problems.ToStatus();
  if (Status s = CheckTogether(*root, c); !s.ok()) {
    return Status::InvalidArgument(std::string(filename) + ": " + s.message());
  }
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
