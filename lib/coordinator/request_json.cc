#include "coordinator/request_json.h"

#include <type_traits>

#include "model/time_format.h"
#include "wire/json_number.h"
#include "wire/log_batch.h"

namespace jobctl::coordinator {
namespace {

using nlohmann::json;

// A required field of an expected JSON type; missing, of the wrong type or (a number) out of the
// type's range is an error naming it.
template <typename T>
Status Need(const json& body, const char* key, T* out) {
  auto it = body.find(key);
  if (it == body.end())
    return Status::InvalidArgument(std::string("field \"") + key + "\" is required");
  if (!wire::JsonNumberFits<T>(*it)) {
    return Status::InvalidArgument(std::string("field \"") + key + "\" is out of range");
  }
  // get<T>() would take true as 1 and 0.5 as 0 for an integer, and 1 as true: not ours.
  bool type_ok = true;
  if constexpr (std::is_same_v<T, bool>) {
    type_ok = it->is_boolean();
  } else if constexpr (std::is_integral_v<T>) {
    type_ok = it->is_number_integer();
  }
  if (!type_ok)
    return Status::InvalidArgument(std::string("field \"") + key + "\" has the wrong type");
  try {
    *out = it->get<T>();
  } catch (const json::exception&) {
    return Status::InvalidArgument(std::string("field \"") + key + "\" has the wrong type");
  }
  return Status::Ok();
}

// An optional field: absent or null leaves `out` as it is.
template <typename T>
Status Opt(const json& body, const char* key, T* out) {
  return body.contains(key) && !body[key].is_null() ? Need(body, key, out) : Status::Ok();
}

}  // namespace

Result<ClaimRequest> ClaimRequestFromJson(const json& body) {
  ClaimRequest req;
  Status s = Opt(body, "agent", &req.agent);
  if (s.ok()) s = Opt(body, "labels", &req.labels);
  if (s.ok()) s = Opt(body, "slots", &req.slots);
  if (s.ok()) s = Opt(body, "free", &req.free);
  if (s.ok()) s = Opt(body, "version", &req.version);
  if (s.ok()) s = Opt(body, "wait_ms", &req.wait_ms);
  if (!s.ok()) return s;
  if (Status l = CheckLabels(req.labels, false, "claim"); !l.ok()) return l;
  if (req.version.size() > 64)
    return Status::InvalidArgument("version is longer than 64 characters");
  return req;
}

Result<HeartbeatRequest> HeartbeatRequestFromJson(const json& body) {
  HeartbeatRequest req;
  Status s = Opt(body, "agent", &req.agent);
  if (s.ok()) s = Opt(body, "free", &req.free);
  if (!s.ok()) return s;
  // Read in place, never copied: copying a JSON value recurses once per level of nesting, and
  // a body of nothing but brackets would overflow the stack.
  const json none = json::array();
  auto it = body.find("leases");
  const json& leases = it == body.end() || it->is_null() ? none : *it;
  if (!leases.is_array()) return Status::InvalidArgument("field \"leases\" must be an array");
  for (const json& l : leases) {
    HeartbeatLease h;
    int index = 0;
    if (!l.is_object()) return Status::InvalidArgument("leases[] must be objects");
    s = Need(l, "run", &h.key.run);
    if (s.ok()) s = Need(l, "shard", &index);
    if (s.ok()) s = Need(l, "token", &h.token);
    if (!s.ok()) return s;
    h.key.index = index;
    req.leases.push_back(h);
  }
  return req;
}

Result<ResultReport> ResultReportFromJson(const json& body) {
  ResultReport r;
  std::string outcome;
  int index = 0;
  Status s = Need(body, "run", &r.key.run);
  if (s.ok()) s = Need(body, "shard", &index);
  if (s.ok()) s = Need(body, "attempt", &r.attempt);
  if (s.ok()) s = Need(body, "token", &r.token);
  if (s.ok()) s = Opt(body, "agent", &r.agent);
  if (s.ok()) s = Need(body, "outcome", &outcome);
  if (s.ok()) s = Opt(body, "message", &r.message);
  if (s.ok() && body.contains("exit_code") && !body["exit_code"].is_null()) {
    int64_t code = 0;
    s = Need(body, "exit_code", &code);
    r.exit_code = code;
  }
  if (s.ok() && body.contains("output_seq") && !body["output_seq"].is_null()) {
    int64_t seq = 0;
    s = Need(body, "output_seq", &seq);
    if (s.ok() && (seq < 0 || seq > wire::kMaxOutputSeq)) {
      s = Status::InvalidArgument("field \"output_seq\" is out of range (0 to " +
                                  std::to_string(wire::kMaxOutputSeq) + ")");
    }
    r.output_seq = seq;
  }
  if (!s.ok()) return s;
  r.key.index = index;
  std::optional<Outcome> o = ParseOutcome(outcome);
  if (!o) return Status::InvalidArgument("unknown outcome \"" + outcome + "\"");
  r.outcome = *o;
  return r;
}

Result<std::vector<json>> ResultBatchFromJson(const json& body) {
  auto it = body.find("results");
  if (it == body.end() || !it->is_array()) {
    return Status::InvalidArgument("field \"results\" is required: an array of results");
  }
  if (it->size() > kMaxResultBatch) {
    return Status::InvalidArgument("at most " + std::to_string(kMaxResultBatch) +
                                   " results per request");
  }
  std::vector<json> out;
  out.reserve(it->size());
  for (const json& item : *it) {
    if (!item.is_object()) return Status::InvalidArgument("each result is an object");
    out.push_back(item);
  }
  return out;
}

Result<ApplyRequest> ApplyRequestFromJson(const json& body, const std::string& token_name) {
  ApplyRequest req;
  std::string author;
  Status s = Opt(body, "text", &req.text);
  if (s.ok()) s = Opt(body, "filename", &req.filename);
  if (s.ok()) s = Opt(body, "base_revision", &req.base_revision);
  if (s.ok()) s = Opt(body, "dry_run", &req.dry_run);
  if (s.ok()) s = Opt(body, "author", &author);
  if (!s.ok()) return s;
  req.author = author.empty() ? token_name : author + " (token " + token_name + ")";
  if (!body.contains("text")) return Status::InvalidArgument("field \"text\" is required");
  return req;
}

Result<DrainRequest> DrainRequestFromJson(const json& body) {
  DrainRequest req;
  if (Status s = Opt(body, "draining", &req.draining); !s.ok()) return s;
  return req;
}

Result<TokenRequest> TokenRequestFromJson(const json& body) {
  TokenRequest req;
  int64_t expires_in_ms = 0;
  Status s = Opt(body, "role", &req.role_name);
  if (s.ok()) s = Opt(body, "jobs", &req.jobs);
  if (s.ok()) s = Opt(body, "name", &req.name);
  if (s.ok()) s = Opt(body, "agent", &req.agent);
  if (s.ok()) s = Opt(body, "labels", &req.labels);
  if (s.ok()) s = Opt(body, "expires_in_ms", &expires_in_ms);
  if (!s.ok()) return s;
  std::optional<Role> role = ParseRole(req.role_name);
  if (!role) return Status::InvalidArgument("role is admin, read, trigger, agent or join");
  if (!req.jobs.empty() && *role != Role::kTrigger && *role != Role::kRead) {
    return Status::InvalidArgument("a jobs glob only applies to the read and trigger roles");
  }
  if (req.jobs.size() > 256)
    return Status::InvalidArgument("the jobs glob is longer than 256 characters");
  if (*role == Role::kAgent && req.agent.empty()) {
    return Status::InvalidArgument("an agent token is bound to one agent: \"agent\" is required");
  }
  if (*role != Role::kAgent && !req.agent.empty()) {
    return Status::InvalidArgument("\"agent\" only applies to the agent role");
  }
  if (!req.labels.empty() && *role != Role::kAgent && *role != Role::kJoin) {
    return Status::InvalidArgument("labels only apply to the agent and join roles");
  }
  if (!req.agent.empty()) {
    if (Status n = CheckName(req.agent, "agent name"); !n.ok()) return n;
  }
  if (!req.name.empty()) {
    if (Status n = CheckName(req.name, "token name"); !n.ok()) return n;
  }
  if (Status l = CheckLabels(req.labels, true, "allowed"); !l.ok()) return l;
  if (body.contains("expires_in_ms") && !body["expires_in_ms"].is_null()) {
    if (expires_in_ms <= 0) return Status::InvalidArgument("expires_in_ms must be positive");
    req.expires_in_ms = expires_in_ms;
  }
  req.role = *role;
  return req;
}

Result<EnrolRequest> EnrolRequestFromJson(const json& body) {
  EnrolRequest req;
  Status s = Opt(body, "agent", &req.agent);
  if (s.ok()) s = Opt(body, "labels", &req.labels);
  if (!s.ok()) return s;
  if (!req.agent.empty()) {
    if (Status n = CheckName(req.agent, "agent name"); !n.ok()) return n;
  }
  if (Status l = CheckLabels(req.labels, false, "enrol"); !l.ok()) return l;
  return req;
}

}  // namespace jobctl::coordinator
