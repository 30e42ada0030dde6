#include "coordinator/metrics.h"

#include <fmt/format.h>

namespace jobctl::coordinator {

void Histogram::Observe(double seconds) {
  for (size_t i = 0; i < kBounds.size(); ++i) {
    if (seconds <= kBounds[i]) ++counts_[i];
  }
  ++count_;
  sum_ += seconds;
}

std::string Histogram::Render(const std::string& name, const std::string& help) const {
  std::string out = fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  for (size_t i = 0; i < kBounds.size(); ++i) {
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, kBounds[i], counts_[i]);
  }
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, count_, name,
                     sum_, name, count_);
  return out;
}

void Metrics::RenderJobHealth(std::string* out) const {
  // Job names are [a-z0-9._-]: nothing in them needs escaping in a label value.
  auto family = [&](const char* name, const char* help, auto value, bool finished_only) {
    *out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n", name, help, name);
    for (const JobHealthSample& j : job_health) {
      if (finished_only && !j.finished) continue;
      *out += fmt::format("{}{{job_name=\"{}\"}} {}\n", name, j.name, value(j));
    }
  };
  auto seconds = [](int64_t ms) { return fmt::format("{:.3f}", static_cast<double>(ms) / 1000); };
  family(
      "jobctl_job_last_success_timestamp_seconds",
      "When the job's newest successful run ended (Unix time); 0 when none is known.",
      [&](const JobHealthSample& j) { return seconds(j.last_success_ms); }, false);
  family(
      "jobctl_job_last_run_succeeded",
      "1 when the job's last finished run succeeded, else 0; absent before its first run ended.",
      [](const JobHealthSample& j) { return j.last_succeeded ? 1 : 0; }, true);
  family(
      "jobctl_job_last_run_duration_seconds",
      "How long the job's last finished run took, from its first shard's start to its end.",
      [&](const JobHealthSample& j) { return seconds(j.last_duration_ms); }, true);
  family(
      "jobctl_job_overdue",
      "1 when the job has not succeeded within its expect_success_within, else 0.",
      [](const JobHealthSample& j) { return j.overdue ? 1 : 0; }, false);
}

std::string Metrics::Render(const std::string& version) const {
  std::string out;
  auto counter = [&out](const char* name, const char* help, uint64_t v) {
    out += fmt::format("# HELP {} {}\n# TYPE {} counter\n{} {}\n", name, help, name, name, v);
  };
  auto gauge = [&out](const char* name, const char* help, uint64_t v) {
    out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n{} {}\n", name, help, name, name, v);
  };
  out += fmt::format(
      "# HELP jobctl_build_info The running coordinator's version.\n"
      "# TYPE jobctl_build_info gauge\njobctl_build_info{{version=\"{}\"}} 1\n",
      version);
  counter("jobctl_fires_total", "Runs created by the schedule.", fires_total);
  counter("jobctl_skipped_total", "Fires recorded as skipped (overlap).", skipped_total);
  counter("jobctl_missed_total", "Instants recorded as missed (misfire policy).", missed_total);
  counter("jobctl_claims_total", "Claim requests from agents.", claims_total);
  counter("jobctl_heartbeats_total", "Heartbeat requests from agents.", heartbeats_total);
  counter("jobctl_grants_total", "Shard leases granted.", grants_total);
  counter("jobctl_early_grants_total",
          "Shard leases granted before their instant (early dispatch).", early_grants_total);
  counter("jobctl_leases_expired_total", "Leases that expired.", leases_expired_total);
  counter("jobctl_stale_token_total", "Requests refused for a stale fencing token.",
          stale_token_total);
  counter("jobctl_log_bytes_total", "Job output bytes stored.", log_bytes_total);
  counter("jobctl_auth_failures_total", "Requests refused for authentication.",
          auth_failures_total);
  counter("jobctl_rate_limited_total", "Requests refused by a token's rate limit.",
          rate_limited_total);
  counter("jobctl_pruned_runs_total", "Runs deleted by retention (runs_for, keep_last).",
          pruned_runs_total);
  counter("jobctl_pruned_rows_total",
          "Store rows deleted by retention: runs, shards, output ends and misses.",
          pruned_rows_total);
  counter("jobctl_pruned_log_chunks_total", "Output chunks deleted by retention.",
          pruned_log_chunks_total);
  counter("jobctl_pruned_log_bytes_total",
          "Output bytes deleted by retention (logs_for, logs_max, runs_for).",
          pruned_log_bytes_total);
  counter("jobctl_reclaimed_bytes_total",
          "Free database space given back to the file system after pruning.",
          reclaimed_bytes_total);
  out +=
      "# HELP jobctl_runs_finished_total Runs that reached a final state.\n"
      "# TYPE jobctl_runs_finished_total counter\n";
  for (const auto& [state, n] : runs_finished_total) {
    out += fmt::format("jobctl_runs_finished_total{{state=\"{}\"}} {}\n", state, n);
  }
  counter("jobctl_flow_runs_started_total", "Flow runs made (fired, triggered or retried).",
          flow_runs_started_total);
  out +=
      "# HELP jobctl_flow_runs_finished_total Flow runs that reached a final state.\n"
      "# TYPE jobctl_flow_runs_finished_total counter\n";
  for (const auto& [state, n] : flow_runs_finished_total) {
    out += fmt::format("jobctl_flow_runs_finished_total{{state=\"{}\"}} {}\n", state, n);
  }
  counter("jobctl_flow_steps_started_total", "Runs of flow steps made as their needs were met.",
          flow_steps_started_total);
  counter("jobctl_flow_steps_skipped_total",
          "Flow steps recorded as skipped (their needs ended so that they cannot run, or their "
          "flow run was canceled).",
          flow_steps_skipped_total);
  counter("jobctl_notifications_queued_total",
          "Notifications written to the outbox (one per job and target).",
          notifications_queued_total);
  auto by_channel = [&out](const char* name, const char* help,
                           const std::map<std::string, uint64_t>& values) {
    out += fmt::format("# HELP {} {}\n# TYPE {} counter\n", name, help, name);
    for (const auto& [channel, n] : values) {
      out += fmt::format("{}{{channel=\"{}\"}} {}\n", name, channel, n);
    }
  };
  by_channel("jobctl_notifications_sent_total", "Notifications delivered, by channel.",
             notifications_sent_total);
  by_channel("jobctl_notification_failures_total",
             "Delivery attempts that failed (each is retried until given up), by channel.",
             notification_failures_total);
  by_channel("jobctl_notifications_given_up_total",
             "Notifications given up after a day of failed attempts or a channel error, by "
             "channel.",
             notifications_given_up_total);
  gauge("jobctl_active_leases", "Shard leases currently held.", active_leases);
  gauge("jobctl_agents_connected", "Agents seen within one lease TTL.", agents_connected);
  gauge("jobctl_jobs", "Jobs in the current job file.", jobs);
  gauge("jobctl_open_runs", "Runs pending or running.", open_runs);
  gauge("jobctl_flow_runs_open", "Flow runs not ended (also in jobctl_open_runs).", flow_runs_open);
  gauge("jobctl_parked_waiters", "Long-polls (run waits, followed logs) waiting.", parked_waiters);
  gauge("jobctl_standby",
        "1 while this coordinator is a standby (another holds the shared database), else 0.",
        standby);
  gauge("jobctl_shards_pending",
        "Shards waiting for an agent (deferred ones, not yet due, included).", shards_pending);
  RenderJobHealth(&out);
  out += fire_lateness.Render("jobctl_fire_lateness_seconds",
                              "Time from a scheduled instant to its run being committed.");
  out += claim_latency.Render("jobctl_claim_latency_seconds",
                              "Time from a shard becoming pending to its lease being granted.");
  out += step_handoff.Render("jobctl_flow_step_handoff_seconds",
                             "Time from a flow step's needs being met (its run made, in the "
                             "commit that ended the last of them) to its first shard's grant.");
  out += commit_latency.Render("jobctl_store_commit_seconds", "Duration of one group commit.");
  out += prune_slice.Render("jobctl_prune_slice_seconds",
                            "Time the loop spent on one retention slice, its commit apart.");
  return out;
}

}  // namespace jobctl::coordinator
