#include "wire/trigger_request.h"

#include <algorithm>

#include "model/time_format.h"
#include "model/trace_context.h"
#include "wire/fields.h"

namespace jobctl::wire {
using nlohmann::json;

json TriggerRequest::ToJson() const {
  json out = {{"params", params}};
  if (!idempotency_key.empty()) out["idempotency_key"] = idempotency_key;
  if (at_ms) out["at"] = FormatUtc(FromUnixMs(*at_ms));
  if (in) out["in"] = FormatDuration(*in);
  if (!traceparent.empty()) out["traceparent"] = traceparent;
  return out;
}

Result<TriggerRequest> TriggerRequest::FromJson(const json& body) {
  TriggerRequest req;
  if (!body.is_object()) return Status::InvalidArgument("the body must be a JSON object");
  Status s = Opt(body, "idempotency_key", &req.idempotency_key);
  if (s.ok() && body.contains("params") && body.contains("env")) {
    s = Status::InvalidArgument("give \"params\", not both \"params\" and \"env\"");
  }
  if (s.ok()) s = Opt(body, body.contains("params") ? "params" : "env", &req.params);
  std::string at, in;
  if (s.ok()) s = Opt(body, "at", &at);
  if (s.ok()) s = Opt(body, "in", &in);
  if (s.ok()) s = Opt(body, "traceparent", &req.traceparent);
  if (!s.ok()) return s;
  if (!req.traceparent.empty()) {
    if (Result<TraceParent> tp = ParseTraceParent(req.traceparent); !tp.ok()) return tp.status();
  }
  if (!at.empty() && !in.empty()) return Status::InvalidArgument("give \"at\" or \"in\", not both");
  if (at.size() > 64 || in.size() > 64)
    return Status::InvalidArgument("\"at\" and \"in\" are short texts");
  if (!at.empty()) {
    Result<WallTime> t = ParseInstant(at);
    if (!t.ok()) return Status::InvalidArgument("at: " + t.status().message());
    req.at_ms = ToUnixMs(*t);
  }
  if (!in.empty()) {
    Result<Millis> d = ParseDuration(in);
    if (!d.ok()) return Status::InvalidArgument("in: " + d.status().message());
    if (*d > kMaxDefer) return Status::InvalidArgument("in: at most 366d");
    req.in = *d;
  }
  if (req.idempotency_key.size() > kMaxIdempotencyKey) {
    return Status::InvalidArgument("idempotency_key is longer than " +
                                   std::to_string(kMaxIdempotencyKey) + " bytes");
  }
  return req;
}

}  // namespace jobctl::wire
