// A $JOB_OUTPUT file as agentd reads it (model/step_output.h): anything a job's process wrote.
// What is read must hold only keys that pass OutputKeyProblem and values without NUL or
// newline, stay within the limit, and read back the same once formatted.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "model/step_output.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  jobctl::Result<jobctl::StepOutputs> out = jobctl::ParseStepOutput(text);
  if (!out.ok()) return 0;
  if (jobctl::OutputBytes(*out) > jobctl::kMaxStepOutputBytes) std::abort();
  for (const auto& [k, v] : *out) {
    if (!jobctl::OutputKeyProblem(k).empty()) std::abort();
    if (v.find('\0') != std::string::npos || v.find('\n') != std::string::npos) std::abort();
  }
  jobctl::Result<jobctl::StepOutputs> back =
      jobctl::ParseStepOutput(jobctl::FormatStepOutput(*out));
  if (!back.ok() || *back != *out) std::abort();
  return 0;
}
