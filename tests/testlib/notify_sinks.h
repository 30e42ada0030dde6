// Real receivers for notification tests, on 127.0.0.1: SmtpSink runs smtp_sink.py (an SMTP
// server from Debian's python3-aiosmtpd, with optional AUTH and STARTTLS or SMTPS) and
// HttpSink runs http_sink.py (an HTTP server that answers a configurable status). Each runs
// as a child process on a free port, is stopped by its pid when the object goes away, and
// exits on its own when the test process dies. What they received is read back from the
// files they write (ReceivedMail, ReceivedRequest).
//
// Where aiosmtpd is missing, SmtpSink::Start() says so (kNotFound): tests skip with that
// message, except under CI=true, where it is a failure (RunningInCi in postgres.h).
// For one test thread.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "testlib/cluster.h"

namespace jobctl::testing {

struct ReceivedMail {
  std::string mail_from;              // the envelope's MAIL FROM
  std::vector<std::string> rcpt_tos;  // the envelope's RCPT TOs
  std::string auth_user;              // "" when the client did not log in
  bool tls = false;                   // the session was encrypted (STARTTLS or SMTPS)
  std::string data;                   // the message as received, dot-stuffing undone
};

struct ReceivedRequest {
  std::string method;
  std::string path;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

// A self-signed certificate for 127.0.0.1 (and its key) made with `openssl req` in `dir`;
// the certificate also serves as the CA file a client trusts.
struct TlsFiles {
  std::string cert;
  std::string key;
};
Result<TlsFiles> MakeSelfSignedCert(const std::string& dir);

class SmtpSink {
 public:
  struct Options {
    std::string user;  // with password: AUTH PLAIN and LOGIN accepted (also in clear)
    std::string password;
    std::string cert;  // with key: STARTTLS offered, or TLS from the start with smtps
    std::string key;
    bool smtps = false;
    bool require_starttls = false;
  };
  static Result<std::unique_ptr<SmtpSink>> Start(const Options& options);
  ~SmtpSink();
  SmtpSink(const SmtpSink&) = delete;
  SmtpSink& operator=(const SmtpSink&) = delete;

  int port() const { return port_; }
  // "smtp://127.0.0.1:PORT", or smtps:// for an SMTPS sink.
  std::string url() const;
  // The messages accepted so far, in order.
  std::vector<ReceivedMail> Received() const;
  // Waits until at least `count` messages were accepted; false at the deadline.
  bool WaitForMail(size_t count, std::chrono::milliseconds timeout) const;
  std::string Log() const;

 private:
  SmtpSink() = default;
  TempDir dir_;
  std::unique_ptr<Daemon> process_;
  int port_ = 0;
  bool smtps_ = false;
};

class HttpSink {
 public:
  struct Options {
    int fail_first = 0;  // the first N requests are answered fail_status, later ones 200
    int fail_status = 500;
    std::string fail_body = "internal error";
    std::string cert;  // with key: HTTPS
    std::string key;
  };
  static Result<std::unique_ptr<HttpSink>> Start(const Options& options);
  ~HttpSink();
  HttpSink(const HttpSink&) = delete;
  HttpSink& operator=(const HttpSink&) = delete;

  int port() const { return port_; }
  // "http://127.0.0.1:PORT" + path (https:// when it serves HTTPS).
  std::string url(const std::string& path = "/") const;
  std::vector<ReceivedRequest> Received() const;
  bool WaitForRequests(size_t count, std::chrono::milliseconds timeout) const;
  std::string Log() const;

 private:
  HttpSink() = default;
  TempDir dir_;
  std::unique_ptr<Daemon> process_;
  int port_ = 0;
  bool https_ = false;
};

}  // namespace jobctl::testing
