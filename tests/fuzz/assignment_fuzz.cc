// libFuzzer target: any text through agentd's two decoders in assignment.cc, ParseClaimReply
// (the coordinator's answer to a claim) and ResultFromJson (a result as reported and as kept
// in the state dir). Neither may throw. A claim reply that decodes holds exactly as many
// assignments as the reply's array, each with a positive TTL, and each decodes to the same
// values again from the shape RunBook::Grant sends. A result that decodes survives
// ResultToJson -> ResultFromJson unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "agentd/assignment.h"

namespace {

using jobctl::Result;
using jobctl::agentd::Assignment;
using jobctl::agentd::ShardResult;
using nlohmann::json;

void Check(bool ok) {
  if (!ok) std::abort();
}

json OptionalJson(const std::optional<int64_t>& v) { return v ? json(*v) : json(); }

// Every field ParseClaimReply reads, under the names the coordinator uses.
json AssignmentJson(const Assignment& a) {
  return {{"run", a.key.run},
          {"shard", a.key.shard},
          {"shard_total", a.shard_total},
          {"attempt", a.key.attempt},
          {"token", a.token},
          {"ttl_ms", a.ttl_ms},
          {"heartbeat_ms", a.heartbeat_ms},
          {"job", a.job},
          {"scheduled_at", a.scheduled_at},
          {"trace_id", a.trace_id},
          {"command", a.command},
          {"shell", a.shell},
          {"env", a.env},
          {"run_as", a.run_as},
          {"cwd", a.cwd},
          {"timeout_ms", OptionalJson(a.timeout_ms)},
          {"kill_grace_ms", OptionalJson(a.kill_grace_ms)}};
}

bool Same(const Assignment& a, const Assignment& b) {
  return a.key == b.key && a.shard_total == b.shard_total && a.token == b.token &&
         a.ttl_ms == b.ttl_ms && a.heartbeat_ms == b.heartbeat_ms && a.job == b.job &&
         a.scheduled_at == b.scheduled_at && a.trace_id == b.trace_id && a.command == b.command &&
         a.shell == b.shell && a.env == b.env && a.run_as == b.run_as && a.cwd == b.cwd &&
         a.timeout_ms == b.timeout_ms && a.kill_grace_ms == b.kill_grace_ms;
}

bool Same(const ShardResult& a, const ShardResult& b) {
  return a.key == b.key && a.token == b.token && a.outcome == b.outcome &&
         a.exit_code == b.exit_code && a.message == b.message;
}

void CheckClaimReply(std::string_view text) {
  Result<std::vector<Assignment>> list = jobctl::agentd::ParseClaimReply(text);
  if (!list.ok()) {
    Check(!list.status().message().empty());
    return;
  }
  json reply = json::parse(text, nullptr, /*allow_exceptions=*/false);
  Check(reply.is_object() && reply.contains("assignments"));
  Check(reply["assignments"].size() == list->size());
  json again = json::array();
  for (const Assignment& a : *list) {
    Check(a.ttl_ms > 0);
    again.push_back(AssignmentJson(a));
  }
  Result<std::vector<Assignment>> back =
      jobctl::agentd::ParseClaimReply(json{{"assignments", again}}.dump());
  Check(back.ok() && back->size() == list->size());
  for (size_t i = 0; i < list->size(); ++i) Check(Same((*back)[i], (*list)[i]));
}

void CheckResult(std::string_view text) {
  Result<ShardResult> r = jobctl::agentd::ResultFromJson(text);
  if (!r.ok()) {
    Check(!r.status().message().empty());
    return;
  }
  Result<ShardResult> back =
      jobctl::agentd::ResultFromJson(jobctl::agentd::ResultToJson(*r, "fuzz"));
  Check(back.ok() && Same(*back, *r));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  CheckClaimReply(text);
  CheckResult(text);
  return 0;
}
