// A job's health as its dead-man's switch sees it: a job with `expect_success_within` is
// overdue once it has gone that long without a successful run. The clock starts at its last
// success, or, when it never succeeded (none is known), at `since_ms`: when the job was
// created or its definition last changed. A paused or disabled job is never overdue, nor is
// one without the key. Overdue is strictly past the deadline: a success exactly
// `expect_success_within` ago still counts. Pure; any thread.
#pragma once

#include <cstdint>
#include <optional>

#include "base/duration.h"

namespace jobctl {

struct SuccessWatch {
  std::optional<Millis> expect_success_within;  // none: never overdue
  std::optional<int64_t> last_success_ms;       // the newest successful run's end (Unix ms)
  int64_t since_ms = 0;  // created or definition last changed (Unix ms), used without a success
  bool paused = false;   // paused or disabled: never overdue
};

// The instant after which the job is overdue (Unix ms); none when it cannot be (no
// expectation, paused). A caller can arm a timer for it.
std::optional<int64_t> OverdueAfter(const SuccessWatch& w);
// Whether the job is overdue at now_ms: OverdueAfter(w) < now_ms.
bool IsOverdue(const SuccessWatch& w, int64_t now_ms);

}  // namespace jobctl
