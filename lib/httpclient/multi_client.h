// MultiClient runs agentd's HTTP requests concurrently on its one libuv loop: one CURLM driven
// in the shape of curl's multi-uv example (a uv_poll_t per socket from CURLMOPT_SOCKETFUNCTION,
// one uv_timer_t from CURLMOPT_TIMERFUNCTION, a check for finished transfers after every
// curl_multi_socket_action).
//
// Loop thread only. The owner (agentd's Agent) creates it with the loop and must call Close()
// and wait for on_closed before destroying it, as for any libuv handle owner.
//
// Callback contract (STYLE's async rule): a Start() that returns an id calls its callback exactly
// once, on the loop thread, never from inside Start(), Cancel() or Close():
//   - the transfer finished: the response (any HTTP status) or Unavailable naming the URL;
//   - Cancel(id) before that: Unavailable("canceled: METHOD URL"), on a later loop iteration;
//   - Close() before that: Unavailable("client closed: METHOD URL"), just before on_closed.
// Start() after Close() fails synchronously: it returns 0 and never calls the callback.
// Callbacks may call Start, Cancel and Close; none of them runs inside a curl call.
//
// Connections are kept in the multi handle's cache and reused. Requests started while others are
// in flight get their own connection, so a held long-poll never delays a heartbeat. An idle
// client has no active handle: uv_run returns once nothing else is alive.
#pragma once

#include <curl/curl.h>
#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "httpclient/blocking_client.h"

namespace jobctl::http {

class MultiClient {
 public:
  using Callback = std::function<void(Result<HttpResponse>)>;

  // `tls` applies to every https:// request (see TlsOptions in blocking_client.h).
  explicit MultiClient(uv_loop_t* loop, TlsOptions tls = {});
  ~MultiClient();  // requires Close() to have completed (on_closed has run)
  MultiClient(const MultiClient&) = delete;
  MultiClient& operator=(const MultiClient&) = delete;

  // Starts a request to a full URL; an empty token sends no Authorization header. Returns an id
  // for Cancel (ids start at 1 and are never reused), or 0 after Close() (cb is then never run).
  uint64_t Start(std::string url, std::string token, RequestOptions options, Callback cb);

  // Aborts a request in flight (its connection is closed); its callback runs later with
  // Unavailable("canceled: ..."), and Cancel returns true. An id that already finished, or is
  // unknown, is ignored and Cancel returns false: its callback runs (or ran) with the real
  // result.
  bool Cancel(uint64_t id);

  // Requests started and not yet finished or canceled.
  size_t in_flight() const { return requests_.size(); }

  // Aborts everything in flight, closes every uv handle, runs the aborted requests' callbacks
  // with Unavailable and then on_closed, from a close callback (never inside Close()). After
  // that, uv_loop_close() succeeds if nothing else is open on the loop. Call once (a second
  // call is a bug and aborts).
  void Close(std::function<void()> on_closed);

 private:
  struct Request;     // one transfer in flight: easy handle, Transfer, callback
  struct SocketPoll;  // a uv_poll_t watching one of curl's sockets
  struct Completion {
    Callback cb;
    Result<HttpResponse> result;
  };

  // curl callbacks: they only adjust uv handles and never call back into curl or user code.
  int OnSocket(curl_socket_t socket, int what, SocketPoll* poll);
  void OnCurlTimer(long timeout_ms);
  // uv callbacks: each drives curl, then completes what finished.
  void OnPollEvent(curl_socket_t socket, int status, int events);
  void OnTimeout();
  void OnDeferred();

  void SocketAction(curl_socket_t socket, int flags);
  void CompleteFinished();
  void Defer(Callback cb, Status status);
  static void RunAll(std::vector<Completion>& completions);
  void ClosePoll(SocketPoll* poll);
  void CloseHandle(uv_handle_t* handle);
  void OnHandleClosed();

  uv_loop_t* loop_;
  TlsOptions tls_;
  CURLM* multi_ = nullptr;  // owned; null once Close() began
  uv_timer_t timer_;        // curl's one timeout (CURLMOPT_TIMERFUNCTION)
  uv_idle_t deferred_;      // runs ready_ on the next loop iteration; active only while needed
  std::unordered_map<uint64_t, std::unique_ptr<Request>> requests_;
  std::unordered_map<curl_socket_t, SocketPoll*> polls_;  // open polls; freed in close callbacks
  std::vector<Completion> ready_;  // callbacks owed for Cancel, Close or a failed Start
  uint64_t next_id_ = 1;
  int open_handles_ = 0;  // initialized uv handles whose close callback has not run
  bool closing_ = false;
  bool closed_ = false;
  std::function<void()> on_closed_;
};

}  // namespace jobctl::http
