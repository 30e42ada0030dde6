#include "fault/checker.h"

#include <sstream>

#include "model/time_format.h"

namespace jobctl::fault {

std::string FormatInstant(int64_t unix_ms) { return FormatUtc(FromUnixMs(unix_ms)); }

bool Report::Has(std::string_view invariant) const {
  for (const Violation& v : violations) {
    if (v.invariant == invariant) return true;
  }
  return false;
}

std::string Report::ToString() const {
  std::ostringstream out;
  out << (ok() ? "OK" : "VIOLATED") << ": " << violations.size() << " violation(s)\n";
  out << "checked:";
  for (const auto& [what, n] : counts) out << " " << what << "=" << n;
  out << "\n";
  for (const Violation& v : violations) out << v.invariant << " " << v.what << "\n";
  for (const Failover& f : failovers) {
    out << "failover agent=" << f.agent << " run=" << f.run << " shard=" << f.shard
        << " token=" << f.token << " lease_end_ms=" << f.ended_ms
        << " regranted_ms=" << f.regranted_ms << " new_token=" << f.new_token << "\n";
  }
  for (const AttemptOverlap& o : overlaps) {
    out << "overlap run=" << o.run << " shard=" << o.shard << " attempts=" << o.old_attempt << ","
        << o.new_attempt << " ms=" << o.ms << (o.old_end_known ? "" : " (old end unseen)") << "\n";
  }
  for (const LeaderChange& c : leader_changes) {
    out << "leader_change epoch=" << c.epoch << " pid=" << c.pid << " fault_ms=" << c.fault_ms
        << " gap_ms=" << c.gap_ms << " first_commit_ms=" << c.first_commit_ms << "\n";
  }
  for (const std::string& n : notes) out << "note: " << n << "\n";
  return out.str();
}

Report Check(const History& history, const StoreView& store, const CheckOptions& options) {
  Report report;
  CheckTriggers(history, store, options, &report);
  CheckLeases(history, store, options, &report);
  CheckAcknowledged(history, store, &report);
  MeasureOverlaps(history, &report);
  CheckLeaders(history, options, &report);
  CheckFlows(history, store, &report);
  return report;
}

}  // namespace jobctl::fault
