#include "notify/curl_easy.h"

#include <cctype>

#include "notify/text.h"

namespace jobctl::notify::internal {
namespace {

struct UrlCleanup {
  void operator()(CURLU* url) const { curl_url_cleanup(url); }
};

// The part, or "" when the URL has none.
std::string Part(CURLU* url, CURLUPart part, unsigned int flags = 0) {
  char* value = nullptr;
  if (curl_url_get(url, part, &value, flags) != CURLUE_OK || value == nullptr) return "";
  std::string out(value);
  curl_free(value);
  return out;
}

}  // namespace

bool CurlReady() {
  // A function-local static is initialized once even with several threads calling.
  static const bool ready = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  return ready;
}

bool HeaderList::Append(const std::string& line) {
  curl_slist* head = curl_slist_append(list_.get(), line.c_str());
  if (head == nullptr) return false;
  list_.release();
  list_.reset(head);
  return true;
}

std::optional<UrlParts> ParseUrl(std::string_view url) {
  for (char c : url) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) return std::nullopt;
  }
  if (!CurlReady()) return std::nullopt;
  std::unique_ptr<CURLU, UrlCleanup> u(curl_url());
  if (!u || curl_url_set(u.get(), CURLUPART_URL, std::string(url).c_str(), 0) != CURLUE_OK) {
    return std::nullopt;
  }
  UrlParts parts;
  parts.scheme = Part(u.get(), CURLUPART_SCHEME);
  for (char& c : parts.scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  parts.host = Part(u.get(), CURLUPART_HOST);
  parts.port = Part(u.get(), CURLUPART_PORT, CURLU_DEFAULT_PORT);
  parts.path = Part(u.get(), CURLUPART_PATH);
  if (parts.path.empty()) parts.path = "/";
  parts.has_userinfo =
      !Part(u.get(), CURLUPART_USER).empty() || !Part(u.get(), CURLUPART_PASSWORD).empty();
  parts.has_query = !Part(u.get(), CURLUPART_QUERY).empty();
  return parts;
}

bool IsLoopbackHost(std::string_view host) {
  if (host == "localhost" || host == "[::1]") return true;
  // 127.0.0.0/8 as a dotted literal; "127.example.com" is a name like any other.
  if (host.substr(0, 4) != "127.") return false;
  for (char c : host) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.') return false;
  }
  return true;
}

std::string CurlReason(CURLcode code, const char* error_buffer) {
  std::string reason = error_buffer != nullptr && error_buffer[0] != '\0'
                           ? std::string(error_buffer)
                           : std::string(curl_easy_strerror(code));
  while (!reason.empty() && (reason.back() == '\n' || reason.back() == ' ' || reason.back() == '.'))
    reason.pop_back();
  // "Login denied" reads "login denied" after a colon; "SSL certificate problem" stays.
  if (reason.size() > 1 && std::isupper(static_cast<unsigned char>(reason[0])) &&
      std::islower(static_cast<unsigned char>(reason[1]))) {
    reason[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(reason[0])));
  }
  if (code == CURLE_PEER_FAILED_VERIFICATION) reason += " (is ca_file the CA that signed it?)";
  return OneLine(reason);
}

std::string ChannelPrefix(std::string_view channel) {
  return "notify channel \"" + Truncate(OneLine(channel), 128) + "\": ";
}

std::string WithoutSecret(std::string text, std::string_view secret) {
  // A secret this short would match ordinary words; curl never echoes one anyway.
  if (secret.size() < 4) return text;
  for (size_t at = text.find(secret); at != std::string::npos; at = text.find(secret, at + 3)) {
    text.replace(at, secret.size(), "***");
  }
  return text;
}

}  // namespace jobctl::notify::internal
