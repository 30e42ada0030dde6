// Assignment is one shard handed to this agent by a claim: what to run and under which
// lease (fencing token, TTL). ShardResult is how one attempt of it ended, as reported back.
// Value types and the JSON parsing of the claim reply; pure, any thread.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/run.h"

namespace jobctl::agentd {

struct ShardKey {
  int64_t run = 0;
  int shard = 0;
  friend auto operator<=>(const ShardKey&, const ShardKey&) = default;
};

struct AttemptKey {
  int64_t run = 0;
  int shard = 0;
  int attempt = 0;
  ShardKey shard_key() const { return {run, shard}; }
  friend auto operator<=>(const AttemptKey&, const AttemptKey&) = default;
};

struct Assignment {
  AttemptKey key;
  int shard_total = 1;
  int64_t token = 0;  // the lease's fencing token
  int64_t ttl_ms = 15'000;
  int64_t heartbeat_ms = 5'000;
  std::string job;
  std::string scheduled_at;          // RFC 3339, UTC
  std::string trace_id;              // 32 hex digits
  std::vector<std::string> command;  // argv, or empty when `shell` is set
  std::string shell;                 // run as /bin/sh -c SHELL
  std::map<std::string, std::string> env;
  // Variable -> file name in agentd's secrets_dir, read when the shard starts.
  std::map<std::string, std::string> secrets;
  std::string run_as;  // "" = agentd's own user
  std::string cwd;     // "" = the user's home (or the state dir without run_as)
  std::optional<int64_t> timeout_ms;
  std::optional<int64_t> kill_grace_ms;
};

struct ShardResult {
  AttemptKey key;
  int64_t token = 0;
  Outcome outcome = Outcome::kExited;
  std::optional<int64_t> exit_code;
  std::string message;
  // The seq of the attempt's last log chunk the coordinator took (0: none), known once its
  // output is all shipped: the coordinator's readers wait for the output up to there. None
  // in a result persisted before then.
  std::optional<int64_t> output_seq;
};

// What a claim reply says besides its assignments.
struct ClaimReplyExtras {
  // The largest log batch the coordinator takes (wire/log_batch.h); none from a coordinator
  // that takes one chunk per request.
  std::optional<int64_t> log_batch_bytes;
  // The most results the coordinator takes in one POST /v1/agent/results; none from a
  // coordinator that takes one result per request.
  std::optional<int64_t> result_batch_max;
};

// The body of a 200 answer to POST /v1/agent/claim. An assignment without its identity (run,
// shard, attempt, token) is an error of the whole reply; the rest is checked by the policy.
Result<std::vector<Assignment>> ParseClaimReply(std::string_view body,
                                                ClaimReplyExtras* extras = nullptr);

// The body of POST /v1/agent/result, and back (results persisted in the state dir).
std::string ResultToJson(const ShardResult& r, std::string_view agent);
Result<ShardResult> ResultFromJson(std::string_view text);

}  // namespace jobctl::agentd
