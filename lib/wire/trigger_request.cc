#include "wire/trigger_request.h"

#include <algorithm>

#include "model/time_format.h"

namespace jobctl::wire {
namespace {

using nlohmann::json;

// An optional field of the request: absent or null leaves `out` as it is.
template <typename T>
Status Opt(const json& body, const char* key, T* out) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return Status::Ok();
  bool type_ok = false;
  if constexpr (std::is_same_v<T, std::string>) {
    type_ok = it->is_string();
  } else {
    type_ok = it->is_object() &&
              std::all_of(it->begin(), it->end(), [](const json& v) { return v.is_string(); });
  }
  if (!type_ok)
    return Status::InvalidArgument(std::string("field \"") + key + "\" has the wrong type");
  *out = it->get<T>();
  return Status::Ok();
}

}  // namespace

json TriggerRequest::ToJson() const {
  json out = {{"params", params}};
  if (!idempotency_key.empty()) out["idempotency_key"] = idempotency_key;
  if (at_ms) out["at"] = FormatUtc(FromUnixMs(*at_ms));
  if (in) out["in"] = FormatDuration(*in);
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
  if (!s.ok()) return s;
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
