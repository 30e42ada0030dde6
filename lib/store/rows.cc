#include "store/rows.h"

namespace jobctl::store {

std::string OnLabels(const std::vector<LabelSelector>& on) {
  std::string out;
  for (const LabelSelector& s : on) {
    if (!out.empty()) out += ' ';
    out += s.key;
    out += s.negated ? "!=" : "=";
    out += s.value;
  }
  return out;
}

JobTiming JobTiming::Of(const Job& job) {
  return {job.schedule,
          job.dialect,
          job.timezone,
          job.anchor_ms,
          job.enabled,
          job.misfire,
          job.overlap,
          job.misfire_cap,
          job.expect_success_within ? job.expect_success_within->count() : 0,
          JobKind::kJob,
          std::nullopt,
          OnLabels(job.on)};
}

JobTiming JobTiming::Of(const Flow& flow) {
  return {flow.schedule,
          flow.dialect,
          flow.timezone,
          flow.anchor_ms,
          flow.enabled,
          flow.misfire,
          flow.overlap,
          flow.misfire_cap,
          flow.expect_success_within ? flow.expect_success_within->count() : 0,
          JobKind::kFlow,
          std::nullopt};
}

}  // namespace jobctl::store
