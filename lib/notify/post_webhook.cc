// PostWebhook(): one POST with a blocking curl easy handle. The answer's body matters only
// for the error message, so at most kMaxAnswerBytes of it are read before the transfer is
// cut short; redirects are not followed (a receiver that moved must be reconfigured, not
// trusted to send signed notifications elsewhere).
#include <algorithm>
#include <string>

#include "base/version.h"
#include "notify/curl_easy.h"
#include "notify/render.h"
#include "notify/send.h"
#include "notify/text.h"

namespace jobctl::notify {
namespace {

constexpr size_t kMaxAnswerBytes = 4096;
constexpr size_t kExcerptBytes = 200;

struct Answer {
  std::string body;
  bool cut = false;  // more came than kMaxAnswerBytes: the transfer was stopped on purpose
};

size_t OnBody(char* data, size_t size, size_t count, void* self) {
  Answer* answer = static_cast<Answer*>(self);
  size_t n = size * count;
  size_t room = kMaxAnswerBytes - answer->body.size();
  answer->body.append(data, std::min(n, room));
  if (n <= room) return n;
  answer->cut = true;
  return 0;  // stops the transfer (CURLE_WRITE_ERROR)
}

Status SetOptions(CURL* easy, const WebhookChannel& channel, const std::string& body,
                  const internal::HeaderList& headers, Answer* answer, char* error_buffer) {
  static const std::string kUserAgent = std::string("jobctl/") + kVersion;
  long connect_ms = std::min<int64_t>(channel.timeout_ms, 10'000);
  bool ok = curl_easy_setopt(easy, CURLOPT_URL, channel.url.c_str()) == CURLE_OK &&
            curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK &&
            curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L) == CURLE_OK &&
            curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L) == CURLE_OK &&
            curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, error_buffer) == CURLE_OK &&
            curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(channel.timeout_ms)) ==
                CURLE_OK &&
            curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, connect_ms) == CURLE_OK &&
            curl_easy_setopt(easy, CURLOPT_SSLVERSION, CURL_SSLVERSION_TLSv1_2) == CURLE_OK &&
            curl_easy_setopt(easy, CURLOPT_USERAGENT, kUserAgent.c_str()) == CURLE_OK &&
            curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers.get()) == CURLE_OK &&
            curl_easy_setopt(easy, CURLOPT_POST, 1L) == CURLE_OK &&
            curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body.data()) == CURLE_OK &&
            curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE,
                             static_cast<curl_off_t>(body.size())) == CURLE_OK &&
            curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &OnBody) == CURLE_OK &&
            curl_easy_setopt(easy, CURLOPT_WRITEDATA, answer) == CURLE_OK;
  if (ok && !channel.ca_file.empty()) {
    ok = curl_easy_setopt(easy, CURLOPT_CAINFO, channel.ca_file.c_str()) == CURLE_OK;
  }
  return ok ? Status::Ok() : Status::Internal("curl refused an HTTP option");
}

Status BuildHeaders(const WebhookChannel& channel, const Notification& n, int64_t timestamp_s,
                    const std::string& body, internal::HeaderList* headers) {
  bool ok = headers->Append("Content-Type: application/json") &&
            headers->Append("Expect:") &&  // no 100-continue round trip
            headers->Append("X-Jobctl-Delivery: " + internal::Token(n.delivery_id)) &&
            headers->Append("X-Jobctl-Timestamp: " + std::to_string(timestamp_s));
  if (ok && !channel.secret.empty()) {
    ok = headers->Append("X-Jobctl-Signature: " + Signature(channel.secret, timestamp_s, body));
  }
  return ok ? Status::Ok() : Status::Internal("out of memory");
}

// The Status for an answer that is not 2xx: retrying may help for 408, 429 and 5xx.
Status Refused(long http_status, const Answer& answer, const std::string& prefix) {
  std::string why = prefix + ": HTTP " + std::to_string(http_status);
  std::string excerpt = internal::Truncate(internal::OneLine(answer.body), kExcerptBytes);
  if (!excerpt.empty()) why += ": " + excerpt;
  if (http_status >= 300 && http_status <= 399) why += " (redirects are not followed)";
  if (http_status == 408 || http_status == 429 || http_status >= 500) {
    return Status::Unavailable(std::move(why));
  }
  return Status::PermissionDenied(std::move(why));
}

}  // namespace

Status PostWebhook(const WebhookChannel& channel, const Notification& n, int64_t now_ms) {
  if (Status s = CheckWebhookChannel(channel); !s.ok()) return s;
  const std::string prefix = internal::ChannelPrefix(channel.name) + PrintableUrl(channel.url);
  if (!internal::CurlReady()) return Status::Internal(prefix + ": curl_global_init failed");
  internal::Easy easy(curl_easy_init());
  if (!easy) return Status::Internal(prefix + ": curl_easy_init failed");
  const std::string body = WebhookBody(n);
  internal::HeaderList headers;
  if (Status s = BuildHeaders(channel, n, now_ms / 1000, body, &headers); !s.ok()) {
    return s.WithContext(prefix);
  }
  Answer answer;
  char error_buffer[CURL_ERROR_SIZE] = {};
  if (Status s = SetOptions(easy.get(), channel, body, headers, &answer, error_buffer); !s.ok()) {
    return s.WithContext(prefix);
  }
  CURLcode code = curl_easy_perform(easy.get());
  if (code == CURLE_WRITE_ERROR && answer.cut) code = CURLE_OK;
  if (code != CURLE_OK) {
    std::string why = prefix + ": " + internal::CurlReason(code, error_buffer);
    if (code == CURLE_SSL_CACERT_BADFILE) return Status::InvalidArgument(std::move(why));
    return Status::Unavailable(internal::WithoutSecret(std::move(why), channel.secret));
  }
  long http_status = 0;
  curl_easy_getinfo(easy.get(), CURLINFO_RESPONSE_CODE, &http_status);
  if (http_status >= 200 && http_status <= 299) return Status::Ok();
  return Refused(http_status, answer, prefix);
}

}  // namespace jobctl::notify
