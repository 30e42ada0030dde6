// The agent routes' messages (man jobctl-api(7), "Agent routes"), one struct each, written and
// read by the coordinator and agentd alike: the claim and its reply of grants, the heartbeat
// and its reply, a result, a batch of results and their answers, and the answer to a log
// append (the log batch body itself is wire/log_batch.h).
//
// Each has one ToJson and one FromJson. FromJson checks types and ranges only (the coordinator
// checks the rest, such as label syntax, against the caller's credential); a missing, mistyped
// or out-of-range field is kInvalidArgument naming the field. The replies agentd reads say,
// besides, that agentd and the coordinator may be different versions. Pure, any thread.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/flow_spec.h"
#include "model/ids.h"
#include "model/job.h"
#include "model/run.h"
#include "model/step_output.h"

namespace jobctl::wire {

// What an agent says in the replies' errors about the two sides.
inline constexpr std::string_view kAgentSides = "agentd and the coordinator";
// A lease TTL or heartbeat period longer than this is read as this: an agent gives up a lease
// sooner than a coordinator so configured would (the safe side), and its deadline arithmetic
// stays far from overflow.
inline constexpr int64_t kMaxLeasePeriodMs = int64_t{24} * 3600 * 1000;

// POST /v1/agent/claim. "agent" is optional: who the agent is comes from its credential.
struct ClaimRequest {
  std::string agent;
  std::map<std::string, std::string> labels;
  int slots = 1;
  int free = 1;
  std::string version;
  int64_t wait_ms = 30'000;
  // What this agent can do beyond what every agent can: kStepOutputFeature when it runs flow
  // steps (their context and $JOB_OUTPUT). At most kMaxFeatures, each at most 64 characters.
  std::vector<std::string> features;

  nlohmann::json ToJson() const;
  static Result<ClaimRequest> FromJson(const nlohmann::json& j);
  friend bool operator==(const ClaimRequest&, const ClaimRequest&) = default;
};

inline constexpr const char* kStepOutputFeature = "step_output";
// The agent reads a grant's resource limits (Grant::limits) and either enforces them or
// refuses the shard: shards with limits go only to such agents, never to one that would run
// them without their limits.
inline constexpr const char* kLimitsFeature = "limits";
// The agent starts a grant's child at its start_in_us (Grant) on its own clock, keeps its claim
// open while such a child waits, and reads the claim reply's "canceled": only such agents are
// granted a shard before its instant (early dispatch, coordinator/dispatcher.h).
inline constexpr const char* kEarlyStartFeature = "start_in_us";
inline constexpr size_t kMaxFeatures = 16;
// The longest an agent is asked to wait before it starts a granted shard's child.
inline constexpr int64_t kMaxStartInUs = 60'000'000;
// The most canceled leases one claim reply names.
inline constexpr size_t kMaxCanceledInReply = 10'000;

// What a shard of a flow's step learns of its flow (model/flow.h): the flow, its run and the
// step, the run ids of the steps it needs, and what they wrote to $JOB_OUTPUT, merged in the
// order it lists them (model/step_output.h). FromJson refuses what a checked flow could not
// hold: names that are not a job's and a step's, more than kMaxFlowSteps needs, output keys
// OutputKeyProblem refuses, values with NUL or newline, outputs over kMaxNeededOutputBytes.
struct StepContext {
  std::string flow;
  int64_t flow_run = 0;
  std::string step;
  std::map<std::string, int64_t> needs;
  std::map<std::string, std::string> outputs;

  nlohmann::json ToJson() const;
  static Result<StepContext> FromJson(const nlohmann::json& j);
  friend bool operator==(const StepContext&, const StepContext&) = default;
};

// One shard handed to an agent by a claim: what to run and under which lease.
struct Grant {
  AttemptKey key;
  int shard_total = 1;
  FencingToken token = 0;
  int64_t ttl_ms = 15'000;
  int64_t heartbeat_ms = 5'000;
  JobId job;
  std::string scheduled_at;          // RFC 3339, UTC
  std::string trace_id;              // 32 hex digits
  std::vector<std::string> command;  // argv, or empty when `shell` is set
  std::string shell;                 // run as /bin/sh -c SHELL
  std::map<std::string, std::string> env;
  // Variable -> file name in agentd's secrets_dir, read when the shard starts (names only).
  std::map<std::string, std::string> secrets;
  std::string run_as;  // "" = agentd's own user
  std::string cwd;     // "" = the user's home (or the state dir without run_as)
  std::optional<int64_t> timeout_ms;
  std::optional<int64_t> kill_grace_ms;
  ResourceLimits limits;            // enforced in the attempt's cgroup (agentd(8), CGROUPS)
  std::optional<StepContext> step;  // a flow step's shard; granted only to agents with
                                    // kStepOutputFeature
  // Granted ahead of its instant (only to agents with kEarlyStartFeature): the child starts
  // this long after the reply arrives, on the agent's monotonic clock, in microseconds; 0 to
  // kMaxStartInUs. Absent or 0: at once.
  int64_t start_in_us = 0;
  // The coordinator's own bookkeeping, never on the wire: when the child is due, on the
  // coordinator's monotonic clock in microseconds (0: at once), turned into start_in_us as
  // the reply is sent. Monotonic, so that a step of the wall clock between the grant and the
  // answer moves neither the start nor the lease apart.
  int64_t start_mono_us = 0;

  nlohmann::json ToJson() const;
  // Run, shard, attempt and token are required; ttl_ms, when given, is positive. ttl_ms and
  // heartbeat_ms above kMaxLeasePeriodMs read as kMaxLeasePeriodMs.
  static Result<Grant> FromJson(const nlohmann::json& j);
  friend bool operator==(const Grant&, const Grant&) = default;
};

// A lease an agent holds (in a heartbeat) or that the coordinator renewed (in its reply).
struct LeaseRef {
  ShardKey key;
  FencingToken token = 0;
  friend bool operator==(const LeaseRef&, const LeaseRef&) = default;
};

// The 200 answer to a claim.
struct ClaimReply {
  std::vector<Grant> assignments;
  // The largest log batch body the coordinator takes; none from one that takes one chunk per
  // request. A value that is not positive reads as none.
  std::optional<int64_t> log_batch_bytes;
  // The most results one POST /v1/agent/results takes; none from one that takes one result
  // per request. A value that is not positive reads as none.
  std::optional<int64_t> result_batch_max;
  // Leases of this agent granted ahead whose runs were canceled before their instants: their
  // children must not start. Sent at once, so that a cancel before a shard's instant stops it
  // before it starts; the heartbeat tells the same later. Read leniently (what does not read
  // is left out, and past kMaxCanceledInReply the rest).
  std::vector<LeaseRef> canceled;

  std::string ToJson() const;
  // One assignment that does not decode fails the whole reply.
  static Result<ClaimReply> FromJson(std::string_view body);
  friend bool operator==(const ClaimReply&, const ClaimReply&) = default;
};

// POST /v1/agent/heartbeat: the leases the agent holds and its free slots.
struct HeartbeatRequest {
  std::string agent;
  int free = 0;
  std::vector<LeaseRef> leases;

  nlohmann::json ToJson() const;
  static Result<HeartbeatRequest> FromJson(const nlohmann::json& j);
  friend bool operator==(const HeartbeatRequest&, const HeartbeatRequest&) = default;
};

// Why a lease in a heartbeat was not renewed.
enum class Revocation { kStale, kCanceled, kFinished };
std::string_view RevocationName(Revocation r);

struct RevokedLease {
  ShardKey key;
  FencingToken token = 0;
  Revocation reason = Revocation::kStale;
  friend bool operator==(const RevokedLease&, const RevokedLease&) = default;
};

// The answer to a heartbeat: the lease period now in force, and each lease renewed or revoked.
struct HeartbeatReply {
  int64_t ttl_ms = 0;
  int64_t heartbeat_ms = 0;
  std::vector<LeaseRef> renewed;
  std::vector<RevokedLease> revoked;

  std::string ToJson() const;
  // Only a body that is not a JSON object fails. Each lease item stands alone: one that does
  // not decode is left out and described in `skipped` (when given), and the rest still
  // apply, so that a reply from another version renews what it can. A missing or unreadable
  // ttl_ms or heartbeat_ms reads as 0 (unchanged); above kMaxLeasePeriodMs, as that; a
  // reason other than canceled or finished reads as stale.
  static Result<HeartbeatReply> FromJson(std::string_view body,
                                         std::vector<std::string>* skipped = nullptr);
  friend bool operator==(const HeartbeatReply&, const HeartbeatReply&) = default;
};

// How one attempt of a shard ended: POST /v1/agent/result, one item of a result batch, and
// agentd's persisted copy until the coordinator took it.
// The largest peak_rss_bytes or cpu_ms a result may carry: 2^53, exact in every JSON reader.
inline constexpr int64_t kMaxUsage = int64_t{1} << 53;

struct ShardResult {
  AttemptKey key;
  FencingToken token = 0;
  Outcome outcome = Outcome::kExited;
  std::optional<int64_t> exit_code;
  std::string message;
  // The seq of the attempt's last log chunk the agent shipped (0: none): its output ends
  // there. None from agents older than this field: the output is complete at the run's end.
  std::optional<int64_t> output_seq;
  std::string agent;  // optional: the credential decides
  // A flow step's attempt: what it wrote to $JOB_OUTPUT (keys as OutputKeyProblem allows,
  // values without NUL or newline, at most kMaxStepOutputBytes).
  std::map<std::string, std::string> outputs;
  // What the attempt's processes used, as the agent measured them after they ended (none
  // from agents older than these fields, or that could not measure): the largest resident
  // set one of them reached, in bytes, and their CPU time, user and system, in ms.
  std::optional<int64_t> peak_rss_bytes;
  std::optional<int64_t> cpu_ms;

  nlohmann::json ToJson() const;
  // output_seq, when given, is within 0..kMaxOutputSeq; peak_rss_bytes and cpu_ms within
  // 0..kMaxUsage.
  static Result<ShardResult> FromJson(const nlohmann::json& j);
  friend bool operator==(const ShardResult&, const ShardResult&) = default;
};

// POST /v1/agent/results: {"results": [result, ...]}, at most kMaxResultBatch. Each item is
// decoded on its own, so one bad item is refused alone.
inline constexpr size_t kMaxResultBatch = 1000;
struct ResultBatch {
  std::vector<Result<ShardResult>> results;

  // Only the batch's shape is checked here: an object with an array of at most
  // kMaxResultBatch objects.
  static Result<ResultBatch> FromJson(const nlohmann::json& j);
};

// The answer to one result: taken ({"accepted": true, "state": ...}) or refused with the
// HTTP status, error and message the single route would have answered.
struct ResultAnswer {
  bool accepted = false;
  std::string state;  // the run's state once taken
  int status = 0;     // refused: HTTP status
  std::string error;
  std::string message;

  nlohmann::json ToJson() const;
  // An answer that does not decode reads as refused with status 500, which agentd retries.
  static ResultAnswer FromJson(const nlohmann::json& j);
  friend bool operator==(const ResultAnswer&, const ResultAnswer&) = default;
};

// The answer to a result batch: one answer per result, in order.
struct ResultBatchReply {
  std::vector<ResultAnswer> results;

  nlohmann::json ToJson() const;
  // Fails only when the body is not an object with a "results" array; each answer is read
  // on its own (ResultAnswer::FromJson).
  static Result<ResultBatchReply> FromJson(std::string_view body);
  friend bool operator==(const ResultBatchReply&, const ResultBatchReply&) = default;
};

// The answer to a log append. A single chunk says "stored" as a boolean, a batch as a count.
struct LogAppendReply {
  int64_t stored = 0;
  int64_t duplicates = 0;
  bool truncated = false;  // the run reached its log cap: further output is dropped

  nlohmann::json ToJson(bool batch) const;
  static Result<LogAppendReply> FromJson(std::string_view body);
  friend bool operator==(const LogAppendReply&, const LogAppendReply&) = default;
};

}  // namespace jobctl::wire
