// The agent routes: claim (long-poll), heartbeat, log chunks and results. Every renewal,
// chunk and result carries the lease's fencing token; a stale one gets 409 and the agent
// must stop that shard.
#include "coordinator/api.h"
#include "coordinator/metrics.h"
#include "coordinator/request_json.h"

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

}  // namespace

void Api::Claim(Call& c) {
  Result<json> body = Body(c);
  if (!body.ok()) return Fail(c, body.status());
  Result<ClaimRequest> req = ClaimRequestFromJson(*body);
  if (!req.ok()) return Fail(c, req.status());
  p_.dispatcher->Claim(std::move(*req), c.res);
}

void Api::Heartbeat(Call& c) {
  ++ctx_->metrics->heartbeats_total;
  Result<json> body = Body(c);
  if (!body.ok()) return Fail(c, body.status());
  Result<HeartbeatRequest> req = HeartbeatRequestFromJson(*body);
  if (!req.ok()) return Fail(c, req.status());
  c.res->Send({200, "application/json", p_.dispatcher->Heartbeat(req->agent, req->leases, req->free),
               {}});
}

void Api::AppendLog(Call& c) {
  const auto& q = c.req.query;
  std::optional<int64_t> run = QueryInt(q, "run"), shard = QueryInt(q, "shard"),
                         attempt = QueryInt(q, "attempt"), seq = QueryInt(q, "seq"),
                         token = QueryInt(q, "token"), at = QueryInt(q, "at_ms");
  auto stream_it = q.find("stream");
  if (!run || !shard || !attempt || !seq || !token || stream_it == q.end()) {
    return FailWith(c, 400, "bad_request",
                    "run, shard, attempt, seq, token and stream are required query parameters");
  }
  store::LogStream stream;
  if (stream_it->second == "stdout") stream = store::LogStream::kStdout;
  else if (stream_it->second == "stderr") stream = store::LogStream::kStderr;
  else if (stream_it->second == "marker") stream = store::LogStream::kMarker;
  else return FailWith(c, 400, "bad_request", "stream is stdout, stderr or marker");
  ShardKey key{*run, static_cast<int>(*shard)};
  if (Status s = p_.book->CheckLogToken(key, static_cast<int>(*attempt), *token); !s.ok()) {
    return Fail(c, s);
  }
  if (Status s = ctx_->batch->OpenLogs(); !s.ok()) return Fail(c, s);
  store::LogChunk chunk{0, *run, key.index, static_cast<int>(*attempt), *seq, stream,
                        at.value_or(ctx_->NowMs()), std::move(c.req.body)};
  Result<store::LogStore::AppendResult> r = ctx_->logs->Append(chunk);
  if (!r.ok()) {
    ctx_->batch->Fail(r.status());
    return JsonAfterCommit(c, 200, {});  // answered with the commit's error
  }
  bool stored = *r == store::LogStore::AppendResult::kStored;
  ctx_->EventAfterCommit("log_accepted", {{"run", chunk.run_id},
                                          {"shard", chunk.shard},
                                          {"attempt", chunk.attempt},
                                          {"seq", chunk.seq},
                                          {"token", *token},
                                          {"bytes", static_cast<int64_t>(chunk.data.size())},
                                          {"stored", stored}});
  if (stored) ctx_->metrics->log_bytes_total += chunk.data.size();
  int64_t run_id = *run;
  ctx_->batch->OnCommit([this, run_id](const Status& s) {
    if (s.ok()) p_.log_hub->Notify(run_id);
  });
  JsonAfterCommit(c, 200, {{"stored", stored},
                           {"truncated", *r == store::LogStore::AppendResult::kTruncated}});
}

void Api::PostResult(Call& c) {
  Result<json> body = Body(c);
  if (!body.ok()) return Fail(c, body.status());
  Result<ResultReport> r = ResultReportFromJson(*body);
  if (!r.ok()) return Fail(c, r.status());
  Result<RunState> state = p_.book->OnResult(*r);
  if (!state.ok()) return Fail(c, state.status());
  if (ctx_->batch->Open().ok()) {
    return JsonAfterCommit(c, 200, {{"accepted", true}, {"state", RunStateName(*state)}});
  }
  Json(c, 200, {{"accepted", true}, {"state", RunStateName(*state)}});
}

}  // namespace jobctl::coordinator
