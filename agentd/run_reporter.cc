#include "run_reporter.h"

#include <algorithm>

#include "base/log.h"
#include "wire/agent_messages.h"

namespace jobctl::agentd {

RunReporter::RunReporter(uv_loop_t* loop, CoordinatorLink* link, std::string dir, std::string agent,
                         std::function<void(const ShardResult&, bool accepted)> on_done,
                         Random* random)
    : link_(link),
      journal_(std::move(dir)),
      agent_(std::move(agent)),
      on_done_(std::move(on_done)),
      backoff_(kRetryBaseMs, kRetryCapMs, random),
      retry_timer_(loop) {}

Status RunReporter::Open() {
  Result<std::map<AttemptKey, std::string>> left = journal_.Open();
  if (!left.ok()) return left.status();
  for (const auto& [key, json] : *left) {
    Result<ShardResult> r = ResultFromJson(json);
    if (r.ok()) results_[key] = Entry{*r, ResultToJson(*r, agent_), false, false};
  }
  if (!results_.empty()) {
    log::Info("results left to report", {{"count", static_cast<uint64_t>(results_.size())}});
  }
  return Status::Ok();
}

std::vector<AttemptKey> RunReporter::Pending() const {
  std::vector<AttemptKey> keys;
  for (const auto& [key, e] : results_) keys.push_back(key);
  return keys;
}

Status RunReporter::Persist(AttemptKey key, const std::string& json) {
  return journal_.Put(key, json);
}

void RunReporter::Forget(AttemptKey key) {
  if (Status s = journal_.Remove(key); !s.ok()) {
    // A restart would report it again; the coordinator answers that it has it.
    log::Warn("cannot strike a settled result", {{"run", key.run}, {"error", s.message()}});
  }
  results_.erase(key);
  if (!journal_.WantsRewrite()) return;
  std::vector<std::pair<AttemptKey, const std::string*>> live;
  live.reserve(results_.size());
  for (const auto& [k, e] : results_) live.emplace_back(k, &e.json);
  if (Status s = journal_.Rewrite(live); !s.ok()) {
    log::Warn("cannot rewrite the result journal", {{"error", s.message()}});
  }
}

void RunReporter::Add(const ShardResult& result) {
  std::string json = ResultToJson(result, agent_);
  if (Status s = Persist(result.key, json); !s.ok()) {
    // Still reported from memory; only a restart before then would lose it.
    log::Warn("cannot persist a result", {{"run", result.key.run}, {"error", s.message()}});
  }
  results_[result.key] = Entry{result, std::move(json), false, false};
}

void RunReporter::Release(AttemptKey key, int64_t output_seq) {
  auto it = results_.find(key);
  if (it == results_.end() || it->second.released) return;
  Entry& e = it->second;
  e.released = true;
  // A result that a restart finds already released kept its end in its file.
  e.result.output_seq = std::max(e.result.output_seq.value_or(0), output_seq);
  e.json = ResultToJson(e.result, agent_);
  if (Status s = Persist(key, e.json); !s.ok()) {
    log::Warn("cannot persist a result", {{"run", key.run}, {"error", s.message()}});
  }
  ready_.push_back(key);
  SendMore();
}

void RunReporter::Drop(AttemptKey key) {
  auto it = results_.find(key);
  if (it == results_.end()) return;
  Forget(key);  // a reply in flight finds nothing and is ignored
}

void RunReporter::SetBatchLimit(size_t results) { batch_limit_ = std::min(results, kMaxBatch); }

void RunReporter::SendMore() {
  if (batch_limit_ > 0) return SendBatch();
  while (!paused_ && !closed_ && in_flight_ < kMaxInFlight && !ready_.empty()) {
    AttemptKey key = ready_.front();
    ready_.pop_front();
    auto it = results_.find(key);
    if (it == results_.end() || it->second.in_flight) continue;
    it->second.in_flight = true;
    ++in_flight_;
    link_->Post("/v1/agent/result", it->second.json, "application/json", std::chrono::seconds(30),
                [this, key](Result<http::HttpResponse> r) { OnReply(key, std::move(r)); });
  }
}

void RunReporter::SendBatch() {
  if (paused_ || closed_ || in_flight_ > 0) return;
  std::vector<AttemptKey> keys;
  std::string body = "{\"results\":[";
  while (keys.size() < batch_limit_ && body.size() < kMaxBatchBytes && !ready_.empty()) {
    AttemptKey key = ready_.front();
    ready_.pop_front();
    auto it = results_.find(key);
    if (it == results_.end() || it->second.in_flight) continue;
    it->second.in_flight = true;
    if (!keys.empty()) body += ',';
    body += it->second.json;
    keys.push_back(key);
  }
  if (keys.empty()) return;
  body += "]}";
  ++in_flight_;
  link_->Post("/v1/agent/results", std::move(body), "application/json", std::chrono::seconds(30),
              [this, keys](Result<http::HttpResponse> r) mutable {
                OnBatchReply(std::move(keys), std::move(r));
              });
}

void RunReporter::OnBatchReply(std::vector<AttemptKey> keys, Result<http::HttpResponse> r) {
  --in_flight_;
  if (closed_) return;
  std::vector<AttemptKey> pending;  // still ours, awaiting an answer
  for (AttemptKey key : keys) {
    auto it = results_.find(key);
    if (it == results_.end()) continue;  // dropped meanwhile
    it->second.in_flight = false;
    pending.push_back(key);
  }
  Reply reply = Classify(r);
  if (reply == Reply::kRetry) return Retry(pending, RetryAfterMs(r));
  if (reply != Reply::kOk) {
    // Not a route this coordinator knows, or a batch it will not take: one by one again.
    log::Warn("result batch refused; reporting one result per request", {{"error", Describe(r)}});
    batch_limit_ = 0;
    ready_.insert(ready_.begin(), pending.begin(), pending.end());
    return SendMore();
  }
  Result<wire::ResultBatchReply> answers = wire::ResultBatchReply::FromJson(r->body);
  if (!answers.ok() || answers->results.size() != keys.size()) {
    log::Warn("result batch answer not understood; sending again",
              {{"error", answers.ok() ? Describe(r) : answers.status().message()}});
    return Retry(pending);  // results are idempotent: repeating one gets the same answer
  }
  std::vector<AttemptKey> again;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (results_.find(keys[i]) == results_.end()) continue;
    const wire::ResultAnswer& a = answers->results[i];
    if (closed_) return;  // the last settled result let the agent shut down
    if (a.accepted) {
      Settle(keys[i], true);
      continue;
    }
    // Each refusal is what the single route would have answered: retried or given up alike.
    if (ClassifyStatus(a.status) == Reply::kRetry) {
      again.push_back(keys[i]);
      continue;
    }
    log::Warn("result refused", {{"run", keys[i].run},
                                 {"shard", keys[i].shard},
                                 {"attempt", keys[i].attempt},
                                 {"error", "HTTP " + std::to_string(a.status) + ": " + a.message}});
    Settle(keys[i], false);
  }
  // The backoff grows while some result keeps failing, as for a single result.
  if (!again.empty()) return Retry(again);
  backoff_.Reset();
  SendMore();
}

void RunReporter::Retry(const std::vector<AttemptKey>& keys, int64_t at_least_ms) {
  ready_.insert(ready_.begin(), keys.begin(), keys.end());
  paused_ = true;
  if (retry_timer_.active()) return;
  retry_timer_.Once(static_cast<uint64_t>(backoff_.Next(at_least_ms)), [this] {
    paused_ = false;
    SendMore();
  });
}

void RunReporter::OnReply(AttemptKey key, Result<http::HttpResponse> r) {
  --in_flight_;
  if (closed_) return;
  auto it = results_.find(key);
  if (it == results_.end()) return SendMore();
  it->second.in_flight = false;
  switch (Classify(r)) {
    case Reply::kOk:
      backoff_.Reset();
      Settle(key, true);
      break;
    case Reply::kStale:
    case Reply::kRejected:
      log::Warn("result refused", {{"run", key.run},
                                   {"shard", key.shard},
                                   {"attempt", key.attempt},
                                   {"error", Describe(r)}});
      Settle(key, false);
      break;
    case Reply::kRetry: return Retry({key}, RetryAfterMs(r));
  }
  SendMore();
}

void RunReporter::Settle(AttemptKey key, bool accepted) {
  auto it = results_.find(key);
  ShardResult result = std::move(it->second.result);
  Forget(key);
  on_done_(result, accepted);
}

void RunReporter::Close() {
  closed_ = true;
  retry_timer_.Stop();
}

}  // namespace jobctl::agentd
