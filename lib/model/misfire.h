// The misfire rule: which of a job's due instants fire and which are recorded as missed.
// An instant overdue by more than the grace (a restart, a stall, a forward clock jump, a
// pause) is "missed", and the job's misfire policy says what becomes of the missed ones:
// fire-once folds them into one run (unless an on-time instant already fires), skip runs
// none, fire-all runs up to misfire_cap of them. Instants on time always fire. Missed
// instants that do not fire are recorded with the policy's reason, never dropped silently.
// Pure; the Scheduler collects the due instants and applies the decision. Any thread.
#pragma once

#include <cstdint>
#include <vector>

#include "model/job.h"

namespace jobctl {

struct DueInstants {
  std::vector<int64_t> listed;  // due instants (Unix ms), oldest first
  // Due instants beyond the listed ones, counted but not listed (a very long outage of a
  // very frequent job): all of them are missed, and so then are the listed ones.
  int64_t extra = 0;
};

struct MisfireDecision {
  std::vector<int64_t> fire;    // instants to fire, oldest first
  std::vector<int64_t> missed;  // listed instants recorded as missed, oldest first
  int64_t extra_missed = 0;     // and this many more, counted, not listed
  // Why they were missed, as recorded (e.g. "misfire=skip"); nullptr when nothing is.
  const char* reason = nullptr;
};

// `grace_ms`: how late an instant may fire and still be on time (0 on resume: instants
// held back by a pause are all missed, however short the pause).
MisfireDecision DecideMisfire(Misfire policy, int misfire_cap, const DueInstants& due,
                              int64_t now_ms, int64_t grace_ms);

}  // namespace jobctl
