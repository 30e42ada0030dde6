// Enroller gives agentd a credential of its own before it asks for any work. The coordinator
// takes an agent's name from its credential alone, so each agent needs one bound to its
// name: either an agent token an admin created for it (`jobctl token create --role agent
// --agent NAME`), or one it got by enrolling with the fleet's join token.
//
// At start: a credential kept in the state dir (`credential`, mode 0600) from an earlier
// enrolment is used if the coordinator still takes it. Otherwise the configured token is
// sent to POST /v1/agent/enrol with the agent's name and labels: a join token gets a new
// agent token back (201), which is written to the state dir and used from then on; an agent
// token bound to this name is answered 200 and used as it is. A stored credential that is
// refused (revoked by `jobctl agents rm`, or expired) is deleted and enrolment starts over.
// Refusals that need a person (another agent has the name: 409; the token is bound to
// another name: 403) are logged once and retried with backoff, so the agent comes up as
// soon as the admin fixed it. Loop thread only; owned by the Agent.
#pragma once

#include <uv.h>

#include <functional>
#include <map>
#include <string>

#include "backoff.h"
#include "coordinator_link.h"
#include "uvx/handles.h"

namespace jobctl::agentd {

class Enroller {
 public:
  // `random` (not owned; nullptr: the retry backoff's own) draws the retry delays.
  Enroller(uv_loop_t* loop, CoordinatorLink* link, std::string state_dir,
           std::string configured_token, Random* random = nullptr);

  // Sets the link's token and calls `on_ready` once the coordinator took it (never inside
  // Start).
  void Start(std::string name, std::map<std::string, std::string> labels,
             std::function<void()> on_ready);
  void Close();
  const std::string& credential_path() const { return path_; }

 private:
  void Try();
  void OnReply(bool stored, Result<http::HttpResponse> r);
  void Retry(const std::string& why, int64_t at_least_ms = 0);
  Status Save(const std::string& secret);

  CoordinatorLink* link_;
  std::string path_;
  std::string configured_;
  std::string name_;
  std::map<std::string, std::string> labels_;
  std::function<void()> on_ready_;
  std::string last_error_;  // logged once until it changes
  Backoff backoff_;         // 1 s doubling up to 60 s
  uvx::Timer retry_timer_;
  bool closed_ = false;
};

}  // namespace jobctl::agentd
