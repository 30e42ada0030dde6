#include "model/health.h"

namespace jobctl {

std::optional<int64_t> OverdueAfter(const SuccessWatch& w) {
  if (!w.expect_success_within || w.paused) return std::nullopt;
  return w.last_success_ms.value_or(w.since_ms) + w.expect_success_within->count();
}

bool IsOverdue(const SuccessWatch& w, int64_t now_ms) {
  std::optional<int64_t> after = OverdueAfter(w);
  return after && *after < now_ms;
}

}  // namespace jobctl
