// Metrics: the coordinator's counters and histograms, rendered in the Prometheus text
// format at /metrics. Plain integers updated on the loop thread; no library, no locks.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace jobctl::coordinator {

class Histogram {
 public:
  // Bucket upper bounds in seconds.
  static constexpr std::array<double, 14> kBounds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                     0.25,  0.5,    1,     2.5,  5,     10,   30};
  void Observe(double seconds);
  std::string Render(const std::string& name, const std::string& help) const;

 private:
  std::array<uint64_t, kBounds.size()> counts_{};
  uint64_t count_ = 0;
  double sum_ = 0;
};

// One job's health on /metrics: per-job gauges labelled by its name only (job_name), one per
// job of the current job file, so the series are bounded by the file and a removed job's vanish.
struct JobHealthSample {
  std::string_view name;        // the JobIndex's; valid while rendering
  int64_t last_success_ms = 0;  // Unix ms; 0 = none known (rendered as 0)
  bool finished = false;        // a run finished: last_run_* are rendered
  bool last_succeeded = false;
  int64_t last_duration_ms = 0;
  bool overdue = false;
};

struct Metrics {
  uint64_t fires_total = 0;
  uint64_t skipped_total = 0;
  uint64_t missed_total = 0;
  uint64_t claims_total = 0;
  uint64_t heartbeats_total = 0;
  uint64_t grants_total = 0;
  uint64_t early_grants_total = 0;  // of which granted before their instant
  uint64_t leases_expired_total = 0;
  uint64_t stale_token_total = 0;
  uint64_t log_bytes_total = 0;
  uint64_t auth_failures_total = 0;
  uint64_t rate_limited_total = 0;  // requests refused with 429 by a token's rate limit
  // Retention (Pruner): rows deleted from the store (runs, shards, output ends, misses),
  // output chunks and bytes deleted from the log store, and space given back to the file
  // system.
  uint64_t pruned_rows_total = 0;
  uint64_t pruned_runs_total = 0;
  uint64_t pruned_log_chunks_total = 0;
  uint64_t pruned_log_bytes_total = 0;
  uint64_t reclaimed_bytes_total = 0;
  std::map<std::string, uint64_t> runs_finished_total;  // by state
  // Flows (FlowBook): flow runs made and ended (by state; also in runs_finished_total), step
  // runs made, and steps recorded as skipped.
  uint64_t flow_runs_started_total = 0;
  std::map<std::string, uint64_t> flow_runs_finished_total;  // by state
  uint64_t flow_steps_started_total = 0;
  uint64_t flow_steps_skipped_total = 0;
  // Notifications (Notifier): rows written to the outbox; delivery attempts that succeeded
  // and that failed, and rows given up, by channel ("unknown" for a channel no longer in
  // coordinator.toml).
  uint64_t notifications_queued_total = 0;
  std::map<std::string, uint64_t> notifications_sent_total;
  std::map<std::string, uint64_t> notification_failures_total;
  std::map<std::string, uint64_t> notifications_given_up_total;
  Histogram fire_lateness;   // run committed - scheduled instant
  Histogram claim_latency;   // shard pending -> granted
  Histogram step_handoff;    // a step's needs met (its run made) -> its first shard granted
  Histogram commit_latency;  // one group commit
  Histogram prune_slice;     // the loop's time in one retention slice (its commit apart)
  // Filled in at render time by the coordinator.
  uint64_t active_leases = 0;
  uint64_t agents_connected = 0;
  uint64_t jobs = 0;
  uint64_t open_runs = 0;
  uint64_t flow_runs_open = 0;
  uint64_t parked_waiters = 0;              // long-polls (/wait, logs -f) waiting in the LogHub
  uint64_t standby = 0;                     // 1 while another coordinator holds the shared store
  uint64_t shards_pending = 0;              // waiting for an agent, deferred ones included
  std::vector<JobHealthSample> job_health;  // by job id

  std::string Render(const std::string& version) const;

 private:
  void RenderJobHealth(std::string* out) const;
};

}  // namespace jobctl::coordinator
