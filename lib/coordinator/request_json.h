// The typed requests behind the API's JSON bodies (agent routes and write routes), and their
// decoding from a parsed body. Decoding checks types and the rules that need nothing but the
// body; every error is kInvalidArgument with the message the API answers with (400). Pure
// functions, any thread; the handlers in api_agent.cc and api_write.cc call them. (A
// trigger's body is wire::TriggerRequest, which jobctl sends.)
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/duration.h"
#include "base/status.h"
#include "coordinator/applier.h"
#include "coordinator/auth.h"
#include "coordinator/dispatcher.h"
#include "coordinator/run_book.h"

namespace jobctl::coordinator {

using HeartbeatRequest = wire::HeartbeatRequest;  // "agent" may be "": the credential decides

struct DrainRequest {
  bool draining = true;
};

// POST /v1/runs/{id}/retry: the whole run again, or only its shards that did not succeed.
struct RetryRequest {
  bool failed_shards = false;
  // A flow run's: the steps to run again (with what depends on them); none: those that failed.
  std::vector<std::string> from;
};

struct TokenRequest {
  std::string role_name = "read";  // as sent; parses to `role`
  Role role = Role::kRead;
  std::string jobs;   // read and trigger roles: a glob of job names, "" = all
  std::string name;   // "" = "<role>-token", or "agent-<agent>"
  std::string agent;  // agent role: the agent name it is bound to (required)
  std::map<std::string, std::string> labels;  // agent and join roles: allowed labels (globs)
  std::optional<int64_t> expires_in_ms;       // from creation; nullopt = never
};

// POST /v1/agent/enrol: the agent's name and the labels it will claim with.
struct EnrolRequest {
  std::string agent;
  std::map<std::string, std::string> labels;
};

// `body` is the request body as a JSON object (Api::Body). The agent routes' "agent" field is
// optional: who the agent is comes from its credential, and Api refuses a body naming another.
Result<ClaimRequest> ClaimRequestFromJson(const nlohmann::json& body);
// The agent routes' messages are wire/agent_messages.h; these add the checks that need the
// coordinator's rules (label syntax, version length).
// The author is the caller's token name, or "AUTHOR (token NAME)" when the body names one.
Result<ApplyRequest> ApplyRequestFromJson(const nlohmann::json& body,
                                          const std::string& token_name);
Result<DrainRequest> DrainRequestFromJson(const nlohmann::json& body);
// Any other field is refused: a misspelt "failed_shards" must not rerun every shard.
Result<RetryRequest> RetryRequestFromJson(const nlohmann::json& body);
Result<TokenRequest> TokenRequestFromJson(const nlohmann::json& body);
Result<EnrolRequest> EnrolRequestFromJson(const nlohmann::json& body);
// POST /v1/notify/test {"channel": "NAME"}: the channel's name, 1 to 64 bytes.
Result<std::string> NotifyTestChannelFromJson(const nlohmann::json& body);

}  // namespace jobctl::coordinator
