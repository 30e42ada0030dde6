// The agent routes: claim (long-poll), heartbeat, log chunks and results. Every renewal,
// chunk and result carries the lease's fencing token; a stale one gets 409 and the agent
// must stop that shard.
#include "coordinator/api.h"
#include "coordinator/metrics.h"

namespace jobctl::coordinator {
namespace {

using nlohmann::json;

template <typename T>
Status Need(const json& body, const char* key, T* out) {
  auto it = body.find(key);
  if (it == body.end()) return Status::InvalidArgument(std::string("field \"") + key + "\" is required");
  try {
    *out = it->get<T>();
  } catch (const json::exception&) {
    return Status::InvalidArgument(std::string("field \"") + key + "\" has the wrong type");
  }
  return Status::Ok();
}

template <typename T>
Status Opt(const json& body, const char* key, T* out) {
  return body.contains(key) && !body[key].is_null() ? Need(body, key, out) : Status::Ok();
}

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
  ClaimRequest req;
  Status s = Need(*body, "agent", &req.agent);
  if (s.ok()) s = Opt(*body, "labels", &req.labels);
  if (s.ok()) s = Opt(*body, "slots", &req.slots);
  if (s.ok()) s = Opt(*body, "free", &req.free);
  if (s.ok()) s = Opt(*body, "version", &req.version);
  if (s.ok()) s = Opt(*body, "wait_ms", &req.wait_ms);
  if (!s.ok()) return Fail(c, s);
  if (req.agent.empty()) return FailWith(c, 400, "bad_request", "agent name is empty");
  p_.dispatcher->Claim(std::move(req), c.res);
}

void Api::Heartbeat(Call& c) {
  ++ctx_->metrics->heartbeats_total;
  Result<json> body = Body(c);
  if (!body.ok()) return Fail(c, body.status());
  std::string agent;
  int free = 0;
  json leases = json::array();
  Status s = Need(*body, "agent", &agent);
  if (s.ok()) s = Opt(*body, "free", &free);
  if (s.ok()) s = Opt(*body, "leases", &leases);
  if (!s.ok()) return Fail(c, s);
  if (!leases.is_array()) return FailWith(c, 400, "bad_request", "field \"leases\" must be an array");
  std::vector<HeartbeatLease> list;
  for (const json& l : leases) {
    HeartbeatLease h;
    int index = 0;
    if (!l.is_object()) return FailWith(c, 400, "bad_request", "leases[] must be objects");
    s = Need(l, "run", &h.key.run);
    if (s.ok()) s = Need(l, "shard", &index);
    if (s.ok()) s = Need(l, "token", &h.token);
    if (!s.ok()) return Fail(c, s);
    h.key.index = index;
    list.push_back(h);
  }
  Json(c, 200, p_.dispatcher->Heartbeat(agent, list, free));
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
  ResultReport r;
  std::string outcome, agent;
  int index = 0;
  Status s = Need(*body, "run", &r.key.run);
  if (s.ok()) s = Need(*body, "shard", &index);
  if (s.ok()) s = Need(*body, "attempt", &r.attempt);
  if (s.ok()) s = Need(*body, "token", &r.token);
  if (s.ok()) s = Need(*body, "agent", &r.agent);
  if (s.ok()) s = Need(*body, "outcome", &outcome);
  if (s.ok()) s = Opt(*body, "message", &r.message);
  if (s.ok() && body->contains("exit_code") && !(*body)["exit_code"].is_null()) {
    int64_t code = 0;
    s = Need(*body, "exit_code", &code);
    r.exit_code = code;
  }
  if (!s.ok()) return Fail(c, s);
  r.key.index = index;
  std::optional<Outcome> o = ParseOutcome(outcome);
  if (!o) return FailWith(c, 400, "bad_request", "unknown outcome \"" + outcome + "\"");
  r.outcome = *o;
  Result<RunState> state = p_.book->OnResult(r);
  if (!state.ok()) return Fail(c, state.status());
  if (ctx_->batch->Open().ok()) {
    return JsonAfterCommit(c, 200, {{"accepted", true}, {"state", RunStateName(*state)}});
  }
  Json(c, 200, {{"accepted", true}, {"state", RunStateName(*state)}});
}

}  // namespace jobctl::coordinator
