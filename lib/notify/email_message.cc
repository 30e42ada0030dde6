// EmailMessage(): the mail as RFC 5322 text. Headers are built only from cleaned values (no
// CR or LF can come from data), the subject is RFC 2047 encoded when it is not plain ASCII,
// and the body goes as 7bit when it is short-lined ASCII, else as quoted-printable, so that
// no server needs 8BITMIME and no line exceeds 998 bytes whatever a job printed.
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "base/base64.h"
#include "notify/render.h"
#include "notify/text.h"

namespace jobctl::notify {
namespace {

using internal::Lines;
using internal::OneLine;
using internal::PeopleTime;

constexpr size_t kMaxLine = 998;  // RFC 5322 2.1.1, without the CRLF
constexpr size_t kQpLine = 76;    // RFC 2045 6.7 (5)

// RFC 5322 3.3: "Thu, 26 Nov 2026 14:27:03 +0000".
std::string MailDate(int64_t unix_ms) {
  std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  static const char* const kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static const char* const kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%s, %d %s %04d %02d:%02d:%02d +0000", kDays[tm.tm_wday % 7],
                tm.tm_mday, kMonths[tm.tm_mon % 12], tm.tm_year + 1900, tm.tm_hour, tm.tm_min,
                tm.tm_sec);
  return buf;
}

// An address as it may stand in a header: printable ASCII without the characters that
// would start another address, a comment or a line. The channel check rejects such
// addresses before sending; this keeps a header safe even for an unchecked channel.
std::string HeaderAddress(std::string_view address) {
  std::string out;
  for (char c : address.substr(0, 254)) {
    if (c > ' ' && c < 0x7f && std::string_view("<>,;\"\\()[]:").find(c) == std::string_view::npos)
      out += c;
  }
  return out;
}

bool IsPlainAscii(std::string_view text) {
  for (char c : text) {
    if (c < ' ' || c > '~') return false;
  }
  return text.find("=?") == std::string_view::npos;
}

// RFC 2047 encoded-words ("=?UTF-8?B?...?="), each at most 75 characters and holding whole
// UTF-8 characters, folded onto continuation lines.
std::string EncodeHeaderText(std::string_view text) {
  if (IsPlainAscii(text)) return std::string(text);
  std::string out;
  while (!text.empty()) {
    size_t take = std::min<size_t>(45, text.size());  // 45 bytes = 60 base64 characters
    while (take < text.size() && take > 0 &&
           (static_cast<unsigned char>(text[take]) & 0xC0) == 0x80) {
      --take;
    }
    if (take == 0) take = std::min<size_t>(45, text.size());
    if (!out.empty()) out += "\r\n ";
    out += "=?UTF-8?B?" + Base64Encode(text.substr(0, take)) + "?=";
    text.remove_prefix(take);
  }
  return out;
}

bool NeedsQuotedPrintable(const std::vector<std::string>& lines) {
  for (const std::string& line : lines) {
    if (line.size() > kMaxLine) return true;
    for (char c : line) {
      if (static_cast<unsigned char>(c) >= 0x80) return true;
    }
  }
  return false;
}

// RFC 2045 6.7: every line at most 76 characters, soft breaks ("=") where a line was cut.
std::string QuotedPrintableLine(std::string_view line) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  size_t width = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(line[i]);
    bool last = i + 1 == line.size();
    std::string piece;
    if ((c >= 33 && c <= 126 && c != '=') || ((c == ' ' || c == '\t') && !last)) {
      piece = std::string(1, static_cast<char>(c));
    } else {
      piece = {'=', kHex[c >> 4], kHex[c & 15]};
    }
    if (width + piece.size() > kQpLine - 1) {  // room for the soft break's "="
      out += "=\r\n";
      width = 0;
    }
    out += piece;
    width += piece.size();
  }
  return out;
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (;;) {
    size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end == std::string::npos ? end : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return lines;
}

void AddField(std::string* body, std::string_view label, const std::string& value) {
  if (value.empty()) return;
  std::string padded(label);
  padded += ':';
  padded.resize(std::max<size_t>(padded.size() + 1, 12), ' ');
  *body += padded + value + "\n";
}

std::string Describe(const ShardFacts& s) {
  std::string line = "shard " + std::to_string(s.index);
  if (!s.host.empty()) line += " on " + OneLine(s.host);
  line += ": attempt " + std::to_string(s.attempt);
  if (s.exit_code) line += ", exit " + std::to_string(*s.exit_code);
  if (s.signal) line += ", signal " + std::to_string(*s.signal);
  if (!s.outcome.empty()) line += ", " + OneLine(s.outcome);
  return line;
}

void AddSummary(std::string* body, const Notification& n) {
  AddField(body, "Job", OneLine(n.job));
  AddField(body, "Run", n.run_id > 0 ? std::to_string(n.run_id) : "");
  std::string state = OneLine(n.run_state);
  if (!n.run_reason.empty()) {
    state += (state.empty() ? "" : " ") + std::string("(reason: ") + OneLine(n.run_reason) + ")";
  }
  AddField(body, "State", state);
  AddField(body, "Scheduled", n.scheduled_ms > 0 ? PeopleTime(n.scheduled_ms) : "");
  AddField(body, "Started", n.started_ms > 0 ? PeopleTime(n.started_ms) : "");
  std::string finished = n.finished_ms > 0 ? PeopleTime(n.finished_ms) : "";
  if (!finished.empty() && n.started_ms > 0 && n.finished_ms >= n.started_ms) {
    finished += " (took " + internal::PeopleDuration(n.finished_ms - n.started_ms) + ")";
  }
  AddField(body, "Finished", finished);
  AddField(body, "Trace id", OneLine(n.trace_id));
  if (n.reminder && n.failures_since > 0) {
    std::string streak = std::to_string(n.failures_since) + " failures";
    if (n.failing_since_ms > 0) streak += " since " + PeopleTime(n.failing_since_ms);
    AddField(body, "Failing", streak);
  }
  AddField(body, "Detail", OneLine(n.detail));
}

void AddShards(std::string* body, const Notification& n) {
  if (n.shards.empty()) return;
  *body += "\nShards:\n";
  for (const ShardFacts& s : n.shards) *body += "  " + Describe(s) + "\n";
  for (const ShardFacts& s : n.shards) {
    if (!IsFailedShard(s)) continue;
    std::string title = "shard " + std::to_string(s.index);
    if (!s.host.empty()) title += " on " + OneLine(s.host);
    if (s.output_pruned && s.output_tail.empty()) {
      *body += "\nOutput of " + title + ": output pruned\n";
      continue;
    }
    if (s.output_tail.empty()) {
      *body += "\nOutput of " + title + ": no output\n";
      continue;
    }
    *body += "\nLast lines of output of " + title + ":\n";
    std::string tail = Lines(s.output_tail);
    if (!tail.empty() && tail.back() == '\n') tail.pop_back();
    for (const std::string& line : SplitLines(tail)) *body += "    " + line + "\n";
    if (s.output_pruned) *body += "  (output pruned: older output is no longer kept)\n";
  }
}

void AddWhereToLook(std::string* body, const Notification& n) {
  std::string look;
  if (n.run_id > 0) look += "  jobctl logs " + std::to_string(n.run_id) + "\n";
  if (!n.job.empty()) look += "  jobctl runs " + internal::ShellWord(n.job) + "\n";
  if (std::string link = internal::RunLink(n); !link.empty()) look += "  " + link + "\n";
  if (!look.empty()) *body += "\nTo see the rest:\n" + look;
}

std::string Body(const EmailChannel& channel, const Notification& n) {
  std::string body = internal::Headline(n) + "\n\n";
  if (n.event == "test") {
    body += "This is a test notification from jobctl to the channel \"" + OneLine(channel.name) +
            "\". If you can read it, the channel works.\n";
  } else {
    AddSummary(&body, n);
    AddShards(&body, n);
    AddWhereToLook(&body, n);
  }
  body += "\n-- \njobctl, delivery " + OneLine(n.delivery_id) + "\n";
  return body;
}

}  // namespace

std::string EmailMessage(const EmailChannel& channel, const Notification& unbounded,
                         int64_t now_ms) {
  const Notification n = internal::Bounded(unbounded);
  std::vector<std::string> lines = SplitLines(Body(channel, n));
  bool qp = NeedsQuotedPrintable(lines);
  std::string to;
  for (const std::string& address : channel.to) {
    if (!to.empty()) to += ",\r\n ";
    to += HeaderAddress(address);
  }
  std::string m;
  m += "Date: " + MailDate(now_ms) + "\r\n";
  m += "From: jobctl <" + HeaderAddress(channel.from) + ">\r\n";
  m += "To: " + to + "\r\n";
  m += "Subject: " + EncodeHeaderText(Subject(n)) + "\r\n";
  m += "Message-ID: <" + internal::Token(n.delivery_id) + "@jobctl>\r\n";
  m += "MIME-Version: 1.0\r\n";
  m += "Content-Type: text/plain; charset=utf-8\r\n";
  m += std::string("Content-Transfer-Encoding: ") + (qp ? "quoted-printable" : "7bit") + "\r\n";
  m += "Auto-Submitted: auto-generated\r\n";
  m += "X-Jobctl-Delivery: " + internal::Token(n.delivery_id) + "\r\n";
  m += "X-Jobctl-Event: " + internal::Token(n.event) + "\r\n";
  m += "\r\n";
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  for (const std::string& line : lines) m += (qp ? QuotedPrintableLine(line) : line) + "\r\n";
  return m;
}

}  // namespace jobctl::notify
