// Subject() and the headline it shares with the mail body and the webhook's text: what
// happened, to which job, where, in words a person on call can triage from a list of mails.
#include <string>
#include <vector>

#include "notify/render.h"
#include "notify/text.h"

namespace jobctl::notify {
namespace {

std::vector<const ShardFacts*> FailedShards(const Notification& n) {
  std::vector<const ShardFacts*> failed;
  for (const ShardFacts& s : n.shards) {
    if (IsFailedShard(s)) failed.push_back(&s);
  }
  return failed;
}

std::string HostOf(const ShardFacts& s) {
  return s.host.empty() ? "shard " + std::to_string(s.index) : internal::OneLine(s.host);
}

// " on db-03", " on db-03 +2 more", or "" when no shard failed.
std::string Where(const std::vector<const ShardFacts*>& failed) {
  if (failed.empty()) return "";
  std::string where = " on " + HostOf(*failed.front());
  if (failed.size() > 1) where += " +" + std::to_string(failed.size() - 1) + " more";
  return where;
}

// " (exit 2)", " (signal 9)" or "" for the first failed shard.
std::string HowItEnded(const std::vector<const ShardFacts*>& failed) {
  if (failed.empty()) return "";
  const ShardFacts& s = *failed.front();
  if (s.signal) return " (signal " + std::to_string(*s.signal) + ")";
  if (s.exit_code) return " (exit " + std::to_string(*s.exit_code) + ")";
  return "";
}

std::string Failures(int count) {
  return std::to_string(count) + (count == 1 ? " failure" : " failures");
}

std::string StillFailing(const Notification& n, const std::string& job) {
  std::string line = job + " still failing";
  if (n.failures_since <= 0) return line;
  line += " (" + Failures(n.failures_since);
  if (n.failing_since_ms > 0) line += " since " + internal::PeopleTime(n.failing_since_ms);
  return line + ")";
}

std::string TheFire(const Notification& n) {
  return n.scheduled_ms > 0 ? "its fire at " + internal::PeopleTime(n.scheduled_ms) : "a fire";
}

}  // namespace

bool IsFailedShard(const ShardFacts& shard) {
  if (shard.outcome.empty()) {
    return shard.signal.has_value() || (shard.exit_code.has_value() && *shard.exit_code != 0);
  }
  return shard.outcome != "succeeded" && shard.outcome != "running" && shard.outcome != "pending";
}

namespace internal {

std::string Headline(const Notification& n) {
  const std::string job = n.job.empty() ? std::string("a job") : OneLine(n.job);
  const std::vector<const ShardFacts*> failed = FailedShards(n);
  const std::string& e = n.event;
  if (e == "test") {
    return n.channel.empty() ? "test notification"
                             : "test notification from channel " + OneLine(n.channel);
  }
  if (n.reminder) return StillFailing(n, job);
  if (e == "failed") return job + " failed" + Where(failed) + HowItEnded(failed);
  if (e == "timed_out") {
    std::string line = job + " timed out" + Where(failed);
    if (n.started_ms > 0 && n.finished_ms >= n.started_ms) {
      line += " after " + PeopleDuration(n.finished_ms - n.started_ms);
    }
    return line;
  }
  if (e == "lost") return job + " lost" + Where(failed);
  if (e == "canceled") return job + " canceled";
  if (e == "recovered") {
    return job + " recovered" +
           (n.failures_since > 0 ? " after " + Failures(n.failures_since) : std::string());
  }
  if (e == "missed") return job + " missed " + TheFire(n);
  if (e == "skipped") return job + " skipped " + TheFire(n);
  if (e == "agent_lost") {
    std::string host = n.shards.empty() ? std::string() : " " + HostOf(n.shards.front());
    return "agent" + host + " lost" + (n.job.empty() ? std::string() : " while running " + job);
  }
  if (e == "overdue") return job + " overdue" + (n.detail.empty() ? "" : ": " + OneLine(n.detail));
  return job + ": " + (e.empty() ? std::string("notification") : OneLine(e));
}

}  // namespace internal

std::string Subject(const Notification& n) {
  return internal::Truncate("jobctl: " + internal::Headline(internal::Bounded(n)),
                            kMaxSubjectBytes);
}

}  // namespace jobctl::notify
