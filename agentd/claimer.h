// Claimer keeps exactly one long-poll claim (POST /v1/agent/claim) open while the agent has
// free slots, saying who the agent is (name, labels, slots, version) and how many slots are
// free. The coordinator answers the moment it has shards for the agent (or after wait_ms, with
// none); the Claimer hands the assignments over with the time the claim was SENT, and claims
// again at once. An idle agent thus costs one held request, nothing else.
//
// A new claim replaces the open one on the coordinator (answered empty), which is how a
// change of labels or slots (SIGHUP) takes effect at once, and how Stop() withdraws: its last
// claim says free = 0 and waits 0 ms. Assignments in any answer, even a replaced one, are
// handed over: the coordinator has leased them. Loop thread only; owned by the Agent.
#pragma once

#include <uv.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "assignment.h"
#include "backoff.h"
#include "base/clock.h"
#include "coordinator_link.h"
#include "uvx/handles.h"

namespace jobctl::agentd {

struct AgentIdentity {
  std::string name;
  std::map<std::string, std::string> labels;
  int slots = 1;
  std::string version;
  std::vector<std::string> features;  // what it can do beyond the base protocol (ClaimRequest)
};

class Claimer {
 public:
  static constexpr int64_t kWaitMs = 30'000;
  using OnAssignments = std::function<void(std::vector<Assignment>, int64_t sent_ms)>;
  // What each readable claim reply says besides its assignments (before them, if any).
  using OnExtras = std::function<void(const wire::ClaimReply&)>;

  // `random` (not owned; nullptr: the retry backoff's own) draws the retry delays.
  Claimer(uv_loop_t* loop, CoordinatorLink* link, const Clock* clock, AgentIdentity identity,
          OnAssignments on_assignments, OnExtras on_extras, Random* random = nullptr);

  // The number of free slots, and whether shards wait for their instants (`hold`), changed
  // (one call for both, so that no claim goes out with one of them stale). Claims if no claim
  // is open and either a slot is free or `hold`: while shards wait, a claim stays open even
  // without a free slot, as its answer is how a cancel reaches them before they start. A
  // claim open without a free slot is replaced once a slot is free.
  void Set(int free, bool hold);
  // Labels or slots changed: the open claim is replaced.
  void SetIdentity(AgentIdentity identity);
  // Stops claiming and withdraws the open claim. True: nothing was open, and on_withdrawn
  // will not run; else it runs once, when the withdrawal is answered or has failed.
  bool Stop(std::function<void()> on_withdrawn);
  void Close();
  // No claim awaits an answer (after Stop: the withdrawal was answered).
  bool idle() const { return !open_; }

 private:
  void MaybeClaim();
  void Claim(int free, int64_t wait_ms);
  void OnReply(uint64_t seq, int64_t sent_ms, Result<http::HttpResponse> r);
  Result<std::vector<Assignment>> Parse(const std::string& body);

  CoordinatorLink* link_;
  const Clock* clock_;
  AgentIdentity identity_;
  OnAssignments on_assignments_;
  OnExtras on_extras_;
  std::function<void()> on_withdrawn_;
  int free_ = 0;
  bool hold_ = false;
  int open_free_ = 0;  // the free slots the open claim said
  bool news_ = false;  // the last reply parsed said something besides assignments
  uint64_t seq_ = 0;   // of the last claim sent
  bool open_ = false;  // the claim numbered seq_ awaits its answer
  bool stopped_ = false;
  bool closed_ = false;
  Backoff backoff_;
  uvx::Timer retry_timer_;
};

}  // namespace jobctl::agentd
