// Signature(): HMAC-SHA256 over "<timestamp>.<body>", the scheme of Stripe's and Slack's
// webhooks, so that a receiver can reject a replayed (old timestamp) or altered body.
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <string>

#include "notify/render.h"
#include "notify/text.h"

namespace jobctl::notify {

namespace internal {

std::string HmacSha256Hex(std::string_view key, std::string_view message) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  // A zero-length key is valid for HMAC; OpenSSL wants a non-null pointer for it.
  static const unsigned char kNoKey = 0;
  const void* key_data =
      key.empty() ? static_cast<const void*>(&kNoKey) : static_cast<const void*>(key.data());
  if (HMAC(EVP_sha256(), key_data, static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac,
           &mac_len) == nullptr) {
    return "";
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < mac_len; ++i) {
    out += kHex[mac[i] >> 4];
    out += kHex[mac[i] & 15];
  }
  return out;
}

}  // namespace internal

std::string Signature(std::string_view secret, int64_t timestamp_s, std::string_view body) {
  std::string message = std::to_string(timestamp_s) + "." + std::string(body);
  return "v1=" + internal::HmacSha256Hex(secret, message);
}

}  // namespace jobctl::notify
