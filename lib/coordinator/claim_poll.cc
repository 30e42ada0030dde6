#include "coordinator/claim_poll.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "coordinator/http_errors.h"
#include "wire/log_batch.h"

namespace jobctl::coordinator {
namespace {

// Every claim answer says that this coordinator takes log batches (wire/log_batch.h) and
// batches of results (POST /v1/agent/results).
std::string ClaimReply(std::vector<wire::Grant> assignments = {},
                       std::vector<wire::LeaseRef> canceled = {}) {
  wire::ClaimReply r;
  r.assignments = std::move(assignments);
  r.canceled = std::move(canceled);
  r.log_batch_bytes = static_cast<int64_t>(wire::kMaxLogBatchBytes);
  r.result_batch_max = static_cast<int64_t>(wire::kMaxResultBatch);
  return r.ToJson();
}

void AnswerEmpty(AgentInfo& a) {
  a.waiting->Send({200, "application/json", ClaimReply(), {}});
  a.waiting.reset();
  ++a.claim_seq;
}

}  // namespace

ClaimPoll::ClaimPoll(Context* ctx, AgentRegistry* agents) : ctx_(ctx), agents_(agents) {}

void ClaimPoll::Start() { timer_ = std::make_unique<uvx::Timer>(ctx_->loop); }

void ClaimPoll::Close() {
  for (auto& [name, a] : agents_->all()) {
    if (a.waiting) AnswerEmpty(a);
  }
  timer_.reset();
}

int64_t ClaimPoll::Open(AgentInfo& a, std::shared_ptr<http::Responder> responder, int64_t token_id,
                        int free, int64_t wait_ms, std::optional<int64_t> expires_ms) {
  if (a.waiting) a.waiting->Send({200, "application/json", ClaimReply(), {}});
  a.waiting = std::move(responder);
  a.waiting_token_id = token_id;
  a.waiting_free = std::max(free, 0);
  wait_ms = std::clamp<int64_t>(wait_ms, 0, kMaxWaitMs);
  if (expires_ms) wait_ms = std::clamp<int64_t>(*expires_ms - ctx_->NowMs(), 0, wait_ms);
  a.wait_deadline_mono = ctx_->MonoMs() + wait_ms;
  uint64_t seq = ++a.claim_seq;
  std::string name = a.name;
  a.waiting->OnClose([this, name, seq] {
    AgentInfo* it = agents_->Find(name);
    if (it != nullptr && it->claim_seq == seq) it->waiting.reset();
  });
  return wait_ms;
}

void ClaimPoll::Answer(AgentInfo& a, std::vector<wire::Grant> grants,
                       std::vector<wire::LeaseRef> canceled) {
  std::shared_ptr<http::Responder> responder = std::move(a.waiting);
  a.waiting.reset();
  ++a.claim_seq;
  if (!responder) return;
  // And every cancel the agent has not been told of yet.
  canceled.insert(canceled.end(), a.cancels.begin(), a.cancels.end());
  a.cancels.clear();
  // Built as the answer leaves, after the commit: a grant ahead of its instant says how long
  // its child waits from then, in microseconds: it arrives later still, so that the child never
  // starts before its instant.
  auto held = std::make_shared<std::pair<std::vector<wire::Grant>, std::vector<wire::LeaseRef>>>(
      std::move(grants), std::move(canceled));
  Context* ctx = ctx_;
  ctx_->batch->OnCommit([responder, held, ctx](const Status& s) {
    if (!s.ok()) return responder->Send(ErrorResponseFor(s));
    int64_t now_us = ctx->clock->MonotonicUs();
    for (wire::Grant& g : held->first) {
      if (g.start_mono_us > 0) {
        g.start_in_us = std::clamp<int64_t>(g.start_mono_us - now_us, 0, wire::kMaxStartInUs);
      }
    }
    responder->Send(
        {200, "application/json", ClaimReply(std::move(held->first), std::move(held->second)), {}});
  });
}

void ClaimPoll::CloseOfToken(int64_t token_id, const std::string& why) {
  for (auto& [name, a] : agents_->all()) {
    if (a.waiting && a.waiting_token_id == token_id) CloseOf(name, why);
  }
}

void ClaimPoll::CloseOf(const std::string& agent, const std::string& why) {
  AgentInfo* a = agents_->Find(agent);
  if (a == nullptr || !a->waiting) return;
  a->waiting->Send({401,
                    "application/json",
                    nlohmann::json{{"error", "unauthenticated"}, {"message", why}}.dump(),
                    {}});
  a->waiting.reset();
  ++a->claim_seq;
  Arm();
}

void ClaimPoll::OnTimer() {
  int64_t now = ctx_->MonoMs();
  for (auto& [name, a] : agents_->all()) {
    if (a.waiting && a.wait_deadline_mono <= now) AnswerEmpty(a);
  }
  Arm();
}

void ClaimPoll::Arm() {
  if (!timer_) return;
  int64_t now = ctx_->MonoMs();
  int64_t earliest = -1;
  for (const auto& [name, a] : agents_->all()) {
    if (a.waiting && (earliest < 0 || a.wait_deadline_mono < earliest)) {
      earliest = a.wait_deadline_mono;
    }
  }
  if (earliest >= 0) {
    timer_->Once(static_cast<uint64_t>(std::max<int64_t>(earliest - now, 0)),
                 [this] { OnTimer(); });
  } else {
    timer_->Stop();
  }
}

}  // namespace jobctl::coordinator
