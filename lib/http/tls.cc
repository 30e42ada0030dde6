#include "http/tls.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <climits>
#include <cstdio>

namespace jobctl::http {
namespace {

constexpr size_t kMaxPeerNameBytes = 255;
constexpr size_t kReadChunkBytes = 16 * 1024;
constexpr size_t kWriteChunkBytes = 1 << 20;
// Binds resumed sessions to this server, which OpenSSL requires before it resumes a session
// whose client certificate was verified.
constexpr unsigned char kSessionIdContext[] = "jobctl";

// The reason of the last error on OpenSSL's (per-thread) error queue, then clears it.
std::string OpenSslReason() {
  unsigned long e = ERR_peek_last_error();
  std::string reason;
  if (e != 0) {
    const char* r = ERR_reason_error_string(e);
    if (r != nullptr) {
      reason = r;
    } else {
      char buf[256];
      ERR_error_string_n(e, buf, sizeof buf);
      reason = buf;
    }
  }
  ERR_clear_error();
  return reason.empty() ? "unknown OpenSSL error" : reason;
}

Status LoadError(std::string_view what, const std::string& path) {
  return Status::InvalidArgument(std::string(what) + " " + path + ": " + OpenSslReason());
}

bool IsPrintableName(std::string_view name) {
  if (name.empty() || name.size() > kMaxPeerNameBytes) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

}  // namespace

Result<std::shared_ptr<TlsContext>> TlsContext::Create(TlsFiles files) {
  std::shared_ptr<TlsContext> context(new TlsContext(std::move(files)));
  Result<SSL_CTX*> ctx = Build(context->files_);
  if (!ctx.ok()) return ctx.status();
  context->ctx_ = *ctx;
  return context;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

Status TlsContext::Reload() {
  Result<SSL_CTX*> ctx = Build(files_);
  if (!ctx.ok()) return ctx.status();
  // Sessions started on the old context hold their own reference to it.
  SSL_CTX_free(ctx_);
  ctx_ = *ctx;
  return Status::Ok();
}

Result<SSL_CTX*> TlsContext::Build(const TlsFiles& files) {
  ERR_clear_error();
  if (files.cert.empty() || files.key.empty())
    return Status::InvalidArgument("TLS needs both a certificate and a key file");
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return Status::Internal("SSL_CTX_new: " + OpenSslReason());
  auto fail = [ctx](Status s) {
    SSL_CTX_free(ctx);
    return s;
  };
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(
      ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_session_id_context(ctx, kSessionIdContext, sizeof kSessionIdContext - 1);
  if (SSL_CTX_use_certificate_chain_file(ctx, files.cert.c_str()) != 1)
    return fail(LoadError("TLS certificate", files.cert));
  // OpenSSL checks here that the key matches the certificate ("key values mismatch").
  if (SSL_CTX_use_PrivateKey_file(ctx, files.key.c_str(), SSL_FILETYPE_PEM) != 1)
    return fail(LoadError("TLS key", files.key + " (for certificate " + files.cert + ")"));
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return fail(Status::InvalidArgument("TLS key " + files.key + " does not match certificate " +
                                        files.cert + ": " + OpenSslReason()));
  }
  if (!files.client_ca.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, files.client_ca.c_str(), nullptr) != 1)
      return fail(LoadError("TLS client CA", files.client_ca));
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(files.client_ca.c_str());
    if (names == nullptr) return fail(LoadError("TLS client CA", files.client_ca));
    SSL_CTX_set_client_CA_list(ctx, names);  // takes ownership
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  ERR_clear_error();
  return ctx;
}

TlsSession::TlsSession(SSL_CTX* ctx) {
  ssl_ = SSL_new(ctx);
  in_ = BIO_new(BIO_s_mem());
  out_ = BIO_new(BIO_s_mem());
  if (ssl_ == nullptr || in_ == nullptr || out_ == nullptr) {
    BIO_free(in_);
    BIO_free(out_);
    in_ = out_ = nullptr;
    refusal_ = Refusal::kFailed;  // Feed() reports it
    return;
  }
  // An empty input BIO means "more to come", not end of stream.
  BIO_set_mem_eof_return(in_, -1);
  SSL_set_bio(ssl_, in_, out_);
  SSL_set_accept_state(ssl_);
}

TlsSession::~TlsSession() {
  SSL_free(ssl_);  // frees both BIOs
  ERR_clear_error();
}

Status TlsSession::Feed(std::string_view cipher, std::string* plain, bool* peer_closed) {
  *peer_closed = false;
  if (refusal_ != Refusal::kNone) return Status::InvalidArgument("TLS session already failed");
  ERR_clear_error();
  // A TLS record starts with a content type byte (0x14 to 0x17); a letter is the method of a
  // plain HTTP request sent to this port by mistake. Tell it apart so the caller can say so.
  if (!handshake_done_ && !cipher.empty() && BIO_number_written(in_) == 0 && cipher[0] >= 'A' &&
      cipher[0] <= 'Z') {
    refusal_ = Refusal::kPlainHttp;
    return Status::InvalidArgument("plain HTTP request on a TLS port");
  }
  while (!cipher.empty()) {
    int chunk = static_cast<int>(std::min<size_t>(cipher.size(), INT_MAX));
    int n = BIO_write(in_, cipher.data(), chunk);
    if (n <= 0) return Fail("buffering input", SSL_ERROR_SSL);
    cipher.remove_prefix(static_cast<size_t>(n));
  }
  if (!handshake_done_) {
    int rc = SSL_do_handshake(ssl_);
    if (rc != 1) {
      int err = SSL_get_error(ssl_, rc);
      if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) return Status::Ok();
      return Fail("handshake", err);
    }
    OnHandshakeDone();
  }
  char buf[kReadChunkBytes];
  for (;;) {
    int n = SSL_read(ssl_, buf, sizeof buf);
    if (n > 0) {
      plain->append(buf, static_cast<size_t>(n));
      continue;
    }
    int err = SSL_get_error(ssl_, n);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) return Status::Ok();
    if (err == SSL_ERROR_ZERO_RETURN) {
      *peer_closed = true;
      return Status::Ok();
    }
    return Fail("read", err);
  }
}

Status TlsSession::Encrypt(std::string_view plain) {
  if (refusal_ != Refusal::kNone || !handshake_done_ || shut_down_)
    return Status::InvalidArgument("TLS session cannot send");
  ERR_clear_error();
  while (!plain.empty()) {
    int chunk = static_cast<int>(std::min(plain.size(), kWriteChunkBytes));
    int n = SSL_write(ssl_, plain.data(), chunk);
    if (n <= 0) return Fail("write", SSL_get_error(ssl_, n));
    plain.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

void TlsSession::Shutdown() {
  if (shut_down_ || !handshake_done_ || refusal_ != Refusal::kNone) return;
  shut_down_ = true;
  SSL_shutdown(ssl_);
  ERR_clear_error();
}

std::string TlsSession::TakeOutput() {
  std::string out;
  if (out_ == nullptr) return out;
  size_t pending = BIO_ctrl_pending(out_);
  if (pending == 0) return out;
  out.resize(pending);
  int n = BIO_read(out_, out.data(), static_cast<int>(std::min<size_t>(pending, INT_MAX)));
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return out;
}

Status TlsSession::Fail(std::string_view what, int ssl_error) {
  refusal_ = Refusal::kFailed;
  std::string reason;
  long verify = ssl_ != nullptr ? SSL_get_verify_result(ssl_) : X509_V_OK;
  if (verify != X509_V_OK) {
    reason = std::string("certificate verify failed: ") + X509_verify_cert_error_string(verify);
    ERR_clear_error();
  } else if (ssl_error == SSL_ERROR_SYSCALL && ERR_peek_last_error() == 0) {
    reason = "unexpected end of stream";
  } else {
    reason = OpenSslReason();
  }
  return Status::InvalidArgument("TLS " + std::string(what) + ": " + reason);
}

void TlsSession::OnHandshakeDone() {
  handshake_done_ = true;
  X509* peer = SSL_get0_peer_certificate(ssl_);
  if (peer != nullptr && SSL_get_verify_result(ssl_) == X509_V_OK)
    peer_name_ = CertificateName(peer);
}

std::string CertificateName(X509* cert) {
  std::string name;
  X509_NAME* subject = X509_get_subject_name(cert);
  int at = subject ? X509_NAME_get_index_by_NID(subject, NID_commonName, -1) : -1;
  if (at >= 0) {
    // Two CNs are ambiguous: which one a check reads would be up to the reader.
    if (X509_NAME_get_index_by_NID(subject, NID_commonName, at) >= 0) return "";
    ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, at));
    unsigned char* utf8 = nullptr;
    int n = ASN1_STRING_to_UTF8(&utf8, data);
    if (n > 0) name.assign(reinterpret_cast<const char*>(utf8), static_cast<size_t>(n));
    OPENSSL_free(utf8);
  } else {
    auto* sans =
        static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
    for (int i = 0; sans != nullptr && i < sk_GENERAL_NAME_num(sans); ++i) {
      const GENERAL_NAME* gn = sk_GENERAL_NAME_value(sans, i);
      if (gn->type != GEN_DNS) continue;
      name.assign(reinterpret_cast<const char*>(ASN1_STRING_get0_data(gn->d.dNSName)),
                  static_cast<size_t>(ASN1_STRING_length(gn->d.dNSName)));
      break;
    }
    GENERAL_NAMES_free(sans);
  }
  ERR_clear_error();
  return IsPrintableName(name) ? name : "";
}

std::string CertificateFingerprint(const std::string& pem_path) {
  BIO* bio = BIO_new_file(pem_path.c_str(), "r");
  X509* cert = bio ? PEM_read_bio_X509(bio, nullptr, nullptr, nullptr) : nullptr;
  BIO_free(bio);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  std::string out;
  if (cert != nullptr && X509_digest(cert, EVP_sha256(), md, &len) == 1) {
    for (unsigned int i = 0; i < len; ++i) {
      char hex[4];
      std::snprintf(hex, sizeof hex, i == 0 ? "%02X" : ":%02X", md[i]);
      out += hex;
    }
  }
  X509_free(cert);
  ERR_clear_error();
  return out;
}

}  // namespace jobctl::http
