// The value types of job-failure notifications: what happened (Notification, built by the
// coordinator from a committed state change) and where it goes (EmailChannel,
// WebhookChannel, built from coordinator.toml). Plain values, safe to copy across threads.
//
// Every string may hold anything a job, an agent or a config file put there: the renderers
// (render.h) make it safe for a mail header, a body and JSON; nothing here is trusted. The
// secrets (EmailChannel::password, WebhookChannel::secret) are never printed by this library.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace jobctl::notify {

// One shard of the run, as the notification tells it.
struct ShardFacts {
  int index = 0;
  std::string host;
  int attempt = 0;
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::string outcome;      // "failed", "timed out", "lost", "succeeded", ...
  std::string output_tail;  // the last lines, already bounded by the caller (<= 4 KiB)
  bool output_pruned = false;
};

// Whether a shard counts as a failed one: its outcome says so, or, without an outcome, a
// non-zero exit or a signal.
bool IsFailedShard(const ShardFacts& shard);

struct Notification {
  std::string delivery_id;  // unique; receivers de-duplicate on it (and the mail's Message-ID)
  int64_t created_ms = 0;   // Unix ms when the state change committed
  // failed | timed_out | lost | canceled | recovered | missed | skipped | agent_lost |
  // overdue | test
  std::string event;
  bool reminder = false;         // a repeat while the job stays failing
  int failures_since = 0;        // failed runs since the first alert
  int64_t failing_since_ms = 0;  // Unix ms of the first failure of this streak (0 = unknown)
  std::string job;               // "" for a channel test
  int64_t run_id = 0;            // 0 when the event has no run (overdue, missed, test)
  std::string run_state;         // succeeded | failed | timed_out | lost | canceled | skipped ...
  std::string run_reason;        // schedule | manual | retry ...
  std::string trace_id;
  int64_t scheduled_ms = 0;  // Unix ms; 0 = not known
  int64_t started_ms = 0;
  int64_t finished_ms = 0;
  // One line the coordinator wrote, e.g. "no success for 26h (expect_success_within 1d)".
  std::string detail;
  std::vector<ShardFacts> shards;  // the failed shards first; at most 16
  std::string coordinator;         // the coordinator's public URL for links ("" = none)
  std::string channel;             // event "test": the channel being tested
};

struct EmailChannel {
  enum class Tls {
    kRequired,  // smtp://: STARTTLS or fail
    kTry,       // smtp://: STARTTLS when the server offers it, else in clear
    kNone,      // smtp://: never (with a password: only to a loopback server)
  };
  std::string name;
  std::string url;  // smtp://host:port or smtps://host:port
  std::string from;
  std::vector<std::string> to;
  std::string username;  // "" = no AUTH
  std::string password;  // read from a file by the caller; never printed
  Tls starttls = Tls::kRequired;
  std::string ca_file;         // PEM CAs trusted for the server's certificate ("" = the system's)
  int64_t timeout_ms = 30000;  // the whole delivery
};

struct WebhookChannel {
  std::string name;
  std::string url;             // http:// or https://
  std::string secret;          // HMAC key ("" = unsigned); never printed
  std::string ca_file;         // PEM CAs trusted for the server's certificate ("" = the system's)
  int64_t timeout_ms = 10000;  // the whole delivery
};

}  // namespace jobctl::notify
