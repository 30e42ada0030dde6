// Auth decides who may call which route. API tokens are random secrets handed out once
// (bootstrap files, `jobctl token create`) and stored only as SHA-256 hashes. Each has a
// role: admin (everything), read (list, show, runs, logs), trigger (trigger and read), agent
// (the agent routes only). A read or trigger token may be limited to jobs matching a glob: it
// then reads and triggers only those.
// Loop thread only; owned by the Coordinator.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "store/store.h"

namespace jobctl::coordinator {

enum class Role { kOpen, kRead, kTrigger, kAdmin, kAgent };
std::string_view RoleName(Role r);
std::optional<Role> ParseRole(std::string_view s);

struct Principal {
  int64_t token_id = 0;
  std::string name;
  Role role = Role::kRead;
  std::string jobs_glob;  // read and trigger roles: only these jobs; "" = all
};

// 128 random bits as text: "jc_" + 32 hex digits.
Result<std::string> NewSecret();
std::string HashSecret(std::string_view secret);  // hex SHA-256
bool GlobMatch(std::string_view glob, std::string_view text);  // * and ? (fnmatch)

class Auth {
 public:
  void Clear() { by_hash_.clear(); }
  void Add(const store::TokenRow& row);
  void Revoke(int64_t id);
  // The principal for an "Authorization: Bearer ..." header value; kUnauthenticated when
  // missing, malformed, unknown or revoked.
  Result<Principal> Authenticate(std::string_view authorization_header) const;
  // Whether `who` may use a route that needs `needed` (for a job name, when it has one).
  static bool Allows(const Principal& who, Role needed, std::string_view job);
  bool empty() const { return by_hash_.empty(); }

 private:
  std::map<std::string, Principal, std::less<>> by_hash_;
};

}  // namespace jobctl::coordinator
