// ClaimPoll: the agents' open long-poll claims. An agent keeps one claim open; it is answered
// with the shards granted to it (once the turn that granted them commits), or empty when its
// wait ends, when the agent replaces it, or when the coordinator closes; a claim whose
// credential was revoked is answered 401. The open claim sits in the agent's entry of the
// AgentRegistry. Loop thread only; owned by the Dispatcher.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "coordinator/agent_registry.h"
#include "coordinator/context.h"
#include "http/server.h"
#include "uvx/handles.h"
#include "wire/agent_messages.h"

namespace jobctl::coordinator {

class ClaimPoll {
 public:
  // The longest a claim is held open, whatever it asks.
  static constexpr int64_t kMaxWaitMs = 60'000;

  ClaimPoll(Context* ctx, AgentRegistry* agents);
  ClaimPoll(const ClaimPoll&) = delete;
  ClaimPoll& operator=(const ClaimPoll&) = delete;

  void Start();
  void Close();  // answers every open claim, empty

  // Holds `responder` open as the agent's claim for `wait_ms` (at most kMaxWaitMs, and never
  // past `expires_ms`, its credential's expiry); an open claim it replaces is answered empty.
  // Returns the wait granted: 0 asks for an answer now.
  int64_t Open(AgentInfo& a, std::shared_ptr<http::Responder> responder, int64_t token_id, int free,
               int64_t wait_ms, std::optional<int64_t> expires_ms);
  // Answers the agent's open claim with `grants` and `canceled` (and the agent's pending
  // AgentInfo::cancels, which it empties) once this turn commits, or with the commit's error.
  // A grant's start_in_us is counted from its start_mono_us then.
  void Answer(AgentInfo& a, std::vector<wire::Grant> grants,
              std::vector<wire::LeaseRef> canceled = {});
  // Answers the open claim that came with this credential (or the agent's open claim) with
  // 401 and `why`: a revoked credential is served nothing more.
  void CloseOfToken(int64_t token_id, const std::string& why);
  void CloseOf(const std::string& agent, const std::string& why);
  // Re-arms the timer for the earliest wait to end. Scans every agent: called when claims
  // come and go, not per heartbeat.
  void Arm();

 private:
  void OnTimer();

  Context* ctx_;
  AgentRegistry* agents_;
  std::unique_ptr<uvx::Timer> timer_;
};

}  // namespace jobctl::coordinator
