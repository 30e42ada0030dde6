// libFuzzer target: any text, parsed as JSON, through wire::JobFromJson (how the coordinator
// reads a job's stored definition back), or wire::FlowFromJson when it has "steps". Decoding must
// never throw, and a job that decodes must survive JobToJson -> text -> JobFromJson unchanged, with
// no field reported as changed.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "wire/bounded_json.h"
#include "wire/job_json.h"

namespace {

using nlohmann::json;

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  json in = jobctl::wire::ParseJson(text);
  if (in.is_discarded()) return 0;
  if (in.is_object() && in.contains("steps")) {
    // A flow's stored definition.
    jobctl::Result<jobctl::Flow> flow = jobctl::wire::FlowFromJson(in);
    if (!flow.ok()) return 0;
    json out = jobctl::wire::FlowToJson(*flow);
    jobctl::Result<jobctl::Flow> back =
        jobctl::wire::FlowFromJson(json::parse(out.dump(), nullptr, /*allow_exceptions=*/false));
    Check(back.ok());
    Check(*back == *flow);
    Check(jobctl::wire::FlowChangedFields(*flow, *back).empty());
    return 0;
  }
  jobctl::Result<jobctl::Job> job = jobctl::wire::JobFromJson(in);
  if (!job.ok()) {
    Check(!job.status().message().empty());
    return 0;
  }
  json out = jobctl::wire::JobToJson(*job);
  // Strict dump: every string came through the JSON parser, so it is valid UTF-8.
  std::string stored = out.dump();
  jobctl::Result<jobctl::Job> back =
      jobctl::wire::JobFromJson(json::parse(stored, nullptr, /*allow_exceptions=*/false));
  Check(back.ok());
  Check(*back == *job);
  Check(jobctl::wire::ChangedFields(*job, *back).empty());
  Check(jobctl::wire::JobToJson(*back) == out);
  return 0;
}
