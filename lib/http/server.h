// HttpServer is the coordinator's HTTP/1.1 server: one libuv TCP listener and its
// connections, each parsed by a RequestParser, answered through a Responder. Loop thread
// only; the owner (the coordinator) creates it with its uv_loop_t, calls Listen(), and must
// call Close() and wait for on_closed before destroying it or closing the loop.
//
// One request at a time per connection: while a response is pending, later (pipelined)
// bytes are buffered unparsed, so responses go out in request order; reading continues so
// that a client hanging up under a long-poll is noticed. Keep-alive follows HTTP/1.1
// (HTTP/1.0 only with "Connection: keep-alive"). Request bodies need Content-Length (see
// request_parser.h). A malformed or oversized request is answered with a JSON error
// {"error":"bad_request","message":"..."} and the connection is closed.
//
// What an unauthenticated client can hold is bounded: once the headers are complete and
// before a byte of the body is read, Limits::admit may refuse the request (the coordinator
// authenticates there), and the refusal is sent with "Connection: close" while the body is
// discarded unread. Deadlines are absolute, never extended by a trickle of bytes: the head
// must arrive within header_timeout_ms of its first byte, the body within body_timeout_ms
// of the end of the head, and a keep-alive connection with no request is closed after
// idle_timeout_ms. A response is written for as long as the peer takes some of it every
// idle_timeout_ms (a peer that stops reading is cut after one such period and a short
// grace); a turn of the loop that ran past the deadline does not cut it. Connections and the
// declared bodies being received are capped in all and per client address (an IPv6 client counts by
// its /64).
#pragma once

#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"
#include "http/request_parser.h"

namespace jobctl::http {

class Connection;
class HttpServer;
class TlsContext;

struct Response {
  int status = 200;
  std::string content_type = "application/json";  // empty: no Content-Type header
  std::string body;
  // Extra headers. The server writes Content-Length and Connection itself; a header whose
  // name or value holds CR or LF is dropped.
  std::vector<std::pair<std::string, std::string>> headers;
};

// Lets a handler answer now or later (long-poll). Send() at most once; a second Send(), or a
// Send() after the client went away or the server closed, is a no-op. A Responder dropped
// without Send() while its client is still connected answers 500, so no connection hangs.
// Safe to keep past its connection: it holds a pointer the connection clears when it closes.
class Responder {
 public:
  Responder(const Responder&) = delete;
  Responder& operator=(const Responder&) = delete;
  ~Responder();

  void Send(Response response);
  // True while Send() would deliver: nothing sent yet and the connection still open.
  bool alive() const { return connection_ != nullptr; }
  // `cb` runs once if the connection closes before a response was sent (client hung up,
  // timeout, or server Close()); at once if that already happened. Never after Send().
  void OnClose(std::function<void()> cb);

 private:
  friend class Connection;
  explicit Responder(Connection* connection) : connection_(connection) {}
  void ConnectionClosed();  // called by the connection when it starts closing

  Connection* connection_;  // null once sent or once the connection closed
  bool sent_ = false;
  std::vector<std::function<void()>> on_close_;
};

struct Limits {
  size_t max_header_bytes = 16 * 1024;
  size_t default_max_body = 1 << 20;
  // Called once the headers are complete and admitted; returns the body limit for that
  // request (e.g. 8 MiB for POST /v1/jobfile, 256 KiB for log chunks). Optional.
  std::function<size_t(const Request& head)> body_limit;
  // Called once the headers are complete, before any byte of the body is read or buffered.
  // A Response refuses the request (401, 403, 404, 429, ...): it is sent, the connection
  // closes and the body is never buffered. Optional: without it every request is admitted.
  std::function<std::optional<Response>(const Request& head)> admit;
  uint64_t header_timeout_ms = 10'000;  // the head must complete this long after its first byte
  uint64_t body_timeout_ms = 60'000;    // the body must complete this long after the head
  uint64_t idle_timeout_ms = 60'000;    // a keep-alive connection with no request
  // Further connections are accepted and closed at once.
  size_t max_connections = 4096;
  size_t max_connections_per_client = 256;
  // Content-Length of the request bodies being received (until handed to the handler). A
  // request that would pass the per-client figure is refused with 429, one that would pass
  // the total with 503, both before any of its body is read.
  size_t max_body_bytes_in_flight = size_t{256} << 20;
  size_t max_body_bytes_in_flight_per_client = size_t{32} << 20;
};

// Called on the loop thread for each complete request, never after Close() began.
using Handler = std::function<void(Request&& request, std::shared_ptr<Responder> responder)>;

class HttpServer {
 public:
  HttpServer(uv_loop_t* loop, Limits limits, Handler handler);
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  ~HttpServer();  // aborts if a handle is still open: call Close() and wait for on_closed

  // host is an IPv4 or IPv6 literal ("127.0.0.1", "::1", "0.0.0.0"); port 0 = ephemeral.
  // At most once.
  Status Listen(const std::string& host, int port);
  int port() const { return port_; }  // the bound port, 0 before Listen()
  // Closes the listening socket only; open connections keep being served.
  void StopAccepting();
  // Stops accepting, closes idle connections and those waiting for a handler (their
  // Responders' OnClose callbacks fire), lets responses already Sent flush, and calls
  // on_closed once every handle's close callback ran (at once if nothing was open). Once.
  void Close(std::function<void()> on_closed);
  size_t connections() const { return connections_.size(); }  // open or closing
  // Counted connections and declared body bytes in flight of one client address ("127.0.0.1",
  // an IPv6 client's /64 as "2001:db8::"); zeros for an address with none.
  struct ClientUse {
    size_t connections = 0;
    size_t body_bytes = 0;
  };
  ClientUse client_use(const std::string& address) const;
  size_t body_bytes_in_flight() const { return body_bytes_; }
  // Serves TLS on connections accepted from now on (see http/tls.h); null = plain HTTP. The
  // context may be Reload()ed at any time: each new connection takes its current pair. A
  // plain HTTP request to a TLS server is answered 400 in clear text and closed.
  void UseTls(std::shared_ptr<TlsContext> tls) { tls_ = std::move(tls); }

 private:
  friend class Connection;
  // Counts a new connection of `client`; false when it is over a connection limit.
  bool AddConnection(const std::string& client);
  void RemoveConnection(const std::string& client);
  // Reserves `bytes` of body for `client`: 0 when granted, else the status that refuses it.
  int ReserveBody(const std::string& client, size_t bytes);
  void ReleaseBody(const std::string& client, size_t bytes);
  static void OnConnectionCb(uv_stream_t* listener, int status);
  void OnConnection(int status);
  void OnListenerClosed();
  void OnConnectionClosed(Connection* connection);
  void MaybeFinishClose();

  uv_loop_t* loop_;
  Limits limits_;
  ParserLimits parser_limits_;
  Handler handler_;
  uv_tcp_t listener_;
  bool listener_open_ = false;  // uv_tcp_init ran and the close callback has not
  bool listener_closing_ = false;
  int port_ = 0;
  bool closing_ = false;  // Close() began
  std::function<void()> on_closed_;
  std::unordered_map<Connection*, std::unique_ptr<Connection>> connections_;
  std::unordered_map<std::string, ClientUse> clients_;  // entries with a count above zero
  size_t body_bytes_ = 0;                               // the sum of clients_' body_bytes
  std::vector<char> read_buffer_;    // shared by all connections: each read is consumed at once
  std::shared_ptr<TlsContext> tls_;  // null: plain HTTP
};

}  // namespace jobctl::http
