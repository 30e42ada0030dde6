// Api is the coordinator's HTTP surface: one route table in which every route declares the
// role it needs (no role, no route: default deny), bearer-token authentication, JSON in and
// out, and errors as {"error", "message"} with the matching status. Handlers that write
// answer only after the write batch committed. The routes are documented in
// man/jobctl-api.7.scd. Loop thread only; owned by the Coordinator.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "coordinator/applier.h"
#include "coordinator/auth.h"
#include "coordinator/context.h"
#include "coordinator/dispatcher.h"
#include "coordinator/flow_book.h"
#include "coordinator/http_errors.h"
#include "coordinator/job_index.h"
#include "coordinator/log_hub.h"
#include "coordinator/notifier.h"
#include "coordinator/rate_limiter.h"
#include "coordinator/run_book.h"
#include "http/server.h"
#include "wire/views.h"

namespace jobctl::coordinator {

struct Parts {
  JobIndex* jobs;
  RunBook* book;
  Dispatcher* dispatcher;
  Scheduler* scheduler;
  Applier* applier;
  Auth* auth;
  LogHub* log_hub;
  std::function<bool()> ready;  // the store is open and state loaded
  // A standby (another coordinator holds the shared store): answers reads from the store
  // and refuses the rest (StandbyRefusal). Null: never a standby.
  std::function<bool()> standby;
  // Who holds the store now, for a standby's refusals.
  std::function<std::string()> holder;
  Notifier* notifier = nullptr;  // jobctl notify test; null: no channels can be tested
  FlowBook* flows = nullptr;     // retries of flow runs; null: none
};

class Api {
 public:
  struct Call {
    http::Request req;
    std::shared_ptr<http::Responder> res;
    std::map<std::string, std::string> params;  // {name} segments of the route
    Principal who;
  };
  using Handler = void (Api::*)(Call&);
  struct Route {
    const char* method;
    const char* pattern;  // "/v1/jobs/{name}/trigger"
    Role role;
    Handler handler;
  };

  Api(Context* ctx, Parts parts) : ctx_(ctx), p_(std::move(parts)) {}
  // Runs when a request's headers are in, before its body is read (http::Limits::admit):
  // refuses an unknown route (401 without a valid token, else 404 or 405), a missing or
  // unknown token (401), a token whose role does not allow the route (403) and a token over
  // its rate limit (429 with Retry-After). Nothing else of the request is looked at.
  // On a standby, every route that writes, waits for a commit or follows output (and /readyz)
  // is answered 503 "standby" here, before the token is looked at: clients move on to the
  // next coordinator URL they were given.
  std::optional<http::Response> Admit(const http::Request& head);
  void Handle(http::Request&& req, std::shared_ptr<http::Responder> res);
  // The body limit per route: `max_jobfile` for the job file (8 MiB by default), 256 KiB for a
  // log chunk, else 1 MiB.
  static size_t BodyLimit(const http::Request& head, size_t max_jobfile);
  static const std::vector<Route>& Routes();

 private:
  // The route for the request's method and path, with its {name} segments; null when none
  // (`path_known`: another method has this path).
  static const Route* Match(const http::Request& req, std::map<std::string, std::string>* params,
                            bool* path_known);
  // On a standby, 503 "standby" for a route only the holder answers; nullopt otherwise.
  std::optional<http::Response> StandbyRefusal(const http::Request& req, const Route& route);
  // Who is calling a route that needs a token, or the refusal (401, 403) as {status, error,
  // message}; audits refusals.
  struct Refusal {
    int status;
    std::string_view error;
    std::string message;
  };
  Result<Principal> Authorize(const http::Request& req, const Route& route,
                              const std::map<std::string, std::string>& params,
                              std::optional<Refusal>* refusal);

  // Replies.
  // Notifications (api_notify.cc).
  void ListNotifications(Call& c);
  void TestNotify(Call& c);

  void Json(Call& c, int status, const nlohmann::json& body);
  void Fail(Call& c, const Status& s);
  void FailWith(Call& c, int status, std::string_view error, const std::string& message);
  // Answers after this turn's commit: `body` on success, the commit error otherwise.
  void JsonAfterCommit(Call& c, int status, nlohmann::json body);
  Result<nlohmann::json> Body(const Call& c);
  JobEntry* JobOr404(Call& c);

  // Fencing tokens only for admins: anyone else who knew one could pose as the holder.
  // `with_steps`: a flow run's steps (a read of the store each; lists stop adding them).
  wire::RunView RunViewOf(const RunRecord& r, const Principal& who, bool with_steps = true) const;
  // A flow run's steps, from its graph, its step runs and what a retry kept; of a step whose
  // job `who` may not read, only its name, place, state and run.
  std::vector<wire::StepView> StepViewsOf(const RunRecord& flow_run, const Principal& who) const;
  // Whether `who` reads the runs of `job`: its own, or, for a step's own job (FLOW:STEP),
  // its flow's.
  static bool ReadsJob(const Principal& who, const std::string& job);
  // Sets output_pruned of an ended run's view when retention deleted its output.
  Status MarkPruned(wire::RunView& v);
  // A token limited to a jobs glob reads only those jobs' runs: false (and answered 403) for
  // a run of another job; true for a run that does not exist (the handler answers 404).
  bool RunReadable(Call& c, int64_t run_id);
  // 403 for a job outside the caller's jobs glob; `hint` is added to the message.
  void FailOutOfScope(Call& c, std::string_view hint);
  wire::JobSummaryView JobSummaryOf(const JobEntry& j) const;

  // Open.
  void Healthz(Call& c);
  void Console(Call& c);          // GET /ui/FILE (coordinator/console.h)
  void ConsoleRedirect(Call& c);  // GET / -> /ui/
  void Readyz(Call& c);
  // Read.
  void Whoami(Call& c);  // the caller's token: name, role, jobs glob
  void GetMetrics(Call& c);
  void GetJobFile(Call& c);
  void ListJobs(Call& c);
  void ShowJob(Call& c);
  void ListRuns(Call& c);
  void GetRun(Call& c);
  void WaitRun(Call& c);
  void ReadLogs(Call& c);
  void ListAgents(Call& c);
  void ListMisses(Call& c);
  void ListAudit(Call& c);
  void StoreStats(Call& c);
  // Trigger.
  void Trigger(Call& c);
  // Admin.
  void ApplyJobFile(Call& c);
  void Pause(Call& c);
  void Resume(Call& c);
  void CancelRun(Call& c);
  void RetryRun(Call& c);
  void DrainAgent(Call& c);
  void RemoveAgent(Call& c);
  void CreateToken(Call& c);
  void ListTokens(Call& c);
  void RevokeToken(Call& c);
  // Join (and agent).
  void Enrol(Call& c);
  // Agent.
  void Claim(Call& c);
  void Heartbeat(Call& c);
  void AppendLog(Call& c);
  void PostResult(Call& c);
  void PostResults(Call& c);

  // False (and answered 403) when a body names an agent other than the credential's.
  bool SameAgent(Call& c, const std::string& named);
  // The refusal of a body naming an agent other than the credential's.
  static std::string OtherAgentMessage(const Principal& who, const std::string& named);

  // Output trailing its attempt's result (the result declared where the output ends, the
  // lease is gone): Ok when `agent` reported that result under `token`, no later lease of
  // the shard was granted, and no record passes the declared end (`last_seq`: the highest
  // seq of the request); kConflict (recorded as a
  // refusal) when someone else sends it or it passes the end; kNotFound when the lease is
  // live or no end was declared, so the lease alone decides.
  Status CheckTrailingOutput(ShardKey key, int attempt, int64_t token, const std::string& agent,
                             int64_t last_seq);
  // Whether the output of an ended run is all stored (of one shard, if given): every attempt
  // whose result declared an end, and whose lease is still its shard's newest, has reached
  // it in the log store, or the run ended more than kTrailingOutputMs ago. Attempts without
  // a declared end (no result from their agent, an agent older than the field) are complete
  // at the run's end.
  Result<bool> OutputComplete(const RunRecord& run, std::optional<int64_t> shard);
  static constexpr int64_t kTrailingOutputMs = 60'000;
  // Answers a /wait: the run as it is now, "done" once it ended.
  void AnswerWait(std::shared_ptr<http::Responder> res, int64_t run_id, const Principal& who);
  // `parked`: the follower's current LogHub waiter, cancelled when its client hangs up.
  void SendLogs(std::shared_ptr<Call> c, std::shared_ptr<LogHub::WaiterId> parked, int64_t run_id,
                int64_t after, int64_t deadline_mono);
  // Records a refused request in the audit trail, at most a few per second so that a flood
  // of bad requests cannot turn into a flood of writes.
  // `who` is the credential when there is one (a token that may not use the route), else null.
  void AuditDenied(const Principal* who, const http::Request& req, std::string_view why);
  // Records a change in the audit trail (the store's events), in the current write batch,
  // with the caller's credential: its name and token id. A change is never kept without its
  // record: if the insert fails, the turn rolls back and the reply (sent after the commit)
  // carries the error.
  void Audit(const Call& c, std::string_view action, std::string subject, std::string detail);

  Context* ctx_;
  Parts p_;
  int64_t audit_window_start_ = 0;
  int audit_in_window_ = 0;
  RateLimiter limiter_;
};

}  // namespace jobctl::coordinator
