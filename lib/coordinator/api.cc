#include "coordinator/api.h"

#include "base/log.h"
#include "base/version.h"
#include "coordinator/console.h"
#include "coordinator/metrics.h"
#include "http/path_pattern.h"
#include "model/time_format.h"
#include "wire/bounded_json.h"
#include "wire/job_json.h"
#include "wire/log_batch.h"

namespace jobctl::coordinator {
namespace {

using nlohmann::json;

std::string Rfc3339(std::optional<int64_t> ms) {
  return ms ? FormatUtc(FromUnixMs(*ms)) : std::string();
}

}  // namespace

const std::vector<Api::Route>& Api::Routes() {
  static const std::vector<Route> kRoutes = {
      {"GET", "/healthz", Role::kOpen, &Api::Healthz},
      {"GET", "/readyz", Role::kOpen, &Api::Readyz},
      {"GET", "/", Role::kOpen, &Api::ConsoleRedirect},
      {"GET", "/ui", Role::kOpen, &Api::Console},
      {"GET", "/ui/{file}", Role::kOpen, &Api::Console},
      {"GET", "/v1/whoami", Role::kRead, &Api::Whoami},
      {"GET", "/metrics", Role::kRead, &Api::GetMetrics},
      {"GET", "/v1/jobfile", Role::kAdmin, &Api::GetJobFile},
      {"POST", "/v1/jobfile", Role::kAdmin, &Api::ApplyJobFile},
      {"GET", "/v1/jobs", Role::kRead, &Api::ListJobs},
      {"GET", "/v1/jobs/{name}", Role::kRead, &Api::ShowJob},
      {"POST", "/v1/jobs/{name}/trigger", Role::kTrigger, &Api::Trigger},
      {"POST", "/v1/jobs/{name}/pause", Role::kAdmin, &Api::Pause},
      {"POST", "/v1/jobs/{name}/resume", Role::kAdmin, &Api::Resume},
      {"GET", "/v1/runs", Role::kRead, &Api::ListRuns},
      {"GET", "/v1/runs/{id}", Role::kRead, &Api::GetRun},
      {"GET", "/v1/runs/{id}/wait", Role::kRead, &Api::WaitRun},
      {"GET", "/v1/runs/{id}/logs", Role::kRead, &Api::ReadLogs},
      {"POST", "/v1/runs/{id}/cancel", Role::kAdmin, &Api::CancelRun},
      {"POST", "/v1/runs/{id}/retry", Role::kAdmin, &Api::RetryRun},
      {"GET", "/v1/misses", Role::kRead, &Api::ListMisses},
      {"GET", "/v1/agents", Role::kRead, &Api::ListAgents},
      {"POST", "/v1/agents/{name}/drain", Role::kAdmin, &Api::DrainAgent},
      {"DELETE", "/v1/agents/{name}", Role::kAdmin, &Api::RemoveAgent},
      {"GET", "/v1/tokens", Role::kAdmin, &Api::ListTokens},
      {"POST", "/v1/tokens", Role::kAdmin, &Api::CreateToken},
      {"DELETE", "/v1/tokens/{id}", Role::kAdmin, &Api::RevokeToken},
      {"POST", "/v1/agent/enrol", Role::kJoin, &Api::Enrol},
      {"GET", "/v1/audit", Role::kAdmin, &Api::ListAudit},
      {"GET", "/v1/store/stats", Role::kAdmin, &Api::StoreStats},
      {"GET", "/v1/notifications", Role::kRead, &Api::ListNotifications},
      {"POST", "/v1/notify/test", Role::kAdmin, &Api::TestNotify},
      {"POST", "/v1/agent/claim", Role::kAgent, &Api::Claim},
      {"POST", "/v1/agent/heartbeat", Role::kAgent, &Api::Heartbeat},
      {"POST", "/v1/agent/logs", Role::kAgent, &Api::AppendLog},
      {"POST", "/v1/agent/result", Role::kAgent, &Api::PostResult},
      {"POST", "/v1/agent/results", Role::kAgent, &Api::PostResults},
  };
  return kRoutes;
}

size_t Api::BodyLimit(const http::Request& head, size_t max_jobfile) {
  // The job file travels as a JSON string: leave room for its escapes.
  if (head.path == "/v1/jobfile") return max_jobfile + max_jobfile / 4 + 4096;
  if (head.path == "/v1/agent/logs") {
    auto batch = head.query.find("batch");
    return batch != head.query.end() && batch->second == "1" ? wire::kMaxLogBatchBytes : 256 << 10;
  }
  return 1 << 20;
}

const Api::Route* Api::Match(const http::Request& req, std::map<std::string, std::string>* params,
                             bool* path_known) {
  // The route table's patterns, split once (matching then allocates nothing).
  static const std::vector<http::PathPattern> kPatterns = [] {
    std::vector<http::PathPattern> out;
    for (const Route& r : Routes()) out.emplace_back(r.pattern);
    return out;
  }();
  const std::vector<Route>& routes = Routes();
  *path_known = false;
  for (size_t i = 0; i < routes.size(); ++i) {
    http::PathPattern::Params found;
    if (req.method != routes[i].method || !kPatterns[i].Match(req.path, &found)) continue;
    for (size_t p = 0; p < found.size; ++p) {
      params->emplace(std::string(found.items[p].first), std::string(found.items[p].second));
    }
    return &routes[i];
  }
  for (size_t i = 0; i < routes.size() && !*path_known; ++i) {
    *path_known = kPatterns[i].Match(req.path);  // another method's path: 405, not 404
  }
  return nullptr;
}

namespace {

// RFC 7235: the scheme is case-insensitive and one or more spaces follow it. Auth expects
// "Bearer <secret>" exactly, so any spelling is brought to that one.
std::string BearerHeader(const http::Request& req) {
  std::string h = req.Header("authorization");
  constexpr std::string_view kScheme = "bearer";
  if (h.size() <= kScheme.size() || (h[kScheme.size()] != ' ' && h[kScheme.size()] != '\t'))
    return h;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    char c = h[i];
    if ((c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c) != kScheme[i]) return h;
  }
  size_t secret = h.find_first_not_of(" \t", kScheme.size());
  return "Bearer " + (secret == std::string::npos ? std::string() : h.substr(secret));
}

}  // namespace

Result<Principal> Api::Authorize(const http::Request& req, const Route& route,
                                 const std::map<std::string, std::string>& params,
                                 std::optional<Refusal>* refusal) {
  Result<Principal> who = p_.auth->Authenticate(BearerHeader(req));
  if (!who.ok()) {
    ++ctx_->metrics->auth_failures_total;
    AuditDenied(nullptr, req, who.status().message());
    *refusal = Refusal{401, "unauthenticated", who.status().message()};
    return who.status();
  }
  auto name = params.find("name");
  if (!Auth::Allows(*who, route.role, name == params.end() ? "" : name->second)) {
    ++ctx_->metrics->auth_failures_total;
    AuditDenied(&*who, req,
                "token " + who->name + " lacks role " + std::string(RoleName(route.role)));
    *refusal = Refusal{403, "forbidden",
                       "token \"" + who->name + "\" (role " + std::string(RoleName(who->role)) +
                           ") may not " + req.method + " " + req.path + " (needs role " +
                           std::string(RoleName(route.role)) + ")"};
    return Status::PermissionDenied(refusal->value().message);
  }
  // Under mTLS an agent is also its certificate: the token and the certificate must name the
  // same agent, so a stolen token alone, or a certificate alone, speaks for nobody.
  if (who->role == Role::kAgent && !ctx_->config.tls_client_ca.empty() &&
      req.peer_name != who->agent) {
    ++ctx_->metrics->auth_failures_total;
    AuditDenied(&*who, req, "client certificate \"" + req.peer_name + "\" for agent " + who->agent);
    *refusal = Refusal{403, "forbidden",
                       "this credential is agent \"" + who->agent +
                           "\" but the client certificate names \"" + req.peer_name + "\""};
    return Status::PermissionDenied(refusal->value().message);
  }
  return who;
}

std::optional<http::Response> Api::Admit(const http::Request& head) {
  std::map<std::string, std::string> params;
  bool path_known = false;
  const Route* route = Match(head, &params, &path_known);
  if (route == nullptr) {
    // Which paths exist is only told to callers with a valid token.
    if (!p_.auth->Authenticate(BearerHeader(head)).ok()) {
      ++ctx_->metrics->auth_failures_total;
      return ErrorResponse(401, "unauthenticated", "missing or unknown bearer token");
    }
    return ErrorResponse(
        path_known ? 405 : 404, path_known ? "method_not_allowed" : "not_found",
        head.method + " " + head.path + (path_known ? " is not allowed" : " does not exist"));
  }
  if (std::optional<http::Response> r = StandbyRefusal(head, *route)) return r;
  if (route->role == Role::kOpen) return std::nullopt;
  std::optional<Refusal> refusal;
  Result<Principal> who = Authorize(head, *route, params, &refusal);
  if (!who.ok()) return ErrorResponse(refusal->status, refusal->error, refusal->message);
  // Admins are not rate-limited: a quota guards against lesser credentials, and an admin
  // token can change everything anyway.
  if (who->role == Role::kAdmin) return std::nullopt;
  const CoordinatorConfig& cfg = ctx_->config;
  std::string key = std::to_string(who->token_id);
  RateLimit limit = who->role == Role::kAgent ? RateLimit{cfg.agent_rate_limit, cfg.agent_burst}
                                              : RateLimit{cfg.rate_limit, cfg.rate_burst};
  int64_t now = ctx_->MonoMs();
  int64_t wait_ms = limiter_.Take(key, limit, now);
  // Trigger tokens are what scripts and CI hold: their runs get a bucket of their own.
  bool trigger = route->handler == &Api::Trigger && who->role == Role::kTrigger;
  if (wait_ms == 0 && trigger) {
    wait_ms = limiter_.Take(key + "/trigger", {cfg.trigger_rate_limit, cfg.trigger_burst}, now);
  }
  if (wait_ms == 0) return std::nullopt;
  ++ctx_->metrics->rate_limited_total;
  http::Response r = ErrorResponse(429, "too_many_requests",
                                   "token \"" + who->name + "\" is over its rate limit" +
                                       (trigger ? std::string(" for triggers") : std::string()) +
                                       "; retry in " + std::to_string(wait_ms) + " ms");
  r.headers.emplace_back("Retry-After", std::to_string((wait_ms + 999) / 1000));
  return r;
}

void Api::Handle(http::Request&& req, std::shared_ptr<http::Responder> res) {
  Call c{std::move(req), std::move(res), {}, {}};
  bool path_known = false;
  const Route* route = Match(c.req, &c.params, &path_known);
  if (route == nullptr) {
    // Admit() answers these at the headers; this covers a server without the hook.
    if (std::optional<http::Response> r = Admit(c.req)) return c.res->Send(std::move(*r));
    return FailWith(c, 500, "internal", "no route");
  }
  if (std::optional<http::Response> r = StandbyRefusal(c.req, *route)) {
    return c.res->Send(std::move(*r));
  }
  if (route->role != Role::kOpen) {
    // Admit() checked this already; checked again because a token may be revoked while its
    // body arrives.
    std::optional<Refusal> refusal;
    Result<Principal> who = Authorize(c.req, *route, c.params, &refusal);
    if (!who.ok()) return FailWith(c, refusal->status, refusal->error, refusal->message);
    c.who = *who;
  }
  (this->*(route->handler))(c);
}

std::optional<http::Response> Api::StandbyRefusal(const http::Request& req, const Route& route) {
  if (!p_.standby || !p_.standby()) return std::nullopt;
  // What a standby answers: reads of the store as it is now. Waiting for a run, following
  // output (wait_ms), writes, claims and the agents' reports need the holder's memory.
  bool reads = route.method == std::string_view("GET") && route.handler != &Api::WaitRun &&
               route.handler != &Api::Readyz;
  if (reads && route.handler == &Api::ReadLogs) {
    auto wait = req.query.find("wait_ms");
    reads = wait == req.query.end() || wait->second.empty() || wait->second == "0";
  }
  if (reads) return std::nullopt;
  std::string holder = p_.holder ? p_.holder() : std::string();
  http::Response r = ErrorResponse(
      503, "standby",
      "this coordinator is a standby: another coordinator holds the database" +
          (holder.empty() ? std::string() : " (" + holder + ")") +
          "; send this to it (jobctl and agentd move on to their next --coordinator URL)");
  r.headers.emplace_back("Retry-After", "1");
  r.headers.emplace_back("X-Jobctl-Standby", "1");  // http::IsStandby
  return r;
}

void Api::AuditDenied(const Principal* who, const http::Request& req, std::string_view why) {
  // A standby writes nothing; the holder audits what reaches it.
  if (p_.standby && p_.standby()) return;
  int64_t now = ctx_->MonoMs();
  if (now - audit_window_start_ >= 1000) {
    audit_window_start_ = now;
    audit_in_window_ = 0;
  }
  if (++audit_in_window_ > 5) return;
  std::optional<int64_t> token;
  if (who != nullptr && who->token_id != 0) token = who->token_id;
  store::EventRow row{0,
                      ctx_->NowMs(),
                      "auth-failure",
                      who ? who->name : std::string(),
                      token,
                      req.method + " " + req.path,
                      std::string(why)};
  ctx_->batch->Stage([&] { return ctx_->store->InsertEvent(row); });
}

void Api::Audit(const Call& c, std::string_view action, std::string subject, std::string detail) {
  std::optional<int64_t> token;
  if (c.who.token_id != 0) token = c.who.token_id;
  store::EventRow row{0,     ctx_->NowMs(),      std::string(action), c.who.name,
                      token, std::move(subject), std::move(detail)};
  ctx_->batch->Stage([&] { return ctx_->store->InsertEvent(row); });
}

void Api::Json(Call& c, int status, const json& body) {
  c.res->Send(
      {status, "application/json", body.dump(-1, ' ', false, json::error_handler_t::replace), {}});
}

void Api::FailWith(Call& c, int status, std::string_view error, const std::string& message) {
  c.res->Send(ErrorResponse(status, error, message));
}

void Api::Fail(Call& c, const Status& s) { c.res->Send(ErrorResponseFor(s)); }

void Api::JsonAfterCommit(Call& c, int status, json body) {
  auto res = c.res;
  auto text =
      std::make_shared<std::string>(body.dump(-1, ' ', false, json::error_handler_t::replace));
  ctx_->batch->OnCommit([res, status, text](const Status& s) {
    if (s.ok()) {
      res->Send({status, "application/json", *text, {}});
    } else {
      res->Send(ErrorResponseFor(s));
    }
  });
}

Result<json> Api::Body(const Call& c) {
  if (c.req.body.empty()) return json::object();
  Result<json> j = wire::ParseJsonOr(c.req.body);
  if (!j.ok()) return Status::InvalidArgument("the request body: " + j.status().message());
  if (!j->is_object()) return Status::InvalidArgument("the request body must be a JSON object");
  return j;
}

bool Api::RunReadable(Call& c, int64_t run_id) {
  if (c.who.role == Role::kAdmin || c.who.jobs_glob.empty()) return true;
  std::string job;
  if (const RunRecord* open = p_.book->FindOpen(run_id)) {
    job = open->job;
  } else {
    Result<std::optional<RunRecord>> run = ctx_->store->GetRun(run_id);
    if (!run.ok() || !*run) return true;  // the handler answers the error or the 404
    job = (*run)->job;
  }
  if (ReadsJob(c.who, job)) return true;
  FailOutOfScope(c, "");
  return false;
}

bool Api::ReadsJob(const Principal& who, const std::string& job) {
  if (Auth::Allows(who, Role::kRead, job)) return true;
  size_t colon = job.find(':');
  return colon != std::string::npos && Auth::Allows(who, Role::kRead, job.substr(0, colon));
}

void Api::FailOutOfScope(Call& c, std::string_view hint) {
  FailWith(c, 403, "forbidden",
           "token \"" + c.who.name + "\" may only read jobs matching \"" + c.who.jobs_glob + "\"" +
               std::string(hint));
}

JobEntry* Api::JobOr404(Call& c) {
  JobEntry* job = p_.jobs->FindByName(c.params["name"]);
  if (job == nullptr || !job->active) {
    FailWith(c, 404, "not_found", "no such job: " + c.params["name"]);
    return nullptr;
  }
  return job;
}

wire::RunView Api::RunViewOf(const RunRecord& r, const Principal& who, bool with_steps) const {
  const bool admin = who.role == Role::kAdmin;
  wire::RunView v;
  for (const ShardRecord& s : r.shards) {
    wire::ShardView shard;
    shard.index = s.index;
    shard.agent = s.agent;
    shard.state = RunStateName(s.state);
    shard.attempt = s.attempt;
    if (admin) shard.token = s.token;
    shard.exit_code = s.exit_code;
    shard.outcome = s.outcome;
    shard.message = s.message;
    shard.started_at = Rfc3339(s.started_ms);
    shard.finished_at = Rfc3339(s.finished_ms);
    shard.peak_rss_bytes = s.peak_rss_bytes;
    shard.cpu_ms = s.cpu_ms;
    v.shards.push_back(std::move(shard));
  }
  v.id = r.id;
  v.job = r.job;
  v.reason = RunReasonName(r.reason);
  v.scheduled_at = Rfc3339(r.scheduled_ms);
  v.created_at = Rfc3339(r.created_ms);
  // When its shards may start: the instant plus a jitter delay, or a deferred manual run's
  // time ("" = at once); jitter_ms is the delay a fire drew.
  if (r.not_before_ms > 0) v.not_before = Rfc3339(r.not_before_ms);
  if (r.reason == RunReason::kSchedule && r.not_before_ms > 0)
    v.jitter_ms = r.not_before_ms - r.scheduled_ms;
  v.finished_at = Rfc3339(r.finished_ms);
  v.state = RunStateName(r.state);
  v.trace_id = r.trace_id;
  v.note = r.note;
  v.idempotency_key = r.idempotency_key;
  v.shard_total = r.shard_total;
  if (r.flow_run_id != 0) {
    v.flow_run = r.flow_run_id;
    json ctx = json::parse(r.flow_json, nullptr, false);
    if (ctx.is_object() && ctx.contains("step") && ctx["step"].is_string()) v.step = ctx["step"];
  }
  if (with_steps && RunBook::IsFlowRun(r)) v.steps = StepViewsOf(r, who);
  return v;
}

std::vector<wire::StepView> Api::StepViewsOf(const RunRecord& r, const Principal& who) const {
  std::vector<wire::StepView> out;
  json graph = json::parse(r.flow_json, nullptr, false);
  Result<Flow> flow = wire::FlowFromJson(graph);
  if (!flow.ok()) return out;
  std::map<int, KeptStep> kept = KeptStepsOf(graph);
  std::map<int, RunRecord> runs;
  if (Result<std::vector<RunRecord>> steps = ctx_->store->StepRuns(r.id); steps.ok()) {
    for (RunRecord& s : *steps) runs[s.flow_step] = std::move(s);
  }
  for (size_t i = 0; i < flow->steps.size(); ++i) {
    const FlowStep& s = flow->steps[i];
    wire::StepView v;
    v.name = s.name;
    v.job = s.job;
    v.needs = s.needs;
    v.when = StepWhenName(s.when);
    v.state = "waiting";
    if (auto it = runs.find(static_cast<int>(i)); it != runs.end()) {
      const RunRecord& run = it->second;
      v.state = RunStateName(run.state);
      v.run = run.id;
      v.note = run.note;
      v.shard_total = run.shard_total;
      for (const ShardRecord& shard : run.shards) {
        if (shard.state == RunState::kSucceeded) ++v.shards_ok;
        if (!shard.agent.empty() &&
            std::find(v.hosts.begin(), v.hosts.end(), shard.agent) == v.hosts.end()) {
          v.hosts.push_back(shard.agent);
        }
      }
      v.created_at = Rfc3339(run.created_ms);
      v.finished_at = Rfc3339(run.finished_ms);
    } else if (auto k = kept.find(static_cast<int>(i)); k != kept.end()) {
      v.state = RunStateName(k->second.state);
      v.run = k->second.run;
      v.kept = true;
      v.note = "kept from run " + std::to_string(k->second.run);
    }
    if (!ReadsJob(who, v.job)) {
      // A [[job]] outside the token's scope: where and why it ran are that job's.
      v.hosts.clear();
      v.note.clear();
    }
    out.push_back(std::move(v));
  }
  return out;
}

wire::JobSummaryView Api::JobSummaryOf(const JobEntry& j) const {
  wire::JobSummaryView v;
  v.name = std::string(j.name);
  if (j.schedulable()) v.next_fire = Rfc3339(j.next_fire_ms);
  v.paused = j.paused;
  v.enabled = j.enabled;
  v.open_runs = j.open_runs;
  v.kind = j.kind == JobKind::kFlow ? "flow" : "job";
  if (j.last_state) v.last_state = RunStateName(*j.last_state);
  if (j.last_finished_ms) v.last_finished_at = Rfc3339(j.last_finished_ms);
  if (j.last_success_ms) v.last_success = Rfc3339(j.last_success_ms);
  v.overdue = j.Overdue(ctx_->NowMs());
  return v;
}

void Api::Console(Call& c) {
  auto it = c.params.find("file");
  std::optional<http::Response> r = ConsoleResponse(it == c.params.end() ? "" : it->second);
  if (!r) return FailWith(c, 404, "not_found", "the console has no file " + c.req.path);
  c.res->Send(std::move(*r));
}

void Api::ConsoleRedirect(Call& c) { c.res->Send({302, "", "", {{"Location", "/ui/"}}}); }

void Api::Whoami(Call& c) {
  Json(c, 200, {{"name", c.who.name}, {"role", RoleName(c.who.role)}, {"jobs", c.who.jobs_glob}});
}

void Api::Healthz(Call& c) { Json(c, 200, {{"status", "ok"}}); }

void Api::Readyz(Call& c) {
  if (p_.ready && p_.ready()) {
    Json(c, 200, {{"status", "ready"}});
  } else {
    FailWith(c, 503, "unavailable", "the coordinator is loading its state");
  }
}

void Api::GetMetrics(Call& c) {
  Metrics& m = *ctx_->metrics;
  m.active_leases = p_.dispatcher->active_leases();
  m.open_runs = p_.book->open_runs();
  m.flow_runs_open = p_.flows ? p_.flows->open_flow_runs() : 0;
  m.parked_waiters = p_.log_hub->waiters();
  m.jobs = 0;
  m.shards_pending = p_.dispatcher->pending();
  m.job_health.clear();
  int64_t now = ctx_->NowMs();
  p_.jobs->ForEach([&m, now](const JobEntry& j) {
    if (!j.active || j.kind == JobKind::kStep) return;  // a step's own job is its flow's
    ++m.jobs;
    m.job_health.push_back({.name = j.name,
                            .last_success_ms = j.last_success_ms,
                            .finished = j.last_state.has_value(),
                            .last_succeeded = j.last_state == RunState::kSucceeded,
                            .last_duration_ms = j.last_duration_ms,
                            .overdue = j.Overdue(now)});
  });
  m.agents_connected = 0;
  for (const auto& [name, a] : p_.dispatcher->agents()) {
    m.agents_connected += p_.dispatcher->AgentAlive(a) ? 1 : 0;
  }
  std::string page = m.Render(kVersion);
  m.job_health.clear();  // its names are the JobIndex's, which a reload frees
  c.res->Send({200, "text/plain; version=0.0.4; charset=utf-8", std::move(page), {}});
}

}  // namespace jobctl::coordinator
