// The routes that change things: apply, trigger, pause/resume, cancel/retry, drain, tokens.
#include "base/log.h"
#include "coordinator/api.h"
#include "coordinator/request_json.h"
#include "model/time_format.h"
#include "model/trace_context.h"
#include "wire/trigger_request.h"

namespace jobctl::coordinator {
namespace {

using nlohmann::json;

std::optional<int64_t> ParseId(const std::string& s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  for (char ch : s) {
    if (ch < '0' || ch > '9') return std::nullopt;
  }
  return std::stoll(s);
}

}  // namespace

void Api::ApplyJobFile(Call& c) {
  Result<json> body = Body(c);
  if (!body.ok()) return Fail(c, body.status());
  Result<ApplyRequest> req = ApplyRequestFromJson(*body, c.who.name);
  if (!req.ok()) return Fail(c, req.status());
  req->credential = {c.who.name, c.who.token_id};
  Result<ApplyOutcome> out = p_.applier->Apply(*req);
  if (!out.ok()) return Fail(c, out.status());
  if (out->wrote && out->http_status == 200) return JsonAfterCommit(c, 200, out->body);
  Json(c, out->http_status, out->body);
}

void Api::Trigger(Call& c) {
  JobEntry* job = JobOr404(c);
  if (job == nullptr) return;
  Result<json> body = Body(c);
  if (!body.ok()) return Fail(c, body.status());
  Result<wire::TriggerRequest> req = wire::TriggerRequest::FromJson(*body);
  if (!req.ok()) return Fail(c, req.status());
  const std::string& key = req->idempotency_key;
  if (!key.empty()) {
    Result<std::optional<int64_t>> existing = ctx_->store->FindRunByKey(job->id, key);
    if (!existing.ok()) return Fail(c, existing.status());
    if (*existing) {
      // Same key, same run: never a second one.
      const RunRecord* open = p_.book->FindOpen(**existing);
      Result<std::optional<RunRecord>> stored = ctx_->store->GetRun(**existing);
      if (!stored.ok() || !*stored) return Fail(c, stored.status());
      wire::RunView out = RunViewOf(open ? *open : **stored, c.who);
      out.existing = true;
      return Json(c, 200, out.ToJson());
    }
  }
  if (job->kind == JobKind::kStep) {
    return FailWith(c, 409, "conflict",
                    "\"" + std::string(job->name) +
                        "\" is a step of a flow and runs only with it; trigger the flow");
  }
  std::string env_json;
  if (job->kind == JobKind::kFlow) {
    if (!req->params.empty()) {
      return FailWith(c, 400, "bad_request",
                      "trigger " + std::string(job->name) + ": a flow declares no parameters");
    }
  } else {
    // A trigger sets only what the job declares (jobs.toml params), within its limits.
    Result<std::shared_ptr<const Job>> spec = p_.book->SpecOf(*job);
    if (!spec.ok()) return Fail(c, spec.status());
    Result<std::map<std::string, std::string>> params = ResolveParams((*spec)->params, req->params);
    if (!params.ok())
      return Fail(c, params.status().WithContext("trigger " + std::string(job->name)));
    env_json = params->empty() ? "" : json(*params).dump();
  }
  // A deferred run is created now (it can be listed and canceled) and starts at its time.
  const int64_t now = ctx_->NowMs();
  int64_t start = now;
  if (req->at_ms) start = *req->at_ms;
  if (req->in) start = now + req->in->count();
  if (start < now - 60'000) {
    return FailWith(c, 400, "bad_request",
                    "at: " + FormatUtc(FromUnixMs(start)) + " is in the past");
  }
  if (start > now + wire::kMaxDefer.count()) {
    return FailWith(c, 400, "bad_request", "at: at most 366 days ahead");
  }
  // The caller's trace: the body's traceparent (checked by FromJson), else the W3C header,
  // which, as the specification says, is ignored when it does not read.
  std::string trace_id;
  std::string traceparent = req->traceparent;
  if (traceparent.empty()) traceparent = c.req.Header("traceparent");
  if (!traceparent.empty()) {
    if (Result<TraceParent> tp = ParseTraceParent(traceparent); tp.ok()) trace_id = tp->trace_id;
  }
  Result<RunRecord> run = p_.book->Create(*job, RunReason::kManual, std::max(start, now), env_json,
                                          key, start > now ? start : 0, trace_id);
  if (!run.ok()) return Fail(c, run.status());
  if (RunBook::IsFlowRun(*run) && p_.book->FindOpen(run->id) == nullptr) {
    // Ended as it was made (none of its first steps could start): its end, as written.
    Result<std::optional<RunRecord>> ended = ctx_->store->GetRun(run->id);
    if (ended.ok() && *ended) run = std::move(**ended);
  }
  Audit(c, "trigger", std::string(job->name),
        "run " + std::to_string(run->id) +
            (start > now ? " at " + FormatUtc(FromUnixMs(start)) : std::string()));
  log::Info("run triggered",
            {{"job", job->name}, {"run", run->id}, {"by", c.who.name}, {"trace", run->trace_id}});
  wire::RunView out = RunViewOf(run.value(), c.who);
  out.existing = false;
  JsonAfterCommit(c, 201, out.ToJson());
}

void Api::Pause(Call& c) {
  JobEntry* job = JobOr404(c);
  if (job == nullptr) return;
  Credential who{c.who.name, c.who.token_id};
  if (Status s = p_.applier->SetPaused(*job, true, who); !s.ok()) return Fail(c, s);
  JsonAfterCommit(c, 200, JobSummaryOf(*job).ToJson());
}

void Api::Resume(Call& c) {
  JobEntry* job = JobOr404(c);
  if (job == nullptr) return;
  Credential who{c.who.name, c.who.token_id};
  if (Status s = p_.applier->SetPaused(*job, false, who); !s.ok()) return Fail(c, s);
  JsonAfterCommit(c, 200, JobSummaryOf(*job).ToJson());
}

void Api::CancelRun(Call& c) {
  std::optional<int64_t> id = ParseId(c.params["id"]);
  if (!id) return FailWith(c, 400, "bad_request", "run ids are numbers");
  if (Status s = p_.book->Cancel(*id, "canceled by " + c.who.name); !s.ok()) return Fail(c, s);
  Audit(c, "cancel", "run " + c.params["id"], "");
  Result<std::optional<RunRecord>> run = ctx_->store->GetRun(*id);
  // The run's real end state: a shard that had already failed makes it "failed".
  json out = run.ok() && *run ? RunViewOf(**run, c.who).ToJson() : json{{"id", *id}};
  JsonAfterCommit(c, 200, out);
}

void Api::RetryRun(Call& c) {
  std::optional<int64_t> id = ParseId(c.params["id"]);
  if (!id) return FailWith(c, 400, "bad_request", "run ids are numbers");
  Result<json> body = Body(c);
  if (!body.ok()) return Fail(c, body.status());
  Result<RetryRequest> req = RetryRequestFromJson(*body);
  if (!req.ok()) return Fail(c, req.status());
  if (p_.book->FindOpen(*id))
    return FailWith(c, 409, "conflict", "run " + c.params["id"] + " is still active");
  Result<std::optional<RunRecord>> old = ctx_->store->GetRun(*id);
  if (!old.ok()) return Fail(c, old.status());
  if (!*old) return FailWith(c, 404, "not_found", "no such run: " + c.params["id"]);
  if ((*old)->flow_run_id != 0) {
    json ctx = json::parse((*old)->flow_json, nullptr, false);
    std::string step = ctx.is_object() ? ctx.value("step", "STEP") : "STEP";
    const std::string flow_run = std::to_string((*old)->flow_run_id);
    return FailWith(c, 409, "conflict",
                    "run " + c.params["id"] + " is step \"" + step + "\" of flow run " + flow_run +
                        "; retry the flow run from it: jobctl retry " + flow_run + " --from " +
                        step);
  }
  if (RunBook::IsFlowRun(**old)) {
    if (req->failed_shards) {
      return FailWith(c, 400, "bad_request",
                      "a flow run has no shards of its own: retry it --from its steps");
    }
    JobEntry* flow = p_.jobs->Find((*old)->job_id);
    if (flow == nullptr || !flow->active || flow->kind != JobKind::kFlow || p_.flows == nullptr) {
      return FailWith(c, 404, "not_found", "its flow was removed");
    }
    Result<RunRecord> run = p_.flows->Retry(*flow, **old, req->from);
    if (!run.ok()) return Fail(c, run.status());
    if (p_.book->FindOpen(run->id) == nullptr) {
      // Ended as it was made (none of the steps run again could start): its end, as written.
      Result<std::optional<RunRecord>> ended = ctx_->store->GetRun(run->id);
      if (ended.ok() && *ended) run = std::move(**ended);
    }
    std::string from;
    for (const std::string& s : req->from) from += (from.empty() ? "" : ", ") + s;
    Audit(c, "retry", "run " + c.params["id"],
          "run " + std::to_string(run->id) + (from.empty() ? ", failed steps" : ", from " + from));
    JsonAfterCommit(c, 201, RunViewOf(run.value(), c.who).ToJson());
    return;
  }
  if (!req->from.empty()) {
    return FailWith(c, 400, "bad_request",
                    "run " + c.params["id"] + " is not a flow run: --from names a flow's steps");
  }
  if ((*old)->state == RunState::kSucceeded || (*old)->state == RunState::kSkipped) {
    return FailWith(c, 409, "conflict",
                    "run " + c.params["id"] + " " + std::string(RunStateName((*old)->state)) +
                        "; only failed runs are retried");
  }
  JobEntry* job = p_.jobs->Find((*old)->job_id);
  if (job == nullptr || !job->active) return FailWith(c, 404, "not_found", "its job was removed");
  Result<RunRecord> run = req->failed_shards
                              ? p_.book->RetryFailedShards(*job, **old)
                              : p_.book->Create(*job, RunReason::kRetry, (*old)->scheduled_ms,
                                                (*old)->env_json, "", 0, (*old)->trace_id);
  if (!run.ok()) return Fail(c, run.status());
  Audit(c, "retry", "run " + c.params["id"],
        "run " + std::to_string(run->id) + (req->failed_shards ? ", failed shards" : ""));
  JsonAfterCommit(c, 201, RunViewOf(run.value(), c.who).ToJson());
}

void Api::DrainAgent(Call& c) {
  Result<json> body = Body(c);
  if (!body.ok()) return Fail(c, body.status());
  Result<DrainRequest> req = DrainRequestFromJson(*body);
  if (!req.ok()) return Fail(c, req.status());
  bool draining = req->draining;
  if (Status s = p_.dispatcher->SetDraining(c.params["name"], draining); !s.ok()) return Fail(c, s);
  Audit(c, draining ? "drain" : "undrain", c.params["name"], "");
  JsonAfterCommit(c, 200, {{"name", c.params["name"]}, {"draining", draining}});
}

void Api::RemoveAgent(Call& c) {
  const std::string& name = c.params["name"];
  auto force_it = c.req.query.find("force");
  bool force =
      force_it != c.req.query.end() && (force_it->second == "1" || force_it->second == "true");
  Status forgot = p_.dispatcher->Forget(name, force);
  if (!forgot.ok() && forgot.code() != Status::Code::kNotFound) return Fail(c, forgot);
  Result<int64_t> revoked =
      ctx_->batch->Write([&] { return ctx_->store->RevokeAgentTokens(name, ctx_->NowMs()); });
  if (!revoked.ok()) return Fail(c, revoked.status());
  if (!forgot.ok() && *revoked == 0) {
    return FailWith(c, 404, "not_found", "no such agent: " + name);
  }
  p_.auth->RevokeAgent(name);
  Audit(c, "agent-remove", name,
        std::to_string(*revoked) + " credential(s) revoked" + (force ? ", forced" : ""));
  log::Info("agent removed", {{"agent", name}, {"by", c.who.name}, {"credentials", *revoked}});
  JsonAfterCommit(c, 200, wire::AgentRemoved{name, true, *revoked}.ToJson());
}

void Api::CreateToken(Call& c) {
  Result<json> body = Body(c);
  if (!body.ok()) return Fail(c, body.status());
  Result<TokenRequest> req = TokenRequestFromJson(*body);
  if (!req.ok()) return Fail(c, req.status());
  const std::string& role_text = req->role_name;
  if (req->role == Role::kAgent && p_.auth->AgentToken(req->agent)) {
    return FailWith(c, 409, "conflict",
                    "agent " + req->agent +
                        " already has a credential; revoke it first (jobctl "
                        "token revoke, or jobctl agents rm " +
                        req->agent + ")");
  }
  Result<std::string> secret = NewSecret();
  if (!secret.ok()) return Fail(c, secret.status());
  store::TokenRow row;
  row.name = !req->name.empty()          ? req->name
             : req->role == Role::kAgent ? "agent-" + req->agent
                                         : role_text + "-token";
  row.role = role_text;
  row.jobs = req->jobs;
  row.hash = HashSecret(*secret);
  row.created_ms = ctx_->NowMs();
  row.agent = req->agent;
  if (!req->labels.empty()) row.labels_json = json(req->labels).dump();
  if (req->expires_in_ms) row.expires_ms = row.created_ms + *req->expires_in_ms;
  Result<int64_t> id = ctx_->batch->Write([&] { return ctx_->store->InsertToken(row); });
  if (!id.ok()) return Fail(c, id.status());
  row.id = *id;
  p_.auth->Add(row);
  Audit(c, "token-create", row.name, "id " + std::to_string(*id) + ", role " + role_text);
  wire::TokenCreated created{*id,
                             row.name,
                             role_text,
                             row.jobs,
                             row.agent,
                             req->labels,
                             row.expires_ms ? FormatUtc(FromUnixMs(*row.expires_ms)) : "",
                             *secret};
  JsonAfterCommit(c, 201, created.ToJson());
}

void Api::ListTokens(Call& c) {
  std::vector<wire::TokenView> out;
  Status s = ctx_->store->ForEachToken([&out](store::TokenRow&& t) {
    json labels =
        t.labels_json.empty() ? json::object() : json::parse(t.labels_json, nullptr, false);
    wire::TokenView v{t.id,
                      t.name,
                      t.role,
                      t.jobs,
                      t.agent,
                      {},
                      FormatUtc(FromUnixMs(t.created_ms)),
                      t.expires_ms ? FormatUtc(FromUnixMs(*t.expires_ms)) : "",
                      t.revoked_ms ? FormatUtc(FromUnixMs(*t.revoked_ms)) : ""};
    // Labels are stored as the object of strings the token was created with.
    for (auto it = labels.begin(); labels.is_object() && it != labels.end(); ++it) {
      if (it.value().is_string()) v.labels[it.key()] = it.value().get<std::string>();
    }
    out.push_back(std::move(v));
  });
  if (!s.ok()) return Fail(c, s);
  Json(c, 200, wire::ListToJson(out));
}

void Api::RevokeToken(Call& c) {
  std::optional<int64_t> id = ParseId(c.params["id"]);
  if (!id) return FailWith(c, 400, "bad_request", "token ids are numbers");
  if (Status s = ctx_->batch->Write([&] { return ctx_->store->RevokeToken(*id, ctx_->NowMs()); },
                                    Status::Code::kNotFound);
      !s.ok()) {
    return s.code() == Status::Code::kNotFound
               ? FailWith(c, 404, "not_found", "no active token " + c.params["id"])
               : Fail(c, s);
  }
  p_.auth->Revoke(*id);
  // A claim parked with this credential is answered now, not served a shard later.
  p_.dispatcher->CloseClaimsOfToken(*id, "token revoked");
  Audit(c, "token-revoke", c.params["id"], "");
  JsonAfterCommit(c, 200, {{"id", *id}, {"revoked", true}});
}

}  // namespace jobctl::coordinator
