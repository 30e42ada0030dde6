// Server-side TLS for HttpServer, on OpenSSL with memory BIOs: the connection keeps reading
// and writing its libuv stream as before, and passes the bytes through a TlsSession (no
// socket of its own, no blocking, no threads). Loop thread only, like the server.
//
// TlsContext holds the certificate, the key and, for mTLS, the CA client certificates must
// chain to. It is created once from files and Reload()ed on SIGHUP: a new SSL_CTX is built
// from the files and swapped in only if the whole pair loads and matches; connections already
// open keep the context they started with (OpenSSL reference-counts it), new ones get the new
// one. TLS 1.2 is the oldest version offered; renegotiation is refused.
//
// TlsSession is one connection's TLS state machine:
//   Feed(ciphertext from the socket) -> plaintext for the HTTP parser, or an error;
//   Encrypt(plaintext response)      -> queued ciphertext;
//   TakeOutput()                     -> ciphertext to write to the socket (handshake records,
//                                       encrypted data, alerts), after every Feed and Encrypt.
// With a client CA configured, a client without a certificate that chains to it fails the
// handshake (Feed returns the error); peer_name() is the verified certificate's subject CN,
// or its first DNS subjectAltName when it has no CN ("" without a verified certificate).
#pragma once

#include <openssl/ssl.h>

#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

namespace jobctl::http {

struct TlsFiles {
  std::string cert;       // PEM: the server certificate, then any intermediates
  std::string key;        // PEM private key matching cert
  std::string client_ca;  // PEM CA bundle; "" = no client certificates asked for (no mTLS)
};

class TlsContext {
 public:
  // Loads the files; kInvalidArgument naming the file and OpenSSL's reason when one does not
  // load or the key does not match the certificate.
  static Result<std::shared_ptr<TlsContext>> Create(TlsFiles files);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // Reads the same files again. On error the current pair stays in use and the error is
  // returned for the caller to log.
  Status Reload();

  SSL_CTX* ctx() const { return ctx_; }  // for new connections
  const TlsFiles& files() const { return files_; }

 private:
  explicit TlsContext(TlsFiles files) : files_(std::move(files)) {}
  static Result<SSL_CTX*> Build(const TlsFiles& files);

  TlsFiles files_;
  SSL_CTX* ctx_ = nullptr;  // owned (one reference)
};

class TlsSession {
 public:
  enum class Refusal {
    kNone,
    kPlainHttp,  // the first bytes were a plain HTTP request, not a ClientHello
    kFailed,     // any other handshake or record error
  };

  explicit TlsSession(SSL_CTX* ctx);  // server side
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // Takes bytes read from the socket, in any split, and appends what they decrypt to to
  // *plain. Sets *peer_closed when the peer sent close_notify. An error ends the session:
  // refusal() says what kind, TakeOutput() may still hold an alert to send.
  Status Feed(std::string_view cipher, std::string* plain, bool* peer_closed);
  // Encrypts the whole of `plain` (after the handshake) into the output queue.
  Status Encrypt(std::string_view plain);
  // Queues close_notify. Once.
  void Shutdown();
  // The ciphertext queued since the last call.
  std::string TakeOutput();

  bool handshake_done() const { return handshake_done_; }
  Refusal refusal() const { return refusal_; }
  const std::string& peer_name() const { return peer_name_; }

 private:
  Status Fail(std::string_view what, int ssl_error);
  void OnHandshakeDone();

  SSL* ssl_ = nullptr;
  BIO* out_ = nullptr;  // network side, owned by ssl_ (as is the input BIO)
  BIO* in_ = nullptr;
  bool handshake_done_ = false;
  bool shut_down_ = false;
  Refusal refusal_ = Refusal::kNone;
  std::string peer_name_;
};

// The subject CN of `cert`, or its first DNS subjectAltName when it has no CN; "" when neither
// is there or the name is not 1 to 255 printable ASCII characters without spaces.
std::string CertificateName(X509* cert);

// The SHA-256 fingerprint of the (first) certificate in a PEM file as "AB:CD:...", the form
// `openssl x509 -noout -fingerprint -sha256` prints; "" when the file does not hold one.
std::string CertificateFingerprint(const std::string& pem_path);

}  // namespace jobctl::http
