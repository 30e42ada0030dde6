// Delivers one notification to one channel and waits for the answer: SendEmail over SMTP,
// PostWebhook as an HTTP POST, both with a blocking libcurl easy handle of their own. Meant
// for one worker thread that delivers one notification at a time; calls on several threads
// at once are safe too (no shared state besides curl_global_init, done once).
//
// Both check the channel first (CheckEmailChannel, CheckWebhookChannel, which the
// coordinator also calls when it loads coordinator.toml), then deliver. An error names the
// channel, the URL as scheme://host:port/path (never its user name, password or query, which
// may carry keys) and the reason, and never holds the password or the secret:
//   notify channel "ops": smtp://127.0.0.1:2525: login denied (535)
//   notify channel "chat": https://hooks.example.com:443/x: HTTP 500: <first 200 bytes>
// Codes: kInvalidArgument for a channel that fails its check (or a CA file curl cannot
// read); kUnavailable when trying again later may help (cannot connect, timeout, TLS
// handshake, SMTP 4xx, HTTP 408, 429 and 5xx); kUnauthenticated when the SMTP server refused
// the login; kPermissionDenied when the server refused this delivery for good (SMTP 5xx,
// other HTTP codes than 2xx).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "notify/notification.h"

namespace jobctl::notify {

inline constexpr size_t kMaxUrlBytes = 2048;
inline constexpr size_t kMaxRecipients = 100;
inline constexpr int64_t kMaxTimeoutMs = 600'000;

// Whether the channel can be used: a name; an smtp:// or smtps:// URL with a host and
// nothing else than an optional port and path (at most kMaxUrlBytes); a sane `from` and 1 to
// kMaxRecipients sane `to` addresses (local@domain, printable ASCII, no space, <, >, comma,
// semicolon, quote or backslash); a password only with a user name, and sent in clear
// (smtp:// with starttls kNone) only to a loopback host; a readable ca_file when set; a
// timeout from 1 ms to kMaxTimeoutMs. kInvalidArgument naming the channel and the field.
Status CheckEmailChannel(const EmailChannel& channel);

// The same for a webhook: an http:// or https:// URL with a host (at most kMaxUrlBytes), a
// secret of at most 1 KiB, a readable ca_file when set, a timeout from 1 ms to kMaxTimeoutMs.
Status CheckWebhookChannel(const WebhookChannel& channel);

// The URL as it may be shown: scheme://host:port/path, with the default port written out
// (and no path when it is just "/"); no user name, password, query or fragment, and a path
// segment longer than 12 bytes shown as its first 4 and "..." (chat services put their key
// in the path). "(invalid URL)" when it does not parse.
std::string PrintableUrl(std::string_view url);

// Sends EmailMessage(channel, n, now_ms) to channel.to from channel.from. Ok once the server
// accepted the message for every recipient.
Status SendEmail(const EmailChannel& channel, const Notification& n, int64_t now_ms);

// POSTs WebhookBody(n) with Content-Type: application/json, User-Agent: jobctl/<version>,
// X-Jobctl-Delivery: <delivery_id>, X-Jobctl-Timestamp: <now_ms / 1000> and, with a secret,
// X-Jobctl-Signature: Signature(secret, timestamp, body). Ok only on a 2xx answer; redirects
// are not followed; at most 4 KiB of the answer is read.
Status PostWebhook(const WebhookChannel& channel, const Notification& n, int64_t now_ms);

}  // namespace jobctl::notify
