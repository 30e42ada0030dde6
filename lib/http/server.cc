// A connection moves through these phases:
//
//   kReading --request complete--> kAwaiting --Send(), keep-alive--> kReading
//       |                              |
//       +--parser error-----+          +--Send(), closing--+
//                           v                              v
//                      kDraining (flush writes) --> kLingering (write side shut down,
//                                                   read and discard until EOF) --> kClosed
//
// Any phase can jump to kClosed (timeout, read error, client gone, server Close()). The
// Connection object is freed by the server only after both of its handles' close callbacks
// ran, so callbacks already queued by libuv (write, shutdown) always find it alive.
#include "http/server.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "base/log.h"
#include "http/tls.h"

namespace jobctl::http {
namespace {

constexpr size_t kReadBufferBytes = 64 * 1024;
// While a response is pending, at most this many pipelined bytes wait unparsed; past it the
// connection stops reading until the response is sent.
constexpr size_t kMaxBufferedBytes = 64 * 1024;
// After a response that ends the connection, closing with unread request bytes (the rest of a
// refused upload) makes the kernel send a reset, which drops whatever of the response is still
// in our send buffer. So the server shuts down its write side and reads, discarding, until the
// client closes, for at most this long (nginx's lingering close).
constexpr uint64_t kLingerMs = 2'000;
constexpr int kListenBacklog = 511;

struct Framing {
  int http_minor = 1;
  bool close = false;         // end the connection after this response
  bool head_request = false;  // HEAD: headers only
};

struct WriteOp {
  uv_write_t req;
  std::string bytes;  // owned until the write callback
  Connection* connection;
};

bool HasLineBreak(std::string_view s) { return s.find_first_of("\r\n") != std::string_view::npos; }

std::string JsonEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string ErrorBody(int http_status, std::string_view message) {
  return std::string("{\"error\":\"") + std::string(ErrorCodeForHttpStatus(http_status)) +
         "\",\"message\":\"" + JsonEscape(message) + "\"}";
}

std::string Serialize(const Response& r, const Framing& f) {
  // A three-digit code keeps the cast within the range of http_status.
  int status = (r.status >= 100 && r.status <= 999) ? r.status : 500;
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " +
                    http_status_str(static_cast<http_status>(status)) + "\r\n";
  if (!r.content_type.empty() && !HasLineBreak(r.content_type))
    out += "Content-Type: " + r.content_type + "\r\n";
  out += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  for (const auto& [name, value] : r.headers) {
    if (!name.empty() && !HasLineBreak(name) && !HasLineBreak(value))
      out += name + ": " + value + "\r\n";
  }
  if (f.close) {
    out += "Connection: close\r\n";
  } else if (f.http_minor == 0) {
    out += "Connection: keep-alive\r\n";
  }
  out += "\r\n";
  if (!f.head_request) out += r.body;
  return out;
}

// The Content-Length the client declared; 0 without one. http_parser has already refused a
// malformed or repeated one.
size_t DeclaredLength(const Request& head) {
  std::string text = head.Header("content-length");
  char* end = nullptr;
  unsigned long long n = std::strtoull(text.c_str(), &end, 10);
  return text.empty() || *end != '\0' ? 0 : static_cast<size_t>(n);
}

// The address a client is counted by: its IP, or for IPv6 its /64, which is what one host or
// one customer usually gets; counting single IPv6 addresses would let one host take them all.
std::string ClientAddress(uv_tcp_t* tcp) {
  sockaddr_storage peer{};
  int len = sizeof peer;
  if (uv_tcp_getpeername(tcp, reinterpret_cast<sockaddr*>(&peer), &len) != 0) return "?";
  char name[INET6_ADDRSTRLEN] = "?";
  if (peer.ss_family == AF_INET6) {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&peer);
    bool mapped_v4 = IN6_IS_ADDR_V4MAPPED(&v6->sin6_addr);
    if (!mapped_v4) std::fill(v6->sin6_addr.s6_addr + 8, v6->sin6_addr.s6_addr + 16, 0);
    uv_ip6_name(v6, name, sizeof name);
  } else if (peer.ss_family == AF_INET) {
    uv_ip4_name(reinterpret_cast<sockaddr_in*>(&peer), name, sizeof name);
  }
  return name;
}

bool IsContinueExpected(const Request& head) {
  std::string expect = head.Header("expect");
  std::transform(expect.begin(), expect.end(), expect.begin(),
                 [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; });
  return head.http_minor >= 1 && expect == "100-continue";
}

}  // namespace

class Connection {
 public:
  explicit Connection(HttpServer* server)
      : server_(server),
        parser_(ParserLimits{server->parser_limits_.max_header_bytes,
                             server->parser_limits_.default_max_body,
                             [this](const Request& head) { return OnHead(head); }}) {}
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Accepts the pending connection; false when its client is over a connection limit (the
  // caller closes it).
  bool Start(uv_stream_t* listener);
  void CloseNow();
  void OnServerClose();
  void Deliver(Response response);

 private:
  enum class Phase { kReading, kAwaiting, kDraining, kLingering, kClosed };
  // kWrite: a keep-alive connection whose response is still being written (kIdle once it is).
  enum class Deadline { kNone, kIdle, kWrite, kHead, kBody, kDrain, kLinger };

  static Connection* From(void* data) { return static_cast<Connection*>(data); }
  uv_stream_t* stream() { return reinterpret_cast<uv_stream_t*>(&tcp_); }
  void OnRead(ssize_t nread, const uv_buf_t* buf);
  void OnTlsRead(std::string_view cipher);
  void FailTls();
  void OnReadEnd(ssize_t status);
  void OnWriteDone(int status);
  void OnHandleClosed();
  void ProcessInput();
  size_t OnHead(const Request& head);
  void Dispatch();
  void FailRequest();
  void Refuse();
  void ReleaseBody();
  void MaybeSendContinue();
  bool Write(std::string bytes);
  bool WriteRaw(std::string bytes);
  void Drain();
  void StartLinger();
  void UpdateReading();
  void UpdateTimer();
  void ArmTimer(uint64_t ms);
  void OnDeadline();

  HttpServer* server_;
  uv_tcp_t tcp_;
  uv_timer_t timer_;
  uv_shutdown_t shutdown_req_;
  RequestParser parser_;
  std::unique_ptr<TlsSession> tls_;     // null: plain HTTP
  std::string input_;                   // read, not yet parsed (pipelined behind a response)
  std::weak_ptr<Responder> responder_;  // the pending one, in kAwaiting
  Phase phase_ = Phase::kReading;
  Deadline deadline_ = Deadline::kNone;
  Framing framing_;  // of the request being answered
  size_t writes_in_flight_ = 0;
  // kWrite and kDrain: the bytes queued when the deadline was armed, and whether the one
  // short extension for a busy loop was given (OnDeadline).
  size_t queued_at_arm_ = 0;
  bool write_grace_ = false;
  int open_handles_ = 0;
  bool reading_ = false;
  bool peer_eof_ = false;
  bool processing_ = false;  // inside ProcessInput: a nested call leaves the work to it
  bool continue_sent_ = false;
  std::string client_;               // the address this connection counts against
  bool counted_ = false;             // in the server's per-client connection count
  size_t body_reserved_ = 0;         // declared body bytes of the current request
  std::optional<Response> refusal_;  // set by OnHead: answer this, read no body
};

bool Connection::Start(uv_stream_t* listener) {
  uv_tcp_init(server_->loop_, &tcp_);
  uv_timer_init(server_->loop_, &timer_);
  tcp_.data = this;
  timer_.data = this;
  open_handles_ = 2;
  if (uv_accept(listener, stream()) != 0) return false;
  client_ = ClientAddress(&tcp_);
  counted_ = server_->AddConnection(client_);
  if (!counted_) return false;
  uv_tcp_nodelay(&tcp_, 1);
  if (server_->tls_) tls_ = std::make_unique<TlsSession>(server_->tls_->ctx());
  UpdateReading();
  UpdateTimer();
  return true;
}

void Connection::CloseNow() {
  if (phase_ == Phase::kClosed) return;
  phase_ = Phase::kClosed;
  ReleaseBody();
  if (counted_) server_->RemoveConnection(client_);
  counted_ = false;
  auto on_closed = [](uv_handle_t* h) { From(h->data)->OnHandleClosed(); };
  uv_close(reinterpret_cast<uv_handle_t*>(&tcp_), on_closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_), on_closed);
  // The strong reference keeps the Responder alive while its callbacks run, even if they
  // drop the owner's last reference to it.
  if (std::shared_ptr<Responder> r = responder_.lock()) {
    responder_.reset();
    r->ConnectionClosed();
  }
}

void Connection::OnHandleClosed() {
  if (--open_handles_ == 0) server_->OnConnectionClosed(this);  // frees this
}

void Connection::OnServerClose() {
  switch (phase_) {
    case Phase::kReading:
      // A response just Sent may still be flushing; a half-read next request is dropped.
      if (writes_in_flight_ > 0) return Drain();
      return CloseNow();
    case Phase::kAwaiting:
    case Phase::kLingering: return CloseNow();
    case Phase::kDraining:
    case Phase::kClosed: return;
  }
}

void Connection::OnRead(ssize_t nread, const uv_buf_t* buf) {
  if (nread < 0) return OnReadEnd(nread);
  // Bytes after a final response are read only to be discarded (see kLingerMs).
  if (nread == 0 || (phase_ != Phase::kReading && phase_ != Phase::kAwaiting)) return;
  if (tls_) return OnTlsRead(std::string_view(buf->base, static_cast<size_t>(nread)));
  input_.append(buf->base, static_cast<size_t>(nread));
  ProcessInput();
}

// Over TLS the bytes read are ciphertext: what they decrypt to is the HTTP input, and what
// the session has to say back (handshake records, alerts) goes out at once.
void Connection::OnTlsRead(std::string_view cipher) {
  bool peer_closed = false;
  if (!tls_->Feed(cipher, &input_, &peer_closed).ok()) return FailTls();
  if (!WriteRaw(tls_->TakeOutput())) return;
  ProcessInput();
  if (peer_closed && phase_ != Phase::kClosed) OnReadEnd(UV_EOF);
}

// A failed handshake gets its alert and the connection closes. A plain HTTP request sent to
// the TLS port by mistake gets a clear-text answer saying so, the way nginx does.
// Not logged: this runs per connection, and the client is told.
void Connection::FailTls() {
  framing_ = Framing{1, true, false};
  std::string out = tls_->TakeOutput();
  if (tls_->refusal() == TlsSession::Refusal::kPlainHttp) {
    out = Serialize(Response{400,
                             "application/json",
                             ErrorBody(400, "this port speaks TLS: use an https:// URL"),
                             {}},
                    framing_);
  }
  if (out.empty()) return CloseNow();
  if (WriteRaw(std::move(out))) Drain();
}

void Connection::OnReadEnd(ssize_t status) {
  if (reading_) uv_read_stop(stream());
  reading_ = false;
  if (status != UV_EOF) return CloseNow();
  peer_eof_ = true;
  switch (phase_) {
    case Phase::kReading:
      if (writes_in_flight_ > 0 && parser_.state() == RequestParser::State::kIdle) return Drain();
      return CloseNow();
    case Phase::kAwaiting:
      // The client hung up under a pending response (a long-poll): close now, so OnClose
      // callbacks free the waiter instead of holding it until the response.
      return CloseNow();
    case Phase::kDraining: return;  // StartLinger() closes once the writes are flushed
    case Phase::kLingering: return CloseNow();
    case Phase::kClosed: return;
  }
}

void Connection::ProcessInput() {
  if (processing_) return;
  processing_ = true;
  while (phase_ == Phase::kReading && !input_.empty()) {
    size_t used = parser_.Feed(input_);
    input_.erase(0, used);
    if (parser_.state() == RequestParser::State::kFailed) {
      FailRequest();
    } else if (parser_.state() == RequestParser::State::kComplete) {
      if (refusal_) {
        Refuse();  // leaves kReading: the loop ends and nothing more is parsed
        continue;
      }
      Dispatch();  // the handler may answer at once, which puts us back in kReading
    } else {
      MaybeSendContinue();
    }
  }
  processing_ = false;
  UpdateReading();
  UpdateTimer();
}

// Runs inside the parser, once the head is complete and before any byte of the body: an
// answer from the admit hook, or a body the client may not buffer, makes the limit 0, so the
// parser takes no body byte (a non-empty body fails at once with 413, which FailRequest
// replaces by the refusal).
size_t Connection::OnHead(const Request& head) {
  const Limits& limits = server_->limits_;
  if (limits.admit) {
    // The verified client certificate's name is known from the handshake, before any byte of
    // HTTP: the admit hook sees it as the handler will.
    std::string peer = tls_ ? tls_->peer_name() : std::string();
    if (peer.empty()) {
      refusal_ = limits.admit(head);
    } else {
      Request named = head;
      named.peer_name = std::move(peer);
      refusal_ = limits.admit(named);
    }
    if (refusal_) return 0;
  }
  size_t limit = limits.body_limit ? limits.body_limit(head) : limits.default_max_body;
  size_t declared = DeclaredLength(head);
  if (declared == 0 || declared > limit) return limit;  // over the limit: the parser's 413
  if (int status = server_->ReserveBody(client_, declared); status != 0) {
    std::string why = status == 429 ? "this client has too many request bodies in flight"
                                    : "the server has too many request bodies in flight";
    refusal_ = Response{status, "application/json", ErrorBody(status, why), {{"Retry-After", "1"}}};
    return 0;
  }
  body_reserved_ = declared;
  return limit;
}

void Connection::ReleaseBody() {
  if (body_reserved_ > 0) server_->ReleaseBody(client_, body_reserved_);
  body_reserved_ = 0;
}

void Connection::Refuse() {
  Response response = std::move(*refusal_);
  refusal_.reset();
  framing_ = Framing{1, true, false};
  if (Write(Serialize(response, framing_))) Drain();
}

void Connection::Dispatch() {
  // From here the body is the handler's, which parses it and lets it go (a long-poll keeps
  // only its responder); the budget counts bodies being received.
  ReleaseBody();
  Request request = parser_.TakeRequest();
  if (tls_) request.peer_name = tls_->peer_name();
  framing_ = Framing{request.http_minor, !request.keep_alive, request.method == "HEAD"};
  continue_sent_ = false;
  phase_ = Phase::kAwaiting;
  if (server_->closing_) return CloseNow();
  std::shared_ptr<Responder> responder(new Responder(this));
  responder_ = responder;
  server_->handler_(std::move(request), std::move(responder));
}

void Connection::Deliver(Response response) {
  responder_.reset();
  framing_.close = framing_.close || server_->closing_;
  if (!Write(Serialize(response, framing_))) return;
  if (framing_.close) return Drain();
  phase_ = Phase::kReading;
  ProcessInput();  // the next pipelined request, if one is buffered
}

void Connection::FailRequest() {
  if (refusal_) return Refuse();
  ReleaseBody();
  int status = parser_.error_http_status();
  Response response{status, "application/json", ErrorBody(status, parser_.error().message()), {}};
  framing_ = Framing{1, true, false};
  if (Write(Serialize(response, framing_))) Drain();
}

// curl (and other clients) send "Expect: 100-continue" before large bodies and wait up to a
// second for it; answering at once saves that second on every job file upload. A body over
// the limit never gets here: the parser already failed with 413.
void Connection::MaybeSendContinue() {
  if (continue_sent_ || refusal_ || parser_.state() != RequestParser::State::kBody) return;
  const Request& head = parser_.request();
  if (!head.body.empty() || !IsContinueExpected(head)) return;
  continue_sent_ = true;
  Write("HTTP/1.1 100 Continue\r\n\r\n");
}

bool Connection::Write(std::string bytes) {
  if (tls_) {
    if (!tls_->Encrypt(bytes).ok()) {
      CloseNow();
      return false;
    }
    bytes = tls_->TakeOutput();
  }
  return WriteRaw(std::move(bytes));
}

// Puts bytes on the socket as they are (ciphertext over TLS); nothing to write is success.
bool Connection::WriteRaw(std::string bytes) {
  if (bytes.empty()) return true;
  auto op = std::make_unique<WriteOp>();
  op->bytes = std::move(bytes);
  op->connection = this;
  op->req.data = op.get();
  uv_buf_t buf = uv_buf_init(op->bytes.data(), static_cast<unsigned>(op->bytes.size()));
  int rc = uv_write(&op->req, stream(), &buf, 1, [](uv_write_t* req, int status) {
    std::unique_ptr<WriteOp> done(static_cast<WriteOp*>(req->data));
    done->connection->OnWriteDone(status);
  });
  if (rc != 0) {
    CloseNow();
    return false;
  }
  op.release();  // the write callback frees it
  ++writes_in_flight_;
  return true;
}

void Connection::OnWriteDone(int status) {
  --writes_in_flight_;
  if (phase_ == Phase::kClosed) return;
  if (status < 0) return CloseNow();
  if (phase_ == Phase::kDraining && writes_in_flight_ == 0) StartLinger();
  if (phase_ == Phase::kReading && writes_in_flight_ == 0) UpdateTimer();  // kWrite -> kIdle
}

void Connection::Drain() {
  if (phase_ == Phase::kClosed || phase_ == Phase::kDraining || phase_ == Phase::kLingering) return;
  phase_ = Phase::kDraining;
  input_.clear();
  if (writes_in_flight_ == 0) return StartLinger();
  UpdateReading();
  UpdateTimer();
}

void Connection::StartLinger() {
  if (peer_eof_) return CloseNow();
  phase_ = Phase::kLingering;
  if (tls_) {
    tls_->Shutdown();  // close_notify, written before the shutdown below takes effect
    if (!WriteRaw(tls_->TakeOutput())) return;
  }
  shutdown_req_.data = this;
  int rc = uv_shutdown(&shutdown_req_, stream(), [](uv_shutdown_t* req, int status) {
    Connection* self = From(req->data);
    if (status < 0 && self->phase_ != Phase::kClosed) self->CloseNow();
  });
  if (rc != 0) return CloseNow();
  UpdateReading();
  UpdateTimer();
}

void Connection::UpdateReading() {
  if (phase_ == Phase::kClosed) return;
  bool want = !peer_eof_ && !(phase_ == Phase::kAwaiting && input_.size() >= kMaxBufferedBytes);
  if (want && !reading_) {
    auto alloc = [](uv_handle_t* h, size_t, uv_buf_t* buf) {
      std::vector<char>& b = From(h->data)->server_->read_buffer_;
      *buf = uv_buf_init(b.data(), static_cast<unsigned>(b.size()));
    };
    auto read = [](uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
      From(s->data)->OnRead(n, buf);
    };
    if (uv_read_start(stream(), alloc, read) != 0) return CloseNow();
    reading_ = true;
  } else if (!want && reading_) {
    uv_read_stop(stream());
    reading_ = false;
  }
}

// The head deadline runs from the first byte of a request, the body deadline from the end of
// the head; neither is extended by activity, so a byte every few seconds cannot hold a
// connection (slowloris). Only the idle deadline restarts, at the end of each response.
void Connection::UpdateTimer() {
  const Limits& limits = server_->limits_;
  Deadline next = Deadline::kNone;
  uint64_t ms = 0;
  switch (phase_) {
    case Phase::kReading:
      if (tls_ && !tls_->handshake_done()) {
        next = Deadline::kHead, ms = limits.header_timeout_ms;  // the handshake is head too
      } else if (parser_.state() == RequestParser::State::kIdle) {
        next = writes_in_flight_ > 0 ? Deadline::kWrite : Deadline::kIdle;
        ms = limits.idle_timeout_ms;
      } else if (parser_.state() == RequestParser::State::kHead) {
        next = Deadline::kHead, ms = limits.header_timeout_ms;
      } else {
        next = Deadline::kBody, ms = limits.body_timeout_ms;
      }
      break;
    case Phase::kAwaiting: break;  // the handler decides how long a response takes
    case Phase::kDraining: next = Deadline::kDrain, ms = limits.idle_timeout_ms; break;
    case Phase::kLingering:
      next = Deadline::kLinger, ms = std::min(kLingerMs, limits.idle_timeout_ms);
      break;
    case Phase::kClosed: return;
  }
  bool restart = next != deadline_ || next == Deadline::kIdle;
  deadline_ = next;
  if (next == Deadline::kNone) {
    uv_timer_stop(&timer_);
  } else if (restart) {
    queued_at_arm_ = uv_stream_get_write_queue_size(stream());
    write_grace_ = false;
    ArmTimer(ms);
  }
}

void Connection::ArmTimer(uint64_t ms) {
  uv_timer_start(
      &timer_, [](uv_timer_t* t) { From(t->data)->OnDeadline(); }, ms, 0);
}

// A response being written (kWrite, kDrain) is cut only when the peer stopped taking it. Timers
// run before the loop polls, so after a turn that held the loop past the deadline the socket
// had no chance to drain: the deadline is extended once by a short grace, and then again by
// a whole period each time the queue shrank; a queue that did not move over a grace and a
// period is closed.
void Connection::OnDeadline() {
  if (deadline_ == Deadline::kWrite || deadline_ == Deadline::kDrain) {
    size_t queued = uv_stream_get_write_queue_size(stream());
    bool moved = queued < queued_at_arm_;
    if (moved || !write_grace_) {
      write_grace_ = !moved;
      queued_at_arm_ = queued;
      ArmTimer(moved ? server_->limits_.idle_timeout_ms
                     : std::min<uint64_t>(kLingerMs, server_->limits_.idle_timeout_ms));
      return;
    }
  }
  CloseNow();
}

Responder::~Responder() {
  if (connection_ != nullptr) {
    Send(Response{500, "application/json", ErrorBody(500, "the handler dropped the request"), {}});
  }
}

void Responder::Send(Response response) {
  if (connection_ == nullptr) return;
  Connection* connection = connection_;
  connection_ = nullptr;
  sent_ = true;
  on_close_.clear();
  connection->Deliver(std::move(response));
}

void Responder::OnClose(std::function<void()> cb) {
  if (sent_) return;
  if (connection_ == nullptr) return cb();
  on_close_.push_back(std::move(cb));
}

void Responder::ConnectionClosed() {
  connection_ = nullptr;
  std::vector<std::function<void()>> callbacks = std::move(on_close_);
  on_close_.clear();
  for (auto& cb : callbacks) cb();
}

HttpServer::HttpServer(uv_loop_t* loop, Limits limits, Handler handler)
    : loop_(loop),
      limits_(std::move(limits)),
      parser_limits_{limits_.max_header_bytes, limits_.default_max_body, limits_.body_limit},
      handler_(std::move(handler)),
      read_buffer_(kReadBufferBytes) {}

HttpServer::~HttpServer() {
  if (listener_open_ || !connections_.empty()) {
    log::Error("HttpServer destroyed with open handles; call Close() and wait for on_closed");
    std::abort();
  }
}

Status HttpServer::Listen(const std::string& host, int port) {
  if (listener_open_ || closing_) return Status::InvalidArgument("server is already listening");
  std::string literal = host;
  if (literal.size() >= 2 && literal.front() == '[' && literal.back() == ']')
    literal = literal.substr(1, literal.size() - 2);
  std::string where = host + ":" + std::to_string(port);
  sockaddr_storage addr{};
  if (port < 0 || port > 65535 ||
      (uv_ip4_addr(literal.c_str(), port, reinterpret_cast<sockaddr_in*>(&addr)) != 0 &&
       uv_ip6_addr(literal.c_str(), port, reinterpret_cast<sockaddr_in6*>(&addr)) != 0)) {
    return Status::InvalidArgument("listen address " + where +
                                   ": expected an IPv4 or IPv6 literal and a port");
  }
  uv_tcp_init(loop_, &listener_);
  listener_.data = this;
  listener_open_ = true;
  int rc = uv_tcp_bind(&listener_, reinterpret_cast<const sockaddr*>(&addr), 0);
  if (rc == 0)
    rc = uv_listen(reinterpret_cast<uv_stream_t*>(&listener_), kListenBacklog, &OnConnectionCb);
  sockaddr_storage bound{};
  int len = sizeof bound;
  if (rc == 0) rc = uv_tcp_getsockname(&listener_, reinterpret_cast<sockaddr*>(&bound), &len);
  if (rc != 0) {
    StopAccepting();
    std::string message = "listen on " + where + ": " + uv_strerror(rc);
    return rc == UV_EADDRINUSE ? Status::Unavailable(message) : Status::Io(message);
  }
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return Status::Ok();
}

void HttpServer::StopAccepting() {
  if (!listener_open_ || listener_closing_) return;
  listener_closing_ = true;
  uv_close(reinterpret_cast<uv_handle_t*>(&listener_),
           [](uv_handle_t* h) { static_cast<HttpServer*>(h->data)->OnListenerClosed(); });
}

void HttpServer::OnListenerClosed() {
  listener_open_ = false;
  MaybeFinishClose();
}

void HttpServer::Close(std::function<void()> on_closed) {
  if (closing_) {
    log::Error("HttpServer::Close called twice");
    std::abort();
  }
  closing_ = true;
  on_closed_ = std::move(on_closed);
  StopAccepting();
  // Connections leave the map only in close callbacks, never during this loop.
  std::vector<Connection*> open;
  for (const auto& entry : connections_) open.push_back(entry.first);
  for (Connection* c : open) c->OnServerClose();
  MaybeFinishClose();
}

void HttpServer::OnConnectionCb(uv_stream_t* listener, int status) {
  static_cast<HttpServer*>(listener->data)->OnConnection(status);
}

// A failed accept (EMFILE and the like) is not retried here: libuv reports the next pending
// connection again, and its EMFILE guard keeps the backlog from spinning.
void HttpServer::OnConnection(int status) {
  if (status < 0 || closing_) return;
  auto owned = std::make_unique<Connection>(this);
  Connection* c = owned.get();
  connections_.emplace(c, std::move(owned));
  if (!c->Start(reinterpret_cast<uv_stream_t*>(&listener_))) c->CloseNow();
}

bool HttpServer::AddConnection(const std::string& client) {
  ClientUse& use = clients_[client];
  // connections_ already holds the new one; clients_ does not yet.
  if (connections_.size() > limits_.max_connections ||
      use.connections >= limits_.max_connections_per_client) {
    if (use.connections == 0 && use.body_bytes == 0) clients_.erase(client);
    return false;
  }
  ++use.connections;
  return true;
}

void HttpServer::RemoveConnection(const std::string& client) {
  auto it = clients_.find(client);
  if (it == clients_.end()) return;
  --it->second.connections;
  if (it->second.connections == 0 && it->second.body_bytes == 0) clients_.erase(it);
}

int HttpServer::ReserveBody(const std::string& client, size_t bytes) {
  ClientUse& use = clients_[client];  // exists: the connection is counted
  if (use.body_bytes + bytes > limits_.max_body_bytes_in_flight_per_client) return 429;
  if (body_bytes_ + bytes > limits_.max_body_bytes_in_flight) return 503;
  use.body_bytes += bytes;
  body_bytes_ += bytes;
  return 0;
}

void HttpServer::ReleaseBody(const std::string& client, size_t bytes) {
  body_bytes_ -= bytes;
  auto it = clients_.find(client);
  if (it == clients_.end()) return;
  it->second.body_bytes -= bytes;
  if (it->second.connections == 0 && it->second.body_bytes == 0) clients_.erase(it);
}

HttpServer::ClientUse HttpServer::client_use(const std::string& address) const {
  auto it = clients_.find(address);
  return it == clients_.end() ? ClientUse{} : it->second;
}

void HttpServer::OnConnectionClosed(Connection* connection) {
  connections_.erase(connection);
  MaybeFinishClose();
}

void HttpServer::MaybeFinishClose() {
  if (!closing_ || listener_open_ || !connections_.empty() || !on_closed_) return;
  std::function<void()> done = std::move(on_closed_);
  on_closed_ = nullptr;
  done();  // may destroy this server: touch nothing after it
}

}  // namespace jobctl::http
