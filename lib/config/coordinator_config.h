// CoordinatorConfig is what `jobctl serve` reads from /etc/jobctl/coordinator.toml (or
// --config), before flags and environment override it. Every key has a default, so an
// empty or missing default file is a working single-host setup.
#pragma once

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "base/duration.h"
#include "base/status.h"

namespace jobctl {

// One [notify.NAME] table of coordinator.toml: where notifications go. Secrets are named
// by file (password_file, secret_file) and read when the coordinator starts, never written
// in the file itself.
struct NotifyChannelConfig {
  std::string name;
  std::string type;  // "email" or "webhook"
  std::string url;   // smtp://, smtps:// (email); https://, http:// (webhook)
  std::string from;  // email
  std::vector<std::string> to;
  std::string username;
  std::string password_file;
  std::string starttls = "required";  // email over smtp://: required, try, no
  std::string secret_file;            // webhook: the HMAC key
  std::string ca_file;
  Millis timeout = std::chrono::seconds(30);
  bool operator==(const NotifyChannelConfig&) const = default;
};
constexpr size_t kMaxNotifyChannels = 64;

struct CoordinatorConfig {
  std::string listen = "127.0.0.1:7070";
  std::string data_dir = "/var/lib/jobctl";
  // The store: "" is the embedded SQLite store in data_dir; a postgresql:// URL (libpq's
  // form, multi-host lists and target_session_attrs included) is a PostgreSQL database,
  // which holds the run output too. data_dir then keeps only this host's token files.
  std::string store;
  // With a shared store: a coordinator that has not renewed its hold on the database for
  // this long has its session ended by one waiting to take over (it renews every second).
  Millis hold_ttl = std::chrono::seconds(10);
  Millis lease_ttl = std::chrono::seconds(15);
  Millis heartbeat = std::chrono::seconds(5);
  // Instants overdue by more than this when they are fired count as missed (misfire policy);
  // later than a loop hiccup, earlier than any real outage.
  Millis misfire_grace = std::chrono::seconds(30);
  // Early dispatch: a scheduled run is created and its shards granted up to this long before
  // its instant, to agents that start the child on their own clock at the instant; 0 turns it
  // off. At most 10 s and a quarter of lease_ttl (left unset: 1 s, or a quarter of lease_ttl
  // when that is less).
  Millis early_dispatch = std::chrono::seconds(1);
  // A shard that outlives its timeout by this much is failed by the coordinator (backstop for
  // an agent that vanished without losing its lease).
  Millis timeout_grace = std::chrono::seconds(60);
  // HTTP: the request line and headers must arrive within header_timeout of their first byte
  // (slowloris); a connection idle between requests, or a body that stops arriving, is closed
  // after idle_timeout (longer than any agent's keep-alive gap).
  Millis header_timeout = std::chrono::seconds(10);
  Millis idle_timeout = std::chrono::seconds(90);
  // An agent neither seen nor holding a lease for this long leaves the agent registry
  // (`jobctl agents`); its credential stays valid, and it reappears when it claims again.
  Millis agent_expiry = std::chrono::hours(24 * 7);
  // The body must arrive within body_timeout of the end of its head; a trickle of bytes does
  // not extend it.
  Millis body_timeout = std::chrono::seconds(60);
  // Connections, in all and per client address (an IPv6 client: its /64), and request bodies
  // being received (by Content-Length), in all and per client address.
  int64_t max_connections = 4096;
  int64_t max_connections_per_client = 256;
  int64_t max_inflight_bytes = 256LL << 20;
  int64_t max_inflight_bytes_per_client = 32LL << 20;
  // Requests per second per API token but admin ones, refused with 429 past a burst (token
  // buckets); 0 is no limit. A trigger token's triggers also count against their own, smaller
  // bucket. Agent tokens have their own figures.
  double rate_limit = 100;
  double rate_burst = 200;
  double trigger_rate_limit = 2;
  double trigger_burst = 20;
  double agent_rate_limit = 1000;
  double agent_burst = 2000;
  int64_t log_cap_bytes = 64LL << 20;     // per run
  int64_t max_jobfile_bytes = 8LL << 20;  // largest job file `apply` accepts
  // Retention (coordinator/pruner.h): a run that ended more than runs_for ago is deleted
  // unless it is one of the keep_last newest of its job; its output goes once logs_for has
  // passed since it was last written, or earlier when its job keeps more than logs_max
  // bytes of output. runs_for or logs_for 0: kept whatever their age; logs_max 0: no bound.
  // The pruner works in small slices every prune_every.
  Millis runs_for = std::chrono::hours(24 * 30);
  int64_t keep_last = 20;
  Millis logs_for = std::chrono::hours(24 * 7);
  int64_t logs_max_bytes = 1LL << 30;  // per job
  Millis prune_every = std::chrono::seconds(10);
  std::vector<NotifyChannelConfig> notify_channels;  // [notify.NAME], sorted by name
  // The email channel whose server sends to a job's "mailto:ADDRESS" targets ("": none).
  std::string mailto_channel;
  // The coordinator's URL as people reach it, for links in notifications ("": no links).
  std::string public_url;
  std::string log_level = "info";
  std::string event_log;  // "" = off; see lib/base/event_log.h
  // TLS: serve HTTPS with this certificate (PEM, with intermediates) and key; both or neither.
  // Re-read on SIGHUP. Without them the API is plain HTTP (for loopback).
  std::string tls_cert;
  std::string tls_key;
  // mTLS: clients must present a certificate signed by a CA in this PEM file (needs tls_cert).
  std::string tls_client_ca;
};

// Early dispatch: how long before its not_before a shard may be granted, to an agent that
// starts its child at that instant on its own clock (wire::kEarlyStartFeature). The window
// covers a burst's commits and a claim's round trip with room to spare, and is short beside
// the lease TTL, whose expiry counts from the instant: coordinator.toml's early_dispatch,
// never more than a quarter of lease_ttl; 0 is off.
inline int64_t EarlyDispatchMs(const CoordinatorConfig& config) {
  return std::min(config.early_dispatch.count(), config.lease_ttl.count() / 4);
}

// Parses the TOML text; errors read "coordinator.toml:3:9: leases.ttl: expected a duration ...".
Result<CoordinatorConfig> ParseCoordinatorConfig(std::string_view text, std::string_view filename);

// tls_cert and tls_key both or neither; tls_client_ca only with them. For flags, which
// override the file after it was parsed.
Status CheckTlsFiles(const CoordinatorConfig& c);

// "" or a postgresql:// (or postgres://) URL of at most 4 KiB. For the --store flag too.
// The [notify.NAME] channel called `name`, or nullptr.
const NotifyChannelConfig* FindChannel(const CoordinatorConfig& c, std::string_view name);

Status CheckStoreUrl(const std::string& url);

// The URL with any password in it replaced by "***", for logs and messages.
std::string RedactStoreUrl(const std::string& url);

// Reads the file; a missing file at `path` is fine when `must_exist` is false (defaults).
Result<CoordinatorConfig> LoadCoordinatorConfig(const std::string& path, bool must_exist);

}  // namespace jobctl
