// The overlap rule: what a fire does while runs of the same job are still open. forbid
// records the instant as a skipped run; replace cancels the open runs, then fires; allow
// fires alongside them. With no run open every policy fires. Pure; the Scheduler applies
// the decision for each instant it fires. Any thread.
#pragma once

#include "model/job.h"

namespace jobctl {

enum class OverlapAction {
  kFire,           // create the run
  kSkip,           // record the instant as a skipped run ("overlap=forbid: ...")
  kCancelAndFire,  // cancel every open run of the job, then create the run
};

OverlapAction DecideOverlap(Overlap policy, int open_runs);

}  // namespace jobctl
