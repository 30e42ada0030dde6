// The channel checks and PrintableUrl(): what the coordinator validates when it loads
// coordinator.toml, and what the senders check again before each delivery.
#include <unistd.h>

#include <string>

#include "notify/curl_easy.h"
#include "notify/send.h"
#include "notify/text.h"

namespace jobctl::notify {
namespace {

using internal::ChannelPrefix;

constexpr size_t kMaxNameBytes = 128;
constexpr size_t kMaxAddressBytes = 254;  // RFC 5321 4.5.3.1.3, the path less its brackets
constexpr size_t kMaxLocalBytes = 64;     // RFC 5321 4.5.3.1.1
constexpr size_t kMaxUserBytes = 256;
constexpr size_t kMaxSecretBytes = 1024;
constexpr size_t kMaxPathBytes = 4096;
constexpr size_t kShownSegmentBytes = 12;

bool HasControl(std::string_view text) {
  for (char c : text) {
    if (static_cast<unsigned char>(c) < ' ' || c == 0x7f) return true;
  }
  return false;
}

// local@domain in printable ASCII, without what would end the address in a header or an
// SMTP command: space, <, >, comma, semicolon, quotes, backslash, parentheses, brackets.
bool IsSaneAddress(std::string_view a) {
  if (a.empty() || a.size() > kMaxAddressBytes) return false;
  for (char c : a) {
    if (c <= ' ' || c >= 0x7f ||
        std::string_view("<>,;\"\\()[]:").find(c) != std::string_view::npos)
      return false;
  }
  size_t at = a.find('@');
  if (at == std::string_view::npos || at == 0 || at > kMaxLocalBytes || at != a.rfind('@'))
    return false;
  std::string_view domain = a.substr(at + 1);
  return !domain.empty() && domain.front() != '.' && domain.back() != '.' &&
         domain.find("..") == std::string_view::npos;
}

std::string Quoted(std::string_view text) {
  return "\"" + internal::Truncate(internal::OneLine(text), 100) + "\"";
}

Status Invalid(std::string_view channel, const std::string& what) {
  return Status::InvalidArgument(ChannelPrefix(channel) + what);
}

Status CheckName(std::string_view name) {
  if (name.empty()) return Status::InvalidArgument("notify channel: the name is empty");
  if (name.size() > kMaxNameBytes || HasControl(name)) {
    return Invalid(name, "the name must be at most 128 bytes without control characters");
  }
  return Status::Ok();
}

// The URL parses, has one of the schemes and a host, and fits.
Result<internal::UrlParts> CheckUrl(std::string_view channel, std::string_view url,
                                    std::string_view scheme_a, std::string_view scheme_b) {
  std::string expected = "url must be " + std::string(scheme_a) + "://HOST[:PORT] or " +
                         std::string(scheme_b) + "://HOST[:PORT]";
  if (url.empty()) return Invalid(channel, "url is missing (" + expected + ")");
  if (url.size() > kMaxUrlBytes) return Invalid(channel, "url is longer than 2048 bytes");
  std::optional<internal::UrlParts> parts = internal::ParseUrl(url);
  if (!parts || (parts->scheme != scheme_a && parts->scheme != scheme_b) || parts->host.empty()) {
    return Invalid(channel, expected);
  }
  return *parts;
}

Status CheckCommon(std::string_view channel, const std::string& ca_file, int64_t timeout_ms) {
  if (!ca_file.empty() && (ca_file.size() > kMaxPathBytes || HasControl(ca_file) ||
                           access(ca_file.c_str(), R_OK) != 0)) {
    return Invalid(channel, "ca_file " + Quoted(ca_file) + " cannot be read");
  }
  if (timeout_ms < 1 || timeout_ms > kMaxTimeoutMs) {
    return Invalid(channel, "timeout must be from 1ms to 10m");
  }
  return Status::Ok();
}

// A path segment longer than this is shown cut short: webhook URLs of chat services carry
// their key in the path (/services/T0/B0/KEY).
std::string ShortenedPath(std::string_view path) {
  std::string out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    std::string_view segment =
        path.substr(start, end == std::string_view::npos ? end : end - start);
    out += segment.size() > kShownSegmentBytes ? std::string(segment.substr(0, 4)) + "..."
                                               : std::string(segment);
    if (end == std::string_view::npos) break;
    out += '/';
    start = end + 1;
  }
  return out;
}

}  // namespace

std::string PrintableUrl(std::string_view url) {
  std::optional<internal::UrlParts> parts = internal::ParseUrl(url);
  if (!parts) return "(invalid URL)";
  std::string path = parts->path == "/" ? "" : ShortenedPath(parts->path);
  return internal::OneLine(parts->scheme + "://" + parts->host + ":" + parts->port + path);
}

Status CheckEmailChannel(const EmailChannel& c) {
  if (Status s = CheckName(c.name); !s.ok()) return s;
  Result<internal::UrlParts> url = CheckUrl(c.name, c.url, "smtp", "smtps");
  if (!url.ok()) return url.status();
  if (url->has_userinfo) {
    return Invalid(c.name,
                   "url must not hold a user name or password (set username, and the "
                   "password in a file)");
  }
  if (url->has_query) return Invalid(c.name, "url must not have a query");
  if (!IsSaneAddress(c.from)) {
    return Invalid(c.name, "from " + Quoted(c.from) + " is not an address like name@example.com");
  }
  if (c.to.empty()) return Invalid(c.name, "to names no address");
  if (c.to.size() > kMaxRecipients) return Invalid(c.name, "to names more than 100 addresses");
  for (const std::string& to : c.to) {
    if (!IsSaneAddress(to)) {
      return Invalid(c.name, "to " + Quoted(to) + " is not an address like name@example.com");
    }
  }
  if (c.username.size() > kMaxUserBytes || HasControl(c.username)) {
    return Invalid(c.name, "username must be at most 256 bytes without control characters");
  }
  if (c.password.size() > kMaxSecretBytes) return Invalid(c.name, "password is longer than 1 KiB");
  if (!c.password.empty() && c.username.empty()) {
    return Invalid(c.name, "a password without a username");
  }
  if (!c.password.empty() && url->scheme == "smtp" && c.starttls == EmailChannel::Tls::kNone &&
      !internal::IsLoopbackHost(url->host)) {
    return Invalid(c.name,
                   "the password would cross the network in clear: use smtps:// or "
                   "STARTTLS (only a loopback server may go without)");
  }
  return CheckCommon(c.name, c.ca_file, c.timeout_ms);
}

Status CheckWebhookChannel(const WebhookChannel& c) {
  if (Status s = CheckName(c.name); !s.ok()) return s;
  Result<internal::UrlParts> url = CheckUrl(c.name, c.url, "https", "http");
  if (!url.ok()) return url.status();
  if (c.secret.size() > kMaxSecretBytes) return Invalid(c.name, "secret is longer than 1 KiB");
  return CheckCommon(c.name, c.ca_file, c.timeout_ms);
}

}  // namespace jobctl::notify
