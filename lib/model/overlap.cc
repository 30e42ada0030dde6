#include "model/overlap.h"

namespace jobctl {

OverlapAction DecideOverlap(Overlap policy, int open_runs) {
  if (open_runs <= 0) return OverlapAction::kFire;
  switch (policy) {
    case Overlap::kForbid: return OverlapAction::kSkip;
    case Overlap::kReplace: return OverlapAction::kCancelAndFire;
    case Overlap::kAllow: return OverlapAction::kFire;
  }
  return OverlapAction::kFire;
}

}  // namespace jobctl
