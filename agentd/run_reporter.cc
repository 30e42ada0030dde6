#include "run_reporter.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/log.h"
#include "base/secret_file.h"
#include "wire/agent_messages.h"

namespace jobctl::agentd {

RunReporter::RunReporter(uv_loop_t* loop, CoordinatorLink* link, std::string dir, std::string agent,
                         std::function<void(const ShardResult&, bool accepted)> on_done,
                         Random* random)
    : link_(link),
      dir_(std::move(dir)),
      agent_(std::move(agent)),
      on_done_(std::move(on_done)),
      backoff_(kRetryBaseMs, kRetryCapMs, random),
      retry_timer_(loop) {}

std::string RunReporter::PathFor(AttemptKey key) const {
  return dir_ + "/r" + std::to_string(key.run) + "-s" + std::to_string(key.shard) + "-a" +
         std::to_string(key.attempt) + ".json";
}

Status RunReporter::Open() {
  if (Status s = MakePrivateDir(dir_); !s.ok()) return s;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    const std::string path = entry.path().string();
    if (entry.path().extension() != ".json") {
      if (entry.path().extension() == ".tmp") std::filesystem::remove(entry.path(), ec);
      continue;
    }
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    Result<ShardResult> r = ResultFromJson(text.str());
    if (!r.ok()) {
      log::Warn("ignoring an unreadable result file",
                {{"file", path}, {"error", r.status().message()}});
      continue;
    }
    results_[r->key] = Entry{*r, ResultToJson(*r, agent_), false, false};
  }
  if (ec) return Status::Io("cannot list " + dir_ + ": " + ec.message());
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
  // Written whole, then renamed: a crash leaves the old file or the new one, never half.
  std::string path = PathFor(key), tmp = path + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Io("cannot write " + tmp + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < json.size()) {
    ssize_t n = write(fd, json.data() + done, json.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  bool written = close(fd) == 0 && done == json.size();
  if (!written) {
    unlink(tmp.c_str());
    return Status::Io("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return Status::Io("cannot rename " + tmp);
  return Status::Ok();
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
  std::remove(PathFor(key).c_str());
  results_.erase(it);  // a reply in flight finds nothing and is ignored
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
  if (reply == Reply::kRetry) return Retry(pending);
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

void RunReporter::Retry(const std::vector<AttemptKey>& keys) {
  ready_.insert(ready_.begin(), keys.begin(), keys.end());
  paused_ = true;
  if (retry_timer_.active()) return;
  retry_timer_.Once(static_cast<uint64_t>(backoff_.Next()), [this] {
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
    case Reply::kRetry: return Retry({key});
  }
  SendMore();
}

void RunReporter::Settle(AttemptKey key, bool accepted) {
  auto it = results_.find(key);
  ShardResult result = it->second.result;
  std::remove(PathFor(key).c_str());
  results_.erase(it);
  on_done_(result, accepted);
}

void RunReporter::Close() {
  closed_ = true;
  retry_timer_.Stop();
}

}  // namespace jobctl::agentd
