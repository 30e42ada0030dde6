#include "coordinator_link.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/log.h"
#include "wire/bounded_json.h"

namespace jobctl::agentd {

struct CoordinatorLink::Request {
  std::string path;
  http::RequestOptions options;
  Callback cb;
  size_t url = 0;  // index being tried
  size_t tries = 0;
  uint64_t transfer = 0;  // the MultiClient id of the transfer in flight
  uint64_t attempt = 0;   // counts transfers; an earlier one's callback is of an abandoned one
};

Reply Classify(const Result<http::HttpResponse>& r) {
  return r.ok() ? ClassifyStatus(r->status) : Reply::kRetry;
}

Reply ClassifyStatus(int s) {
  if (s >= 200 && s < 300) return Reply::kOk;
  if (s == 409) return Reply::kStale;
  if (s == 401 || s == 403 || s == 408 || s == 429 || s >= 500) return Reply::kRetry;
  return Reply::kRejected;
}

int64_t RetryAfterMs(const Result<http::HttpResponse>& r) {
  if (!r.ok() || (r->status != 429 && (r->status != 503 || http::IsStandby(*r)))) return 0;
  auto it = r->headers.find("retry-after");
  if (it == r->headers.end() || it->second.empty() || it->second.size() > 9) return 0;
  int64_t seconds = 0;
  for (char c : it->second) {
    if (c < '0' || c > '9') return 0;  // an HTTP date: not what a coordinator sends
    seconds = seconds * 10 + (c - '0');
  }
  return std::min(seconds * 1000, kMaxRetryAfterMs);
}

std::string Describe(const Result<http::HttpResponse>& r) {
  if (!r.ok()) return r.status().message();
  nlohmann::json body = wire::ParseJson(r->body);
  std::string message = body.is_object() && body.contains("message") && body["message"].is_string()
                            ? body["message"].get<std::string>()
                            : r->body.substr(0, 200);
  return "HTTP " + std::to_string(r->status) + ": " + message;
}

CoordinatorLink::CoordinatorLink(uv_loop_t* loop, std::vector<std::string> urls, std::string token,
                                 http::TlsOptions tls)
    : client_(std::make_unique<http::MultiClient>(loop, std::move(tls))),
      urls_(std::move(urls)),
      token_(std::move(token)) {
  for (std::string& u : urls_) {
    while (!u.empty() && u.back() == '/') u.pop_back();
  }
}

CoordinatorLink::~CoordinatorLink() = default;

void CoordinatorLink::Post(std::string path, std::string body, std::string content_type,
                           std::chrono::milliseconds timeout, Callback cb) {
  if (closed_) return;
  auto request = std::make_shared<Request>();
  request->path = std::move(path);
  request->options.method = "POST";
  // Shared, not copied, by the retries on other coordinators and by the transfer.
  request->options.shared_body = std::make_shared<const std::string>(std::move(body));
  request->options.content_type = std::move(content_type);
  request->options.timeout = timeout;
  request->cb = std::move(cb);
  request->url = current_;
  in_flight_.insert(request);
  Send(std::move(request));
}

void CoordinatorLink::Send(std::shared_ptr<Request> request) {
  ++request->tries;
  uint64_t attempt = ++request->attempt;
  std::string url = urls_[request->url] + request->path;
  // Never 0: Send runs only before Close(), and then Start cannot fail synchronously.
  request->transfer = client_->Start(std::move(url), token_, request->options,
                                     [this, request, attempt](Result<http::HttpResponse> r) {
                                       OnDone(request, attempt, std::move(r));
                                     });
}

void CoordinatorLink::OnDone(std::shared_ptr<Request> request, uint64_t attempt,
                             Result<http::HttpResponse> r) {
  // The "canceled" answer of a transfer MoveToCurrent abandoned: a newer one carries it.
  if (attempt != request->attempt) return;
  if (closed_) return Finish(request, std::move(r));
  // Fail over on connection errors, and on a standby's refusal (another coordinator holds
  // the database): any other HTTP answer means that coordinator serves.
  if ((!r.ok() || http::IsStandby(*r)) && request->tries < urls_.size()) {
    request->url = (request->url + 1) % urls_.size();
    Send(std::move(request));
    return;
  }
  if (r.ok() && current_ != request->url) {
    current_ = request->url;
    log::Info("coordinator failover", {{"url", urls_[current_]}});
  }
  // Another coordinator serves than before (a standby took over, or the one serving before
  // no longer answers): move there what is in flight elsewhere. Done before the callback
  // runs: it may Close() the link, after which nothing is sent.
  if (r.ok() && !http::IsStandby(*r) && serving_ != request->url) {
    serving_ = request->url;
    MoveToCurrent();
  }
  Note(r);
  Finish(request, std::move(r));
}

// The coordinator at current_ serves: whatever is still in flight elsewhere waits for one that
// may be frozen, cut off or a standby, so it is sent again to current_ (with a full round of
// failover). Canceling closes the old connection; the canceled transfer's callback is ignored
// by OnDone. A transfer that already finished, its callback not yet run, is left to deliver
// its real answer.
void CoordinatorLink::MoveToCurrent() {
  size_t moved = 0;
  for (const std::shared_ptr<Request>& request : in_flight_) {
    if (request->url == current_ || !client_->Cancel(request->transfer)) continue;
    request->url = current_;
    request->tries = 0;
    Send(request);
    ++moved;
  }
  if (moved > 0)
    log::Info("requests in flight sent again to the new coordinator",
              {{"url", urls_[current_]}, {"requests", static_cast<int64_t>(moved)}});
}

void CoordinatorLink::Finish(const std::shared_ptr<Request>& request,
                             Result<http::HttpResponse> r) {
  in_flight_.erase(request);
  request->cb(std::move(r));
}

void CoordinatorLink::Note(const Result<http::HttpResponse>& r) {
  State next = State::kReachable;
  if (!r.ok() || r->status >= 500)
    next = State::kUnreachable;
  else if (r->status == 401 || r->status == 403)
    next = State::kUnauthorized;
  if (next == state_) return;
  State before = std::exchange(state_, next);
  switch (next) {
    case State::kReachable:
      if (before != State::kUnknown) log::Info("coordinator reachable", {{"url", urls_[current_]}});
      break;
    case State::kUnreachable:
      log::Warn("coordinator unreachable; retrying with backoff",
                {{"url", urls_[current_]}, {"error", Describe(r)}});
      break;
    case State::kUnauthorized:
      log::Error("coordinator refuses the agent token; check AGENTD_TOKEN or token_file",
                 {{"url", urls_[current_]}, {"error", Describe(r)}});
      break;
    case State::kUnknown: break;
  }
}

void CoordinatorLink::Close(std::function<void()> on_closed) {
  if (closed_) return;
  closed_ = true;
  client_->Close(std::move(on_closed));
}

}  // namespace jobctl::agentd
