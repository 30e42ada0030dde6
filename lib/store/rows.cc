#include "store/rows.h"

namespace jobctl::store {

JobTiming JobTiming::Of(const Job& job) {
  return {job.schedule,
          job.dialect,
          job.timezone,
          job.anchor_ms,
          job.enabled,
          job.misfire,
          job.overlap,
          job.misfire_cap,
          job.expect_success_within ? job.expect_success_within->count() : 0};
}

}  // namespace jobctl::store
