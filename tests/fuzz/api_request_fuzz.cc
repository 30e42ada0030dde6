// libFuzzer target: any text as the body of the coordinator's agent and write routes, read the
// way Api::Body reads it and decoded by every typed decoder in request_json.h. None may throw.
// What decodes must keep the rules the handlers rely on, and decode to the same values again
// from the shape its sender uses. For results this is the real contract between the two
// binaries: a result the coordinator accepts is one agentd's ResultFromJson reads the same
// way, and what agentd's ResultToJson writes the coordinator reads back unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "agentd/assignment.h"
#include "coordinator/request_json.h"
#include "model/env_rules.h"
#include "model/trace_context.h"
#include "wire/bounded_json.h"
#include "wire/trigger_request.h"

namespace {

using jobctl::Result;
using nlohmann::json;
namespace coord = jobctl::coordinator;
namespace wire = jobctl::wire;

void Check(bool ok) {
  if (!ok) std::abort();
}

// The body as the same JSON text again: what decodes from it must decode from this too.
template <typename T>
T Again(Result<T> (*decode)(const json&), const json& body) {
  Result<T> r = decode(json::parse(body.dump(), nullptr, /*allow_exceptions=*/false));
  Check(r.ok());
  return std::move(r).value();
}

void CheckClaim(const json& body) {
  Result<coord::ClaimRequest> r = coord::ClaimRequestFromJson(body);
  if (!r.ok()) return;
  // The agent's name may be left out (the credential says it); labels are bounded.
  Check(r->labels.size() <= coord::kMaxLabels);
  // What agentd's Claimer sends for it decodes to the same claim.
  coord::ClaimRequest back = Again(&coord::ClaimRequestFromJson, r->ToJson());
  Check(static_cast<const wire::ClaimRequest&>(back) == static_cast<const wire::ClaimRequest&>(*r));
}

void CheckHeartbeat(const json& body) {
  Result<wire::HeartbeatRequest> r = wire::HeartbeatRequest::FromJson(body);
  if (!r.ok()) return;
  bool has_leases = body.contains("leases") && !body["leases"].is_null();
  Check(r->leases.size() == (has_leases ? body["leases"].size() : 0));
  // What agentd's LeaseKeeper sends for it decodes to the same heartbeat.
  Check(Again(&wire::HeartbeatRequest::FromJson, r->ToJson()) == *r);
}

void CheckResult(const json& body, std::string_view text) {
  Result<coord::ResultReport> r = coord::ResultReport::FromJson(body);
  if (!r.ok()) return;
  // What a shard used is within the bounds the stores and the console take.
  for (const std::optional<int64_t>& v : {r->peak_rss_bytes, r->cpu_ms}) {
    Check(!v || (*v >= 0 && *v <= wire::kMaxUsage));
  }
  // agentd reads the same body (its spooled copy) to the same values.
  Result<jobctl::agentd::ShardResult> agent_side = jobctl::agentd::ResultFromJson(text);
  Check(agent_side.ok() && *agent_side == *r);
  // And what agentd writes for it, the coordinator reads unchanged.
  json sent = json::parse(jobctl::agentd::ResultToJson(*agent_side, r->agent), nullptr, false);
  Result<coord::ResultReport> back = coord::ResultReport::FromJson(sent);
  Check(back.ok() && *back == *r);
}

void CheckApply(const json& body) {
  Result<coord::ApplyRequest> r = coord::ApplyRequestFromJson(body, "tok");
  if (!r.ok()) return;
  Check(body.contains("text"));
  Check(r->author == "tok" || r->author.ends_with(" (token tok)"));
}

void CheckTrigger(const json& body) {
  Result<jobctl::wire::TriggerRequest> r = jobctl::wire::TriggerRequest::FromJson(body);
  if (!r.ok()) return;
  // A traceparent that decodes is bounded and names a trace id runs can carry; the CLI's
  // request carries it unchanged.
  if (!r->traceparent.empty()) {
    Result<jobctl::TraceParent> tp = jobctl::ParseTraceParent(r->traceparent);
    Check(tp.ok() && r->traceparent.size() <= jobctl::kMaxTraceParent &&
          jobctl::IsTraceId(tp->trace_id));
    // (Only the traceparent: other fields, "at" among them, need not print back as sent.)
    jobctl::wire::TriggerRequest only;
    only.traceparent = r->traceparent;
    Check(Again(&jobctl::wire::TriggerRequest::FromJson, only.ToJson()).traceparent ==
          r->traceparent);
  }
  // The handler stores the resolved parameters as JSON text; they must read back the same.
  json env = json::parse(json(r->params).dump(), nullptr, false);
  Check(env.get<std::map<std::string, std::string>>() == r->params);
  // Whatever a trigger sends, only declared names come back, within their limits, and none
  // the loader reads.
  static const std::map<std::string, jobctl::Param> kDeclared = {
      {"VERSION", {"latest", false, 16}}, {"REGION", {std::nullopt, false, 4}}};
  Result<std::map<std::string, std::string>> resolved = jobctl::ResolveParams(kDeclared, r->params);
  if (!resolved.ok()) return;
  for (const auto& [name, value] : *resolved) {
    auto it = kDeclared.find(name);
    Check(it != kDeclared.end());
    Check(value.size() <= static_cast<size_t>(it->second.max_length));
    Check(jobctl::EnvNameProblem(name).empty());
  }
}

void CheckDrain(const json& body) {
  Result<coord::DrainRequest> r = coord::DrainRequestFromJson(body);
  if (!r.ok()) return;
  // Draining is the default; only an explicit false undoes it.
  auto it = body.find("draining");
  bool given = it != body.end() && !it->is_null();
  Check(given ? it->is_boolean() && r->draining == it->get<bool>() : r->draining);
}

void CheckRetry(const json& body) {
  Result<coord::RetryRequest> r = coord::RetryRequestFromJson(body);
  if (!r.ok()) return;
  // Only failed_shards is read, and only a boolean true asks for the failed shards alone.
  Check(body.size() <= 1 && (body.empty() || body.contains("failed_shards")));
  auto it = body.find("failed_shards");
  bool given = it != body.end() && !it->is_null();
  Check(given ? it->is_boolean() && r->failed_shards == it->get<bool>() : !r->failed_shards);
}

void CheckToken(const json& body) {
  Result<coord::TokenRequest> r = coord::TokenRequestFromJson(body);
  if (!r.ok()) return;
  std::optional<coord::Role> role = coord::ParseRole(r->role_name);
  Check(role && *role == r->role && coord::RoleName(r->role) == r->role_name);
  Check(r->role != coord::Role::kOpen);
  // A jobs glob narrows the read and trigger roles; no other role takes one.
  Check(r->jobs.empty() || r->role == coord::Role::kTrigger || r->role == coord::Role::kRead);
}

void CheckNotifyTest(const json& body) {
  Result<std::string> r = coord::NotifyTestChannelFromJson(body);
  if (!r.ok()) return;
  Check(!r->empty() && r->size() <= 64);
  Check(body.contains("channel") && body["channel"] == *r);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  // As Api::Body: an empty body is an empty object, anything else must be a JSON object.
  json body = text.empty() ? json::object() : jobctl::wire::ParseJson(text);
  if (!body.is_object()) return 0;
  CheckClaim(body);
  CheckHeartbeat(body);
  CheckResult(body, text);
  CheckApply(body);
  CheckTrigger(body);
  CheckDrain(body);
  CheckRetry(body);
  CheckToken(body);
  CheckNotifyTest(body);
  return 0;
}
