#include "coordinator/auth.h"

#include <fnmatch.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

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

// Letters, digits, '.', '_' and '-', and whatever `extra` adds ("/" in labels, as agentd
// allows; "*?" in label globs).
Status CheckText(std::string_view text, std::string_view what, bool may_be_empty,
                 std::string_view extra) {
  if (text.empty() && !may_be_empty)
    return Status::InvalidArgument(std::string(what) + " is empty");
  if (text.size() > kMaxNameChars) {
    return Status::InvalidArgument(std::string(what) + " is longer than " +
                                   std::to_string(kMaxNameChars) + " characters");
  }
  for (char c : text) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-' || extra.find(c) != std::string_view::npos;
    if (!ok) {
      return Status::InvalidArgument(std::string(what) + " may only use letters, digits and . _ -" +
                                     (extra.empty() ? "" : " " + std::string(extra)));
    }
  }
  return Status::Ok();
}

}  // namespace

Status CheckName(std::string_view name, std::string_view what) {
  return CheckText(name, what, false, "");
}

Status CheckLabels(const std::map<std::string, std::string>& labels, bool globs,
                   std::string_view what) {
  if (labels.size() > kMaxLabels) {
    return Status::InvalidArgument(std::string(what) + ": at most " + std::to_string(kMaxLabels) +
                                   " labels");
  }
  for (const auto& [k, v] : labels) {
    if (Status s = CheckText(k, std::string(what) + " label name", false, "/"); !s.ok()) return s;
    if (Status s = CheckText(v, std::string(what) + " label " + k, true, globs ? "/*?" : "/");
        !s.ok()) {
      return s;
    }
  }
  return Status::Ok();
}

std::optional<std::string> LabelOutside(const std::map<std::string, std::string>& labels,
                                        const std::map<std::string, std::string>& allowed) {
  if (allowed.empty()) return std::nullopt;
  for (const auto& [k, v] : labels) {
    auto it = allowed.find(k);
    if (it == allowed.end() || !GlobMatch(it->second, v)) return k + "=" + v;
  }
  return std::nullopt;
}

std::string_view RoleName(Role r) {
  switch (r) {
    case Role::kOpen: return "open";
    case Role::kRead: return "read";
    case Role::kTrigger: return "trigger";
    case Role::kAdmin: return "admin";
    case Role::kAgent: return "agent";
    case Role::kJoin: return "join";
  }
  return "?";
}

std::optional<Role> ParseRole(std::string_view s) {
  for (Role r : {Role::kRead, Role::kTrigger, Role::kAdmin, Role::kAgent, Role::kJoin}) {
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
  // An agent token speaks for one agent: without a name it would speak for none.
  if (!role || (*role == Role::kAgent && row.agent.empty())) return;
  Principal p{row.id, row.name, *role, row.jobs, row.agent, {}, row.expires_ms};
  nlohmann::json labels = nlohmann::json::parse(row.labels_json, nullptr, false);
  if (labels.is_object()) {
    for (auto it = labels.begin(); it != labels.end(); ++it) {
      if (it.value().is_string()) p.labels[it.key()] = it.value().get<std::string>();
    }
  }
  by_hash_[row.hash] = std::move(p);
}

void Auth::Revoke(int64_t id) {
  for (auto it = by_hash_.begin(); it != by_hash_.end(); ++it) {
    if (it->second.token_id == id) {
      by_hash_.erase(it);
      return;
    }
  }
}

void Auth::RevokeAgent(std::string_view agent) {
  std::erase_if(by_hash_, [agent](const auto& item) {
    return item.second.role == Role::kAgent && item.second.agent == agent;
  });
}

std::optional<int64_t> Auth::AgentToken(std::string_view agent) const {
  for (const auto& [hash, p] : by_hash_) {
    if (p.role == Role::kAgent && p.agent == agent && !Expired(p)) return p.token_id;
  }
  return std::nullopt;
}

bool Auth::Expired(const Principal& p) const {
  return p.expires_ms && clock_ != nullptr && ToUnixMs(clock_->Now()) >= *p.expires_ms;
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
  if (Expired(it->second)) return Status::Unauthenticated("token expired");
  return it->second;
}

bool Auth::Allows(const Principal& who, Role needed, std::string_view job) {
  switch (needed) {
    case Role::kOpen: return true;
    case Role::kAdmin: return who.role == Role::kAdmin;
    case Role::kAgent: return who.role == Role::kAgent;
    // Enrolment: a join token enrols a new agent; an agent token asks who it is bound to.
    case Role::kJoin: return who.role == Role::kJoin || who.role == Role::kAgent;
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
