// Auth decides who may call which route. API tokens are random secrets handed out once
// (bootstrap files, `jobctl token create`, agent enrolment) and stored only as SHA-256
// hashes. Each has a role: admin (everything), read (list, show, runs, logs), trigger
// (trigger and read; a read or trigger token may be limited to jobs matching a glob, and then
// reads and triggers only those), agent (the agent routes, as
// the one agent name the token is bound to, optionally only with some labels) and join
// (enrolment only: it turns a new agent name into an agent token). Any token may expire;
// an expired one is refused as such. Loop thread only; owned by the Coordinator.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "store/store.h"

namespace jobctl::coordinator {

enum class Role { kOpen, kRead, kTrigger, kAdmin, kAgent, kJoin };
std::string_view RoleName(Role r);
std::optional<Role> ParseRole(std::string_view s);

struct Principal {
  int64_t token_id = 0;
  std::string name;
  Role role = Role::kRead;
  std::string jobs_glob;  // read and trigger roles: only these jobs; "" = all
  std::string agent;      // agent role: the agent this token is (never from a request body)
  // Agent and join roles: the labels an agent may claim with, label -> value glob; empty
  // means any labels.
  std::map<std::string, std::string> labels;
  std::optional<int64_t> expires_ms;  // wall clock; nullopt = never
};

// Names and labels stored with a token or an agent: at most 64 characters of [A-Za-z0-9._-]
// (labels may also use '/', a label value may be empty, and a label glob may use * and ?),
// at most kMaxLabels labels. Every error names `what`.
inline constexpr size_t kMaxNameChars = 64;
inline constexpr size_t kMaxLabels = 32;
Status CheckName(std::string_view name, std::string_view what);
Status CheckLabels(const std::map<std::string, std::string>& labels, bool globs,
                   std::string_view what);
// Whether every one of `labels` is allowed by `allowed` (label -> value glob; empty allows
// anything); else the first label that is not, as "k=v".
std::optional<std::string> LabelOutside(const std::map<std::string, std::string>& labels,
                                        const std::map<std::string, std::string>& allowed);

// 128 random bits as text: "jc_" + 32 hex digits.
Result<std::string> NewSecret();
std::string HashSecret(std::string_view secret);               // hex SHA-256
bool GlobMatch(std::string_view glob, std::string_view text);  // * and ? (fnmatch)

class Auth {
 public:
  explicit Auth(const Clock* clock) : clock_(clock) {}
  void Clear() { by_hash_.clear(); }
  void Add(const store::TokenRow& row);
  void Revoke(int64_t id);
  // Forgets every token bound to this agent name (after the store revoked them).
  void RevokeAgent(std::string_view agent);
  // The active agent token bound to this name, if any (expired ones do not count).
  std::optional<int64_t> AgentToken(std::string_view agent) const;
  // The principal for an "Authorization: Bearer ..." header value; kUnauthenticated when
  // missing, malformed, unknown, revoked or expired ("token expired").
  Result<Principal> Authenticate(std::string_view authorization_header) const;

  // Whether `who` may use a route that needs `needed` (for a job name, when it has one).
  static bool Allows(const Principal& who, Role needed, std::string_view job);
  bool empty() const { return by_hash_.empty(); }

 private:
  bool Expired(const Principal& p) const;

  const Clock* clock_;
  std::map<std::string, Principal, std::less<>> by_hash_;
};

}  // namespace jobctl::coordinator
