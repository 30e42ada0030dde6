// The agent routes: enrolment, claim (long-poll), heartbeat, log chunks and results. Who
// the agent is comes from its credential: a body naming another agent is refused (403), and
// a claim may only carry the labels its credential allows. Every renewal, chunk and result
// carries the lease's fencing token and is taken only from the lease's holder; anything else
// gets 409 (saying why, never which token is current) and the agent must stop that shard.
#include <algorithm>

#include "coordinator/api.h"
#include "coordinator/metrics.h"
#include "coordinator/request_json.h"
#include "wire/log_batch.h"

namespace jobctl::coordinator {
namespace {

using nlohmann::json;

std::optional<int64_t> QueryInt(const std::map<std::string, std::string>& q, const char* key) {
  auto it = q.find(key);
  if (it == q.end() || it->second.empty() || it->second.size() > 19) return std::nullopt;
  char* end = nullptr;
  long long v = std::strtoll(it->second.c_str(), &end, 10);
  return *end == '\0' ? std::optional<int64_t>(v) : std::nullopt;
}

std::string LabelText(const std::map<std::string, std::string>& labels) {
  std::string out;
  for (const auto& [k, v] : labels) out += (out.empty() ? "" : ",") + k + "=" + v;
  return out;
}

}  // namespace

std::string Api::OtherAgentMessage(const Principal& who, const std::string& named) {
  return "this credential is agent \"" + who.agent + "\"; the request names agent \"" + named +
         "\" (an agent speaks only for itself)";
}

bool Api::SameAgent(Call& c, const std::string& named) {
  if (named.empty() || named == c.who.agent) return true;
  ++ctx_->metrics->auth_failures_total;
  AuditDenied(&c.who, c.req, "agent " + c.who.agent + " named agent " + named);
  FailWith(c, 403, "forbidden", OtherAgentMessage(c.who, named));
  return false;
}

void Api::Enrol(Call& c) {
  Result<json> body = Body(c);
  if (!body.ok()) return Fail(c, body.status());
  Result<EnrolRequest> req = EnrolRequestFromJson(*body);
  if (!req.ok()) return Fail(c, req.status());
  if (std::optional<std::string> bad = LabelOutside(req->labels, c.who.labels)) {
    return FailWith(c, 403, "forbidden",
                    "token \"" + c.who.name + "\" does not allow label " + *bad +
                        " (allowed: " + LabelText(c.who.labels) + ")");
  }
  if (c.who.role == Role::kAgent) {
    // Already a credential of its own: enrolment just says whose.
    if (!SameAgent(c, req->agent)) return;
    return Json(c, 200, {{"agent", c.who.agent}, {"enrolled", false}, {"labels", c.who.labels}});
  }
  if (req->agent.empty()) return FailWith(c, 400, "bad_request", "field \"agent\" is required");
  // Under mTLS a join token enrols only the agent its client certificate names.
  if (!ctx_->config.tls_client_ca.empty() && c.req.peer_name != req->agent) {
    ++ctx_->metrics->auth_failures_total;
    AuditDenied(&c.who, c.req,
                "enrolment of " + req->agent + " with certificate " + c.req.peer_name);
    return FailWith(c, 403, "forbidden",
                    "the client certificate names \"" + c.req.peer_name + "\", not agent \"" +
                        req->agent + "\"");
  }
  if (p_.auth->AgentToken(req->agent)) {
    return FailWith(
        c, 409, "conflict",
        "agent " + req->agent +
            " already has a credential; a join token cannot take "
            "over an enrolled agent (if this host was reinstalled, run `jobctl agents rm " +
            req->agent + "` first)");
  }
  Result<std::string> secret = NewSecret();
  if (!secret.ok()) return Fail(c, secret.status());
  store::TokenRow row;
  row.name = "agent-" + req->agent;
  row.role = "agent";
  row.hash = HashSecret(*secret);
  row.created_ms = ctx_->NowMs();
  row.agent = req->agent;
  // The join token's label limits go with every agent it enrols.
  if (!c.who.labels.empty()) row.labels_json = json(c.who.labels).dump();
  Result<int64_t> id = ctx_->batch->Write([&] { return ctx_->store->InsertToken(row); });
  if (!id.ok()) return Fail(c, id.status());
  row.id = *id;
  p_.auth->Add(row);
  Audit(c, "agent-enrol", req->agent, "token " + std::to_string(*id));
  JsonAfterCommit(c, 201,
                  {{"agent", req->agent},
                   {"enrolled", true},
                   {"id", *id},
                   {"labels", c.who.labels},
                   {"token", *secret}});
}

void Api::Claim(Call& c) {
  Result<json> body = Body(c);
  if (!body.ok()) return Fail(c, body.status());
  Result<ClaimRequest> req = ClaimRequestFromJson(*body);
  if (!req.ok()) return Fail(c, req.status());
  if (!SameAgent(c, req->agent)) return;
  if (std::optional<std::string> bad = LabelOutside(req->labels, c.who.labels)) {
    ++ctx_->metrics->auth_failures_total;
    AuditDenied(&c.who, c.req, "agent " + c.who.agent + " claimed with label " + *bad);
    return FailWith(c, 403, "forbidden",
                    "agent " + c.who.agent + " may not claim with label " + *bad +
                        " (its credential allows " + LabelText(c.who.labels) + ")");
  }
  req->agent = c.who.agent;
  req->token_id = c.who.token_id;
  req->token_expires_ms = c.who.expires_ms;
  p_.dispatcher->Claim(std::move(*req), c.res);
}

void Api::Heartbeat(Call& c) {
  ++ctx_->metrics->heartbeats_total;
  Result<json> body = Body(c);
  if (!body.ok()) return Fail(c, body.status());
  Result<wire::HeartbeatRequest> req = wire::HeartbeatRequest::FromJson(*body);
  if (!req.ok()) return Fail(c, req.status());
  if (!SameAgent(c, req->agent)) return;
  c.res->Send(
      {200, "application/json", p_.dispatcher->Heartbeat(c.who.agent, req->leases, req->free), {}});
}

void Api::AppendLog(Call& c) {
  const auto& q = c.req.query;
  bool batch = q.count("batch") > 0 && q.at("batch") == "1";
  std::optional<int64_t> run = QueryInt(q, "run"), shard = QueryInt(q, "shard"),
                         attempt = QueryInt(q, "attempt"), token = QueryInt(q, "token");
  if (!run || !shard || !attempt || !token) {
    return FailWith(c, 400, "bad_request",
                    "run, shard, attempt, seq, token and stream are required query parameters");
  }
  // One chunk in the query and the body, or a batch of them in the body (wire/log_batch.h).
  std::vector<wire::LogRecord> records;
  if (batch) {
    Result<std::vector<wire::LogRecord>> parsed = wire::ParseLogBatch(c.req.body);
    if (!parsed.ok()) return FailWith(c, 400, "bad_request", parsed.status().message());
    records = std::move(*parsed);
  } else {
    std::optional<int64_t> seq = QueryInt(q, "seq"), at = QueryInt(q, "at_ms");
    auto stream_it = q.find("stream");
    if (!seq || stream_it == q.end()) {
      return FailWith(c, 400, "bad_request",
                      "run, shard, attempt, seq, token and stream are required query parameters");
    }
    const std::string& name = stream_it->second;
    if (name != "stdout" && name != "stderr" && name != "marker") {
      return FailWith(c, 400, "bad_request", "stream is stdout, stderr or marker");
    }
    records.push_back({*seq, name, at.value_or(0), c.req.body});
  }
  ShardKey key{*run, static_cast<int>(*shard)};
  int64_t last_seq = 0;
  for (const wire::LogRecord& r : records) last_seq = std::max(last_seq, r.seq);
  if (Status s =
          CheckTrailingOutput(key, static_cast<int>(*attempt), *token, c.who.agent, last_seq);
      s.code() == Status::Code::kNotFound) {
    // Not output trailing a result: only the holder of the attempt's live lease appends.
    if (s = p_.book->CheckLogToken(key, static_cast<int>(*attempt), *token, c.who.agent); !s.ok()) {
      return Fail(c, s);
    }
  } else if (!s.ok()) {
    return Fail(c, s);
  }
  // The run's job, for the log store's per-job accounting (logs_max) and the job's own
  // log_cap; output trailing a result belongs to a run that has left memory.
  int64_t job_id = 0, cap_bytes = 0;
  if (const RunRecord* open = p_.book->FindOpen(*run)) {
    job_id = open->job_id;
    if (const Job* spec = p_.book->OpenSpec(*run)) cap_bytes = spec->log_cap_bytes;
  } else if (Result<std::optional<RunRecord>> ended = ctx_->store->GetRun(*run); !ended.ok()) {
    return Fail(c, ended.status());
  } else if (*ended) {
    job_id = (*ended)->job_id;
    // The job's definition now: the run's own left memory with it. One that no longer reads
    // leaves the coordinator's log_cap, which applies anyway.
    if (JobEntry* entry = p_.jobs->Find(job_id)) {
      if (Result<std::shared_ptr<const Job>> spec = p_.book->SpecOf(*entry); spec.ok()) {
        cap_bytes = (*spec)->log_cap_bytes;
      }
    }
  }
  if (Status s = ctx_->batch->OpenLogs(); !s.ok()) return Fail(c, s);
  wire::LogAppendReply reply;
  for (const wire::LogRecord& r : records) {
    store::LogStream stream = r.stream == "stdout"   ? store::LogStream::kStdout
                              : r.stream == "stderr" ? store::LogStream::kStderr
                                                     : store::LogStream::kMarker;
    // A single chunk is the whole body: it moves rather than copies.
    std::string data = batch ? std::string(r.data) : std::move(c.req.body);
    store::LogChunk chunk{0,
                          *run,
                          key.shard,
                          static_cast<int>(*attempt),
                          r.seq,
                          stream,
                          r.at_ms > 0 ? r.at_ms : ctx_->NowMs(),
                          std::move(data),
                          job_id,
                          cap_bytes};
    Result<store::LogStore::AppendResult> appended =
        ctx_->batch->WriteLogs([&] { return ctx_->logs->Append(chunk); });
    if (!appended.ok()) return JsonAfterCommit(c, 200, {});  // answered with the commit's error
    bool fresh = *appended == store::LogStore::AppendResult::kStored;
    ctx_->EventAfterCommit("log_accepted", {{"run", chunk.run_id},
                                            {"shard", chunk.shard},
                                            {"attempt", chunk.attempt},
                                            {"seq", chunk.seq},
                                            {"token", *token},
                                            {"bytes", static_cast<int64_t>(chunk.data.size())},
                                            {"stored", fresh}});
    if (fresh) {
      ++reply.stored;
      ctx_->metrics->log_bytes_total += chunk.data.size();
    } else if (*appended == store::LogStore::AppendResult::kDuplicate) {
      ++reply.duplicates;
    } else {
      reply.truncated = true;
    }
  }
  int64_t run_id = *run;
  ctx_->batch->OnCommit([this, run_id](const Status& s) {
    if (s.ok()) p_.log_hub->Notify(run_id);
  });
  JsonAfterCommit(c, 200, reply.ToJson(batch));
}

Status Api::CheckTrailingOutput(ShardKey key, int attempt, int64_t token, const std::string& agent,
                                int64_t last_seq) {
  // The lease is live (the usual case): the lease decides, not a declared end.
  if (p_.dispatcher->HeldBy(key, token, agent)) return Status::NotFound("lease held");
  Result<std::optional<store::OutputEndRow>> end =
      ctx_->store->GetOutputEnd(key.run, key.shard, attempt);
  if (!end.ok()) return end.status();
  if (!*end) return Status::NotFound("no declared end");
  // Only while no later lease of the shard was granted: output is never taken under a token
  // older than the shard's newest (a retry's output must not be mixed with a stale one).
  int64_t newest = 0;
  if (const RunRecord* open = p_.book->FindOpen(key.run)) {
    if (key.shard >= 0 && key.shard < static_cast<int>(open->shards.size())) {
      newest = open->shards[static_cast<size_t>(key.shard)].token;
    }
  } else {
    Result<std::optional<ShardRecord>> shard = ctx_->store->GetShard(key.run, key.shard);
    if (!shard.ok()) return shard.status();
    if (*shard) newest = (*shard)->token;
  }
  if ((*end)->agent == agent && (*end)->token == token && newest == token &&
      last_seq <= (*end)->last_seq) {
    return Status::Ok();
  }
  p_.book->NoteRefusedLog(key, token, agent);
  return Status::Conflict("run " + std::to_string(key.run) + " shard " + std::to_string(key.shard) +
                          " attempt " + std::to_string(attempt) +
                          ": its result was taken; output after it is taken only from the "
                          "agent that reported it, under that lease, up to the end it declared");
}

void Api::PostResult(Call& c) {
  Result<json> body = Body(c);
  if (!body.ok()) return Fail(c, body.status());
  Result<ResultReport> r = ResultReport::FromJson(*body);
  if (!r.ok()) return Fail(c, r.status());
  if (!SameAgent(c, r->agent)) return;
  r->agent = c.who.agent;
  Result<RunState> state = p_.book->OnResult(*r);
  if (!state.ok()) return Fail(c, state.status());
  // Only once durable: a turn that fails to commit is rolled back, result included, and the
  // agent must keep its result to send again.
  JsonAfterCommit(c, 200, wire::ResultAnswer{true, std::string(RunStateName(*state))}.ToJson());
}

void Api::PostResults(Call& c) {
  Result<json> body = Body(c);
  if (!body.ok()) return Fail(c, body.status());
  Result<wire::ResultBatch> batch = wire::ResultBatch::FromJson(*body);
  if (!batch.ok()) return Fail(c, batch.status());
  // Each result is taken or refused on its own, as if it had come alone; one commit covers
  // all that were taken.
  wire::ResultBatchReply answers;
  for (Result<ResultReport>& r : batch->results) {
    if (r.ok() && !r->agent.empty() && r->agent != c.who.agent) {
      r = Status::PermissionDenied(OtherAgentMessage(c.who, r->agent));
    } else if (r.ok()) {
      r->agent = c.who.agent;
    }
    Result<RunState> state = r.ok() ? p_.book->OnResult(*r) : Result<RunState>(r.status());
    if (state.ok()) {
      answers.results.push_back({true, std::string(RunStateName(*state))});
    } else {
      HttpError e = HttpErrorFor(state.status());
      answers.results.push_back({false, "", e.status, std::string(e.error), e.message});
    }
  }
  JsonAfterCommit(c, 200, answers.ToJson());
}

}  // namespace jobctl::coordinator
