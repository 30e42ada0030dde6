#include "claimer.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/log.h"

namespace jobctl::agentd {

Claimer::Claimer(uv_loop_t* loop, CoordinatorLink* link, const Clock* clock, AgentIdentity identity,
                 OnAssignments on_assignments, OnExtras on_extras, Random* random)
    : link_(link),
      clock_(clock),
      identity_(std::move(identity)),
      on_assignments_(std::move(on_assignments)),
      on_extras_(std::move(on_extras)),
      backoff_(kRetryBaseMs, kRetryCapMs, random),
      retry_timer_(loop) {}

void Claimer::Set(int free, bool hold) {
  free_ = free;
  hold_ = hold;
  // A claim held open without a free slot (hold) takes nothing: one that can replaces it.
  if (open_ && open_free_ <= 0 && free_ > 0 && !stopped_ && !retry_timer_.active()) {
    return Claim(free_, kWaitMs);
  }
  MaybeClaim();
}

void Claimer::SetIdentity(AgentIdentity identity) {
  identity_ = std::move(identity);
  if (stopped_) return;
  if (open_)
    Claim(free_, kWaitMs);  // replaces the open one
  else
    MaybeClaim();
}

bool Claimer::Stop(std::function<void()> on_withdrawn) {
  if (stopped_ || !open_) {
    stopped_ = true;
    retry_timer_.Stop();
    return true;
  }
  stopped_ = true;
  retry_timer_.Stop();
  // Withdraw the open claim: the replacement is answered at once and asks for nothing.
  on_withdrawn_ = std::move(on_withdrawn);
  Claim(0, 0);
  return false;
}

void Claimer::Close() {
  closed_ = true;
  stopped_ = true;
  retry_timer_.Stop();
}

void Claimer::MaybeClaim() {
  if (stopped_ || open_ || (free_ <= 0 && !hold_) || retry_timer_.active()) return;
  Claim(std::max(free_, 0), kWaitMs);
}

void Claimer::Claim(int free, int64_t wait_ms) {
  wire::ClaimRequest body{identity_.name, identity_.labels,  identity_.slots,
                          free,           identity_.version, wait_ms};
  body.features = identity_.features;
  uint64_t seq = ++seq_;
  open_ = true;
  open_free_ = free;
  int64_t sent = clock_->MonotonicMs();
  link_->Post(
      "/v1/agent/claim", body.ToJson().dump(), "application/json",
      std::chrono::milliseconds(wait_ms + 15'000),
      [this, seq, sent](Result<http::HttpResponse> r) { OnReply(seq, sent, std::move(r)); });
}

Result<std::vector<Assignment>> Claimer::Parse(const std::string& body) {
  Result<wire::ClaimReply> reply = wire::ClaimReply::FromJson(body);
  if (!reply.ok()) return reply.status();
  news_ = !reply->canceled.empty();
  if (on_extras_) on_extras_(*reply);
  return std::move(reply->assignments);
}

void Claimer::OnReply(uint64_t seq, int64_t sent_ms, Result<http::HttpResponse> r) {
  if (closed_) return;
  if (seq == seq_) open_ = false;
  Reply reply = Classify(r);
  if (stopped_ && seq == seq_ && on_withdrawn_) {
    // Assignments that raced the withdrawal are still handed over (the Agent refuses them).
    if (reply == Reply::kOk) {
      Result<std::vector<Assignment>> list = Parse(r->body);
      if (list.ok() && !list->empty()) on_assignments_(std::move(*list), sent_ms);
    }
    std::function<void()> done = std::move(on_withdrawn_);
    on_withdrawn_ = nullptr;
    done();
    return;
  }
  if (reply == Reply::kOk) {
    Result<std::vector<Assignment>> list = Parse(r->body);
    if (!list.ok()) {
      log::Error("cannot read the claim reply", {{"error", list.status().message()}});
    } else if (!list->empty() || news_ || seq != seq_ || stopped_ ||
               clock_->MonotonicMs() - sent_ms >= 1000) {
      backoff_.Reset();
      if (!list->empty()) on_assignments_(std::move(*list), sent_ms);
      MaybeClaim();
      return;
    } else if (backoff_.failures() == 0) {
      // An empty answer long before wait_ms to the claim still open means something else
      // replaced it: most likely a second agentd with this name. Back off rather than
      // replace each other's claims in a tight loop.
      log::Warn("claim answered early; is another agentd running with this name?",
                {{"agent", identity_.name}});
    }
  } else if (reply != Reply::kRetry) {
    log::Warn("claim refused", {{"error", Describe(r)}});
  }
  if (seq != seq_ || stopped_) return;  // a replaced claim's failure changes nothing
  retry_timer_.Once(static_cast<uint64_t>(backoff_.Next(RetryAfterMs(r))),
                    [this] { MaybeClaim(); });
}

}  // namespace jobctl::agentd
