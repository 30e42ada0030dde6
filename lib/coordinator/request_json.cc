#include "coordinator/request_json.h"

#include <type_traits>

#include "model/flow_spec.h"
#include "model/time_format.h"
#include "wire/fields.h"
#include "wire/log_batch.h"

namespace jobctl::coordinator {
namespace {

using nlohmann::json;

using wire::Need;
using wire::Opt;

}  // namespace

Result<ClaimRequest> ClaimRequestFromJson(const json& body) {
  Result<wire::ClaimRequest> parsed = wire::ClaimRequest::FromJson(body);
  if (!parsed.ok()) return parsed.status();
  ClaimRequest req;
  static_cast<wire::ClaimRequest&>(req) = std::move(*parsed);
  if (Status l = CheckLabels(req.labels, false, "claim"); !l.ok()) return l;
  if (req.version.size() > 64)
    return Status::InvalidArgument("version is longer than 64 characters");
  return req;
}

Result<ApplyRequest> ApplyRequestFromJson(const json& body, const std::string& token_name) {
  ApplyRequest req;
  std::string author;
  Status s = Opt(body, "text", &req.text);
  if (s.ok()) s = Opt(body, "filename", &req.filename);
  if (s.ok()) s = Opt(body, "base_revision", &req.base_revision);
  if (s.ok()) s = Opt(body, "dry_run", &req.dry_run);
  if (s.ok()) s = Opt(body, "author", &author);
  if (!s.ok()) return s;
  req.author = author.empty() ? token_name : author + " (token " + token_name + ")";
  if (!body.contains("text")) return Status::InvalidArgument("field \"text\" is required");
  return req;
}

Result<DrainRequest> DrainRequestFromJson(const json& body) {
  DrainRequest req;
  if (Status s = Opt(body, "draining", &req.draining); !s.ok()) return s;
  return req;
}

Result<RetryRequest> RetryRequestFromJson(const json& body) {
  for (auto it = body.begin(); it != body.end(); ++it) {
    if (it.key() != "failed_shards" && it.key() != "from") {
      return Status::InvalidArgument(
          "a retry takes no field but \"failed_shards\" (true or false) and \"from\" (an array "
          "of a flow's step names)");
    }
  }
  RetryRequest req;
  if (Status s = Opt(body, "failed_shards", &req.failed_shards); !s.ok()) return s;
  if (auto from = body.find("from"); from != body.end()) {
    if (!from->is_array() || from->size() > static_cast<size_t>(kMaxFlowSteps)) {
      return Status::InvalidArgument("\"from\": expected an array of at most " +
                                     std::to_string(kMaxFlowSteps) + " step names");
    }
    for (const json& name : *from) {
      if (!name.is_string() || !IsValidStepName(name.get<std::string>())) {
        return Status::InvalidArgument(
            "\"from\": expected step names ([a-z0-9][a-z0-9._-]*, at "
            "most 64 characters)");
      }
      req.from.push_back(name.get<std::string>());
    }
  }
  return req;
}

Result<std::string> NotifyTestChannelFromJson(const json& body) {
  auto it = body.find("channel");
  if (it == body.end() || !it->is_string() || it->get_ref<const std::string&>().empty() ||
      it->get_ref<const std::string&>().size() > 64) {
    return Status::InvalidArgument("expected {\"channel\": \"NAME\"}, NAME of 1 to 64 bytes");
  }
  return it->get<std::string>();
}

Result<TokenRequest> TokenRequestFromJson(const json& body) {
  TokenRequest req;
  int64_t expires_in_ms = 0;
  Status s = Opt(body, "role", &req.role_name);
  if (s.ok()) s = Opt(body, "jobs", &req.jobs);
  if (s.ok()) s = Opt(body, "name", &req.name);
  if (s.ok()) s = Opt(body, "agent", &req.agent);
  if (s.ok()) s = Opt(body, "labels", &req.labels);
  if (s.ok()) s = Opt(body, "expires_in_ms", &expires_in_ms);
  if (!s.ok()) return s;
  std::optional<Role> role = ParseRole(req.role_name);
  if (!role) return Status::InvalidArgument("role is admin, read, trigger, agent or join");
  if (!req.jobs.empty() && *role != Role::kTrigger && *role != Role::kRead) {
    return Status::InvalidArgument("a jobs glob only applies to the read and trigger roles");
  }
  if (req.jobs.size() > 256)
    return Status::InvalidArgument("the jobs glob is longer than 256 characters");
  if (*role == Role::kAgent && req.agent.empty()) {
    return Status::InvalidArgument("an agent token is bound to one agent: \"agent\" is required");
  }
  if (*role != Role::kAgent && !req.agent.empty()) {
    return Status::InvalidArgument("\"agent\" only applies to the agent role");
  }
  if (!req.labels.empty() && *role != Role::kAgent && *role != Role::kJoin) {
    return Status::InvalidArgument("labels only apply to the agent and join roles");
  }
  if (!req.agent.empty()) {
    if (Status n = CheckName(req.agent, "agent name"); !n.ok()) return n;
  }
  if (!req.name.empty()) {
    if (Status n = CheckName(req.name, "token name"); !n.ok()) return n;
  }
  if (Status l = CheckLabels(req.labels, true, "allowed"); !l.ok()) return l;
  if (body.contains("expires_in_ms") && !body["expires_in_ms"].is_null()) {
    if (expires_in_ms <= 0) return Status::InvalidArgument("expires_in_ms must be positive");
    req.expires_in_ms = expires_in_ms;
  }
  req.role = *role;
  return req;
}

Result<EnrolRequest> EnrolRequestFromJson(const json& body) {
  EnrolRequest req;
  Status s = Opt(body, "agent", &req.agent);
  if (s.ok()) s = Opt(body, "labels", &req.labels);
  if (!s.ok()) return s;
  if (!req.agent.empty()) {
    if (Status n = CheckName(req.agent, "agent name"); !n.ok()) return n;
  }
  if (Status l = CheckLabels(req.labels, false, "enrol"); !l.ok()) return l;
  return req;
}

}  // namespace jobctl::coordinator
