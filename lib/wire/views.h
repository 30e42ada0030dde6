// The coordinator's replies that jobctl reads, as typed messages: runs and their shards, jobs,
// the job file and what applying one changed, agents, tokens, the audit trail, missed fire
// times and pages of a run's output. The coordinator builds each reply with ToJson and jobctl
// reads it only with FromJson, so the field names are written once, here; man jobctl-api(7)
// documents them and they do not change.
//
// FromJson is strict and never throws: a field that is missing or of the wrong type is
// kInvalidArgument naming the message and the field, e.g. `run view: field "shard_total" is
// missing or not an integer (jobctl and the coordinator may be different versions)`. Fields
// held in a std::optional may be absent (or null). Times are RFC 3339 UTC text as sent, ""
// for none. States, reasons and outcomes stay text, so a state a newer coordinator adds is
// shown rather than refused. Value types; pure functions, any thread.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/flow_spec.h"
#include "model/job.h"

namespace jobctl::wire {

// One shard of a run, as in the run views' "shards".
struct ShardView {
  static constexpr std::string_view kName = "shard view";
  int index = 0;
  std::string agent;  // holder of the current attempt, "" while pending
  std::string state;
  int attempt = 0;
  std::optional<int64_t> token;      // fencing token: shown to admins only (null otherwise)
  std::optional<int64_t> exit_code;  // null until the process exited
  std::string outcome;               // the last attempt's outcome, "" while running
  std::string message;
  std::string started_at;
  std::string finished_at;
  // What the last attempt's processes used (null where the agent did not report it): the
  // largest resident set one of them reached, in bytes, and their CPU time in ms.
  std::optional<int64_t> peak_rss_bytes;
  std::optional<int64_t> cpu_ms;

  nlohmann::json ToJson() const;  // every field; a null token or exit_code as null
  static Result<ShardView> FromJson(const nlohmann::json& j);
  bool operator==(const ShardView&) const = default;
};

// GET /v1/runs/{id} and each item of GET /v1/runs; also the replies of trigger (with
// "existing"), retry, cancel and GET /v1/runs/{id}/wait (with "done").
// A step of a flow run, in the flow's order (RunView::steps).
struct StepView {
  std::string name;
  std::string job;  // the job it runs
  std::vector<std::string> needs;
  std::string when;   // success, failure, always
  std::string state;  // "waiting", or the state of its run
  int64_t run = 0;    // its run; 0 while waiting
  bool kept = false;  // a retry's: the run of the earlier flow run it keeps
  std::string note;
  int shard_total = 0;
  int shards_ok = 0;
  std::vector<std::string> hosts;
  std::string created_at;  // when its needs were met and its run made; "" while waiting
  std::string finished_at;

  nlohmann::json ToJson() const;
  bool operator==(const StepView&) const = default;
};

struct RunView {
  static constexpr std::string_view kName = "run view";
  int64_t id = 0;
  std::string job;
  std::string reason;
  std::string scheduled_at;
  std::string created_at;
  std::string not_before;            // when its shards may start; "" = at once
  std::optional<int64_t> jitter_ms;  // the delay a scheduled fire drew; null otherwise
  std::string finished_at;
  std::string state;
  std::string trace_id;
  std::string note;
  std::string idempotency_key;
  int shard_total = 0;
  std::vector<ShardView> shards;
  std::optional<bool> existing;  // trigger: whether the idempotency key named an earlier run
  std::optional<bool> done;      // wait: whether the run has ended
  // Why retention deleted the run's output ("logs_for 7d"); absent while it is kept.
  std::optional<std::string> output_pruned;
  // A flow step's run: its flow run and step. Absent for other runs.
  std::optional<int64_t> flow_run;
  std::optional<std::string> step;
  // A flow run's steps, in the flow's order. Absent for other runs.
  std::optional<std::vector<StepView>> steps;

  // "existing", "done" and "output_pruned" only when set; jitter_ms always.
  nlohmann::json ToJson() const;
  static Result<RunView> FromJson(const nlohmann::json& j);
  bool operator==(const RunView&) const = default;
};

// Each item of GET /v1/jobs, and the reply of pause and resume.
struct JobSummaryView {
  static constexpr std::string_view kName = "job summary";
  std::string name;
  std::string next_fire;  // "" when it does not fire (paused, disabled, no next time)
  bool paused = false;
  bool enabled = true;
  int open_runs = 0;
  std::optional<std::string> last_state;  // null before its first run ended
  std::string last_finished_at;
  // Health: the newest success's end (null when none is known) and whether the job has gone
  // past its expect_success_within without one. Absent from older coordinators (read as
  // null and false).
  std::optional<std::string> last_success;
  bool overdue = false;
  std::string kind = "job";  // "job" or "flow" (older coordinators: absent, read as "job")
  // GET /v1/jobs only: from the job's definition.
  std::optional<std::string> schedule;
  std::optional<std::string> timezone;
  std::optional<std::string> description;
  std::optional<std::vector<std::string>> on;  // its `on` selectors as written

  nlohmann::json ToJson() const;
  static Result<JobSummaryView> FromJson(const nlohmann::json& j);
  bool operator==(const JobSummaryView&) const = default;
};

// GET /v1/jobs/{name}: the summary's fields, and the definition, the next fire times and the
// latest runs.
struct JobView {
  static constexpr std::string_view kName = "job view";
  JobSummaryView summary;
  Job definition;            // as wire::JobToJson writes it; env values "(hidden)" unless admin
  std::optional<Flow> flow;  // a flow's (summary.kind "flow"), instead of `definition`
  std::vector<std::string> next_fires;  // local to the job's timezone
  std::vector<RunView> recent_runs;     // newest first

  nlohmann::json ToJson() const;
  static Result<JobView> FromJson(const nlohmann::json& j);
  bool operator==(const JobView&) const = default;
};

// GET /v1/jobfile: the current job file (revision 0: none applied yet).
struct JobFileView {
  static constexpr std::string_view kName = "job file";
  int64_t revision = 0;
  std::string text;
  std::string author;
  std::string applied_at;

  nlohmann::json ToJson() const;
  static Result<JobFileView> FromJson(const nlohmann::json& j);
  bool operator==(const JobFileView&) const = default;
};

// POST /v1/jobfile, when it succeeds (200): what the file changed, or would (dry_run).
struct ApplyReply {
  static constexpr std::string_view kName = "apply reply";
  struct Changed {
    std::string name;
    std::vector<std::string> fields;  // the job file's keys that differ
    bool operator==(const Changed&) const = default;
  };
  bool dry_run = false;
  std::vector<std::string> created;
  std::vector<Changed> changed;
  std::vector<std::string> removed;
  std::vector<std::string> unchanged;
  int64_t revision = 0;  // the new revision, or the current one when nothing was written

  nlohmann::json ToJson() const;
  static Result<ApplyReply> FromJson(const nlohmann::json& j);
  bool operator==(const ApplyReply&) const = default;
};

// Each item of GET /v1/agents.
struct AgentView {
  static constexpr std::string_view kName = "agent view";
  std::string name;
  std::map<std::string, std::string> labels;
  int slots = 0;
  int running = 0;  // shards it holds leases on
  std::string version;
  bool draining = false;
  bool connected = false;
  std::string last_seen;

  nlohmann::json ToJson() const;
  static Result<AgentView> FromJson(const nlohmann::json& j);
  bool operator==(const AgentView&) const = default;
};

// DELETE /v1/agents/{name}.
struct AgentRemoved {
  static constexpr std::string_view kName = "agent removal";
  std::string name;
  bool removed = true;
  int64_t credentials_revoked = 0;

  nlohmann::json ToJson() const;
  static Result<AgentRemoved> FromJson(const nlohmann::json& j);
  bool operator==(const AgentRemoved&) const = default;
};

// POST /v1/tokens (201): the new token, its secret shown this once.
struct TokenCreated {
  static constexpr std::string_view kName = "token reply";
  int64_t id = 0;
  std::string name;
  std::string role;
  std::string jobs;
  std::string agent;
  std::map<std::string, std::string> labels;
  std::string expires_at;  // "" = never
  std::string token;       // the secret

  nlohmann::json ToJson() const;
  static Result<TokenCreated> FromJson(const nlohmann::json& j);
  bool operator==(const TokenCreated&) const = default;
};

// Each item of GET /v1/tokens (never the secret).
struct TokenView {
  static constexpr std::string_view kName = "token view";
  int64_t id = 0;
  std::string name;
  std::string role;
  std::string jobs;
  std::string agent;
  std::map<std::string, std::string> labels;
  std::string created_at;
  std::string expires_at;  // "" = never
  std::string revoked_at;  // "" = active

  nlohmann::json ToJson() const;
  static Result<TokenView> FromJson(const nlohmann::json& j);
  bool operator==(const TokenView&) const = default;
};

// Each item of GET /v1/audit, newest first.
struct AuditEvent {
  static constexpr std::string_view kName = "audit event";
  int64_t id = 0;
  std::string at;
  std::string action;
  std::string actor;                // the token's name; "" for a request with no valid token
  std::optional<int64_t> token_id;  // null then
  std::string subject;
  std::string detail;

  nlohmann::json ToJson() const;
  static Result<AuditEvent> FromJson(const nlohmann::json& j);
  bool operator==(const AuditEvent&) const = default;
};

// Each item of GET /v1/misses: one range of consecutive missed fire times.
struct MissView {
  static constexpr std::string_view kName = "miss view";
  std::string first;
  int64_t first_ms = 0;
  std::string last;
  int64_t last_ms = 0;
  int64_t count = 0;
  std::string reason;

  nlohmann::json ToJson() const;
  static Result<MissView> FromJson(const nlohmann::json& j);
  bool operator==(const MissView&) const = default;
};

// One chunk of a run's output, as in a log page's "chunks".
struct LogChunkView {
  static constexpr std::string_view kName = "log chunk";
  int64_t id = 0;  // ascending; a reader asks for the chunks after the last one it has
  int shard = 0;
  int attempt = 0;
  int64_t seq = 0;
  std::string stream;  // stdout, stderr or marker
  std::string at;
  std::string data;  // base64

  nlohmann::json ToJson() const;
  static Result<LogChunkView> FromJson(const nlohmann::json& j);
  bool operator==(const LogChunkView&) const = default;
};

// GET /v1/runs/{id}/logs: a page of output, where to read on from and whether that is all.
struct LogPage {
  static constexpr std::string_view kName = "log page";
  std::vector<LogChunkView> chunks;
  int64_t next = 0;   // the last chunk's id (the request's "after" when there is none)
  bool done = false;  // the run has ended and every chunk stored for it has been read
  // Why retention deleted the run's output ("logs_for 7d"): with done, once nothing is left.
  std::optional<std::string> pruned;

  nlohmann::json ToJson() const;
  static Result<LogPage> FromJson(const nlohmann::json& j);
  bool operator==(const LogPage&) const = default;
};

// One job's output in GET /v1/store/stats.
struct JobBytesView {
  static constexpr std::string_view kName = "job bytes";
  std::string job;  // "" for output of an unknown job (stored before jobs were recorded)
  int64_t bytes = 0;
  int64_t runs = 0;  // runs with output kept

  nlohmann::json ToJson() const;
  bool operator==(const JobBytesView&) const = default;
};

// GET /v1/store/stats (admin): the store's files and what fills them.
struct StoreStatsView {
  static constexpr std::string_view kName = "store stats";
  int64_t store_bytes = 0;       // jobctl.db as allocated (PostgreSQL: its tables' size)
  int64_t store_free_bytes = 0;  // of which free, to be given back
  int64_t logs_bytes = 0;        // logs.db (PostgreSQL: the log tables' size)
  int64_t logs_free_bytes = 0;
  bool reclaims_space = false;  // both files give freed space back (auto-vacuum)
  int64_t runs = 0;
  std::string oldest_run;              // its creation time, RFC 3339 UTC; "" without runs
  int64_t output_bytes = 0;            // output kept, all runs
  std::vector<JobBytesView> top_jobs;  // the largest output first
  // "sqlite" (jobctl.db and logs.db) or "postgresql" (the scheduler's and the log tables,
  // which report no free space and leave it to autovacuum); absent from a coordinator that
  // predates PostgreSQL: sqlite.
  std::optional<std::string> backend;

  nlohmann::json ToJson() const;
  static Result<StoreStatsView> FromJson(const nlohmann::json& j);
  bool operator==(const StoreStatsView&) const = default;
};

// The list replies (GET /v1/runs, /v1/jobs, /v1/agents, /v1/audit, /v1/misses): a JSON array
// of one view. An item that does not decode names its place: `run view list: field
// "[3].shard_total" is missing or not an integer (...)`. Defined for the views above.
template <typename T>
nlohmann::json ListToJson(const std::vector<T>& items);
template <typename T>
Result<std::vector<T>> ListFromJson(const nlohmann::json& j);

}  // namespace jobctl::wire
