#include "assignment.h"

#include <nlohmann/json.hpp>

#include "wire/bounded_json.h"

namespace jobctl::agentd {

std::string ResultToJson(const ShardResult& r, std::string_view agent) {
  nlohmann::json j = r.ToJson();
  j["agent"] = agent;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<ShardResult> ResultFromJson(std::string_view text) {
  nlohmann::json j = wire::ParseJson(text);
  if (!j.is_object()) return Status::Corrupt("result: not a JSON object");
  Result<ShardResult> r = ShardResult::FromJson(j);
  if (!r.ok()) return Status::Corrupt("result: " + r.status().message());
  return r;
}

}  // namespace jobctl::agentd
