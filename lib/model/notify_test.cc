#include "model/notify.h"

#include <gtest/gtest.h>

namespace jobctl {
namespace {

constexpr int64_t kHour = 3'600'000;
constexpr int64_t kT0 = 1'764'000'000'000;  // a wall-clock instant (Unix ms)

NotifyPolicy Policy(NotifyEvents on = kDefaultNotifyOn) {
  NotifyPolicy p;
  p.to = {"ops"};
  p.on = on;
  return p;
}

TEST(NotifyEventTest, NamesRoundTripAndUnknownIsRejected) {
  for (std::string_view name : NotifyEventNames()) {
    std::optional<NotifyEvent> e = ParseNotifyEvent(name);
    ASSERT_TRUE(e) << name;
    EXPECT_EQ(NotifyEventName(*e), name);
  }
  EXPECT_FALSE(ParseNotifyEvent("fail"));
  EXPECT_EQ(NotifyEventList(kDefaultNotifyOn),
            (std::vector<std::string>{"failed", "timed_out", "lost", "recovered", "overdue"}));
}

TEST(NotifyEventTest, TargetsAreChannelNamesOrMailtoAddresses) {
  EXPECT_EQ(NotifyTargetProblem("ops-mail"), "");
  EXPECT_EQ(NotifyTargetProblem("mailto:root@db-03.example.com"), "");
  EXPECT_NE(NotifyTargetProblem("Ops"), "");
  EXPECT_NE(NotifyTargetProblem(""), "");
  EXPECT_NE(NotifyTargetProblem("mailto:"), "");
  EXPECT_NE(NotifyTargetProblem("mailto:root"), "");
  EXPECT_NE(NotifyTargetProblem("mailto:a@b@c"), "");
  EXPECT_NE(NotifyTargetProblem("mailto:a@b\r\nBcc: x@y"), "");
  EXPECT_NE(NotifyTargetProblem("mailto:a@b,c@d"), "");
  EXPECT_NE(NotifyTargetProblem("mailto:<a@b>"), "");
  EXPECT_NE(NotifyTargetProblem(std::string(300, 'a')), "");
}

// A job failing every minute for a day sends one alert and a reminder an hour, then one
// "recovered": 25 notifications, not 1,440.
TEST(NotifyPolicyTest, AJobFailingEveryMinuteAlertsOnceAndRemindsHourly) {
  AlertState state;
  NotifyPolicy policy = Policy();
  int alerts = 0, reminders = 0;
  int64_t t0 = 1'000'000'000'000;
  for (int minute = 0; minute < 24 * 60; ++minute) {
    std::optional<Alert> a = OnRunEnded(state, RunState::kFailed, policy, t0 + minute * 60'000);
    if (!a) continue;
    EXPECT_EQ(a->event, NotifyEvent::kFailed);
    EXPECT_EQ(a->failing_since_ms, t0);
    (a->reminder ? reminders : alerts)++;
    if (a->reminder) {
      EXPECT_EQ(a->failures, minute + 1);
    }
  }
  EXPECT_EQ(alerts, 1);
  EXPECT_EQ(reminders, 23);
  std::optional<Alert> r = OnRunEnded(state, RunState::kSucceeded, policy, t0 + 24 * kHour);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->event, NotifyEvent::kRecovered);
  EXPECT_EQ(r->failures, 24 * 60);
  EXPECT_EQ(state, AlertState{});
  // Another success says nothing; the next failure opens a new alert.
  EXPECT_FALSE(OnRunEnded(state, RunState::kSucceeded, policy, t0 + 25 * kHour));
  std::optional<Alert> again = OnRunEnded(state, RunState::kTimedOut, policy, t0 + 26 * kHour);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->event, NotifyEvent::kTimedOut);
  EXPECT_FALSE(again->reminder);
}

struct EndCase {
  RunState state;
  NotifyEvents on;
  bool alerts;
};

TEST(NotifyPolicyTest, EachEndAlertsOnlyWhenItsEventIsAsked) {
  const EndCase cases[] = {
      {RunState::kFailed, kDefaultNotifyOn, true},
      {RunState::kTimedOut, kDefaultNotifyOn, true},
      {RunState::kLost, kDefaultNotifyOn, true},
      {RunState::kCanceled, kDefaultNotifyOn, false},
      {RunState::kCanceled, NotifyBit(NotifyEvent::kCanceled), true},
      {RunState::kFailed, NotifyBit(NotifyEvent::kTimedOut), false},
      {RunState::kSkipped, ~0u, false},
      {RunState::kSucceeded, ~0u, false},
  };
  for (const EndCase& c : cases) {
    AlertState state;
    std::optional<Alert> a = OnRunEnded(state, c.state, Policy(c.on), 1000);
    EXPECT_EQ(a.has_value(), c.alerts) << RunStateName(c.state) << " on=" << c.on;
    // An end that did not alert opens nothing: a later success is not a recovery.
    if (!c.alerts) {
      EXPECT_FALSE(OnRunEnded(state, RunState::kSucceeded, Policy(~0u), 2000));
    }
  }
}

TEST(NotifyPolicyTest, RecoveryIsQuietWhenNotAskedButClosesTheAlert) {
  AlertState state;
  NotifyPolicy policy = Policy(NotifyBit(NotifyEvent::kFailed));
  ASSERT_TRUE(OnRunEnded(state, RunState::kFailed, policy, 0));
  EXPECT_FALSE(OnRunEnded(state, RunState::kSucceeded, policy, 10));
  std::optional<Alert> a = OnRunEnded(state, RunState::kFailed, policy, 20);
  ASSERT_TRUE(a);
  EXPECT_FALSE(a->reminder);
}

TEST(NotifyPolicyTest, RepeatAfterZeroSendsEveryFailure) {
  AlertState state;
  NotifyPolicy policy = Policy();
  policy.repeat_after = Millis(0);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(OnRunEnded(state, RunState::kFailed, policy, i));
}

TEST(NotifyPolicyTest, NoticesAreSentAtMostOncePerRepeatAfterEach) {
  AlertState state;
  NotifyPolicy policy = Policy(~0u);
  EXPECT_TRUE(OnNotice(state, NotifyEvent::kMissed, policy, kT0));
  EXPECT_FALSE(OnNotice(state, NotifyEvent::kMissed, policy, kT0 + kHour - 1));
  EXPECT_TRUE(OnNotice(state, NotifyEvent::kSkipped, policy, kT0 + 10));
  EXPECT_TRUE(OnNotice(state, NotifyEvent::kAgentLost, policy, kT0 + 10));
  EXPECT_TRUE(OnNotice(state, NotifyEvent::kMissed, policy, kT0 + kHour));
  EXPECT_FALSE(OnNotice(state, NotifyEvent::kMissed, Policy(), kT0 + 3 * kHour));  // not asked
  EXPECT_FALSE(OnNotice(state, NotifyEvent::kFailed, policy, kT0 + 5 * kHour));    // not a notice
}

TEST(NotifyPolicyTest, OverdueAlertsOnceRemindsAndEndsWithASuccess) {
  AlertState state;
  NotifyPolicy policy = Policy();
  EXPECT_FALSE(OnOverdueCheck(state, false, policy, 0));
  std::optional<Alert> a = OnOverdueCheck(state, true, policy, 100);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->event, NotifyEvent::kOverdue);
  EXPECT_FALSE(a->reminder);
  EXPECT_FALSE(OnOverdueCheck(state, true, policy, 200));
  std::optional<Alert> r = OnOverdueCheck(state, true, policy, 100 + kHour);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->reminder);
  EXPECT_FALSE(OnRunEnded(state, RunState::kSucceeded, policy, 100 + 2 * kHour));
  EXPECT_EQ(state.overdue_sent_ms, 0);
  std::optional<Alert> b = OnOverdueCheck(state, true, policy, 100 + 3 * kHour);
  ASSERT_TRUE(b);
  EXPECT_FALSE(b->reminder);
  EXPECT_FALSE(OnOverdueCheck(state, true, Policy(NotifyBit(NotifyEvent::kFailed)), 0));
}

}  // namespace
}  // namespace jobctl
