#include "httpclient/blocking_client.h"

#include <fcntl.h>

#include <algorithm>
#include <cctype>
#include <system_error>

namespace jobctl::http {
namespace {

std::string JoinUrl(std::string_view base, std::string_view path) {
  if (!base.empty() && base.back() == '/' && !path.empty() && path.front() == '/')
    path.remove_prefix(1);
  return std::string(base) + std::string(path);
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// A hint for the usual causes of a failed handshake.
std::string TlsHint(std::string_view detail) {
  if (detail.find("wrong version number") != std::string_view::npos)
    return " (is it serving plain HTTP? then use http://)";
  if (detail.find("certificate required") != std::string_view::npos)
    return " (the coordinator requires a client certificate: set client_cert and client_key)";
  if (detail.find("unknown ca") != std::string_view::npos ||
      detail.find("bad certificate") != std::string_view::npos)
    return " (the coordinator does not trust this client certificate's CA)";
  return "";
}

// Errors that happen before a connection exists: the server is not there (yet).
bool IsConnectError(CURLcode code) {
  return code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST ||
         code == CURLE_COULDNT_RESOLVE_PROXY;
}

}  // namespace

BlockingClient::BlockingClient(std::string base_url, std::string token, TlsOptions tls)
    : base_url_(std::move(base_url)), token_(std::move(token)), tls_(std::move(tls)) {
  // Reference-counted and, since curl 7.84, thread-safe; paired with the cleanup below.
  curl_global_init(CURL_GLOBAL_DEFAULT);
}

BlockingClient::~BlockingClient() {
  if (easy_ != nullptr) curl_easy_cleanup(easy_);
  curl_global_cleanup();
}

Result<HttpResponse> BlockingClient::Request(std::string_view path, const RequestOptions& options) {
  // The handle is created on first use and then kept: its connection cache is what makes the
  // second request of a jobctl command reuse the first one's connection.
  if (easy_ == nullptr) easy_ = curl_easy_init();
  if (easy_ == nullptr) return Status::Internal("curl_easy_init failed");
  internal::Transfer transfer(JoinUrl(base_url_, path), token_, options, tls_);
  Status applied = transfer.Apply(easy_);
  CURLcode code = applied.ok() ? curl_easy_perform(easy_) : CURLE_OK;
  last_never_connected_ = applied.ok() && IsConnectError(code);
  Result<HttpResponse> result =
      applied.ok() ? transfer.Finish(easy_, code) : Result<HttpResponse>(applied);
  // Reset drops the options that point into `transfer` but keeps live connections.
  curl_easy_reset(easy_);
  return result;
}

namespace internal {

Transfer::Transfer(std::string url, std::string_view token, const RequestOptions& options,
                   TlsOptions tls)
    : url_(std::move(url)),
      method_(options.method),
      body_(options.shared_body ? options.shared_body
                                : std::make_shared<const std::string>(options.body)),
      timeout_ms_(static_cast<long>(options.timeout.count())),
      connect_timeout_ms_(static_cast<long>(options.connect_timeout.count())),
      tls_(std::move(tls)) {
  std::vector<std::string> lines;
  // An empty "Expect:" stops curl from sending "Expect: 100-continue" for bodies over 1 KiB,
  // which would cost a round trip (or a full second against servers that ignore it).
  lines.emplace_back("Expect:");
  if (SendsBody()) lines.push_back("Content-Type: " + options.content_type);
  if (!token.empty()) lines.push_back("Authorization: Bearer " + std::string(token));
  for (const auto& [name, value] : options.headers) lines.push_back(name + ": " + value);
  for (const std::string& line : lines) {
    curl_slist* grown = curl_slist_append(header_list_, line.c_str());
    if (grown == nullptr) {
      headers_complete_ = false;  // out of memory: Apply() refuses to send a short list
      break;
    }
    header_list_ = grown;
  }
}

Transfer::~Transfer() { curl_slist_free_all(header_list_); }

bool Transfer::SendsBody() const {
  return !body_->empty() || method_ == "POST" || method_ == "PUT" || method_ == "PATCH";
}

Status Transfer::Apply(CURL* easy) {
  if (!headers_complete_) return Status::Internal(Describe() + ": out of memory building headers");
  CURLcode rc = CURLE_OK;
  auto set = [&](CURLoption option, auto value) {
    if (rc == CURLE_OK) rc = curl_easy_setopt(easy, option, value);
  };
  set(CURLOPT_URL, url_.c_str());
  set(CURLOPT_PROTOCOLS_STR, "http,https");
  // Signals would be a process-wide side effect, and agentd owns its signals through libuv.
  set(CURLOPT_NOSIGNAL, 1L);
  // curl's sockets are not close-on-exec; without this every process agentd starts would
  // inherit its connections to the coordinator, keep them open after agentd dies (hiding the
  // death from the coordinator) and could even write to them.
  set(
      CURLOPT_SOCKOPTFUNCTION, +[](void*, curl_socket_t fd, curlsocktype) -> int {
        int flags = fcntl(fd, F_GETFD);
        return flags >= 0 && fcntl(fd, F_SETFD, flags | FD_CLOEXEC) == 0 ? CURL_SOCKOPT_OK
                                                                         : CURL_SOCKOPT_ERROR;
      });
  set(CURLOPT_FOLLOWLOCATION, 0L);
  set(CURLOPT_TIMEOUT_MS, timeout_ms_);
  set(CURLOPT_CONNECTTIMEOUT_MS, connect_timeout_ms_);
  set(CURLOPT_ERRORBUFFER, error_);
  set(CURLOPT_HTTPHEADER, header_list_);
  set(CURLOPT_WRITEFUNCTION, &Transfer::OnBody);
  set(CURLOPT_WRITEDATA, static_cast<void*>(this));
  set(CURLOPT_HEADERFUNCTION, &Transfer::OnHeader);
  set(CURLOPT_HEADERDATA, static_cast<void*>(this));
  set(CURLOPT_SSLVERSION, static_cast<long>(CURL_SSLVERSION_TLSv1_2));
  if (!tls_.ca_file.empty()) {
    set(CURLOPT_CAINFO, tls_.ca_file.c_str());
    // Only that file: without this, curl also trusts the system's directory of CAs.
    set(CURLOPT_CAPATH, static_cast<const char*>(nullptr));
  }
  if (!tls_.client_cert.empty()) set(CURLOPT_SSLCERT, tls_.client_cert.c_str());
  if (!tls_.client_key.empty()) set(CURLOPT_SSLKEY, tls_.client_key.c_str());
  if (SendsBody()) {
    set(CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body_->size()));
    set(CURLOPT_POSTFIELDS, body_->data());
    if (method_ != "POST") set(CURLOPT_CUSTOMREQUEST, method_.c_str());
  } else if (method_ == "HEAD") {
    set(CURLOPT_NOBODY, 1L);
  } else {
    set(CURLOPT_HTTPGET, 1L);
    if (method_ != "GET") set(CURLOPT_CUSTOMREQUEST, method_.c_str());
  }
  if (rc != CURLE_OK)
    return Status::Internal(Describe() + ": cannot set up request: " + curl_easy_strerror(rc));
  return Status::Ok();
}

size_t Transfer::OnBody(char* data, size_t size, size_t count, void* self) {
  static_cast<Transfer*>(self)->response_.body.append(data, size * count);
  return size * count;
}

size_t Transfer::OnHeader(char* data, size_t size, size_t count, void* self) {
  static_cast<Transfer*>(self)->AddHeaderLine(std::string_view(data, size * count));
  return size * count;
}

void Transfer::AddHeaderLine(std::string_view line) {
  // A status line starts a new response (after a 1xx one); only the last response's headers
  // belong to the result.
  if (line.starts_with("HTTP/")) {
    response_.headers.clear();
    return;
  }
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return;  // the blank line ending the headers
  std::string name(Trim(line.substr(0, colon)));
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string_view value = Trim(line.substr(colon + 1));
  auto [it, inserted] = response_.headers.try_emplace(name, value);
  if (!inserted) it->second.append(", ").append(value);
}

Result<HttpResponse> Transfer::Finish(CURL* easy, CURLcode code) {
  if (code != CURLE_OK) return ErrorStatus(easy, code);
  long status = 0;
  curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
  response_.status = static_cast<int>(status);
  return std::move(response_);
}

Status Transfer::ErrorStatus(CURL* easy, CURLcode code) const {
  std::string detail = error_[0] != '\0' ? std::string(error_) : curl_easy_strerror(code);
  long os_errno = 0;
  curl_easy_getinfo(easy, CURLINFO_OS_ERRNO, &os_errno);
  // curl 7.88 says "Couldn't connect to server"; the errno says why ("Connection refused").
  if (os_errno != 0) {
    std::string why = std::generic_category().message(static_cast<int>(os_errno));
    if (detail.find(why) == std::string::npos) detail += " (" + why + ")";
  }
  switch (code) {
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT: return Status::InvalidArgument("bad URL " + url_ + ": " + detail);
    case CURLE_OUT_OF_MEMORY: return Status::Internal(Describe() + ": " + detail);
    case CURLE_SSL_CACERT_BADFILE:
      return Status::InvalidArgument("TLS: cannot use CA file " + tls_.ca_file + " for " + url_ +
                                     ": " + detail);
    case CURLE_SSL_CERTPROBLEM:
      return Status::InvalidArgument("TLS: cannot use client certificate " + tls_.client_cert +
                                     " (key " + tls_.client_key + ") for " + url_ + ": " + detail);
    case CURLE_PEER_FAILED_VERIFICATION:
      return Status::Unavailable("TLS: cannot verify the certificate of " + url_ + ": " + detail +
                                 (tls_.ca_file.empty()
                                      ? " (set the CA that signed it with ca_file or --ca-file)"
                                      : " (is " + tls_.ca_file + " the CA that signed it?)"));
    case CURLE_SSL_CONNECT_ERROR:
      return Status::Unavailable("TLS handshake with " + url_ + " failed: " + detail +
                                 TlsHint(detail));
    default: break;
  }
  // Under TLS 1.3 a server that refuses the client's certificate says so after the client
  // finished its handshake, so curl sees it on the first read.
  if (detail.find("alert certificate required") != std::string::npos ||
      detail.find("alert unknown ca") != std::string::npos ||
      detail.find("alert bad certificate") != std::string::npos) {
    return Status::Unavailable("TLS: " + url_ + " refused the client: " + detail + TlsHint(detail));
  }
  if (IsConnectError(code)) return Status::Unavailable("cannot reach " + url_ + ": " + detail);
  return Status::Unavailable(Describe() + " failed: " + detail);
}

}  // namespace internal
}  // namespace jobctl::http
