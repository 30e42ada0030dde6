// CoordinatorLink is agentd's one way to the coordinator: it owns the MultiClient, the list
// of coordinator URLs and the agent token. A request goes to the URL that last worked; on a
// connection error or a standby's refusal (http::IsStandby) it fails over to the next one,
// trying each once. When a request is served (any HTTP answer but a standby's refusal) by
// another URL than the last one that served, the requests still in flight to other URLs are
// abandoned and sent again to the new one: a frozen or cut-off coordinator would otherwise
// hold each of them (a claim's long-poll, a result) until its own timeout. Sending one twice
// is safe, as it already was when a request timed out and went on to the next URL: a
// coordinator whose epoch is over writes nothing (so grants it made in an abandoned claim
// never commit), a repeated result gets the first one's answer and a log chunk is stored
// once per seq. Only another request notices the change: an idle agent, which sends nothing
// but its claim, still waits for that claim's timeout. It also keeps the link's state
// (reachable or not, token accepted or not) and logs each change once, never once per retry:
// the callers only back off.
//
// Loop thread only. Post's callback runs exactly once and never inside Post, except after
// Close(), when Post does nothing and the callback never runs.
#pragma once

#include <uv.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "base/status.h"
#include "httpclient/multi_client.h"

namespace jobctl::agentd {

// What a caller does with an answer.
enum class Reply {
  kOk,        // 2xx
  kStale,     // 409: the fencing token is no longer current
  kRejected,  // another 4xx: this request will never succeed; give up on it
  kRetry,     // unreachable, 5xx, 401/403 (a token being rotated): back off and retry
};
Reply Classify(const Result<http::HttpResponse>& r);
Reply ClassifyStatus(int status);  // the same for an HTTP status alone (a batch's item)
// How long a refusal asks the agent to wait: Retry-After (whole seconds) on a 429 (a rate
// limit, or too many request bodies in flight) or on a 503 that is not a standby's (whose
// Retry-After is not waited for: the link moves on to the next coordinator), at most
// kMaxRetryAfterMs so that an agent is back within seconds of the coordinator; else 0.
inline constexpr int64_t kMaxRetryAfterMs = 5'000;
int64_t RetryAfterMs(const Result<http::HttpResponse>& r);
// "HTTP 503: store busy" or the transport error, for log lines.
std::string Describe(const Result<http::HttpResponse>& r);

class CoordinatorLink {
 public:
  using Callback = std::function<void(Result<http::HttpResponse>)>;

  // `tls` is used for https:// URLs (ca_file, client_cert and client_key of agentd.toml).
  CoordinatorLink(uv_loop_t* loop, std::vector<std::string> urls, std::string token,
                  http::TlsOptions tls = {});
  ~CoordinatorLink();

  // POSTs `body` to URL + `path` (path includes any query).
  void Post(std::string path, std::string body, std::string content_type,
            std::chrono::milliseconds timeout, Callback cb);
  void Close(std::function<void()> on_closed);

  // Requests sent from now on carry this bearer token (the Enroller's credential).
  void SetToken(std::string token) { token_ = std::move(token); }

  bool reachable() const { return state_ == State::kReachable; }
  const std::string& current_url() const { return urls_[current_]; }

 private:
  enum class State { kUnknown, kReachable, kUnreachable, kUnauthorized };
  struct Request;
  void Send(std::shared_ptr<Request> request);
  void OnDone(std::shared_ptr<Request> request, uint64_t attempt, Result<http::HttpResponse> r);
  void MoveToCurrent();
  void Finish(const std::shared_ptr<Request>& request, Result<http::HttpResponse> r);
  void Note(const Result<http::HttpResponse>& r);

  std::unique_ptr<http::MultiClient> client_;
  std::vector<std::string> urls_;
  std::string token_;
  std::unordered_set<std::shared_ptr<Request>> in_flight_;  // posted, callback not yet run
  size_t current_ = 0;                                      // where requests go
  size_t serving_ = 0;  // the URL that last served (answered other than as a standby)
  State state_ = State::kUnknown;
  bool closed_ = false;
};

}  // namespace jobctl::agentd
