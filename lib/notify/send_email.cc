// SendEmail(): one SMTP transaction with a blocking curl easy handle. curl does the
// protocol: EHLO, STARTTLS (CURLOPT_USE_SSL), AUTH with the mechanisms the server offers,
// MAIL FROM, RCPT TO for each recipient, DATA with dot-stuffing, QUIT.
#include <algorithm>
#include <string>

#include "notify/curl_easy.h"
#include "notify/render.h"
#include "notify/send.h"

namespace jobctl::notify {
namespace {

// The message as curl reads it, in pieces of its choosing.
struct Upload {
  std::string_view rest;
};

size_t ReadMessage(char* buffer, size_t size, size_t count, void* self) {
  Upload* upload = static_cast<Upload*>(self);
  size_t n = std::min(size * count, upload->rest.size());
  std::copy_n(upload->rest.data(), n, buffer);
  upload->rest.remove_prefix(n);
  return n;
}

long TlsMode(const EmailChannel& channel) {
  switch (channel.starttls) {
    case EmailChannel::Tls::kRequired: return CURLUSESSL_ALL;
    case EmailChannel::Tls::kTry: return CURLUSESSL_TRY;
    case EmailChannel::Tls::kNone: return CURLUSESSL_NONE;
  }
  return CURLUSESSL_ALL;
}

Status SetOptions(CURL* easy, const EmailChannel& channel, const internal::HeaderList& rcpt,
                  Upload* upload, char* error_buffer) {
  // smtps:// is TLS from the first byte whatever USE_SSL says; for smtp:// it is STARTTLS.
  long connect_ms = std::min<int64_t>(channel.timeout_ms, 10'000);
  const std::string from = "<" + channel.from + ">";
  bool ok = curl_easy_setopt(easy, CURLOPT_URL, channel.url.c_str()) == CURLE_OK &&
            curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "smtp,smtps") == CURLE_OK &&
            curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L) == CURLE_OK &&
            curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, error_buffer) == CURLE_OK &&
            curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(channel.timeout_ms)) ==
                CURLE_OK &&
            curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, connect_ms) == CURLE_OK &&
            curl_easy_setopt(easy, CURLOPT_USE_SSL, TlsMode(channel)) == CURLE_OK &&
            curl_easy_setopt(easy, CURLOPT_SSLVERSION, CURL_SSLVERSION_TLSv1_2) == CURLE_OK &&
            curl_easy_setopt(easy, CURLOPT_MAIL_FROM, from.c_str()) == CURLE_OK &&
            curl_easy_setopt(easy, CURLOPT_MAIL_RCPT, rcpt.get()) == CURLE_OK &&
            curl_easy_setopt(easy, CURLOPT_UPLOAD, 1L) == CURLE_OK &&
            curl_easy_setopt(easy, CURLOPT_READFUNCTION, &ReadMessage) == CURLE_OK &&
            curl_easy_setopt(easy, CURLOPT_READDATA, upload) == CURLE_OK &&
            curl_easy_setopt(easy, CURLOPT_INFILESIZE_LARGE,
                             static_cast<curl_off_t>(upload->rest.size())) == CURLE_OK;
  if (ok && !channel.ca_file.empty()) {
    ok = curl_easy_setopt(easy, CURLOPT_CAINFO, channel.ca_file.c_str()) == CURLE_OK;
  }
  if (ok && !channel.username.empty()) {
    ok = curl_easy_setopt(easy, CURLOPT_USERNAME, channel.username.c_str()) == CURLE_OK &&
         curl_easy_setopt(easy, CURLOPT_PASSWORD, channel.password.c_str()) == CURLE_OK;
  }
  return ok ? Status::Ok() : Status::Internal("curl refused an SMTP option");
}

// The Status for a failed transaction: which kind by curl's code and the server's last
// reply (reply_code 0 when there was none).
Status Failure(CURLcode code, long reply_code, std::string message) {
  if (code == CURLE_LOGIN_DENIED) return Status::Unauthenticated(std::move(message));
  if (code == CURLE_SSL_CACERT_BADFILE) return Status::InvalidArgument(std::move(message));
  if (reply_code >= 500 && reply_code <= 599) return Status::PermissionDenied(std::move(message));
  return Status::Unavailable(std::move(message));
}

}  // namespace

Status SendEmail(const EmailChannel& channel, const Notification& n, int64_t now_ms) {
  if (Status s = CheckEmailChannel(channel); !s.ok()) return s;
  const std::string prefix = internal::ChannelPrefix(channel.name) + PrintableUrl(channel.url);
  if (!internal::CurlReady()) return Status::Internal(prefix + ": curl_global_init failed");
  internal::Easy easy(curl_easy_init());
  if (!easy) return Status::Internal(prefix + ": curl_easy_init failed");
  internal::HeaderList rcpt;
  for (const std::string& to : channel.to) {
    if (!rcpt.Append("<" + to + ">")) return Status::Internal(prefix + ": out of memory");
  }
  const std::string message = EmailMessage(channel, n, now_ms);
  Upload upload{message};
  char error_buffer[CURL_ERROR_SIZE] = {};
  if (Status s = SetOptions(easy.get(), channel, rcpt, &upload, error_buffer); !s.ok()) {
    return s.WithContext(prefix);
  }
  CURLcode code = curl_easy_perform(easy.get());
  if (code == CURLE_OK) return Status::Ok();
  long reply_code = 0;
  curl_easy_getinfo(easy.get(), CURLINFO_RESPONSE_CODE, &reply_code);
  std::string why = prefix + ": " + internal::CurlReason(code, error_buffer);
  // The server's last reply, when it was a refusal (not the greeting before a TLS failure).
  if (reply_code >= 400) why += " (" + std::to_string(reply_code) + ")";
  return Failure(code, reply_code, internal::WithoutSecret(std::move(why), channel.password));
}

}  // namespace jobctl::notify
