// Notifications delivered by lib/notify to real receivers on 127.0.0.1: an SMTP server
// (Debian's python3-aiosmtpd) with AUTH, STARTTLS and SMTPS, and an HTTP server, started by
// testlib/notify_sinks.h. The tests read what the receivers got: the envelope, the headers
// and body of the mail, the webhook's headers, JSON and signature (recomputed here with the
// secret), and the errors a refusing or absent receiver gives.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "notify/render.h"
#include "notify/send.h"
#include "testlib/notify_sinks.h"
#include "testlib/postgres.h"

namespace jobctl::testing {
namespace {

using notify::EmailChannel;
using notify::Notification;
using notify::WebhookChannel;
using std::chrono::seconds;

constexpr int64_t kNowMs = 1795662070123;  // 2026-11-26 03:01:10.123 UTC
constexpr char kPassword[] = "correct-horse-battery";

Notification FailedBackup() {
  Notification n;
  n.delivery_id = "d-42-1";
  n.created_ms = kNowMs - 4000;
  n.event = "failed";
  n.job = "backup";
  n.run_id = 1234;
  n.run_state = "failed";
  n.run_reason = "schedule";
  n.trace_id = "4bf92f3577b34da6";
  n.scheduled_ms = 1795662000000;
  n.started_ms = 1795662001000;
  n.finished_ms = 1795662066000;
  n.coordinator = "https://ctl:7070";
  n.shards.push_back({.index = 0,
                      .host = "db-03",
                      .attempt = 2,
                      .exit_code = 2,
                      .outcome = "failed",
                      .output_tail = "dumping tables\npg_dump: error: connection refused\n"});
  return n;
}

EmailChannel Channel(const SmtpSink& sink) {
  EmailChannel c;
  c.name = "ops";
  c.url = sink.url();
  c.from = "jobctl@example.com";
  c.to = {"oncall@example.com", "backup-team@example.com"};
  c.starttls = EmailChannel::Tls::kNone;
  c.timeout_ms = 20000;
  return c;
}

// Starts an SMTP sink into *sink; skips the test without aiosmtpd (fails under CI=true).
void StartSmtpSink(const SmtpSink::Options& options, std::unique_ptr<SmtpSink>* sink) {
  Result<std::unique_ptr<SmtpSink>> started = SmtpSink::Start(options);
  if (started.ok()) {
    *sink = std::move(*started);
    return;
  }
  if (started.status().code() != Status::Code::kNotFound || RunningInCi()) {
    FAIL() << started.status().ToString();
  }
  GTEST_SKIP() << "no SMTP server for the test: " << started.status().message();
}

std::unique_ptr<HttpSink> StartHttpSink(const HttpSink::Options& options = {}) {
  Result<std::unique_ptr<HttpSink>> started = HttpSink::Start(options);
  EXPECT_TRUE(started.ok()) << started.status().ToString();
  return started.ok() ? std::move(*started) : nullptr;
}

// The value of header `name` in a received mail ("" when absent; no unfolding needed for
// the headers checked here).
std::string MailHeader(const std::string& data, const std::string& name) {
  std::string head = "\r\n" + data.substr(0, data.find("\r\n\r\n") + 2);
  size_t at = head.find("\r\n" + name + ": ");
  if (at == std::string::npos) return "";
  at += name.size() + 4;
  return head.substr(at, head.find("\r\n", at) - at);
}

std::string HmacSha256Hex(const std::string& key, const std::string& message) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &len);
  std::string hex;
  char byte[3];
  for (unsigned int i = 0; i < len; ++i) {
    std::snprintf(byte, sizeof(byte), "%02x", mac[i]);
    hex += byte;
  }
  return hex;
}

// A port on 127.0.0.1 that accepts connections (the kernel completes them into the backlog)
// but never answers: a receiver that hangs.
class SilentListener {
 public:
  SilentListener() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 && listen(fd_, 16) == 0 &&
        getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      port_ = ntohs(a.sin_port);
    }
  }
  ~SilentListener() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// --- SMTP ------------------------------------------------------------------------------

TEST(NotifySendTest, MailWithAuthReachesTheServerWithItsEnvelopeHeadersAndBody) {
  std::unique_ptr<SmtpSink> sink;
  ASSERT_NO_FATAL_FAILURE(StartSmtpSink({.user = "jobctl", .password = kPassword}, &sink));
  if (!sink) return;
  EmailChannel c = Channel(*sink);
  c.username = "jobctl";
  c.password = kPassword;
  Notification n = FailedBackup();
  Status s = notify::SendEmail(c, n, kNowMs);
  ASSERT_TRUE(s.ok()) << s.ToString() << "\n" << sink->Log();
  ASSERT_TRUE(sink->WaitForMail(1, seconds(10))) << sink->Log();
  std::vector<ReceivedMail> mails = sink->Received();
  ASSERT_EQ(mails.size(), 1u);
  const ReceivedMail& m = mails[0];
  EXPECT_EQ(m.mail_from, "jobctl@example.com");
  EXPECT_EQ(m.rcpt_tos,
            (std::vector<std::string>{"oncall@example.com", "backup-team@example.com"}));
  EXPECT_EQ(m.auth_user, "jobctl");
  EXPECT_FALSE(m.tls);
  EXPECT_EQ(MailHeader(m.data, "Subject"), "jobctl: backup failed on db-03 (exit 2)");
  EXPECT_EQ(MailHeader(m.data, "From"), "jobctl <jobctl@example.com>");
  EXPECT_EQ(MailHeader(m.data, "Message-ID"), "<d-42-1@jobctl>");
  EXPECT_EQ(MailHeader(m.data, "Date"), "Thu, 26 Nov 2026 03:01:10 +0000");
  for (const char* want : {"Run:        1234\r\n", "State:      failed (reason: schedule)\r\n",
                           "  shard 0 on db-03: attempt 2, exit 2, failed\r\n",
                           "    pg_dump: error: connection refused\r\n", "  jobctl logs 1234\r\n",
                           "  jobctl runs backup\r\n"}) {
    EXPECT_NE(m.data.find(want), std::string::npos) << "missing " << want << " in:\n" << m.data;
  }
}

TEST(NotifySendTest, ALineStartingWithADotArrivesIntact) {
  // The headline of a job named "." starts the body with a dot: the client must dot-stuff it
  // and the server unstuff it, or the line would read ".. failed" (or end the data).
  std::unique_ptr<SmtpSink> sink;
  ASSERT_NO_FATAL_FAILURE(StartSmtpSink({}, &sink));
  if (!sink) return;
  Notification n = FailedBackup();
  n.job = ".";
  ASSERT_TRUE(notify::SendEmail(Channel(*sink), n, kNowMs).ok());
  ASSERT_TRUE(sink->WaitForMail(1, seconds(10)));
  std::string data = sink->Received()[0].data;
  EXPECT_NE(data.find("\r\n\r\n. failed on db-03 (exit 2)\r\n"), std::string::npos) << data;
}

TEST(NotifySendTest, MailGoesOverStartTlsToAServerThatRequiresIt) {
  TempDir dir;
  Result<TlsFiles> tls = MakeSelfSignedCert(dir.path());
  ASSERT_TRUE(tls.ok()) << tls.status().ToString();
  std::unique_ptr<SmtpSink> sink;
  ASSERT_NO_FATAL_FAILURE(StartSmtpSink({.user = "jobctl",
                                         .password = kPassword,
                                         .cert = tls->cert,
                                         .key = tls->key,
                                         .require_starttls = true},
                                        &sink));
  if (!sink) return;
  EmailChannel c = Channel(*sink);
  c.starttls = EmailChannel::Tls::kRequired;
  c.ca_file = tls->cert;
  c.username = "jobctl";
  c.password = kPassword;
  Status s = notify::SendEmail(c, FailedBackup(), kNowMs);
  ASSERT_TRUE(s.ok()) << s.ToString() << "\n" << sink->Log();
  ASSERT_TRUE(sink->WaitForMail(1, seconds(10)));
  EXPECT_TRUE(sink->Received()[0].tls);
  EXPECT_EQ(sink->Received()[0].auth_user, "jobctl");
}

TEST(NotifySendTest, MailGoesOverSmtps) {
  TempDir dir;
  Result<TlsFiles> tls = MakeSelfSignedCert(dir.path());
  ASSERT_TRUE(tls.ok()) << tls.status().ToString();
  std::unique_ptr<SmtpSink> sink;
  ASSERT_NO_FATAL_FAILURE(
      StartSmtpSink({.cert = tls->cert, .key = tls->key, .smtps = true}, &sink));
  if (!sink) return;
  EmailChannel c = Channel(*sink);
  c.ca_file = tls->cert;
  Status s = notify::SendEmail(c, FailedBackup(), kNowMs);
  ASSERT_TRUE(s.ok()) << s.ToString() << "\n" << sink->Log();
  ASSERT_TRUE(sink->WaitForMail(1, seconds(10)));
  EXPECT_TRUE(sink->Received()[0].tls);
}

TEST(NotifySendTest, AnUntrustedCertificateIsAnErrorAndNothingIsSent) {
  TempDir dir;
  Result<TlsFiles> tls = MakeSelfSignedCert(dir.path());
  ASSERT_TRUE(tls.ok()) << tls.status().ToString();
  std::unique_ptr<SmtpSink> sink;
  ASSERT_NO_FATAL_FAILURE(StartSmtpSink(
      {.user = "jobctl", .password = kPassword, .cert = tls->cert, .key = tls->key}, &sink));
  if (!sink) return;
  EmailChannel c = Channel(*sink);
  c.starttls = EmailChannel::Tls::kRequired;  // with the system's CAs, which never signed it
  c.username = "jobctl";
  c.password = kPassword;
  Status s = notify::SendEmail(c, FailedBackup(), kNowMs);
  EXPECT_EQ(s.code(), Status::Code::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("notify channel \"ops\": " + sink->url() + ": "), std::string::npos)
      << s.message();
  EXPECT_EQ(s.message().find(kPassword), std::string::npos);
  EXPECT_TRUE(sink->Received().empty());
  EXPECT_EQ(sink->Log().find("auth attempt"), std::string::npos) << "logged in before TLS";
  EXPECT_NE(s.message().find("SSL certificate problem"), std::string::npos) << s.message();
}

TEST(NotifySendTest, RequiredStartTlsRefusesAServerWithoutItBeforeLoggingIn) {
  std::unique_ptr<SmtpSink> sink;
  ASSERT_NO_FATAL_FAILURE(StartSmtpSink({.user = "jobctl", .password = kPassword}, &sink));
  if (!sink) return;
  EmailChannel c = Channel(*sink);
  c.starttls = EmailChannel::Tls::kRequired;
  c.username = "jobctl";
  c.password = kPassword;
  Status s = notify::SendEmail(c, FailedBackup(), kNowMs);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("notify channel \"ops\""), std::string::npos) << s.message();
  EXPECT_TRUE(sink->Received().empty());
  EXPECT_EQ(sink->Log().find("auth attempt"), std::string::npos) << "logged in without TLS";
  EXPECT_EQ(s.message(), "notify channel \"ops\": " + sink->url() + ": STARTTLS not supported");
}

TEST(NotifySendTest, AWrongPasswordIsAnErrorNamingTheChannelButNotThePassword) {
  std::unique_ptr<SmtpSink> sink;
  ASSERT_NO_FATAL_FAILURE(StartSmtpSink({.user = "jobctl", .password = kPassword}, &sink));
  if (!sink) return;
  EmailChannel c = Channel(*sink);
  c.username = "jobctl";
  c.password = "wrong-password-123";
  Status s = notify::SendEmail(c, FailedBackup(), kNowMs);
  EXPECT_EQ(s.code(), Status::Code::kUnauthenticated) << s.ToString();
  EXPECT_EQ(s.message(), "notify channel \"ops\": " + sink->url() + ": login denied (535)");
  EXPECT_EQ(s.message().find("wrong-password-123"), std::string::npos);
  EXPECT_TRUE(sink->Received().empty());
  EXPECT_NE(sink->Log().find("auth attempt"), std::string::npos) << sink->Log();
  EXPECT_EQ(sink->Log().find("wrong-password-123"), std::string::npos);
}

TEST(NotifySendTest, AClosedSmtpPortIsAQuickErrorNamingHostAndPort) {
  int port = FreeLoopbackPort();
  EmailChannel c;
  c.name = "ops";
  c.url = "smtp://127.0.0.1:" + std::to_string(port);
  c.from = "jobctl@example.com";
  c.to = {"oncall@example.com"};
  c.starttls = EmailChannel::Tls::kNone;
  auto start = std::chrono::steady_clock::now();
  Status s = notify::SendEmail(c, FailedBackup(), kNowMs);
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(5));
  EXPECT_EQ(s.code(), Status::Code::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("127.0.0.1:" + std::to_string(port)), std::string::npos)
      << s.message();
}

TEST(NotifySendTest, ASilentSmtpServerTimesOutWithinTheChannelTimeout) {
  SilentListener silent;
  ASSERT_NE(silent.port(), 0);
  EmailChannel c;
  c.name = "ops";
  c.url = "smtp://127.0.0.1:" + std::to_string(silent.port());
  c.from = "jobctl@example.com";
  c.to = {"oncall@example.com"};
  c.starttls = EmailChannel::Tls::kNone;
  c.timeout_ms = 300;
  auto start = std::chrono::steady_clock::now();
  Status s = notify::SendEmail(c, FailedBackup(), kNowMs);
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(3));
  EXPECT_EQ(s.code(), Status::Code::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("timed out"), std::string::npos) << s.message();
}

// --- Webhooks --------------------------------------------------------------------------

TEST(NotifySendTest, WebhookIsSignedAndCarriesTheRun) {
  std::unique_ptr<HttpSink> sink = StartHttpSink();
  ASSERT_TRUE(sink);
  WebhookChannel c{.name = "chat", .url = sink->url("/hooks/jobctl"), .secret = "whsec-42"};
  Status s = notify::PostWebhook(c, FailedBackup(), kNowMs);
  ASSERT_TRUE(s.ok()) << s.ToString() << "\n" << sink->Log();
  std::vector<ReceivedRequest> got = sink->Received();
  ASSERT_EQ(got.size(), 1u);
  const ReceivedRequest& r = got[0];
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.path, "/hooks/jobctl");
  EXPECT_EQ(r.headers.at("content-type"), "application/json");
  EXPECT_EQ(r.headers.at("user-agent").rfind("jobctl/", 0), 0u);
  EXPECT_EQ(r.headers.at("x-jobctl-delivery"), "d-42-1");
  EXPECT_EQ(r.headers.at("x-jobctl-timestamp"), "1795662070");
  // The receiver's check, done independently: HMAC-SHA256(secret, "<timestamp>.<body>").
  std::string expected =
      "v1=" + HmacSha256Hex("whsec-42", r.headers.at("x-jobctl-timestamp") + "." + r.body);
  EXPECT_EQ(r.headers.at("x-jobctl-signature"), expected);
  auto j = nlohmann::json::parse(r.body);
  EXPECT_EQ(j["delivery_id"], "d-42-1");
  EXPECT_EQ(j["event"], "failed");
  EXPECT_EQ(j["job"], "backup");
  EXPECT_EQ(j["run_id"], 1234);
  EXPECT_EQ(j["reason"], "schedule");
  EXPECT_EQ(j["state"], "failed");
  EXPECT_EQ(j["trace_id"], "4bf92f3577b34da6");
  EXPECT_EQ(j["started"], "2026-11-26T03:00:01Z");
  EXPECT_EQ(j["shards"][0]["host"], "db-03");
  EXPECT_EQ(j["shards"][0]["exit_code"], 2);
  EXPECT_EQ(j["shards"][0]["output_tail"], "dumping tables\npg_dump: error: connection refused\n");
  EXPECT_EQ(j["links"]["logs_command"], "jobctl logs 1234");
  EXPECT_EQ(j["text"].get<std::string>().rfind("jobctl: backup failed on db-03 (exit 2).", 0), 0u);
}

TEST(NotifySendTest, WebhookWithoutASecretIsNotSigned) {
  std::unique_ptr<HttpSink> sink = StartHttpSink();
  ASSERT_TRUE(sink);
  WebhookChannel c{.name = "chat", .url = sink->url("/hook")};
  ASSERT_TRUE(notify::PostWebhook(c, FailedBackup(), kNowMs).ok());
  std::vector<ReceivedRequest> got = sink->Received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].headers.count("x-jobctl-signature"), 0u);
  EXPECT_EQ(got[0].headers.at("x-jobctl-timestamp"), "1795662070");
}

TEST(NotifySendTest, WebhookOverHttpsTrustsTheChannelsCaFileOnly) {
  TempDir dir;
  Result<TlsFiles> tls = MakeSelfSignedCert(dir.path());
  ASSERT_TRUE(tls.ok()) << tls.status().ToString();
  std::unique_ptr<HttpSink> sink = StartHttpSink({.cert = tls->cert, .key = tls->key});
  ASSERT_TRUE(sink);
  WebhookChannel c{.name = "chat", .url = sink->url("/hook"), .secret = "whsec-42"};
  ASSERT_EQ(c.url.rfind("https://", 0), 0u);
  // With the system's CAs, which never signed the receiver's certificate: refused.
  Status s = notify::PostWebhook(c, FailedBackup(), kNowMs);
  EXPECT_EQ(s.code(), Status::Code::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("is ca_file the CA that signed it?"), std::string::npos)
      << s.message();
  EXPECT_TRUE(sink->Received().empty());
  c.ca_file = tls->cert;
  s = notify::PostWebhook(c, FailedBackup(), kNowMs);
  ASSERT_TRUE(s.ok()) << s.ToString() << "\n" << sink->Log();
  ASSERT_EQ(sink->Received().size(), 1u);
  EXPECT_EQ(sink->Received()[0].headers.at("x-jobctl-delivery"), "d-42-1");
}

TEST(NotifySendTest, AServerErrorIsARetryableErrorWithAnExcerptOfTheAnswer) {
  std::unique_ptr<HttpSink> sink = StartHttpSink(
      {.fail_first = 1, .fail_body = "database is on fire\r\n" + std::string(5000, 'x')});
  ASSERT_TRUE(sink);
  WebhookChannel c{.name = "chat", .url = sink->url("/hook"), .secret = "whsec-42"};
  Status s = notify::PostWebhook(c, FailedBackup(), kNowMs);
  EXPECT_EQ(s.code(), Status::Code::kUnavailable) << s.ToString();
  std::string prefix = "notify channel \"chat\": http://127.0.0.1:" + std::to_string(sink->port()) +
                       "/hook: HTTP 500: database is on fire xxx";
  EXPECT_EQ(s.message().rfind(prefix, 0), 0u) << s.message();
  EXPECT_LE(s.message().size(), prefix.size() + 200);
  EXPECT_EQ(s.message().find("whsec-42"), std::string::npos);
  // The next attempt is answered 200.
  EXPECT_TRUE(notify::PostWebhook(c, FailedBackup(), kNowMs).ok());
  EXPECT_EQ(sink->Received().size(), 2u);
}

TEST(NotifySendTest, AClientErrorOrARedirectIsRefusedForGood) {
  std::unique_ptr<HttpSink> sink = StartHttpSink({.fail_first = 2, .fail_status = 404});
  ASSERT_TRUE(sink);
  WebhookChannel c{.name = "chat", .url = sink->url("/hook")};
  Status s = notify::PostWebhook(c, FailedBackup(), kNowMs);
  EXPECT_EQ(s.code(), Status::Code::kPermissionDenied) << s.ToString();
  EXPECT_NE(s.message().find("HTTP 404: internal error"), std::string::npos) << s.message();

  std::unique_ptr<HttpSink> moved = StartHttpSink({.fail_first = 1, .fail_status = 302});
  ASSERT_TRUE(moved);
  c.url = moved->url("/hook");
  s = notify::PostWebhook(c, FailedBackup(), kNowMs);
  EXPECT_EQ(s.code(), Status::Code::kPermissionDenied) << s.ToString();
  EXPECT_NE(s.message().find("HTTP 302"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("redirects are not followed"), std::string::npos);
}

TEST(NotifySendTest, ErrorsNeverShowTheUrlsUserinfoOrQuery) {
  std::unique_ptr<HttpSink> sink = StartHttpSink({.fail_first = 1});
  ASSERT_TRUE(sink);
  std::string url =
      "http://user:pa55word@127.0.0.1:" + std::to_string(sink->port()) + "/hook?key=s3cr3t-key";
  WebhookChannel c{.name = "chat", .url = url};
  Status s = notify::PostWebhook(c, FailedBackup(), kNowMs);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("http://127.0.0.1:" + std::to_string(sink->port()) + "/hook: "),
            std::string::npos)
      << s.message();
  EXPECT_EQ(s.message().find("pa55word"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("s3cr3t-key"), std::string::npos) << s.message();
  ASSERT_EQ(sink->Received().size(), 1u);
  EXPECT_EQ(sink->Received()[0].path, "/hook?key=s3cr3t-key");  // it was sent, only not shown
}

TEST(NotifySendTest, AClosedWebhookPortIsAQuickErrorNamingHostAndPort) {
  int port = FreeLoopbackPort();
  WebhookChannel c{.name = "chat", .url = "http://127.0.0.1:" + std::to_string(port) + "/hook"};
  auto start = std::chrono::steady_clock::now();
  Status s = notify::PostWebhook(c, FailedBackup(), kNowMs);
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(5));
  EXPECT_EQ(s.code(), Status::Code::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("notify channel \"chat\": http://127.0.0.1:" + std::to_string(port) +
                             "/hook: "),
            std::string::npos)
      << s.message();
}

TEST(NotifySendTest, ASilentWebhookReceiverTimesOutWithinTheChannelTimeout) {
  SilentListener silent;
  ASSERT_NE(silent.port(), 0);
  WebhookChannel c{.name = "chat",
                   .url = "http://127.0.0.1:" + std::to_string(silent.port()) + "/hook",
                   .timeout_ms = 300};
  auto start = std::chrono::steady_clock::now();
  Status s = notify::PostWebhook(c, FailedBackup(), kNowMs);
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(3));
  EXPECT_EQ(s.code(), Status::Code::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("timed out"), std::string::npos) << s.message();
}

TEST(NotifySendTest, DeliveriesFromSeveralThreadsAtOnceAllArrive) {
  std::unique_ptr<SmtpSink> smtp;
  ASSERT_NO_FATAL_FAILURE(StartSmtpSink({}, &smtp));
  if (!smtp) return;
  std::unique_ptr<HttpSink> http = StartHttpSink();
  ASSERT_TRUE(http);
  WebhookChannel hook{.name = "chat", .url = http->url("/hook"), .secret = "whsec-42"};
  EmailChannel mail = Channel(*smtp);
  constexpr int kThreads = 3, kEach = 4;
  std::vector<Status> results(kThreads * kEach * 2);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        Notification n = FailedBackup();
        n.delivery_id = "d-" + std::to_string(t) + "-" + std::to_string(i);
        results[(t * kEach + i) * 2] = notify::PostWebhook(hook, n, kNowMs);
        results[(t * kEach + i) * 2 + 1] = notify::SendEmail(mail, n, kNowMs);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const Status& s : results) EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(http->Received().size(), size_t{kThreads * kEach});
  ASSERT_TRUE(smtp->WaitForMail(kThreads * kEach, seconds(10)));
  EXPECT_EQ(smtp->Received().size(), size_t{kThreads * kEach});
}

TEST(NotifySendTest, AnInvalidChannelIsRefusedBeforeAnyConnection) {
  WebhookChannel c{.name = "chat", .url = "file:///etc/passwd"};
  EXPECT_EQ(notify::PostWebhook(c, FailedBackup(), kNowMs).code(), Status::Code::kInvalidArgument);
  EmailChannel e;
  e.name = "ops";
  e.url = "smtp://127.0.0.1:25";
  e.from = "jobctl@example.com";
  e.to = {"victim@example.com>\r\nRCPT TO:<other@example.com"};
  EXPECT_EQ(notify::SendEmail(e, FailedBackup(), kNowMs).code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace jobctl::testing
