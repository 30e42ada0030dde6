// TLS in HttpServer: TlsSession fed by hand (no socket), and the server over real loopback
// sockets with libcurl or a hand-driven OpenSSL client on a std::thread while the loop runs
// on the test thread. The certificates come from tests/tls/make-pki.sh (the README's
// commands), made once for the suite.
#include "http/tls.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "http/server.h"

namespace jobctl::http {
namespace {

std::string g_pki;  // the suite's certificate directory

// Removes the suite's certificate directory when the test binary exits.
struct PkiCleanup {
  ~PkiCleanup() {
    if (!g_pki.empty()) std::system(("rm -rf " + g_pki).c_str());
  }
} g_pki_cleanup;

std::string Pki(const std::string& name) { return g_pki + "/" + name; }

TlsFiles ServerFiles(bool mtls = false) {
  return {Pki("coordinator.crt"), Pki("coordinator.key"), mtls ? Pki("ca.crt") : ""};
}

void MakePki() {
  if (!g_pki.empty()) return;
  char tmpl[] = "/tmp/jobctl-tls-test-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  g_pki = tmpl;
  std::string cmd = "sh " TLS_PKI_SCRIPT " " + g_pki + " >/dev/null 2>&1";
  ASSERT_EQ(0, std::system(cmd.c_str())) << cmd;
  // A client certificate without a CN, named only by its DNS subjectAltName.
  cmd = "cd " + g_pki +
        " && printf 'subjectAltName=DNS:agent-7.example,DNS:other\\nextendedKeyUsage=clientAuth\\n'"
        " > san.ext && openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes"
        " -subj /O=jobctl -keyout san.key -out san.csr && openssl x509 -req -in san.csr"
        " -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 -extfile san.ext -out san.crt"
        " >/dev/null 2>&1";
  ASSERT_EQ(0, std::system(cmd.c_str())) << cmd;
}

// ---- a hand-driven OpenSSL client over a blocking socket (client thread) ----

class TlsTestClient {
 public:
  // The most bytes handed to send(), and asked of recv() and SSL_read(), at once.
  TlsTestClient(int port, size_t send_piece, size_t recv_piece)
      : piece_(send_piece), recv_piece_(recv_piece) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{5, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ctx_ = SSL_CTX_new(TLS_client_method());
    SSL_CTX_load_verify_locations(ctx_, Pki("ca.crt").c_str(), nullptr);
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    ssl_ = SSL_new(ctx_);
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), "127.0.0.1");
    in_ = BIO_new(BIO_s_mem());
    out_ = BIO_new(BIO_s_mem());
    BIO_set_mem_eof_return(in_, -1);
    SSL_set_bio(ssl_, in_, out_);
    SSL_set_connect_state(ssl_);
  }
  ~TlsTestClient() {
    SSL_free(ssl_);
    SSL_CTX_free(ctx_);
    if (fd_ >= 0) close(fd_);
  }
  TlsTestClient(const TlsTestClient&) = delete;
  TlsTestClient& operator=(const TlsTestClient&) = delete;

  bool connected() const { return connected_; }
  int fd() const { return fd_; }

  // What the client sends first (its ClientHello), without sending it.
  std::string ClientHello() {
    SSL_do_handshake(ssl_);
    return Pending();
  }

  bool Handshake() {
    for (;;) {
      int rc = SSL_do_handshake(ssl_);
      if (!Flush()) return false;
      if (rc == 1) return true;
      if (SSL_get_error(ssl_, rc) != SSL_ERROR_WANT_READ || !Receive()) return false;
    }
  }

  bool Write(std::string_view plain) {
    while (!plain.empty()) {
      int n = SSL_write(ssl_, plain.data(), static_cast<int>(plain.size()));
      if (n <= 0) return false;
      plain.remove_prefix(static_cast<size_t>(n));
    }
    return Flush();
  }

  // SHA-256 of the certificate the server presented, as CertificateFingerprint() prints it.
  std::string PeerFingerprint() {
    X509* cert = SSL_get0_peer_certificate(ssl_);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (cert == nullptr || X509_digest(cert, EVP_sha256(), md, &len) != 1) return "";
    std::string out;
    for (unsigned int i = 0; i < len; ++i) {
      char hex[4];
      std::snprintf(hex, sizeof hex, i == 0 ? "%02X" : ":%02X", md[i]);
      out += hex;
    }
    return out;
  }

  // Reads one response: head and Content-Length bytes of body.
  bool ReadResponse(std::string* out) {
    char buf[4096];
    for (;;) {
      size_t end = out->find("\r\n\r\n");
      if (end != std::string::npos) {
        size_t cl = out->find("Content-Length: ");
        size_t len = cl < end ? std::stoul(out->substr(cl + 16)) : 0;
        if (out->size() >= end + 4 + len) return true;
      }
      int n = SSL_read(ssl_, buf, static_cast<int>(std::min(sizeof buf, recv_piece_)));
      if (n > 0) {
        out->append(buf, static_cast<size_t>(n));
        continue;
      }
      if (!Flush() || SSL_get_error(ssl_, n) != SSL_ERROR_WANT_READ || !Receive()) return false;
    }
  }

 private:
  std::string Pending() {
    std::string out(BIO_ctrl_pending(out_), '\0');
    int n = BIO_read(out_, out.data(), static_cast<int>(out.size()));
    out.resize(n > 0 ? static_cast<size_t>(n) : 0);
    return out;
  }
  bool Flush() {
    std::string out = Pending();
    for (size_t at = 0; at < out.size(); at += piece_) {
      size_t len = std::min(piece_, out.size() - at);
      if (send(fd_, out.data() + at, len, MSG_NOSIGNAL) != static_cast<ssize_t>(len)) return false;
    }
    return true;
  }
  bool Receive() {
    char buf[64 * 1024];
    ssize_t n = recv(fd_, buf, std::min(sizeof buf, recv_piece_), 0);
    if (n <= 0) return false;
    BIO_write(in_, buf, static_cast<int>(n));
    return true;
  }

  size_t piece_;
  size_t recv_piece_;
  int fd_ = -1;
  bool connected_ = false;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  BIO* in_ = nullptr;
  BIO* out_ = nullptr;
};

int RawConnect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Everything until the server closes; false when a recv times out first.
bool ReadUntilEof(int fd, std::string* out) {
  char buf[4096];
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n == 0) return true;
    if (n < 0) return errno == ECONNRESET;
    out->append(buf, static_cast<size_t>(n));
  }
}

// ---- libcurl (client thread) ----

struct CurlReply {
  CURLcode code = CURLE_OK;
  long status = 0;
  std::string body;
  std::string error;
};

struct CurlTls {
  std::string ca = Pki("ca.crt");
  std::string cert;
  std::string key;
};

size_t AppendTo(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

CurlReply Fetch(const std::string& url, const CurlTls& tls) {
  CurlReply r;
  CURL* curl = curl_easy_init();
  char error[CURL_ERROR_SIZE] = {};
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 10'000L);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &AppendTo);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &r.body);
  curl_easy_setopt(curl, CURLOPT_CAINFO, tls.ca.c_str());
  if (!tls.cert.empty()) curl_easy_setopt(curl, CURLOPT_SSLCERT, tls.cert.c_str());
  if (!tls.key.empty()) curl_easy_setopt(curl, CURLOPT_SSLKEY, tls.key.c_str());
  r.code = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r.status);
  r.error = error;
  curl_easy_cleanup(curl);
  return r;
}

// ---- TlsSession fed by hand ----

TEST(TlsSessionTest, HandshakeAndRequestFedOneByteAtATime) {
  MakePki();
  auto context = TlsContext::Create(ServerFiles());
  ASSERT_TRUE(context.ok()) << context.status().ToString();
  TlsSession server((*context)->ctx());
  SSL_CTX* client_ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_load_verify_locations(client_ctx, Pki("ca.crt").c_str(), nullptr);
  SSL_CTX_set_verify(client_ctx, SSL_VERIFY_PEER, nullptr);
  SSL* client = SSL_new(client_ctx);
  BIO* c_in = BIO_new(BIO_s_mem());
  BIO* c_out = BIO_new(BIO_s_mem());
  BIO_set_mem_eof_return(c_in, -1);
  SSL_set_bio(client, c_in, c_out);
  SSL_set_connect_state(client);

  std::string plain;
  auto pump = [&] {  // client -> server one byte at a time; server -> client all at once
    char byte;
    while (BIO_read(c_out, &byte, 1) == 1) {
      bool closed = false;
      Status s = server.Feed(std::string_view(&byte, 1), &plain, &closed);
      EXPECT_TRUE(s.ok()) << s.ToString();
      EXPECT_FALSE(closed);
    }
    std::string out = server.TakeOutput();
    BIO_write(c_in, out.data(), static_cast<int>(out.size()));
  };
  int rc = 0;
  for (int i = 0; i < 10 && (rc = SSL_do_handshake(client)) != 1; ++i) pump();
  ASSERT_EQ(rc, 1);
  ASSERT_EQ(SSL_write(client, "GET / HTTP/1.1\r\n\r\n", 18), 18);
  pump();
  EXPECT_TRUE(server.handshake_done());
  EXPECT_EQ(plain, "GET / HTTP/1.1\r\n\r\n");
  EXPECT_EQ(server.peer_name(), "");  // no client certificate asked for

  ASSERT_TRUE(server.Encrypt("HTTP/1.1 200 OK\r\n").ok());
  std::string out = server.TakeOutput();
  BIO_write(c_in, out.data(), static_cast<int>(out.size()));
  char buf[64];
  int n = SSL_read(client, buf, sizeof buf);
  EXPECT_EQ(std::string(buf, static_cast<size_t>(std::max(n, 0))), "HTTP/1.1 200 OK\r\n");
  SSL_free(client);
  SSL_CTX_free(client_ctx);
}

TEST(TlsSessionTest, PlainHttpRequestIsToldApart) {
  MakePki();
  auto context = TlsContext::Create(ServerFiles());
  ASSERT_TRUE(context.ok());
  TlsSession session((*context)->ctx());
  std::string plain;
  bool closed = false;
  EXPECT_FALSE(session.Feed("GET /v1/jobs HTTP/1.1\r\n", &plain, &closed).ok());
  EXPECT_EQ(session.refusal(), TlsSession::Refusal::kPlainHttp);
  EXPECT_TRUE(plain.empty());
}

TEST(TlsSessionTest, GarbageInsteadOfClientHelloFails) {
  MakePki();
  auto context = TlsContext::Create(ServerFiles());
  ASSERT_TRUE(context.ok());
  TlsSession session((*context)->ctx());
  std::string plain;
  bool closed = false;
  // A handshake record header announcing a record longer than TLS allows.
  std::string garbage = "\x16\x03\x01" + std::string(16, '\x7f');
  Status s = session.Feed(garbage, &plain, &closed);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(session.refusal(), TlsSession::Refusal::kFailed);
  EXPECT_FALSE(session.TakeOutput().empty());  // an alert for the peer
  EXPECT_FALSE(session.Encrypt("x").ok());
}

TEST(TlsContextTest, BrokenFilesAreNamedInTheError) {
  MakePki();
  auto missing = TlsContext::Create({Pki("nope.crt"), Pki("coordinator.key"), ""});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("nope.crt"), std::string::npos);
  auto mismatch = TlsContext::Create({Pki("coordinator.crt"), Pki("web-1.key"), ""});
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.status().message().find("mismatch"), std::string::npos)
      << mismatch.status().message();
}

TEST(TlsContextTest, ReloadKeepsTheOldPairWhenTheNewOneIsBroken) {
  MakePki();
  std::string dir = g_pki + "/reload";
  std::string setup = "mkdir -p " + dir + " && cp " + Pki("coordinator.crt") + " " +
                      Pki("coordinator.key") + " " + dir;
  ASSERT_EQ(0, std::system(setup.c_str()));
  auto context = TlsContext::Create({dir + "/coordinator.crt", dir + "/coordinator.key", ""});
  ASSERT_TRUE(context.ok());
  SSL_CTX* before = (*context)->ctx();
  // A key that does not match the certificate.
  ASSERT_EQ(0, std::system(("cp " + Pki("web-1.key") + " " + dir + "/coordinator.key").c_str()));
  Status s = (*context)->Reload();
  EXPECT_FALSE(s.ok());
  EXPECT_EQ((*context)->ctx(), before);
  // A good new pair (the client one will do) is taken.
  ASSERT_EQ(0, std::system(("cp " + Pki("web-1.crt") + " " + dir + "/coordinator.crt").c_str()));
  s = (*context)->Reload();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_NE((*context)->ctx(), before);
  EXPECT_EQ(CertificateName(SSL_CTX_get0_certificate((*context)->ctx())), "web-1");
  EXPECT_EQ(CertificateFingerprint(dir + "/coordinator.crt"),
            CertificateFingerprint(Pki("web-1.crt")));
}

TEST(TlsContextTest, CertificateNameIsTheCnOrElseTheFirstDnsName) {
  MakePki();
  auto name_of = [](const std::string& path) {
    BIO* bio = BIO_new_file(path.c_str(), "r");
    X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    std::string name = cert ? CertificateName(cert) : "(unreadable)";
    X509_free(cert);
    return name;
  };
  EXPECT_EQ(name_of(Pki("web-1.crt")), "web-1");
  EXPECT_EQ(name_of(Pki("san.crt")), "agent-7.example");
}

// ---- HttpServer over loopback ----

class TlsServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { curl_global_init(CURL_GLOBAL_DEFAULT); }
  static void TearDownTestSuite() { curl_global_cleanup(); }

  void SetUp() override {
    MakePki();
    ASSERT_EQ(0, uv_loop_init(&loop_));
  }
  void TearDown() override {
    server_.reset();
    ASSERT_EQ(0, uv_loop_close(&loop_));
  }

  void StartServer(TlsFiles files) {
    auto context = TlsContext::Create(std::move(files));
    ASSERT_TRUE(context.ok()) << context.status().ToString();
    context_ = *context;
    server_ = std::make_unique<HttpServer>(
        &loop_, Limits{}, [this](Request&& r, std::shared_ptr<Responder> responder) {
          seen_.push_back(r);
          responder->Send({200, "text/plain", body_, {}});
        });
    server_->UseTls(context_);
    Status s = server_->Listen("127.0.0.1", 0);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  std::string Url() const { return "https://127.0.0.1:" + std::to_string(server_->port()) + "/x"; }

  // Runs `client` on a thread while the loop runs here; once it returned and every connection
  // is gone (the server cleaned up after the client), closes the server.
  void Run(std::function<void()> client) {
    done_.data = this;
    ASSERT_EQ(0, uv_async_init(&loop_, &done_, [](uv_async_t* a) {
                static_cast<TlsServerTest*>(a->data)->OnClientDone();
              }));
    uv_timer_init(&loop_, &poll_);
    poll_.data = this;
    std::thread thread([this, client] {
      client();
      uv_async_send(&done_);
    });
    uv_run(&loop_, UV_RUN_DEFAULT);
    thread.join();
  }

  uv_loop_t loop_;
  std::shared_ptr<TlsContext> context_;
  std::unique_ptr<HttpServer> server_;
  std::vector<Request> seen_;
  std::string body_ = "ok";

 private:
  void OnClientDone() {
    uv_close(reinterpret_cast<uv_handle_t*>(&done_), nullptr);
    deadline_ = uv_now(&loop_) + 10'000;
    uv_timer_start(
        &poll_,
        [](uv_timer_t* t) {
          auto* self = static_cast<TlsServerTest*>(t->data);
          bool timed_out = uv_now(&self->loop_) > self->deadline_;
          if (self->server_->connections() != 0 && !timed_out) return;
          EXPECT_FALSE(timed_out) << "connections still open: " << self->server_->connections();
          uv_close(reinterpret_cast<uv_handle_t*>(t), nullptr);
          self->server_->Close([] {});
        },
        0, 10);
  }

  uv_async_t done_;
  uv_timer_t poll_;
  uint64_t deadline_ = 0;
};

TEST_F(TlsServerTest, CurlGetsAnAnswerOverTls) {
  StartServer(ServerFiles());
  CurlReply reply;
  Run([&] { reply = Fetch(Url(), {}); });
  EXPECT_EQ(reply.code, CURLE_OK) << reply.error;
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.body, "ok");
  ASSERT_EQ(seen_.size(), 1u);
  EXPECT_EQ(seen_[0].peer_name, "");
}

TEST_F(TlsServerTest, ClientWithoutTheCaFailsVerification) {
  StartServer(ServerFiles());
  CurlReply reply;
  Run([&] { reply = Fetch(Url(), {.ca = Pki("web-1.crt")}); });  // not the issuer
  EXPECT_EQ(reply.code, CURLE_PEER_FAILED_VERIFICATION) << reply.error;
  EXPECT_TRUE(seen_.empty());
}

TEST_F(TlsServerTest, ClientCertificateNameIsOnTheRequest) {
  StartServer(ServerFiles(/*mtls=*/true));
  CurlReply reply;
  Run([&] { reply = Fetch(Url(), {.cert = Pki("web-1.crt"), .key = Pki("web-1.key")}); });
  EXPECT_EQ(reply.code, CURLE_OK) << reply.error;
  EXPECT_EQ(reply.status, 200);
  ASSERT_EQ(seen_.size(), 1u);
  EXPECT_EQ(seen_[0].peer_name, "web-1");
}

TEST_F(TlsServerTest, ClientWithoutCertificateIsRefusedUnderMtls) {
  StartServer(ServerFiles(/*mtls=*/true));
  CurlReply without, with;
  Run([&] {
    without = Fetch(Url(), {});
    with = Fetch(Url(), {.cert = Pki("web-1.crt"), .key = Pki("web-1.key")});
  });
  EXPECT_NE(without.code, CURLE_OK);
  EXPECT_EQ(without.status, 0);
  EXPECT_EQ(with.code, CURLE_OK) << with.error;  // and the server is still fine
  ASSERT_EQ(seen_.size(), 1u);
  EXPECT_EQ(seen_[0].peer_name, "web-1");
}

TEST_F(TlsServerTest, PlainHttpIsAnsweredInClearAndTheServerStaysHealthy) {
  StartServer(ServerFiles());
  std::string answer;
  bool eof = false;
  CurlReply after;
  Run([&] {
    int fd = RawConnect(server_->port());
    std::string request = "GET /x HTTP/1.1\r\nHost: a\r\n\r\n";
    send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    eof = ReadUntilEof(fd, &answer);
    close(fd);
    after = Fetch(Url(), {});
  });
  EXPECT_TRUE(eof);
  EXPECT_EQ(answer.rfind("HTTP/1.1 400 ", 0), 0u) << answer;
  EXPECT_NE(answer.find("use an https:// URL"), std::string::npos) << answer;
  EXPECT_NE(answer.find("Connection: close"), std::string::npos);
  EXPECT_EQ(after.status, 200) << after.error;
  EXPECT_EQ(seen_.size(), 1u);
}

TEST_F(TlsServerTest, GarbageInsteadOfClientHelloClosesTheConnection) {
  StartServer(ServerFiles());
  std::string answer;
  bool eof = false;
  CurlReply after;
  Run([&] {
    int fd = RawConnect(server_->port());
    std::string garbage(40, '\x01');  // not a TLS record type
    send(fd, garbage.data(), garbage.size(), MSG_NOSIGNAL);
    eof = ReadUntilEof(fd, &answer);
    close(fd);
    after = Fetch(Url(), {});
  });
  EXPECT_TRUE(eof);
  EXPECT_EQ(answer.find("HTTP/"), std::string::npos);
  if (!answer.empty()) {
    EXPECT_EQ(answer[0], '\x15');  // a TLS alert record, if anything
  }
  EXPECT_EQ(after.status, 200) << after.error;
}

TEST_F(TlsServerTest, PeerThatClosesMidHandshakeIsCleanedUp) {
  StartServer(ServerFiles());
  Run([&] {
    TlsTestClient client(server_->port(), 1 << 16, 1 << 16);
    ASSERT_TRUE(client.connected());
    std::string hello = client.ClientHello();
    ASSERT_GT(hello.size(), 20u);
    send(client.fd(), hello.data(), hello.size() / 2, MSG_NOSIGNAL);
    // The client goes away here, half a ClientHello sent; the fixture then waits until the
    // server holds no connection.
  });
  EXPECT_TRUE(seen_.empty());
}

TEST_F(TlsServerTest, HandshakeRequestAndLargeResponseInSmallPieces) {
  // Many TLS records, and a client reading slower than the server writes.
  body_ = std::string(256 * 1024, 'b');
  StartServer(ServerFiles());
  std::string response;
  bool handshake = false, wrote = false, read = false;
  Run([&] {
    TlsTestClient client(server_->port(), 7, 1000);
    handshake = client.Handshake();
    wrote = client.Write("GET /x HTTP/1.1\r\nHost: a\r\n\r\n");
    read = client.ReadResponse(&response);
  });
  EXPECT_TRUE(handshake);
  EXPECT_TRUE(wrote);
  ASSERT_TRUE(read);
  EXPECT_EQ(response.rfind("HTTP/1.1 200 ", 0), 0u);
  EXPECT_EQ(response.size() - response.find("\r\n\r\n") - 4, body_.size());
  ASSERT_EQ(seen_.size(), 1u);
  EXPECT_EQ(seen_[0].path, "/x");
}

TEST_F(TlsServerTest, ReloadedCertificateIsServedToNewConnections) {
  std::string dir = g_pki + "/served";
  ASSERT_EQ(0, std::system(("mkdir -p " + dir + " && cp " + Pki("coordinator.crt") + " " +
                            Pki("coordinator.key") + " " + dir)
                               .c_str()));
  StartServer({dir + "/coordinator.crt", dir + "/coordinator.key", ""});
  // Same key, a new certificate for the same names from the same CA.
  std::string reissue = "cd " + g_pki +
                        " && openssl x509 -req -in coordinator.csr -CA ca.crt"
                        " -CAkey ca.key -CAcreateserial -days 30 -extfile server.ext -out " +
                        dir + "/coordinator.crt >/dev/null 2>&1";
  ASSERT_EQ(0, std::system(reissue.c_str()));
  ASSERT_TRUE(context_->Reload().ok());
  std::string served;
  Run([&] {
    TlsTestClient client(server_->port(), 1 << 16, 1 << 16);
    if (!client.Handshake()) return;
    served = client.PeerFingerprint();
  });
  EXPECT_EQ(served, CertificateFingerprint(dir + "/coordinator.crt"));
  EXPECT_NE(served, CertificateFingerprint(Pki("coordinator.crt")));
}

}  // namespace
}  // namespace jobctl::http
