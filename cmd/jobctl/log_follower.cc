#include "log_follower.h"

#include <unistd.h>

#include <iostream>

#include "base/base64.h"
#include "model/time_format.h"
#include "output.h"
#include "wire/views.h"

namespace jobctl::cli {
namespace {

void WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n <= 0) return;
    data.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

void LogFollower::Emit(const std::string& key, bool to_stderr, const std::string& prefix,
                       const std::string& data) {
  int fd = to_stderr ? STDERR_FILENO : STDOUT_FILENO;
  std::string safe;
  if (terminal_[fd]) {
    sanitizers_.try_emplace(key, options_.sgr).first->second.Feed(data, &safe);
  }
  const std::string& shown = terminal_[fd] ? safe : data;
  if (!options_.prefix && options_.label.empty()) {
    WriteAll(fd, shown);
    return;
  }
  std::string& part = partial_[key];
  part += shown;
  size_t start = 0;
  for (size_t nl = part.find('\n'); nl != std::string::npos; nl = part.find('\n', start)) {
    WriteAll(fd, prefix + part.substr(start, nl - start + 1));
    start = nl + 1;
  }
  part.erase(0, start);
}

void LogFollower::FlushPartials() {
  // What a sanitizer holds (a sequence the run never finished) is shown, then any colour
  // it let through is reset.
  for (auto& [key, sanitizer] : sanitizers_) {
    std::string rest;
    sanitizer.Finish(&rest);
    if (rest.empty()) continue;
    if (options_.prefix || !options_.label.empty()) {
      partial_[key] += rest;
    } else {
      WriteAll(key.back() == 'e' ? STDERR_FILENO : STDOUT_FILENO, rest);
    }
  }
  for (auto& [key, part] : partial_) {
    if (part.empty()) continue;
    WriteAll(key.back() == 'e' ? STDERR_FILENO : STDOUT_FILENO,
             "[" + key.substr(0, key.size() - 2) + "] " + part + "\n");
    part.clear();
  }
}

Result<LogFollower::Read> LogFollower::ReadOnce(int wait_ms) {
  std::string path = "/v1/runs/" + std::to_string(run_) + "/logs?after=" + std::to_string(after_) +
                     "&wait_ms=" + std::to_string(wait_ms);
  if (options_.shard) path += "&shard=" + std::to_string(*options_.shard);
  if (!options_.stream.empty()) path += "&stream=" + options_.stream;
  Result<nlohmann::json> reply = client_->Get(path, std::chrono::milliseconds(wait_ms + 30'000));
  if (!reply.ok()) return reply.status();
  Result<wire::LogPage> page = ReplyAs<wire::LogPage>(*reply);
  if (!page.ok()) return page.status();
  for (const wire::LogChunkView& ch : page->chunks) {
    if (options_.since) {
      Result<WallTime> at = ParseInstant(ch.at);
      if (at.ok() && *at < *options_.since) continue;
    }
    const std::string& stream = ch.stream;
    std::string data = Base64Decode(ch.data);
    std::string shard = "shard " + std::to_string(ch.shard);
    if (ch.attempt > 1) shard += " attempt " + std::to_string(ch.attempt);
    if (!options_.label.empty()) {
      shard = ch.shard == 0 && ch.attempt <= 1 ? options_.label : options_.label + " " + shard;
    }
    Emit(shard + (stream == "stderr" ? ":e" : ":o"), stream != "stdout", "[" + shard + "] ", data);
  }
  after_ = page->next;
  if (page->pruned) pruned_ = *page->pruned;
  return Read{page->done, page->chunks.size()};
}

Status LogFollower::Run() {
  while (true) {
    if (options_.stop && options_.stop->load()) break;
    Result<Read> read = ReadOnce(options_.follow ? 2'000 : 0);
    if (!read.ok()) return read.status();
    if (read->done) break;
    // Without follow, stop once a read returns nothing new.
    if (!options_.follow && read->chunks == 0) break;
  }
  FlushPartials();
  return Status::Ok();
}

Status FlowFollower::Run() {
  // One follower per step run, made as each step starts. While the flow run goes on, each
  // round reads every step without waiting, and the flow run's own wait (up to 1 s) paces
  // the rounds in which nothing was printed; once it has ended, the steps' reads wait.
  std::map<int64_t, std::unique_ptr<LogFollower>> steps;
  std::map<int64_t, std::string> names;
  std::vector<int64_t> order;
  std::map<int64_t, bool> done;
  // One read of a step's output: the chunks printed. A step whose job the token may not read
  // is said once and left; a step is done once its run ended and all was read (without
  // follow: once a read brings nothing).
  auto read_step = [&](int64_t id, int wait_ms) -> Result<size_t> {
    Result<LogFollower::Read> read = steps[id]->ReadOnce(wait_ms);
    if (!read.ok()) {
      if (read.status().code() != Status::Code::kPermissionDenied) return read.status();
      std::cerr << "jobctl: step " << Shown(names[id], STDERR_FILENO)
                << ": its output is not readable with this token\n";
      done[id] = true;
      return size_t{0};
    }
    if (read->done || (!options_.follow && read->chunks == 0)) {
      steps[id]->FlushPartials();
      done[id] = true;
      if (!steps[id]->pruned().empty()) {
        std::cerr << "jobctl: step " << Shown(names[id], STDERR_FILENO) << ": output pruned ("
                  << Shown(steps[id]->pruned(), STDERR_FILENO) << ")\n";
      }
    }
    return read->chunks;
  };
  while (true) {
    if (options_.stop && options_.stop->load()) break;
    Result<nlohmann::json> reply = client_->Get("/v1/runs/" + std::to_string(run_));
    if (!reply.ok()) return reply.status();
    Result<wire::RunView> flow = ReplyAs<wire::RunView>(*reply);
    if (!flow.ok()) return flow.status();
    const bool ended = !flow->finished_at.empty();
    for (const wire::StepView& s : flow->steps.value_or(std::vector<wire::StepView>{})) {
      if (s.run == 0 || s.kept || s.shard_total == 0 || steps.count(s.run) > 0) continue;
      FollowOptions o = options_;
      o.label = s.name;
      o.follow = false;
      steps[s.run] = std::make_unique<LogFollower>(client_, s.run, o);
      names[s.run] = s.name;
      order.push_back(s.run);
    }
    size_t printed = 0;
    bool all_done = true;
    for (int64_t id : order) {
      if (done[id]) continue;
      Result<size_t> n = read_step(id, 0);
      if (!n.ok()) return n.status();
      printed += *n;
      all_done = all_done && done[id];
    }
    if (all_done && (ended || !options_.follow)) break;
    if (printed > 0 || !options_.follow) continue;
    if (!ended) {
      // Nothing new: wait for the flow run's end (a step starting shows at the next round).
      Result<nlohmann::json> wait = client_->Get(
          "/v1/runs/" + std::to_string(run_) + "/wait?timeout_ms=1000", std::chrono::seconds(40));
      if (!wait.ok()) return wait.status();
      continue;
    }
    // Ended, with a step's output still arriving: wait on that output.
    for (int64_t id : order) {
      if (done[id]) continue;
      if (Result<size_t> n = read_step(id, 1000); !n.ok()) return n.status();
      break;
    }
  }
  for (int64_t id : order) {
    if (!done[id]) steps[id]->FlushPartials();
  }
  return Status::Ok();
}

}  // namespace jobctl::cli
