#include "coordinator/auth.h"

#include <fnmatch.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sys/random.h>

#include <cerrno>
#include <cstring>

namespace jobctl::coordinator {
namespace {

std::string Hex(const unsigned char* p, size_t n) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    out += kDigits[p[i] >> 4];
    out += kDigits[p[i] & 15];
  }
  return out;
}

}  // namespace

std::string_view RoleName(Role r) {
  switch (r) {
    case Role::kOpen: return "open";
    case Role::kRead: return "read";
    case Role::kTrigger: return "trigger";
    case Role::kAdmin: return "admin";
    case Role::kAgent: return "agent";
  }
  return "?";
}

std::optional<Role> ParseRole(std::string_view s) {
  for (Role r : {Role::kRead, Role::kTrigger, Role::kAdmin, Role::kAgent}) {
    if (RoleName(r) == s) return r;
  }
  return std::nullopt;
}

Result<std::string> NewSecret() {
  unsigned char bytes[16];
  if (getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
    return Status::Io(std::string("getrandom: ") + std::strerror(errno));
  }
  return "jc_" + Hex(bytes, sizeof bytes);
}

std::string HashSecret(std::string_view secret) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(secret.data(), secret.size(), digest, &len, EVP_sha256(), nullptr);
  return Hex(digest, len);
}

bool GlobMatch(std::string_view glob, std::string_view text) {
  return fnmatch(std::string(glob).c_str(), std::string(text).c_str(), 0) == 0;
}

void Auth::Add(const store::TokenRow& row) {
  if (row.revoked_ms) return;
  std::optional<Role> role = ParseRole(row.role);
  if (!role) return;
  by_hash_[row.hash] = Principal{row.id, row.name, *role, row.jobs};
}

void Auth::Revoke(int64_t id) {
  for (auto it = by_hash_.begin(); it != by_hash_.end(); ++it) {
    if (it->second.token_id == id) {
      by_hash_.erase(it);
      return;
    }
  }
}

Result<Principal> Auth::Authenticate(std::string_view header) const {
  constexpr std::string_view kBearer = "Bearer ";
  if (header.empty()) return Status::Unauthenticated("missing bearer token");
  if (header.substr(0, kBearer.size()) != kBearer) {
    return Status::Unauthenticated("expected \"Authorization: Bearer <token>\"");
  }
  std::string hash = HashSecret(header.substr(kBearer.size()));
  auto it = by_hash_.find(hash);
  // The map finds the entry by hash, which tells an attacker nothing about the secret; the
  // final comparison is constant-time all the same.
  if (it == by_hash_.end() || CRYPTO_memcmp(it->first.data(), hash.data(), hash.size()) != 0) {
    return Status::Unauthenticated("unknown or revoked token");
  }
  return it->second;
}

bool Auth::Allows(const Principal& who, Role needed, std::string_view job) {
  switch (needed) {
    case Role::kOpen: return true;
    case Role::kAdmin: return who.role == Role::kAdmin;
    case Role::kAgent: return who.role == Role::kAgent;
    case Role::kRead:
      if (who.role == Role::kAdmin) return true;
      if (who.role != Role::kRead && who.role != Role::kTrigger) return false;
      // A scoped token reads only its jobs; routes without a job filter what they list.
      return job.empty() || who.jobs_glob.empty() || GlobMatch(who.jobs_glob, job);
    case Role::kTrigger:
      if (who.role == Role::kAdmin) return true;
      if (who.role != Role::kTrigger) return false;
      return who.jobs_glob.empty() || GlobMatch(who.jobs_glob, job);
  }
  return false;
}

}  // namespace jobctl::coordinator
