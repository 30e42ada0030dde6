// libFuzzer target: any text through the agent routes' replies as agentd decodes them
// (wire/agent_messages.h: the claim reply, the heartbeat reply, the result batch reply) and
// through agentd's persisted result (ResultFromJson). None may throw. A claim reply that
// decodes holds exactly as many assignments as the reply's array, each with a positive TTL.
// Whatever decodes survives ToJson -> FromJson unchanged: what the coordinator writes with
// the same struct, agentd reads back as it was.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "agentd/assignment.h"
#include "wire/agent_messages.h"

namespace {

using jobctl::Result;
using jobctl::agentd::ShardResult;
using nlohmann::json;
namespace wire = jobctl::wire;

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckClaimReply(std::string_view text) {
  Result<wire::ClaimReply> r = wire::ClaimReply::FromJson(text);
  if (!r.ok()) {
    Check(!r.status().message().empty());
    return;
  }
  json reply = json::parse(text, nullptr, /*allow_exceptions=*/false);
  Check(reply.is_object() && reply.contains("assignments"));
  Check(reply["assignments"].size() == r->assignments.size());
  for (const wire::Grant& g : r->assignments) Check(g.ttl_ms > 0);
  Check(!r->log_batch_bytes || *r->log_batch_bytes > 0);
  Result<wire::ClaimReply> back = wire::ClaimReply::FromJson(r->ToJson());
  Check(back.ok() && *back == *r);
}

void CheckHeartbeatReply(std::string_view text) {
  Result<wire::HeartbeatReply> r = wire::HeartbeatReply::FromJson(text);
  if (!r.ok()) return;
  Result<wire::HeartbeatReply> back = wire::HeartbeatReply::FromJson(r->ToJson());
  Check(back.ok() && *back == *r);
}

void CheckResultBatchReply(std::string_view text) {
  Result<wire::ResultBatchReply> r = wire::ResultBatchReply::FromJson(text);
  if (!r.ok()) return;
  Result<wire::ResultBatchReply> back = wire::ResultBatchReply::FromJson(r->ToJson().dump());
  Check(back.ok() && *back == *r);
}

void CheckResult(std::string_view text) {
  Result<ShardResult> r = jobctl::agentd::ResultFromJson(text);
  if (!r.ok()) {
    Check(!r.status().message().empty());
    return;
  }
  Result<ShardResult> back =
      jobctl::agentd::ResultFromJson(jobctl::agentd::ResultToJson(*r, r->agent));
  Check(back.ok() && *back == *r);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  CheckClaimReply(text);
  CheckHeartbeatReply(text);
  CheckResultBatchReply(text);
  CheckResult(text);
  return 0;
}
