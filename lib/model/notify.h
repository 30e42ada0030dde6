// What a job's notifications say and when: the events a job may notify on (notify_on in
// jobs.toml) and the rule that keeps a job failing every minute from sending a mail a
// minute. Pure: the coordinator keeps an AlertState per job in the store and asks these
// functions, in the same write as the state change, whether to send.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/duration.h"
#include "model/run.h"

namespace jobctl {

enum class NotifyEvent {
  kFailed,     // a run ended failed (an attempt's exit, signal or spawn failure)
  kTimedOut,   // a run ended by its timeout
  kLost,       // a run ended lost (on_lost = "fail")
  kCanceled,   // a run was canceled
  kRecovered,  // the first success after a failure that was notified
  kMissed,     // a fire was missed (misfire policy skip, or past misfire_cap)
  kSkipped,    // a fire was skipped by the overlap policy
  kAgentLost,  // an agent was lost while it held one of the job's shards
  kOverdue,    // no success within expect_success_within
};
constexpr int kNotifyEventCount = 9;

std::string_view NotifyEventName(NotifyEvent e);
std::optional<NotifyEvent> ParseNotifyEvent(std::string_view s);
// Every name ParseNotifyEvent accepts, in enum order.
const std::array<std::string_view, kNotifyEventCount>& NotifyEventNames();

// A set of events.
using NotifyEvents = uint32_t;
constexpr NotifyEvents NotifyBit(NotifyEvent e) { return 1u << static_cast<int>(e); }
constexpr bool NotifyHas(NotifyEvents set, NotifyEvent e) { return (set & NotifyBit(e)) != 0; }
// notify_on when a job does not say: the run ends a person must act on, recovery and
// overdue.
constexpr NotifyEvents kDefaultNotifyOn =
    NotifyBit(NotifyEvent::kFailed) | NotifyBit(NotifyEvent::kTimedOut) |
    NotifyBit(NotifyEvent::kLost) | NotifyBit(NotifyEvent::kRecovered) |
    NotifyBit(NotifyEvent::kOverdue);
std::vector<std::string> NotifyEventList(NotifyEvents set);

// A job's notification settings (jobs.toml: notify, notify_on, repeat_after).
struct NotifyPolicy {
  // Channel names of coordinator.toml, or "mailto:ADDRESS" (sent through the coordinator's
  // mailto_channel). Empty: the job notifies nobody.
  std::vector<std::string> to;
  NotifyEvents on = kDefaultNotifyOn;
  // While a job keeps failing (or stays overdue), at most one reminder per repeat_after; a
  // missed, skipped or agent-lost notice at most once per repeat_after. 0: every time.
  Millis repeat_after = std::chrono::hours(1);
  bool operator==(const NotifyPolicy&) const = default;
};
constexpr size_t kMaxNotifyTargets = 16;
constexpr size_t kMaxNotifyTargetLength = 254;
// A channel name: [a-z0-9][a-z0-9._-]*, at most 64 characters.
bool IsValidChannelName(std::string_view name);
// "" when `target` is a channel name or mailto:local@domain; else what is wrong with it.
std::string NotifyTargetProblem(std::string_view target);

// What the coordinator remembers per job between notifications.
struct AlertState {
  int64_t failing_since_ms = 0;  // 0: no failure alert is open
  int failures = 0;              // failed runs since failing_since_ms
  int64_t last_sent_ms = 0;      // the open failure alert or its last reminder
  int64_t overdue_sent_ms = 0;   // 0: not alerted as overdue
  int64_t missed_sent_ms = 0;
  int64_t skipped_sent_ms = 0;
  int64_t agent_lost_sent_ms = 0;
  bool operator==(const AlertState&) const = default;
};

// A notification to send.
struct Alert {
  NotifyEvent event;
  bool reminder = false;         // the job is still failing (or overdue): a repeat
  int failures = 0;              // failed runs in the open alert
  int64_t failing_since_ms = 0;  // when the open alert began
};

// A run of the job ended in `state`. The first failure-class end (failed, timed out, lost,
// canceled; those in `policy.on`) opens an alert and sends; later ones send a reminder once
// repeat_after passed since the last send. A success closes an open alert and sends
// "recovered" if the job asks; it also ends an overdue alert.
std::optional<Alert> OnRunEnded(AlertState& state, RunState run_state, const NotifyPolicy& policy,
                                int64_t now_ms);
// A notice (missed, skipped, agent lost): sent at most once per repeat_after.
std::optional<Alert> OnNotice(AlertState& state, NotifyEvent event, const NotifyPolicy& policy,
                              int64_t now_ms);
// The periodic overdue check: alerts when the job became overdue, then reminds every
// repeat_after while it stays so; `overdue` false ends it quietly.
std::optional<Alert> OnOverdueCheck(AlertState& state, bool overdue, const NotifyPolicy& policy,
                                    int64_t now_ms);

}  // namespace jobctl
