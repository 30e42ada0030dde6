#include "coordinator_link.h"

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
  Send(std::move(request));
}

void CoordinatorLink::Send(std::shared_ptr<Request> request) {
  ++request->tries;
  std::string url = urls_[request->url] + request->path;
  client_->Start(std::move(url), token_, request->options,
                 [this, request](Result<http::HttpResponse> r) { OnDone(request, std::move(r)); });
}

void CoordinatorLink::OnDone(std::shared_ptr<Request> request, Result<http::HttpResponse> r) {
  if (closed_) {
    request->cb(std::move(r));
    return;
  }
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
  Note(r);
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
