// libFuzzer target: any text through ParseJobFile; every diagnostic must be printable. In a
// file accepted, every job carries a schedule that parses again, unless a flow's step names
// it; every flow's schedule parses, its graph has no problem, its steps are 1 to
// kMaxFlowSteps and each runs a job of the file or a step job of its own.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "config/job_file.h"
#include "model/flow.h"
#include "model/schedule.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  jobctl::JobFileResult r = jobctl::ParseJobFile(text, "fuzz.toml");
  for (const jobctl::Diagnostic& d : r.errors) Check(!d.ToString().empty());
  if (!r.ok()) return 0;
  std::set<std::string> named, jobs, step_jobs;
  for (const jobctl::Flow& flow : r.file.flows) {
    Check(jobctl::Schedule::Parse(jobctl::ScheduleSpecOf(flow)).ok());
    Check(jobctl::CheckFlowGraph(jobctl::GraphOf(flow)).empty());
    Check(!flow.steps.empty() && flow.steps.size() <= static_cast<size_t>(jobctl::kMaxFlowSteps));
    for (const jobctl::FlowStep& step : flow.steps) named.insert(step.job);
  }
  for (const jobctl::Job& job : r.file.jobs) {
    jobs.insert(job.name);
    Check(job.schedule.empty() ? named.count(job.name) == 1
                               : jobctl::Schedule::Parse(jobctl::ScheduleSpecOf(job)).ok());
  }
  for (const jobctl::Job& job : r.file.step_jobs) step_jobs.insert(job.name);
  for (const jobctl::Flow& flow : r.file.flows) {
    for (const jobctl::FlowStep& step : flow.steps) {
      Check((step.own ? step_jobs : jobs).count(step.job) == 1);
    }
  }
  return 0;
}
