// HTTP client types shared by jobctl and agentd, and BlockingClient, the client jobctl uses.
//
// BlockingClient runs one request at a time with curl_easy_perform: jobctl is one process with
// no loop, so blocking is what it wants. The client keeps one CURL easy handle, so curl's
// connection cache reuses the keep-alive connection across calls. One thread at a time; the
// caller owns the client. An unreachable server is Status::Unavailable naming the URL; any HTTP
// status, 4xx and 5xx included, is a successful Result for the caller to map.
//
// The asynchronous client for agentd is MultiClient (multi_client.h). Both fill an easy handle
// through internal::Transfer, so a request looks the same on the wire whichever client sends it:
// no redirects followed, no "Expect: 100-continue", CURLOPT_NOSIGNAL, Authorization: Bearer when a
// token is given, TLS 1.2 or later for https:// with the client's TlsOptions.
//
// TLS failures read differently from an unreachable server, and name the URL: "TLS: cannot
// verify the certificate of https://...: <curl's reason> (is ca_file the CA that signed it?)",
// "TLS handshake with https://... failed: ...". They are Unavailable too (agentd retries them,
// jobctl exits 69); an unreadable CA file, client certificate or key is InvalidArgument.
#pragma once

#include <curl/curl.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace jobctl::http {

struct HttpResponse {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // lower-case keys; repeated headers joined by ", "
};

// A standby coordinator's refusal (503 with X-Jobctl-Standby): another coordinator holds the
// shared database and answers this request; clients move on to their next coordinator URL.
inline bool IsStandby(const HttpResponse& r) {
  return r.status == 503 && r.headers.count("x-jobctl-standby") > 0;
}

// TLS settings for https:// URLs; empty fields keep curl's defaults (the system's CA store, no
// client certificate). Paths to PEM files, read by curl at each new connection.
struct TlsOptions {
  std::string ca_file;      // CAs trusted for the server's certificate, instead of the system's
  std::string client_cert;  // presented when the server asks for one (mTLS)
  std::string client_key;   // the key of client_cert
};

struct RequestOptions {
  std::string method = "GET";
  std::string body;  // sent with Content-Length (POST, PUT and PATCH always send one)
  // Sent instead of `body` when set, without a copy: kept alive until the request ends, and
  // shared by its retries (large bodies such as agentd's log batches).
  std::shared_ptr<const std::string> shared_body;
  std::string content_type = "application/json";             // only sent with a body
  std::vector<std::pair<std::string, std::string>> headers;  // extra, e.g. {"X-Seq", "7"}
  std::chrono::milliseconds timeout{30'000};                 // whole request; 0 = none
  std::chrono::milliseconds connect_timeout{5'000};
};

class BlockingClient {
 public:
  // base_url like "http://127.0.0.1:7070"; an empty token sends no Authorization header.
  BlockingClient(std::string base_url, std::string token, TlsOptions tls = {});
  ~BlockingClient();
  BlockingClient(const BlockingClient&) = delete;
  BlockingClient& operator=(const BlockingClient&) = delete;

  // Sends `options.method` to base_url + path and waits for the whole response.
  // Connection refused, DNS failure or timeout: Unavailable, e.g.
  // "cannot reach http://127.0.0.1:7070/v1/jobs: Failed to connect ... (Connection refused)".
  Result<HttpResponse> Request(std::string_view path, const RequestOptions& options);

  const std::string& base_url() const { return base_url_; }
  // Whether the last request failed before any connection existed (the server refused it or
  // its name did not resolve): nothing of it reached a server, so it may go to another.
  bool last_never_connected() const { return last_never_connected_; }

 private:
  std::string base_url_;
  std::string token_;
  TlsOptions tls_;
  CURL* easy_ = nullptr;  // owned; kept across requests for its connection cache
  bool last_never_connected_ = false;
};

namespace internal {

// One request's state while curl runs it on an easy handle: the header list, the response being
// assembled and curl's error buffer. curl keeps pointers into this object from Apply() until
// the transfer ends, so it never moves. Used by both clients; not part of the API.
class Transfer {
 public:
  Transfer(std::string url, std::string_view token, const RequestOptions& options, TlsOptions tls);
  ~Transfer();
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;

  // Sets every option for this request on `easy`, which is new or was curl_easy_reset.
  Status Apply(CURL* easy);
  // Turns curl's result for the finished transfer into a response or a Status naming the URL.
  Result<HttpResponse> Finish(CURL* easy, CURLcode code);
  // For messages: "POST http://host:port/path".
  std::string Describe() const { return method_ + " " + url_; }

 private:
  static size_t OnBody(char* data, size_t size, size_t count, void* self);
  static size_t OnHeader(char* data, size_t size, size_t count, void* self);
  void AddHeaderLine(std::string_view line);
  Status ErrorStatus(CURL* easy, CURLcode code) const;
  bool SendsBody() const;

  std::string url_;
  std::string method_;
  // curl reads the request body from here (CURLOPT_POSTFIELDS, no copy).
  std::shared_ptr<const std::string> body_;
  curl_slist* header_list_ = nullptr;
  bool headers_complete_ = true;
  HttpResponse response_;
  char error_[CURL_ERROR_SIZE] = {};
  long timeout_ms_;
  long connect_timeout_ms_;
  TlsOptions tls_;
};

}  // namespace internal
}  // namespace jobctl::http
