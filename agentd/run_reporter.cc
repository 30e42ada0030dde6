#include "run_reporter.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/log.h"

namespace jobctl::agentd {

RunReporter::RunReporter(uv_loop_t* loop, CoordinatorLink* link, std::string dir,
                         std::string agent,
                         std::function<void(const ShardResult&, bool accepted)> on_done)
    : link_(link),
      dir_(std::move(dir)),
      agent_(std::move(agent)),
      on_done_(std::move(on_done)),
      retry_timer_(loop) {}

std::string RunReporter::PathFor(AttemptKey key) const {
  return dir_ + "/r" + std::to_string(key.run) + "-s" + std::to_string(key.shard) + "-a" +
         std::to_string(key.attempt) + ".json";
}

Status RunReporter::Open() {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return Status::Io("cannot create " + dir_ + ": " + ec.message());
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
      log::Warn("ignoring an unreadable result file", {{"file", path}, {"error", r.status().message()}});
      continue;
    }
    results_[r->key] = Entry{*r, false, false};
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

Status RunReporter::Persist(const ShardResult& r) {
  // Written whole, then renamed: a crash leaves the old file or the new one, never half.
  std::string path = PathFor(r.key), tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << ResultToJson(r, agent_);
    if (!out.flush()) return Status::Io("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return Status::Io("cannot rename " + tmp);
  return Status::Ok();
}

void RunReporter::Add(const ShardResult& result) {
  if (Status s = Persist(result); !s.ok()) {
    // Still reported from memory; only a restart before then would lose it.
    log::Warn("cannot persist a result", {{"run", result.key.run}, {"error", s.message()}});
  }
  results_[result.key] = Entry{result, false, false};
}

void RunReporter::Release(AttemptKey key) {
  auto it = results_.find(key);
  if (it == results_.end() || it->second.released) return;
  it->second.released = true;
  ready_.push_back(key);
  SendMore();
}

void RunReporter::Drop(AttemptKey key) {
  auto it = results_.find(key);
  if (it == results_.end()) return;
  std::remove(PathFor(key).c_str());
  results_.erase(it);  // a reply in flight finds nothing and is ignored
}

void RunReporter::SendMore() {
  while (!paused_ && !closed_ && in_flight_ < kMaxInFlight && !ready_.empty()) {
    AttemptKey key = ready_.front();
    ready_.pop_front();
    auto it = results_.find(key);
    if (it == results_.end() || it->second.in_flight) continue;
    it->second.in_flight = true;
    ++in_flight_;
    link_->Post("/v1/agent/result", ResultToJson(it->second.result, agent_), "application/json",
                std::chrono::seconds(30),
                [this, key](Result<http::HttpResponse> r) { OnReply(key, std::move(r)); });
  }
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
      log::Warn("result refused", {{"run", key.run}, {"shard", key.shard},
                                   {"attempt", key.attempt}, {"error", Describe(r)}});
      Settle(key, false);
      break;
    case Reply::kRetry:
      ready_.push_front(key);
      paused_ = true;
      if (!retry_timer_.active()) {
        retry_timer_.Once(static_cast<uint64_t>(backoff_.Next()), [this] {
          paused_ = false;
          SendMore();
        });
      }
      return;
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
