#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/base64.h"
#include "notify/curl_easy.h"
#include "notify/render.h"
#include "notify/send.h"
#include "notify/text.h"

namespace jobctl::notify {
namespace {

constexpr int64_t kMs = 1000;
constexpr int64_t kT0 = 1795662000 * kMs;  // 2026-11-26 03:00:00 UTC

Notification FailedBackup() {
  Notification n;
  n.delivery_id = "d-42-1";
  n.created_ms = kT0 + 66 * kMs;
  n.event = "failed";
  n.job = "backup";
  n.run_id = 1234;
  n.run_state = "failed";
  n.run_reason = "schedule";
  n.trace_id = "4bf92f3577b34da6";
  n.scheduled_ms = kT0;
  n.started_ms = kT0 + 1 * kMs;
  n.finished_ms = kT0 + 66 * kMs;
  n.coordinator = "https://ctl:7070/";
  n.shards.push_back({.index = 0,
                      .host = "db-03",
                      .attempt = 2,
                      .exit_code = 2,
                      .outcome = "failed",
                      .output_tail = "dumping tables\npg_dump: error: connection refused\n"});
  n.shards.push_back(
      {.index = 1, .host = "db-04", .attempt = 1, .exit_code = 0, .outcome = "succeeded"});
  return n;
}

EmailChannel Ops() {
  EmailChannel c;
  c.name = "ops";
  c.url = "smtp://mail.example.com:587";
  c.from = "jobctl@example.com";
  c.to = {"oncall@example.com", "backup-team@example.com"};
  return c;
}

bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

struct Mail {
  std::vector<std::string> header_lines;  // as sent, without CRLF
  std::string body;                       // as sent, CRLF line ends
};

Mail Split(const std::string& message) {
  Mail mail;
  size_t end = message.find("\r\n\r\n");
  EXPECT_NE(end, std::string::npos);
  std::string head = message.substr(0, end);
  mail.body = message.substr(end + 4);
  size_t start = 0;
  for (;;) {
    size_t eol = head.find("\r\n", start);
    mail.header_lines.push_back(head.substr(start, eol == std::string::npos ? eol : eol - start));
    if (eol == std::string::npos) break;
    start = eol + 2;
  }
  return mail;
}

// The value of header `name` with its continuation lines unfolded ("" when absent).
std::string Header(const Mail& mail, const std::string& name) {
  for (size_t i = 0; i < mail.header_lines.size(); ++i) {
    const std::string& line = mail.header_lines[i];
    if (line.rfind(name + ": ", 0) != 0) continue;
    std::string value = line.substr(name.size() + 2);
    for (size_t k = i + 1; k < mail.header_lines.size() && !mail.header_lines[k].empty() &&
                           mail.header_lines[k][0] == ' ';
         ++k) {
      value += mail.header_lines[k];
    }
    return value;
  }
  return "";
}

std::string DecodeQuotedPrintable(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '=') {
      out += text[i];
    } else if (text.compare(i + 1, 2, "\r\n") == 0) {
      i += 2;
    } else {
      out += static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16));
      i += 2;
    }
  }
  return out;
}

// Every line ends in CRLF (no bare CR or LF) and holds at most 998 bytes.
void ExpectWellFormedLines(const std::string& message) {
  size_t start = 0;
  while (start < message.size()) {
    size_t eol = message.find("\r\n", start);
    ASSERT_NE(eol, std::string::npos) << "the message does not end in CRLF";
    std::string line = message.substr(start, eol - start);
    EXPECT_LE(line.size(), 998u);
    EXPECT_EQ(line.find_first_of("\r\n"), std::string::npos) << "bare CR or LF in: " << line;
    start = eol + 2;
  }
}

// --- Subject ---------------------------------------------------------------------------

TEST(SubjectTest, FailedRunNamesTheJobTheHostAndTheExit) {
  EXPECT_EQ(Subject(FailedBackup()), "jobctl: backup failed on db-03 (exit 2)");
}

TEST(SubjectTest, OtherFailedHostsAreCounted) {
  Notification n = FailedBackup();
  n.shards.push_back({.index = 2, .host = "db-05", .exit_code = 1, .outcome = "failed"});
  n.shards.push_back({.index = 3, .host = "db-06", .outcome = "lost"});
  EXPECT_EQ(Subject(n), "jobctl: backup failed on db-03 +2 more (exit 2)");
}

TEST(SubjectTest, KilledBySignalSaysTheSignal) {
  Notification n = FailedBackup();
  n.shards[0].exit_code.reset();
  n.shards[0].signal = 9;
  EXPECT_EQ(Subject(n), "jobctl: backup failed on db-03 (signal 9)");
}

TEST(SubjectTest, TimeoutSaysAfterHowLong) {
  Notification n = FailedBackup();
  n.event = "timed_out";
  n.shards[0].outcome = "timed out";
  n.finished_ms = n.started_ms + 3720 * kMs;
  EXPECT_EQ(Subject(n), "jobctl: backup timed out on db-03 after 1h2m");
}

TEST(SubjectTest, ReminderSaysHowManyFailuresSinceWhen) {
  Notification n = FailedBackup();
  n.reminder = true;
  n.failures_since = 5;
  n.failing_since_ms = kT0;
  EXPECT_EQ(Subject(n), "jobctl: backup still failing (5 failures since 2026-11-26 03:00 UTC)");
}

TEST(SubjectTest, OtherEvents) {
  Notification n = FailedBackup();
  n.event = "recovered";
  n.shards.clear();
  EXPECT_EQ(Subject(n), "jobctl: backup recovered");
  n.failures_since = 3;
  EXPECT_EQ(Subject(n), "jobctl: backup recovered after 3 failures");
  n.event = "overdue";
  n.run_id = 0;
  n.detail = "no success for 26h (expect_success_within 1d)";
  EXPECT_EQ(Subject(n), "jobctl: backup overdue: no success for 26h (expect_success_within 1d)");
  n.event = "missed";
  EXPECT_EQ(Subject(n), "jobctl: backup missed its fire at 2026-11-26 03:00 UTC");
  n.event = "canceled";
  EXPECT_EQ(Subject(n), "jobctl: backup canceled");
  n.event = "agent_lost";
  n.shards.push_back({.index = 0, .host = "db-03", .outcome = "lost"});
  EXPECT_EQ(Subject(n), "jobctl: agent db-03 lost while running backup");
  Notification test;
  test.event = "test";
  test.channel = "ops";
  EXPECT_EQ(Subject(test), "jobctl: test notification from channel ops");
}

TEST(SubjectTest, NeverHoldsALineBreakOrAControlCharacter) {
  Notification n = FailedBackup();
  n.job = "backup\r\nBcc: victim@example.com\r\n\r\nbody";
  n.shards[0].host = "db\n03\x1b]0;title\x07\t\x7f";
  std::string subject = Subject(n);
  for (char c : subject) {
    EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 || c == 0x7f) << subject;
  }
  EXPECT_NE(subject.find("Bcc: victim@example.com"), std::string::npos);  // shown, inert
}

TEST(SubjectTest, IsBoundedAndCutAtACharacterBoundary) {
  Notification n = FailedBackup();
  n.job.clear();
  for (int i = 0; i < 300; ++i) n.job += "\xc3\xa9";  // é
  std::string subject = Subject(n);
  EXPECT_LE(subject.size(), kMaxSubjectBytes);
  EXPECT_GE(subject.size(), kMaxSubjectBytes - 4);
  EXPECT_TRUE(IsValidUtf8(subject));
  EXPECT_EQ(subject.substr(subject.size() - 3), "\xe2\x80\xa6");  // …
}

TEST(SubjectTest, BytesThatAreNotUtf8AreShownNotPassed) {
  Notification n = FailedBackup();
  n.job = "back\xff\xfeup";
  std::string subject = Subject(n);
  EXPECT_TRUE(IsValidUtf8(subject));
  EXPECT_NE(subject.find("back\\xff\\xfeup"), std::string::npos) << subject;
}

// --- EmailMessage ----------------------------------------------------------------------

TEST(EmailMessageTest, HasTheHeadersOfAPlainTextMail) {
  std::string message = EmailMessage(Ops(), FailedBackup(), kT0 + 70 * kMs);
  ExpectWellFormedLines(message);
  Mail mail = Split(message);
  EXPECT_EQ(Header(mail, "Date"), "Thu, 26 Nov 2026 03:01:10 +0000");
  EXPECT_EQ(Header(mail, "From"), "jobctl <jobctl@example.com>");
  EXPECT_EQ(Header(mail, "To"), "oncall@example.com, backup-team@example.com");
  EXPECT_EQ(Header(mail, "Subject"), "jobctl: backup failed on db-03 (exit 2)");
  EXPECT_EQ(Header(mail, "Message-ID"), "<d-42-1@jobctl>");
  EXPECT_EQ(Header(mail, "MIME-Version"), "1.0");
  EXPECT_EQ(Header(mail, "Content-Type"), "text/plain; charset=utf-8");
  EXPECT_EQ(Header(mail, "Content-Transfer-Encoding"), "7bit");
  EXPECT_EQ(Header(mail, "Auto-Submitted"), "auto-generated");
}

TEST(EmailMessageTest, BodyHoldsTheSummaryTheOutputAndWhereToLook) {
  std::string body = Split(EmailMessage(Ops(), FailedBackup(), kT0)).body;
  for (const char* want :
       {"backup failed on db-03 (exit 2)\r\n", "Job:        backup\r\n", "Run:        1234\r\n",
        "State:      failed (reason: schedule)\r\n", "Scheduled:  2026-11-26 03:00 UTC\r\n",
        "Started:    2026-11-26 03:00:01 UTC\r\n",
        "Finished:   2026-11-26 03:01:06 UTC (took 1m5s)\r\n", "Trace id:   4bf92f3577b34da6\r\n",
        "  shard 0 on db-03: attempt 2, exit 2, failed\r\n",
        "  shard 1 on db-04: attempt 1, exit 0, succeeded\r\n",
        "Last lines of output of shard 0 on db-03:\r\n"
        "    dumping tables\r\n"
        "    pg_dump: error: connection refused\r\n",
        "  jobctl logs 1234\r\n", "  jobctl runs backup\r\n",
        "  https://ctl:7070/v1/runs/1234\r\n"}) {
    EXPECT_NE(body.find(want), std::string::npos) << "missing: " << want << "\nin:\n" << body;
  }
  // Only the failed shard's output is shown.
  EXPECT_EQ(body.find("Last lines of output of shard 1"), std::string::npos);
}

TEST(EmailMessageTest, PrunedOutputIsSaidSo) {
  Notification n = FailedBackup();
  n.shards[0].output_tail.clear();
  n.shards[0].output_pruned = true;
  std::string body = Split(EmailMessage(Ops(), n, kT0)).body;
  EXPECT_NE(body.find("Output of shard 0 on db-03: output pruned\r\n"), std::string::npos) << body;
}

TEST(EmailMessageTest, HeaderInjectionThroughDataIsImpossible) {
  Notification n = FailedBackup();
  n.job = "backup\r\nBcc: victim@example.com";
  n.shards[0].host = "db-03\nBcc: victim@example.com";
  n.delivery_id = "d-1>\r\nBcc: victim@example.com";
  n.event = "failed\r\nBcc: victim@example.com";
  EmailChannel c = Ops();
  c.from = "jobctl@example.com>\r\nBcc: victim@example.com";
  c.to = {"oncall@example.com\r\nBcc: victim@example.com", "a@b.c>, victim@example.com"};
  std::string message = EmailMessage(c, n, kT0);
  ExpectWellFormedLines(message);
  Mail mail = Split(message);
  const std::vector<std::string> known = {"Date",
                                          "From",
                                          "To",
                                          "Subject",
                                          "Message-ID",
                                          "MIME-Version",
                                          "Content-Type",
                                          "Content-Transfer-Encoding",
                                          "Auto-Submitted",
                                          "X-Jobctl-Delivery",
                                          "X-Jobctl-Event"};
  for (const std::string& line : mail.header_lines) {
    if (!line.empty() && line[0] == ' ') continue;  // a continuation of the line before
    std::string name = line.substr(0, line.find(':'));
    EXPECT_NE(std::find(known.begin(), known.end(), name), known.end()) << "header: " << line;
  }
  EXPECT_EQ(Header(mail, "To").find('<'), std::string::npos);
  // Each configured address stays one address, however garbled: no comma of its own.
  std::string to = Header(mail, "To");
  EXPECT_EQ(std::count(to.begin(), to.end(), ','), 1) << to;
}

TEST(EmailMessageTest, MessageIdIsADotAtomWhateverTheDeliveryId) {
  EXPECT_EQ(internal::Token("d-42-1"), "d-42-1");
  EXPECT_EQ(internal::Token("6f1c.9a+b_c"), "6f1c.9a+b_c");
  EXPECT_EQ(internal::Token(".a..b:c d@e>."), "_a._b_c_d_e__");
  EXPECT_EQ(internal::Token(""), "_");
}

TEST(EmailMessageTest, NonAsciiSubjectIsEncodedWordsOfWholeCharacters) {
  Notification n = FailedBackup();
  n.job = "sauvegarde-\xc3\xa9t\xc3\xa9-";
  for (int i = 0; i < 20; ++i) n.job += "\xe6\x97\xa5";  // 日
  Mail mail = Split(EmailMessage(Ops(), n, kT0));
  std::string value = Header(mail, "Subject");
  std::string decoded;
  for (size_t at = value.find("=?UTF-8?B?"); at != std::string::npos;
       at = value.find("=?UTF-8?B?", at + 1)) {
    size_t end = value.find("?=", at + 10);
    ASSERT_NE(end, std::string::npos);
    EXPECT_LE(end + 2 - at, 75u);
    std::string word = Base64Decode(value.substr(at + 10, end - at - 10));
    EXPECT_TRUE(IsValidUtf8(word));  // no character split across words
    decoded += word;
  }
  EXPECT_EQ(decoded, Subject(n));
}

TEST(EmailMessageTest, LongOrNonAsciiOutputGoesQuotedPrintable) {
  Notification n = FailedBackup();
  std::string long_line(3000, 'x');
  n.shards[0].output_tail =
      "gr\xc3\xbc\xc3\x9f"
      "e = 1\n" +
      long_line + "\n.\n";
  std::string message = EmailMessage(Ops(), n, kT0);
  ExpectWellFormedLines(message);
  Mail mail = Split(message);
  EXPECT_EQ(Header(mail, "Content-Transfer-Encoding"), "quoted-printable");
  size_t start = 0;
  while (start < mail.body.size()) {
    size_t eol = mail.body.find("\r\n", start);
    EXPECT_LE(eol - start, 76u);
    start = eol + 2;
  }
  std::string body = DecodeQuotedPrintable(mail.body);
  EXPECT_NE(body.find("    gr\xc3\xbc\xc3\x9f"
                      "e = 1\r\n    " +
                      long_line + "\r\n    .\r\n"),
            std::string::npos);
}

TEST(EmailMessageTest, TestNotificationSaysWhichChannel) {
  Notification n;
  n.delivery_id = "t-1";
  n.event = "test";
  n.channel = "ops";
  Mail mail = Split(EmailMessage(Ops(), n, kT0));
  EXPECT_EQ(Header(mail, "Subject"), "jobctl: test notification from channel ops");
  EXPECT_NE(mail.body.find("channel \"ops\""), std::string::npos);
}

// --- WebhookBody -------------------------------------------------------------------------

TEST(WebhookBodyTest, HasTheFields) {
  Notification n = FailedBackup();
  auto j = nlohmann::json::parse(WebhookBody(n));
  EXPECT_EQ(j["delivery_id"], "d-42-1");
  EXPECT_EQ(j["created"], "2026-11-26T03:01:06Z");
  EXPECT_EQ(j["event"], "failed");
  EXPECT_EQ(j["reminder"], false);
  EXPECT_EQ(j["job"], "backup");
  EXPECT_EQ(j["run_id"], 1234);
  EXPECT_EQ(j["reason"], "schedule");
  EXPECT_EQ(j["state"], "failed");
  EXPECT_EQ(j["trace_id"], "4bf92f3577b34da6");
  EXPECT_EQ(j["scheduled"], "2026-11-26T03:00:00Z");
  EXPECT_EQ(j["started"], "2026-11-26T03:00:01Z");
  EXPECT_EQ(j["finished"], "2026-11-26T03:01:06Z");
  EXPECT_TRUE(j["failing_since"].is_null());
  ASSERT_EQ(j["shards"].size(), 2u);
  EXPECT_EQ(j["shards"][0]["index"], 0);
  EXPECT_EQ(j["shards"][0]["host"], "db-03");
  EXPECT_EQ(j["shards"][0]["attempt"], 2);
  EXPECT_EQ(j["shards"][0]["exit_code"], 2);
  EXPECT_TRUE(j["shards"][0]["signal"].is_null());
  EXPECT_EQ(j["shards"][0]["outcome"], "failed");
  EXPECT_EQ(j["shards"][0]["output_tail"], n.shards[0].output_tail);
  EXPECT_EQ(j["shards"][0]["output_pruned"], false);
  EXPECT_EQ(j["links"]["run"], "https://ctl:7070/v1/runs/1234");
  EXPECT_EQ(j["links"]["logs_command"], "jobctl logs 1234");
  EXPECT_EQ(j["text"],
            "jobctl: backup failed on db-03 (exit 2). Run 1234 (schedule), trace "
            "4bf92f3577b34da6. See `jobctl logs 1234` or https://ctl:7070/v1/runs/1234.");
}

TEST(WebhookBodyTest, WithoutARunTheRunFieldsAreNull) {
  Notification n;
  n.delivery_id = "d-9";
  n.event = "overdue";
  n.job = "backup";
  n.detail = "no success for 26h";
  auto j = nlohmann::json::parse(WebhookBody(n));
  EXPECT_TRUE(j["run_id"].is_null());
  EXPECT_TRUE(j["scheduled"].is_null());
  EXPECT_TRUE(j["links"]["run"].is_null());
  EXPECT_TRUE(j["links"]["logs_command"].is_null());
  EXPECT_EQ(j["shards"], nlohmann::json::array());
  EXPECT_EQ(j["text"], "jobctl: backup overdue: no success for 26h.");
}

TEST(WebhookBodyTest, TextEscapesChatMarkup) {
  Notification n = FailedBackup();
  n.job = "<!channel> & <https://evil.example|click>";
  auto j = nlohmann::json::parse(WebhookBody(n));
  std::string text = j["text"];
  EXPECT_EQ(text.find('<'), std::string::npos) << text;
  EXPECT_NE(text.find("&lt;!channel&gt; &amp; &lt;https://evil.example|click&gt;"),
            std::string::npos)
      << text;
  EXPECT_EQ(j["job"], n.job);  // the field itself is the job's name as it is
}

TEST(WebhookBodyTest, IsValidJsonWhateverTheBytes) {
  Notification n = FailedBackup();
  n.shards[0].output_tail = std::string("ok\xff\xfe\x00\x1b[2J", 9);
  n.job = "b\xc3";
  std::string body = WebhookBody(n);
  EXPECT_TRUE(IsValidUtf8(body));
  auto j = nlohmann::json::parse(body);
  EXPECT_EQ(j["shards"][0]["output_tail"].get<std::string>().substr(0, 2), "ok");
}

TEST(BoundsTest, HugeInputMakesABoundedMailAndWebhook) {
  Notification n = FailedBackup();
  n.job = std::string(100000, 'j');
  n.detail = std::string(100000, 'd');
  n.shards.clear();
  for (int i = 0; i < 100; ++i) {
    n.shards.push_back({.index = i,
                        .host = std::string(5000, 'h'),
                        .exit_code = 1,
                        .outcome = "failed",
                        .output_tail = std::string(100000, 'x') + "\nthe last line\n"});
  }
  std::string mail = EmailMessage(Ops(), n, kT0);
  EXPECT_LT(mail.size(), 200000u);
  ExpectWellFormedLines(mail);
  EXPECT_NE(DecodeQuotedPrintable(Split(mail).body).find("    the last line\r\n"),
            std::string::npos);
  std::string body = WebhookBody(n);
  EXPECT_LT(body.size(), 200000u);
  auto j = nlohmann::json::parse(body);
  EXPECT_EQ(j["shards"].size(), 16u);
  std::string tail = j["shards"][0]["output_tail"];
  EXPECT_LE(tail.size(), 4096u);
  EXPECT_EQ(tail.substr(tail.size() - 14), "the last line\n");
}

TEST(BoundsTest, TailStartsAtALineOrACharacter) {
  EXPECT_EQ(internal::TailOf("abc\ndef\nghi\n", 100), "abc\ndef\nghi\n");
  EXPECT_EQ(internal::TailOf("aaaaaaaaaaaaaaaaaaaa\nbbbbbbbbbb\n", 12), "bbbbbbbbbb\n");
  std::string wide;
  for (int i = 0; i < 10; ++i) wide += "\xc3\xa9";  // é, 2 bytes each
  std::string tail = internal::TailOf(wide, 5);
  EXPECT_EQ(tail, "\xc3\xa9\xc3\xa9");
}

// --- Signature ---------------------------------------------------------------------------

TEST(SignatureTest, HmacMatchesRfc4231) {
  // RFC 4231 section 4.2 (test case 1) and 4.3 (test case 2), HMAC-SHA-256.
  EXPECT_EQ(internal::HmacSha256Hex(std::string(20, '\x0b'), "Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(internal::HmacSha256Hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(SignatureTest, SignsTimestampDotBody) {
  // python3 -c 'import hmac,hashlib; print(hmac.new(b"whsec_test",
  //   b"1700000000.{\"a\":1}", hashlib.sha256).hexdigest())'
  EXPECT_EQ(Signature("whsec_test", 1700000000, R"({"a":1})"),
            "v1=38877139021993b830af32feea6e18a8da83eb2f6e49ee50bd9e4cf4ca4d3789");
  EXPECT_NE(Signature("whsec_test", 1700000001, R"({"a":1})"),
            Signature("whsec_test", 1700000000, R"({"a":1})"));
}

// --- Channels ----------------------------------------------------------------------------

TEST(ChannelCheckTest, AcceptsAGoodEmailChannel) {
  EXPECT_TRUE(CheckEmailChannel(Ops()).ok()) << CheckEmailChannel(Ops()).ToString();
  EmailChannel c = Ops();
  c.url = "smtps://mail.example.com";
  c.username = "jobctl";
  c.password = "hunter22";
  EXPECT_TRUE(CheckEmailChannel(c).ok());
}

TEST(ChannelCheckTest, RejectsBadEmailChannels) {
  auto expect_invalid = [](const EmailChannel& c, const std::string& says) {
    Status s = CheckEmailChannel(c);
    EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << says;
    EXPECT_NE(s.message().find(says), std::string::npos) << s.message();
    EXPECT_EQ(s.message().find_first_of("\r\n"), std::string::npos);
  };
  EmailChannel c = Ops();
  c.url = "http://mail.example.com";
  expect_invalid(c, "notify channel \"ops\": url must be smtp://");
  c = Ops();
  c.url = "smtp://user:pw@mail.example.com";
  expect_invalid(c, "must not hold a user name or password");
  c = Ops();
  c.url = "smtp://" + std::string(2100, 'a') + ".com";
  expect_invalid(c, "longer than 2048 bytes");
  c = Ops();
  c.to = {"oncall@example.com\r\nBcc: victim@example.com"};
  expect_invalid(c, "is not an address like name@example.com");
  for (const char* bad : {"a b@x", "<a@x>", "a@x,b@y", "ax", "@x", "a@", "a@@x", "a@.x"}) {
    c.to = {bad};
    expect_invalid(c, "is not an address");
  }
  c = Ops();
  c.from = "Ops <ops@example.com>";
  expect_invalid(c, "from \"Ops <ops@example.com>\" is not an address");
  c = Ops();
  c.to.clear();
  expect_invalid(c, "to names no address");
  c.to.assign(101, "a@example.com");
  expect_invalid(c, "more than 100");
  c = Ops();
  c.password = "hunter22";
  expect_invalid(c, "a password without a username");
  c.username = "jobctl";
  c.starttls = EmailChannel::Tls::kNone;
  expect_invalid(c, "in clear");
  c.url = "smtp://127.0.0.1:2525";
  EXPECT_TRUE(CheckEmailChannel(c).ok());
  c = Ops();
  c.ca_file = "/nonexistent/ca.pem";
  expect_invalid(c, "ca_file \"/nonexistent/ca.pem\" cannot be read");
  c = Ops();
  c.timeout_ms = 0;
  expect_invalid(c, "timeout");
  c = Ops();
  c.name = "";
  EXPECT_EQ(CheckEmailChannel(c).code(), Status::Code::kInvalidArgument);
}

TEST(ChannelCheckTest, WebhookChannels) {
  WebhookChannel c{.name = "chat", .url = "https://hooks.example.com/services/x"};
  EXPECT_TRUE(CheckWebhookChannel(c).ok());
  c.url = "http://127.0.0.1:8080/hook";
  EXPECT_TRUE(CheckWebhookChannel(c).ok());
  c.url = "ftp://hooks.example.com/x";
  EXPECT_EQ(CheckWebhookChannel(c).code(), Status::Code::kInvalidArgument);
  c.url = "https://hooks.example.com/x\r\nX-Evil: 1";
  EXPECT_EQ(CheckWebhookChannel(c).code(), Status::Code::kInvalidArgument);
  c.url = "https://hooks.example.com/x";
  c.secret = std::string(2000, 's');
  Status s = CheckWebhookChannel(c);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s.message().find("sss"), std::string::npos);
}

TEST(PrintableUrlTest, ShowsNoUserinfoQueryOrKeyInThePath) {
  std::string shown = PrintableUrl(
      "https://user:pa55word@hooks.example.com/services/T0/B0/"
      "abcdefghijklmnopqrstuvwx?token=s3cr3t#frag");
  EXPECT_EQ(shown, "https://hooks.example.com:443/services/T0/B0/abcd...");
  EXPECT_EQ(PrintableUrl("smtp://127.0.0.1:2525"), "smtp://127.0.0.1:2525");
  EXPECT_EQ(PrintableUrl("smtps://mail.example.com"), "smtps://mail.example.com:465");
  EXPECT_EQ(PrintableUrl("not a url"), "(invalid URL)");
}

TEST(PrintableUrlTest, LoopbackIsOnlyALiteralOrLocalhost) {
  EXPECT_TRUE(internal::IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(internal::IsLoopbackHost("localhost"));
  EXPECT_TRUE(internal::IsLoopbackHost("[::1]"));
  EXPECT_FALSE(internal::IsLoopbackHost("127.example.com"));
  EXPECT_FALSE(internal::IsLoopbackHost("10.0.0.1"));
}

}  // namespace
}  // namespace jobctl::notify
