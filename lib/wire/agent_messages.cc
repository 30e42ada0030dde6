#include "wire/agent_messages.h"

#include <algorithm>
#include <iterator>

#include "wire/bounded_json.h"
#include "wire/fields.h"
#include "wire/job_json.h"
#include "wire/json_number.h"
#include "wire/log_batch.h"

namespace jobctl::wire {
namespace {

using nlohmann::json;

json OptionalJson(const std::optional<int64_t>& v) { return v ? json(*v) : json(); }

// A positive number when present; anything else reads as none (older peers send nothing).
std::optional<int64_t> PositiveOrNone(const json& j, const char* key) {
  std::optional<int64_t> v;
  if (!Opt(j, key, &v).ok() || !v || *v <= 0) return std::nullopt;
  return v;
}

// A {"run", "shard", "token"} item of a heartbeat or its reply.
Status ReadLease(const json& j, ShardKey* key, FencingToken* token) {
  if (!j.is_object()) return Status::InvalidArgument("leases[] must be objects");
  return FirstError(
      {Need(j, "run", &key->run), Need(j, "shard", &key->shard), Need(j, "token", token)});
}

// The array `key` of `j` read in place (never copied: a copy recurses once per level of
// nesting), or an empty array when absent or null.
Result<const json*> ArrayField(const json& j, const char* key) {
  static const json kNone = json::array();
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return &kNone;
  if (!it->is_array()) {
    return Status::InvalidArgument(std::string("field \"") + key + "\" has the wrong type");
  }
  return &*it;
}

// Outputs as a step's process may have written them: keys OutputKeyProblem allows, values
// of one line, within `max_bytes` in all.
Status CheckOutputs(const std::map<std::string, std::string>& outputs, size_t max_bytes,
                    const char* field) {
  for (const auto& [k, v] : outputs) {
    if (!OutputKeyProblem(k).empty() || !OutputValueProblem(v).empty()) {
      return Status::InvalidArgument(std::string("field \"") + field +
                                     "\" holds a key or value no step may write");
    }
  }
  if (OutputBytes(outputs) > max_bytes) {
    return Status::InvalidArgument(std::string("field \"") + field + "\" is over " +
                                   std::to_string(max_bytes) + " bytes");
  }
  return Status::Ok();
}

}  // namespace

json StepContext::ToJson() const {
  return {{"flow", flow},
          {"flow_run", flow_run},
          {"step", step},
          {"needs", needs},
          {"outputs", outputs}};
}

Result<StepContext> StepContext::FromJson(const json& j) {
  if (!j.is_object()) return Status::InvalidArgument("field \"step\" is not an object");
  StepContext c;
  json needs;
  if (Status s = FirstError({Need(j, "flow", &c.flow), Need(j, "flow_run", &c.flow_run),
                             Need(j, "step", &c.step), Opt(j, "needs", &needs),
                             Opt(j, "outputs", &c.outputs)});
      !s.ok()) {
    return s;
  }
  if (!IsValidJobName(c.flow) || !IsValidStepName(c.step) || c.flow_run <= 0) {
    return Status::InvalidArgument("field \"step\" names no flow run and step");
  }
  if (needs.size() > static_cast<size_t>(kMaxFlowSteps)) {
    return Status::InvalidArgument("field \"step.needs\" has too many steps");
  }
  for (auto it = needs.begin(); it != needs.end(); ++it) {
    if (!IsValidStepName(it.key()) || !it.value().is_number_integer() ||
        !JsonNumberFits<int64_t>(it.value()) || it.value().get<int64_t>() <= 0) {
      return Status::InvalidArgument("field \"step.needs\" holds no step and run");
    }
    c.needs[it.key()] = it.value().get<int64_t>();
  }
  // Two needs read the same in the environment only in a flow no file could hold.
  for (auto a = c.needs.begin(); a != c.needs.end(); ++a) {
    for (auto b = std::next(a); b != c.needs.end(); ++b) {
      if (StepEnvName(a->first) == StepEnvName(b->first)) {
        return Status::InvalidArgument("field \"step.needs\" names two steps alike");
      }
    }
  }
  if (Status s = CheckOutputs(c.outputs, kMaxNeededOutputBytes, "step.outputs"); !s.ok()) {
    return s;
  }
  return c;
}

json ClaimRequest::ToJson() const {
  json j = {{"agent", agent}, {"labels", labels},   {"slots", slots},
            {"free", free},   {"version", version}, {"wait_ms", wait_ms}};
  if (!features.empty()) j["features"] = features;
  return j;
}

Result<ClaimRequest> ClaimRequest::FromJson(const json& j) {
  if (!j.is_object()) return Status::InvalidArgument("a claim is a JSON object");
  ClaimRequest r;
  if (Status s = FirstError({Opt(j, "agent", &r.agent), Opt(j, "labels", &r.labels),
                             Opt(j, "slots", &r.slots), Opt(j, "free", &r.free),
                             Opt(j, "version", &r.version), Opt(j, "wait_ms", &r.wait_ms),
                             Opt(j, "features", &r.features)});
      !s.ok()) {
    return s;
  }
  auto bad = [](const std::string& f) {
    return f.empty() || f.size() > 64 || !std::all_of(f.begin(), f.end(), [](char c) {
             return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
           });
  };
  if (r.features.size() > kMaxFeatures || std::any_of(r.features.begin(), r.features.end(), bad)) {
    return Status::InvalidArgument("field \"features\": at most " + std::to_string(kMaxFeatures) +
                                   " names of [a-z0-9_]" + ", of 64 characters each");
  }
  return r;
}

json Grant::ToJson() const {
  // Built key by key: an initializer list would copy every value once more, and this runs
  // for every shard granted.
  json a(json::value_t::object);
  a["run"] = key.run;
  a["shard"] = key.shard;
  a["shard_total"] = shard_total;
  a["attempt"] = key.attempt;
  a["token"] = token;
  a["ttl_ms"] = ttl_ms;
  a["heartbeat_ms"] = heartbeat_ms;
  a["job"] = job;
  a["scheduled_at"] = scheduled_at;
  a["trace_id"] = trace_id;
  a["command"] = command;
  a["shell"] = shell;
  a["env"] = env;
  if (!secrets.empty()) a["secrets"] = secrets;
  a["run_as"] = run_as;
  a["cwd"] = cwd;
  a["timeout_ms"] = OptionalJson(timeout_ms);
  a["kill_grace_ms"] = OptionalJson(kill_grace_ms);
  // Only where set: a grant without limits reads as before to every agent.
  if (!limits.empty()) {
    json l = json::object();
    LimitsToJson(limits, l);
    for (auto it = l.begin(); it != l.end(); ++it) {
      if (!it->is_null()) a[it.key()] = *it;
    }
  }
  if (step) a["step"] = step->ToJson();
  if (start_in_us > 0) a["start_in_us"] = start_in_us;
  return a;
}

Result<Grant> Grant::FromJson(const json& j) {
  if (!j.is_object()) return Status::InvalidArgument("an assignment is not an object");
  Grant g;
  if (Status s = FirstError(
          {Need(j, "run", &g.key.run), Need(j, "shard", &g.key.shard),
           Need(j, "attempt", &g.key.attempt), Need(j, "token", &g.token),
           Opt(j, "shard_total", &g.shard_total), Opt(j, "ttl_ms", &g.ttl_ms),
           Opt(j, "heartbeat_ms", &g.heartbeat_ms), Opt(j, "job", &g.job),
           Opt(j, "scheduled_at", &g.scheduled_at), Opt(j, "trace_id", &g.trace_id),
           Opt(j, "command", &g.command), Opt(j, "shell", &g.shell), Opt(j, "env", &g.env),
           Opt(j, "secrets", &g.secrets), Opt(j, "run_as", &g.run_as), Opt(j, "cwd", &g.cwd),
           Opt(j, "timeout_ms", &g.timeout_ms), Opt(j, "kill_grace_ms", &g.kill_grace_ms),
           Opt(j, "start_in_us", &g.start_in_us)});
      !s.ok()) {
    return s;
  }
  if (g.start_in_us < 0 || g.start_in_us > kMaxStartInUs) {
    return Status::InvalidArgument("field \"start_in_us\" must be from 0 to " +
                                   std::to_string(kMaxStartInUs));
  }
  if (Status s = LimitsFromJson(j, "assignment", &g.limits); !s.ok()) return s;
  if (auto it = j.find("step"); it != j.end() && !it->is_null()) {
    Result<StepContext> step = StepContext::FromJson(*it);
    if (!step.ok()) return step.status();
    g.step = std::move(*step);
  }
  if (g.ttl_ms <= 0) return Status::InvalidArgument("field \"ttl_ms\" must be positive");
  g.ttl_ms = std::min(g.ttl_ms, kMaxLeasePeriodMs);
  g.heartbeat_ms = std::min(g.heartbeat_ms, kMaxLeasePeriodMs);
  return g;
}

std::string ClaimReply::ToJson() const {
  json list = json::array();
  for (const Grant& g : assignments) list.push_back(g.ToJson());
  json j = {{"assignments", std::move(list)}};
  if (log_batch_bytes) j["log_batch_bytes"] = *log_batch_bytes;
  if (result_batch_max) j["result_batch_max"] = *result_batch_max;
  if (!canceled.empty()) {
    json c = json::array();
    for (const LeaseRef& l : canceled) {
      c.push_back({{"run", l.key.run}, {"shard", l.key.shard}, {"token", l.token}});
    }
    j["canceled"] = std::move(c);
  }
  return j.dump();
}

Result<ClaimReply> ClaimReply::FromJson(std::string_view body) {
  json j = ParseJson(body);
  if (!j.is_object()) {
    return ReplyError("claim reply", Status::InvalidArgument("not a JSON object"), kAgentSides);
  }
  auto list = j.find("assignments");
  if (list == j.end() || !list->is_array()) {
    return ReplyError("claim reply",
                      Status::InvalidArgument("field \"assignments\" is missing or not an array"),
                      kAgentSides);
  }
  ClaimReply r;
  r.log_batch_bytes = PositiveOrNone(j, "log_batch_bytes");
  r.result_batch_max = PositiveOrNone(j, "result_batch_max");
  for (const json& item : *list) {
    Result<Grant> g = Grant::FromJson(item);
    if (!g.ok()) return ReplyError("claim reply", g.status(), kAgentSides);
    r.assignments.push_back(std::move(*g));
  }
  // Read leniently: the assignments in the same answer are leased already, and a cancel the
  // agent cannot read here it learns at its next heartbeat.
  if (auto c = j.find("canceled"); c != j.end() && c->is_array()) {
    for (const json& item : *c) {
      if (r.canceled.size() >= kMaxCanceledInReply) break;
      LeaseRef l;
      if (ReadLease(item, &l.key, &l.token).ok()) r.canceled.push_back(l);
    }
  }
  return r;
}

json HeartbeatRequest::ToJson() const {
  json list = json::array();
  for (const LeaseRef& l : leases) {
    list.push_back({{"run", l.key.run}, {"shard", l.key.shard}, {"token", l.token}});
  }
  return {{"agent", agent}, {"free", free}, {"leases", std::move(list)}};
}

Result<HeartbeatRequest> HeartbeatRequest::FromJson(const json& j) {
  if (!j.is_object()) return Status::InvalidArgument("a heartbeat is a JSON object");
  HeartbeatRequest r;
  if (Status s = FirstError({Opt(j, "agent", &r.agent), Opt(j, "free", &r.free)}); !s.ok()) {
    return s;
  }
  Result<const json*> leases = ArrayField(j, "leases");
  if (!leases.ok()) return leases.status();
  r.leases.reserve((*leases)->size());
  for (const json& item : **leases) {
    LeaseRef l;
    if (Status s = ReadLease(item, &l.key, &l.token); !s.ok()) return s;
    r.leases.push_back(l);
  }
  return r;
}

std::string_view RevocationName(Revocation r) {
  switch (r) {
    case Revocation::kStale: return "stale";
    case Revocation::kCanceled: return "canceled";
    case Revocation::kFinished: return "finished";
  }
  return "stale";
}

std::string HeartbeatReply::ToJson() const {
  // Written directly: at 10,000 agents the coordinator answers 2,000 heartbeats a second, and
  // every value here is a number or a fixed word.
  auto lease = [](std::string* out, ShardKey key, FencingToken token) {
    *out += "{\"run\":" + std::to_string(key.run) + ",\"shard\":" + std::to_string(key.shard) +
            ",\"token\":" + std::to_string(token);
  };
  std::string out = "{\"ttl_ms\":" + std::to_string(ttl_ms) +
                    ",\"heartbeat_ms\":" + std::to_string(heartbeat_ms) + ",\"renewed\":[";
  for (size_t i = 0; i < renewed.size(); ++i) {
    if (i > 0) out += ',';
    lease(&out, renewed[i].key, renewed[i].token);
    out += '}';
  }
  out += "],\"revoked\":[";
  for (size_t i = 0; i < revoked.size(); ++i) {
    if (i > 0) out += ',';
    lease(&out, revoked[i].key, revoked[i].token);
    out += ",\"reason\":\"";
    out += RevocationName(revoked[i].reason);
    out += "\"}";
  }
  out += "]}";
  return out;
}

Result<HeartbeatReply> HeartbeatReply::FromJson(std::string_view body,
                                                std::vector<std::string>* skipped) {
  json j = ParseJson(body);
  if (!j.is_object()) {
    return ReplyError("heartbeat reply", Status::InvalidArgument("not a JSON object"), kAgentSides);
  }
  auto skip = [skipped](const char* list, size_t i, const Status& s) {
    if (skipped != nullptr) {
      skipped->push_back(std::string(list) + "[" + std::to_string(i) + "]: " + s.message());
    }
  };
  HeartbeatReply r;
  // A period that does not read leaves the agent's own as it is (0).
  auto period = [&j](const char* key) {
    int64_t v = 0;
    if (!Opt(j, key, &v).ok() || v <= 0) return int64_t{0};
    return std::min(v, kMaxLeasePeriodMs);
  };
  r.ttl_ms = period("ttl_ms");
  r.heartbeat_ms = period("heartbeat_ms");
  Result<const json*> renewed = ArrayField(j, "renewed");
  Result<const json*> revoked = ArrayField(j, "revoked");
  if (renewed.ok()) {
    for (size_t i = 0; i < (*renewed)->size(); ++i) {
      LeaseRef l;
      if (Status s = ReadLease((**renewed)[i], &l.key, &l.token); !s.ok()) {
        skip("renewed", i, s);
        continue;
      }
      r.renewed.push_back(l);
    }
  } else {
    skip("renewed", 0, renewed.status());
  }
  if (revoked.ok()) {
    for (size_t i = 0; i < (*revoked)->size(); ++i) {
      const json& item = (**revoked)[i];
      RevokedLease l;
      if (Status s = ReadLease(item, &l.key, &l.token); !s.ok()) {
        skip("revoked", i, s);
        continue;
      }
      std::string reason;
      if (!Opt(item, "reason", &reason).ok())
        reason.clear();  // unreadable: stale, the safe reading
      l.reason = reason == "canceled"   ? Revocation::kCanceled
                 : reason == "finished" ? Revocation::kFinished
                                        : Revocation::kStale;
      r.revoked.push_back(l);
    }
  } else {
    skip("revoked", 0, revoked.status());
  }
  return r;
}

json ShardResult::ToJson() const {
  json j = {{"run", key.run},
            {"shard", key.shard},
            {"attempt", key.attempt},
            {"token", token},
            {"outcome", OutcomeName(outcome)},
            {"exit_code", OptionalJson(exit_code)},
            {"message", message}};
  if (!agent.empty()) j["agent"] = agent;
  if (output_seq) j["output_seq"] = *output_seq;
  if (!outputs.empty()) j["outputs"] = outputs;
  if (peak_rss_bytes) j["peak_rss_bytes"] = *peak_rss_bytes;
  if (cpu_ms) j["cpu_ms"] = *cpu_ms;
  return j;
}

Result<ShardResult> ShardResult::FromJson(const json& j) {
  if (!j.is_object()) return Status::InvalidArgument("a result is a JSON object");
  ShardResult r;
  std::string outcome;
  if (Status s =
          FirstError({Need(j, "run", &r.key.run), Need(j, "shard", &r.key.shard),
                      Need(j, "attempt", &r.key.attempt), Need(j, "token", &r.token),
                      Opt(j, "agent", &r.agent), Need(j, "outcome", &outcome),
                      Opt(j, "message", &r.message), Opt(j, "exit_code", &r.exit_code),
                      Opt(j, "output_seq", &r.output_seq), Opt(j, "outputs", &r.outputs),
                      Opt(j, "peak_rss_bytes", &r.peak_rss_bytes), Opt(j, "cpu_ms", &r.cpu_ms)});
      !s.ok()) {
    return s;
  }
  if (Status s = CheckOutputs(r.outputs, kMaxStepOutputBytes, "outputs"); !s.ok()) return s;
  if (r.output_seq && (*r.output_seq < 0 || *r.output_seq > kMaxOutputSeq)) {
    return Status::InvalidArgument("field \"output_seq\" is out of range (0 to " +
                                   std::to_string(kMaxOutputSeq) + ")");
  }
  for (auto [name, value] : {std::pair{"peak_rss_bytes", r.peak_rss_bytes}, {"cpu_ms", r.cpu_ms}}) {
    if (value && (*value < 0 || *value > kMaxUsage)) {
      return Status::InvalidArgument(std::string("field \"") + name + "\" is out of range (0 to " +
                                     std::to_string(kMaxUsage) + ")");
    }
  }
  std::optional<Outcome> o = ParseOutcome(outcome);
  if (!o) return Status::InvalidArgument("unknown outcome \"" + outcome + "\"");
  r.outcome = *o;
  return r;
}

Result<ResultBatch> ResultBatch::FromJson(const json& j) {
  auto it = j.is_object() ? j.find("results") : j.end();
  if (it == j.end() || !it->is_array()) {
    return Status::InvalidArgument("field \"results\" is required: an array of results");
  }
  if (it->size() > kMaxResultBatch) {
    return Status::InvalidArgument("at most " + std::to_string(kMaxResultBatch) +
                                   " results per request");
  }
  ResultBatch b;
  b.results.reserve(it->size());
  for (const json& item : *it) {
    if (!item.is_object()) return Status::InvalidArgument("each result is an object");
    b.results.push_back(ShardResult::FromJson(item));
  }
  return b;
}

json ResultAnswer::ToJson() const {
  if (accepted) return {{"accepted", true}, {"state", state}};
  return {{"status", status}, {"error", error}, {"message", message}};
}

ResultAnswer ResultAnswer::FromJson(const json& j) {
  ResultAnswer a;
  Status s = j.is_object() ? Opt(j, "accepted", &a.accepted)
                           : Status::InvalidArgument("an answer is not an object");
  if (s.ok() && a.accepted) {
    if (!Opt(j, "state", &a.state).ok()) a.state.clear();  // taken: the state is only shown
    return a;
  }
  if (s.ok())
    s = FirstError(
        {Need(j, "status", &a.status), Opt(j, "error", &a.error), Opt(j, "message", &a.message)});
  if (s.ok()) return a;
  // Not understood: retried, as a 500 would be (results are idempotent).
  return ResultAnswer{false, "", 500, "", "answer not understood: " + s.message()};
}

json ResultBatchReply::ToJson() const {
  json list = json::array();
  for (const ResultAnswer& a : results) list.push_back(a.ToJson());
  return {{"results", std::move(list)}};
}

Result<ResultBatchReply> ResultBatchReply::FromJson(std::string_view body) {
  json j = ParseJson(body);
  Result<const json*> list =
      !j.is_object() ? Result<const json*>(Status::InvalidArgument("not a JSON object"))
      : !j.contains("results")
          ? Result<const json*>(Status::InvalidArgument("field \"results\" is required"))
          : ArrayField(j, "results");
  if (!list.ok()) return ReplyError("result batch reply", list.status(), kAgentSides);
  ResultBatchReply r;
  for (const json& item : **list) r.results.push_back(ResultAnswer::FromJson(item));
  return r;
}

json LogAppendReply::ToJson(bool batch) const {
  if (batch) return {{"stored", stored}, {"duplicates", duplicates}, {"truncated", truncated}};
  return {{"stored", stored > 0}, {"truncated", truncated}};
}

Result<LogAppendReply> LogAppendReply::FromJson(std::string_view body) {
  json j = ParseJson(body);
  if (!j.is_object()) {
    return ReplyError("log reply", Status::InvalidArgument("not a JSON object"), kAgentSides);
  }
  LogAppendReply r;
  auto stored = j.find("stored");
  if (stored != j.end() && stored->is_boolean()) {
    r.stored = stored->get<bool>() ? 1 : 0;
  } else if (Status s = Opt(j, "stored", &r.stored); !s.ok()) {
    return ReplyError("log reply", s, kAgentSides);
  }
  if (Status s =
          FirstError({Opt(j, "duplicates", &r.duplicates), Opt(j, "truncated", &r.truncated)});
      !s.ok()) {
    return ReplyError("log reply", s, kAgentSides);
  }
  return r;
}

}  // namespace jobctl::wire
