#include "assignment.h"

#include <nlohmann/json.hpp>

#include "wire/bounded_json.h"
#include "wire/json_number.h"

namespace jobctl::agentd {
namespace {

using nlohmann::json;

// Reads `key` when present and not null; a wrong type is an error naming the key.
template <typename T>
Status Get(const json& j, const char* key, T* out, bool required) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    return required ? Status::InvalidArgument(std::string("missing \"") + key + "\"")
                    : Status::Ok();
  }
  if (!wire::JsonNumberFits<T>(*it)) {
    return Status::InvalidArgument(std::string("\"") + key + "\" is out of range");
  }
  try {
    *out = it->get<T>();
  } catch (const json::exception&) {
    return Status::InvalidArgument(std::string("\"") + key + "\" has the wrong type");
  }
  return Status::Ok();
}

Status ParseOne(const json& j, Assignment* a) {
  if (!j.is_object()) return Status::InvalidArgument("an assignment is not an object");
  int64_t timeout = 0, grace = 0;
  bool has_timeout = j.contains("timeout_ms") && !j["timeout_ms"].is_null();
  bool has_grace = j.contains("kill_grace_ms") && !j["kill_grace_ms"].is_null();
  for (Status s :
       {Get(j, "run", &a->key.run, true), Get(j, "shard", &a->key.shard, true),
        Get(j, "attempt", &a->key.attempt, true), Get(j, "token", &a->token, true),
        Get(j, "shard_total", &a->shard_total, false), Get(j, "ttl_ms", &a->ttl_ms, false),
        Get(j, "heartbeat_ms", &a->heartbeat_ms, false), Get(j, "job", &a->job, false),
        Get(j, "scheduled_at", &a->scheduled_at, false), Get(j, "trace_id", &a->trace_id, false),
        Get(j, "command", &a->command, false), Get(j, "shell", &a->shell, false),
        Get(j, "env", &a->env, false), Get(j, "secrets", &a->secrets, false),
        Get(j, "run_as", &a->run_as, false), Get(j, "cwd", &a->cwd, false),
        Get(j, "timeout_ms", &timeout, false), Get(j, "kill_grace_ms", &grace, false)}) {
    if (!s.ok()) return s;
  }
  if (has_timeout) a->timeout_ms = timeout;
  if (has_grace) a->kill_grace_ms = grace;
  if (a->ttl_ms <= 0) return Status::InvalidArgument("\"ttl_ms\" must be positive");
  return Status::Ok();
}

}  // namespace

Result<std::vector<Assignment>> ParseClaimReply(std::string_view body, ClaimReplyExtras* extras) {
  json j = wire::ParseJson(body);
  if (!j.is_object() || !j.contains("assignments") || !j["assignments"].is_array()) {
    return Status::InvalidArgument("claim reply: expected {\"assignments\": [...]}");
  }
  if (extras != nullptr) {
    // Optional; a value that is not a positive number is as good as none.
    int64_t bytes = 0, results = 0;
    if (Get(j, "log_batch_bytes", &bytes, false).ok() && bytes > 0) extras->log_batch_bytes = bytes;
    if (Get(j, "result_batch_max", &results, false).ok() && results > 0) {
      extras->result_batch_max = results;
    }
  }
  std::vector<Assignment> out;
  for (const json& item : j["assignments"]) {
    Assignment a;
    if (Status s = ParseOne(item, &a); !s.ok()) return s.WithContext("claim reply");
    out.push_back(std::move(a));
  }
  return out;
}

std::string ResultToJson(const ShardResult& r, std::string_view agent) {
  json j = {{"agent", agent},
            {"run", r.key.run},
            {"shard", r.key.shard},
            {"attempt", r.key.attempt},
            {"token", r.token},
            {"outcome", OutcomeName(r.outcome)},
            {"exit_code", r.exit_code ? json(*r.exit_code) : json()},
            {"message", r.message}};
  if (r.output_seq) j["output_seq"] = *r.output_seq;
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<ShardResult> ResultFromJson(std::string_view text) {
  json j = wire::ParseJson(text);
  if (!j.is_object()) return Status::Corrupt("result: not a JSON object");
  ShardResult r;
  std::string outcome;
  int64_t code = 0;
  for (Status s : {Get(j, "run", &r.key.run, true), Get(j, "shard", &r.key.shard, true),
                   Get(j, "attempt", &r.key.attempt, true), Get(j, "token", &r.token, true),
                   Get(j, "outcome", &outcome, true), Get(j, "message", &r.message, false),
                   Get(j, "exit_code", &code, false)}) {
    if (!s.ok()) return Status::Corrupt("result: " + s.message());
  }
  std::optional<Outcome> o = ParseOutcome(outcome);
  if (!o) return Status::Corrupt("result: unknown outcome \"" + outcome + "\"");
  r.outcome = *o;
  if (j.contains("exit_code") && !j["exit_code"].is_null()) r.exit_code = code;
  if (j.contains("output_seq") && !j["output_seq"].is_null()) {
    int64_t seq = 0;
    if (Status s = Get(j, "output_seq", &seq, true); !s.ok() || seq < 0) {
      return Status::Corrupt("result: bad output_seq");
    }
    r.output_seq = seq;
  }
  return r;
}

}  // namespace jobctl::agentd
