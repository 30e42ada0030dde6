#include "model/notify.h"

#include <algorithm>

namespace jobctl {

namespace {
constexpr std::array<std::string_view, kNotifyEventCount> kNames = {
    "failed", "timed_out", "lost",       "canceled", "recovered",
    "missed", "skipped",   "agent_lost", "overdue"};

bool Elapsed(int64_t since_ms, const NotifyPolicy& policy, int64_t now_ms) {
  return now_ms - since_ms >= policy.repeat_after.count();
}

// The event a failure-class end of a run notifies as; nullopt for the other states.
std::optional<NotifyEvent> FailureEvent(RunState s) {
  switch (s) {
    case RunState::kFailed: return NotifyEvent::kFailed;
    case RunState::kTimedOut: return NotifyEvent::kTimedOut;
    case RunState::kLost: return NotifyEvent::kLost;
    case RunState::kCanceled: return NotifyEvent::kCanceled;
    default: return std::nullopt;
  }
}
}  // namespace

std::string_view NotifyEventName(NotifyEvent e) { return kNames[static_cast<size_t>(e)]; }

std::optional<NotifyEvent> ParseNotifyEvent(std::string_view s) {
  auto it = std::find(kNames.begin(), kNames.end(), s);
  if (it == kNames.end()) return std::nullopt;
  return static_cast<NotifyEvent>(it - kNames.begin());
}

const std::array<std::string_view, kNotifyEventCount>& NotifyEventNames() { return kNames; }

std::vector<std::string> NotifyEventList(NotifyEvents set) {
  std::vector<std::string> out;
  for (int i = 0; i < kNotifyEventCount; ++i) {
    if (NotifyHas(set, static_cast<NotifyEvent>(i))) out.emplace_back(kNames[i]);
  }
  return out;
}

bool IsValidChannelName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  auto lower_digit = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!lower_digit(name[0])) return false;
  return std::all_of(name.begin(), name.end(),
                     [&](char c) { return lower_digit(c) || c == '.' || c == '_' || c == '-'; });
}

std::string NotifyTargetProblem(std::string_view target) {
  if (target.size() > kMaxNotifyTargetLength) return "longer than 254 characters";
  constexpr std::string_view kMailto = "mailto:";
  if (!target.starts_with(kMailto)) {
    if (IsValidChannelName(target)) return "";
    return "expected a channel name ([a-z0-9][a-z0-9._-]*, at most 64 characters) or "
           "\"mailto:user@example.com\"";
  }
  std::string_view addr = target.substr(kMailto.size());
  size_t at = addr.find('@');
  bool plain = std::all_of(addr.begin(), addr.end(), [](char c) {
    return static_cast<unsigned char>(c) > ' ' && c != 0x7f && c != '<' && c != '>' && c != ',' &&
           c != ';' && c != '"' && c != '(' && c != ')' && c != '\\';
  });
  if (!plain || at == std::string_view::npos || at == 0 || at + 1 >= addr.size() ||
      addr.find('@', at + 1) != std::string_view::npos) {
    return "expected an address like \"mailto:user@example.com\"";
  }
  return "";
}

std::optional<Alert> OnRunEnded(AlertState& state, RunState run_state, const NotifyPolicy& policy,
                                int64_t now_ms) {
  if (run_state == RunState::kSucceeded) {
    state.overdue_sent_ms = 0;
    if (state.failing_since_ms == 0) return std::nullopt;
    Alert alert{NotifyEvent::kRecovered, false, state.failures, state.failing_since_ms};
    state.failing_since_ms = 0;
    state.failures = 0;
    state.last_sent_ms = 0;
    if (!NotifyHas(policy.on, NotifyEvent::kRecovered)) return std::nullopt;
    return alert;
  }
  std::optional<NotifyEvent> event = FailureEvent(run_state);
  if (!event || !NotifyHas(policy.on, *event)) return std::nullopt;
  if (state.failing_since_ms == 0) {
    state.failing_since_ms = now_ms;
    state.failures = 1;
    state.last_sent_ms = now_ms;
    return Alert{*event, false, 1, now_ms};
  }
  ++state.failures;
  if (!Elapsed(state.last_sent_ms, policy, now_ms)) return std::nullopt;
  state.last_sent_ms = now_ms;
  return Alert{*event, true, state.failures, state.failing_since_ms};
}

std::optional<Alert> OnNotice(AlertState& state, NotifyEvent event, const NotifyPolicy& policy,
                              int64_t now_ms) {
  int64_t* sent = nullptr;
  switch (event) {
    case NotifyEvent::kMissed: sent = &state.missed_sent_ms; break;
    case NotifyEvent::kSkipped: sent = &state.skipped_sent_ms; break;
    case NotifyEvent::kAgentLost: sent = &state.agent_lost_sent_ms; break;
    default: return std::nullopt;
  }
  if (!NotifyHas(policy.on, event)) return std::nullopt;
  if (*sent != 0 && !Elapsed(*sent, policy, now_ms)) return std::nullopt;
  *sent = now_ms;
  return Alert{event, false, 0, 0};
}

std::optional<Alert> OnOverdueCheck(AlertState& state, bool overdue, const NotifyPolicy& policy,
                                    int64_t now_ms) {
  if (!overdue) {
    state.overdue_sent_ms = 0;
    return std::nullopt;
  }
  if (!NotifyHas(policy.on, NotifyEvent::kOverdue)) return std::nullopt;
  bool reminder = state.overdue_sent_ms != 0;
  if (reminder && !Elapsed(state.overdue_sent_ms, policy, now_ms)) return std::nullopt;
  state.overdue_sent_ms = now_ms;
  return Alert{NotifyEvent::kOverdue, reminder, 0, 0};
}

}  // namespace jobctl
