// libFuzzer target: any text through ParseJobFile; every diagnostic must be printable and
// every accepted job must carry a schedule that parses again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "config/job_file.h"
#include "model/schedule.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  jobctl::JobFileResult r = jobctl::ParseJobFile(text, "fuzz.toml");
  for (const jobctl::Diagnostic& d : r.errors) {
    if (d.ToString().empty()) std::abort();
  }
  if (r.ok()) {
    for (const jobctl::Job& job : r.file.jobs) {
      if (!jobctl::Schedule::Parse({job.schedule, job.dialect, job.timezone, job.name}).ok()) {
        std::abort();
      }
    }
  }
  return 0;
}
