// What a notification looks like on the wire: the mail (subject, RFC 5322 message) and the
// webhook (JSON body, HMAC signature). Pure functions of their arguments; any thread.
//
// Whatever a job name, host, output or address holds, a rendering cannot be made to carry
// more than it says: a subject is one line of at most kMaxSubjectBytes with every control
// character replaced, a mail header never gets a CR or LF from data, text that is not UTF-8
// is repaired (U+FFFD), and the JSON is always valid UTF-8.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "notify/notification.h"

namespace jobctl::notify {

inline constexpr size_t kMaxSubjectBytes = 200;

// A subject a person can triage:
//   "jobctl: backup failed on db-03 (exit 2)"
//   "jobctl: backup timed out on db-03 +2 more after 1h"
//   "jobctl: backup still failing (5 failures since 2026-11-26 03:00 UTC)"
//   "jobctl: backup recovered"
//   "jobctl: backup overdue: no success for 26h (expect_success_within 1d)"
//   "jobctl: test notification from channel ops"
// One line, valid UTF-8, at most kMaxSubjectBytes bytes ("…" where it was cut).
std::string Subject(const Notification& n);

// The complete mail as sent after DATA (RFC 5322, CRLF line ends, every line at most 998
// bytes): Date (now_ms), From, To, Subject (RFC 2047 when not ASCII), Message-ID
// <delivery_id@jobctl>, MIME-Version, Content-Type text/plain; charset=utf-8, a
// Content-Transfer-Encoding of 7bit or, when the body needs it, quoted-printable;
// Auto-Submitted: auto-generated. The body: the run's summary, each failed shard's output
// tail (indented), and the commands that show the rest. Lines starting with "." are left as
// they are: the SMTP client dot-stuffs them.
std::string EmailMessage(const EmailChannel& channel, const Notification& n, int64_t now_ms);

// The webhook's JSON body: delivery_id, created, event, reminder, failures_since,
// failing_since, job, run_id, reason, state, trace_id, scheduled, started, finished (RFC 3339
// UTC, or null), detail, shards[{index, host, attempt, exit_code, signal, outcome,
// output_tail, output_pruned}], links{run, logs_command} (null when unknown), and `text`: a
// one-paragraph summary for chat receivers (Slack, Teams), with &, < and > written as
// &amp; &lt; &gt; so that nothing in it becomes a mention or a link.
std::string WebhookBody(const Notification& n);

// "v1=" + lowercase hex HMAC-SHA256(secret, "<timestamp_s>.<body>"): the X-Jobctl-Signature
// of a webhook sent at timestamp_s (Unix seconds, X-Jobctl-Timestamp).
std::string Signature(std::string_view secret, int64_t timestamp_s, std::string_view body);

}  // namespace jobctl::notify
