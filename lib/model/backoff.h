// Backoff: how long to wait before trying again after failures in a row. One rule for the
// whole tree: agentd's retries to the coordinator (agentd/backoff.h), the coordinator's
// retry of a failed shard (RetryDelayMs below, from the job's [retry]) and its hold-off
// after failed commits (WriteBatch). The delay grows from `base_ms`, doubling after each
// failure, up to `cap_ms`; jitter, when asked for, is drawn from the caller's Random.
//
// Like every rule in lib/model it is a pure function of plain values (no clock, loop or
// store), so each case is a line of a unit test; the coordinator and agentd both link
// lib/model already, which is why the rules live here and not in a library of their own.
// Any thread.
#pragma once

#include <cstdint>

#include "base/random.h"
#include "model/job.h"

namespace jobctl {

enum class Jitter {
  kNone,       // exactly the ceiling
  kFull,       // uniform in [0, ceiling]: a fleet of agents does not come back in step
  kUpperHalf,  // uniform in [ceiling/2, ceiling]: a real wait, a burst still spread out
};

struct BackoffPolicy {
  int64_t base_ms = 0;  // the ceiling before any doubling
  int64_t cap_ms = 0;   // the ceiling never grows past this
  Jitter jitter = Jitter::kNone;
};

// min(cap, base * 2^doublings), without overflow; doublings < 0 counts as 0.
int64_t BackoffCeilingMs(const BackoffPolicy& policy, int64_t doublings);
// The delay for this many doublings: the ceiling, jittered as the policy says. Draws from
// `random` once when the policy jitters, never otherwise.
int64_t BackoffDelayMs(const BackoffPolicy& policy, int64_t doublings, Random& random);

// The wait before retry number `attempt` of a failed shard (attempt 1 failed: the first
// retry): `fixed` waits `initial` every time, unjittered; `exponential` doubles from
// `initial` per attempt up to `max_delay`, jittered over the upper half.
int64_t RetryDelayMs(const RetryPolicy& retry, int attempt, Random& random);

}  // namespace jobctl
