// libFuzzer target: any text, parsed as JSON, through the FromJson of every reply jobctl reads
// (wire/views.h), alone and as a list. Decoding must never crash or throw, a refusal must say
// something, and whatever decodes must survive ToJson -> text -> FromJson unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "wire/bounded_json.h"
#include "wire/views.h"

namespace {

using nlohmann::json;
namespace wire = jobctl::wire;

void Check(bool ok) {
  if (!ok) std::abort();
}

json Reparse(const json& j) {
  // Strict dump: every string came through the JSON parser, so it is valid UTF-8.
  return json::parse(j.dump(), nullptr, /*allow_exceptions=*/false);
}

template <typename T>
void One(const json& in) {
  jobctl::Result<T> v = T::FromJson(in);
  if (!v.ok()) {
    Check(!v.status().message().empty());
    return;
  }
  jobctl::Result<T> back = T::FromJson(Reparse(v->ToJson()));
  Check(back.ok());
  Check(*back == *v);
}

template <typename T>
void List(const json& in) {
  jobctl::Result<std::vector<T>> v = wire::ListFromJson<T>(in);
  if (!v.ok()) {
    Check(!v.status().message().empty());
    return;
  }
  jobctl::Result<std::vector<T>> back = wire::ListFromJson<T>(Reparse(wire::ListToJson(*v)));
  Check(back.ok());
  Check(*back == *v);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  json in = wire::ParseJson(text);
  if (in.is_discarded()) return 0;
  One<wire::ShardView>(in);
  One<wire::RunView>(in);
  One<wire::JobSummaryView>(in);
  One<wire::JobView>(in);
  One<wire::JobFileView>(in);
  One<wire::ApplyReply>(in);
  One<wire::AgentView>(in);
  One<wire::AgentRemoved>(in);
  One<wire::TokenCreated>(in);
  One<wire::TokenView>(in);
  One<wire::AuditEvent>(in);
  One<wire::MissView>(in);
  One<wire::LogChunkView>(in);
  One<wire::LogPage>(in);
  List<wire::ShardView>(in);
  List<wire::RunView>(in);
  List<wire::JobSummaryView>(in);
  List<wire::AgentView>(in);
  List<wire::TokenView>(in);
  List<wire::AuditEvent>(in);
  List<wire::MissView>(in);
  List<wire::LogChunkView>(in);
  return 0;
}
