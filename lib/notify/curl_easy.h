// What the senders of lib/notify share around libcurl: owners for an easy handle and a
// header list, curl's process-wide initialization done once, URLs taken apart with curl's
// own parser (curl_url), and the start of every error message. Not part of the API.
#pragma once

#include <curl/curl.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace jobctl::notify::internal {

// curl_global_init, once per process (thread-safe); false when it failed.
bool CurlReady();

struct EasyCleanup {
  void operator()(CURL* easy) const { curl_easy_cleanup(easy); }
};
using Easy = std::unique_ptr<CURL, EasyCleanup>;

struct SlistCleanup {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
// Appends keep the list's head: append through Append(), never curl_slist_append directly.
class HeaderList {
 public:
  bool Append(const std::string& line);
  curl_slist* get() const { return list_.get(); }

 private:
  std::unique_ptr<curl_slist, SlistCleanup> list_;
};

struct UrlParts {
  std::string scheme;  // lower case
  std::string host;    // an IPv6 address in brackets
  std::string port;    // the scheme's default when the URL has none
  std::string path;    // "/" when the URL has none
  bool has_userinfo = false;
  bool has_query = false;
};

// The URL taken apart, or nullopt when curl cannot parse it (or it holds a control
// character or a space).
std::optional<UrlParts> ParseUrl(std::string_view url);

// Whether host names this machine's loopback interface.
bool IsLoopbackHost(std::string_view host);

// curl's reason for `code`: the error buffer when it says something, else
// curl_easy_strerror; first letter in lower case ("login denied").
std::string CurlReason(CURLcode code, const char* error_buffer);

// "notify channel \"ops\": " (the name cleaned to one line).
std::string ChannelPrefix(std::string_view channel);

// `text` with every occurrence of `secret` (4 bytes or longer) replaced by "***".
std::string WithoutSecret(std::string text, std::string_view secret);

}  // namespace jobctl::notify::internal
