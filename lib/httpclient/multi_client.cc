// How MultiClient drives curl from libuv (after curl's docs/examples/multi-uv.c):
//
// curl tells us which sockets to watch (CURLMOPT_SOCKETFUNCTION) and when to wake it
// (CURLMOPT_TIMERFUNCTION). We keep a uv_poll_t per socket and one uv_timer_t, and when either
// fires we call curl_multi_socket_action, then read curl's finished-transfer messages.
//
// Re-entrancy: curl forbids calling curl_multi_* from inside its callbacks, and user code may call
// Start/Cancel/Close. So curl's callbacks only touch uv handles (plus curl_multi_assign, which
// curl allows there), and user callbacks run only after curl has returned: finished transfers
// are collected first and their callbacks run afterwards; callbacks owed by Cancel or a failed
// Start wait in ready_ for a uv_idle_t on the next loop iteration.
//
// Lifetime: libuv frees nothing itself, and a handle's memory may be released only in its close
// callback. open_handles_ counts every handle from init to close callback (the timer, the idle
// and each poll, including polls curl already asked us to drop), and Close() reports completion
// only when it reaches zero, so the loop can be closed right after on_closed.
#include "httpclient/multi_client.h"

#include <cstdlib>

#include "base/log.h"

namespace jobctl::http {
namespace {

[[noreturn]] void Die(std::string_view what) {
  log::Error("bug in MultiClient use", {{"what", what}});
  std::abort();
}

}  // namespace

struct MultiClient::Request {
  Request(uint64_t request_id, CURL* easy_handle, std::string url, std::string_view token,
          const RequestOptions& options, TlsOptions tls, Callback callback)
      : id(request_id),
        easy(easy_handle),
        transfer(std::move(url), token, options, std::move(tls)),
        cb(std::move(callback)) {}
  // The easy handle must already be out of the multi handle.
  ~Request() { curl_easy_cleanup(easy); }

  uint64_t id;
  CURL* easy;  // owned
  internal::Transfer transfer;
  Callback cb;
};

struct MultiClient::SocketPoll {
  uv_poll_t handle;
  curl_socket_t socket;
  MultiClient* owner;
};

MultiClient::MultiClient(uv_loop_t* loop, TlsOptions tls) : loop_(loop), tls_(std::move(tls)) {
  // Reference-counted and, since curl 7.84, thread-safe; paired with the cleanup in ~MultiClient.
  curl_global_init(CURL_GLOBAL_DEFAULT);
  multi_ = curl_multi_init();
  if (multi_ == nullptr) Die("curl_multi_init failed");
  auto on_socket = [](CURL*, curl_socket_t socket, int what, void* self, void* poll) {
    return static_cast<MultiClient*>(self)->OnSocket(socket, what, static_cast<SocketPoll*>(poll));
  };
  auto on_timer = [](CURLM*, long timeout_ms, void* self) {
    static_cast<MultiClient*>(self)->OnCurlTimer(timeout_ms);
    return 0;
  };
  curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, static_cast<curl_socket_callback>(on_socket));
  curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, static_cast<void*>(this));
  curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION,
                    static_cast<curl_multi_timer_callback>(on_timer));
  curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, static_cast<void*>(this));
  uv_timer_init(loop_, &timer_);
  timer_.data = this;
  uv_idle_init(loop_, &deferred_);
  deferred_.data = this;
  open_handles_ = 2;
}

MultiClient::~MultiClient() {
  if (!closed_) Die("MultiClient destroyed before Close() completed");
  curl_global_cleanup();
}

uint64_t MultiClient::Start(std::string url, std::string token, RequestOptions options,
                            Callback cb) {
  if (closing_) return 0;
  uint64_t id = next_id_++;
  CURL* easy = curl_easy_init();
  if (easy == nullptr) {
    Defer(std::move(cb), Status::Internal("curl_easy_init failed for " + url));
    return id;
  }
  auto request = std::make_unique<Request>(id, easy, std::move(url), token, std::move(options),
                                           tls_, std::move(cb));
  Status status = request->transfer.Apply(easy);
  curl_easy_setopt(easy, CURLOPT_PRIVATE, static_cast<void*>(request.get()));
  if (status.ok()) {
    // Adding only arms curl's timer; the transfer begins when it fires, so the callback can
    // never run inside Start().
    CURLMcode rc = curl_multi_add_handle(multi_, easy);
    if (rc != CURLM_OK)
      status = Status::Internal(request->transfer.Describe() +
                                ": curl_multi_add_handle: " + curl_multi_strerror(rc));
  }
  if (!status.ok()) {
    Defer(std::move(request->cb), std::move(status));
    return id;  // `request` dies here and cleans up its easy handle
  }
  requests_.emplace(id, std::move(request));
  return id;
}

bool MultiClient::Cancel(uint64_t id) {
  auto it = requests_.find(id);
  if (it == requests_.end()) return false;
  std::unique_ptr<Request> request = std::move(it->second);
  requests_.erase(it);
  // Removing an unfinished transfer makes curl close its connection: the server sees the
  // request abandoned rather than a connection left half-used.
  curl_multi_remove_handle(multi_, request->easy);
  Defer(std::move(request->cb), Status::Unavailable("canceled: " + request->transfer.Describe()));
  return true;
}

void MultiClient::Close(std::function<void()> on_closed) {
  if (closing_) Die("MultiClient::Close called twice");
  closing_ = true;
  on_closed_ = std::move(on_closed);
  for (auto& [id, request] : requests_) {
    curl_multi_remove_handle(multi_, request->easy);
    ready_.push_back({std::move(request->cb),
                      Status::Unavailable("client closed: " + request->transfer.Describe())});
  }
  requests_.clear();
  while (!polls_.empty()) ClosePoll(polls_.begin()->second);
  // Detach first, so tearing down the connection cache cannot call back into handles that are
  // already closing.
  curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, static_cast<curl_socket_callback>(nullptr));
  curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION,
                    static_cast<curl_multi_timer_callback>(nullptr));
  curl_multi_cleanup(multi_);
  multi_ = nullptr;
  CloseHandle(reinterpret_cast<uv_handle_t*>(&timer_));
  CloseHandle(reinterpret_cast<uv_handle_t*>(&deferred_));
}

int MultiClient::OnSocket(curl_socket_t socket, int what, SocketPoll* poll) {
  if (what == CURL_POLL_REMOVE) {
    if (poll != nullptr) {
      curl_multi_assign(multi_, socket, nullptr);
      ClosePoll(poll);
    }
    return 0;
  }
  if (poll == nullptr) {
    poll = new SocketPoll{{}, socket, this};  // deleted in ClosePoll's close callback
    if (uv_poll_init_socket(loop_, &poll->handle, socket) != 0) {
      delete poll;
      return -1;  // curl fails the transfers on this socket
    }
    poll->handle.data = poll;
    ++open_handles_;
    polls_[socket] = poll;
    curl_multi_assign(multi_, socket, poll);
  }
  int events = 0;
  if (what & CURL_POLL_IN) events |= UV_READABLE;
  if (what & CURL_POLL_OUT) events |= UV_WRITABLE;
  uv_poll_start(&poll->handle, events, [](uv_poll_t* handle, int status, int ready) {
    auto* p = static_cast<SocketPoll*>(handle->data);
    p->owner->OnPollEvent(p->socket, status, ready);
  });
  return 0;
}

void MultiClient::OnCurlTimer(long timeout_ms) {
  if (timeout_ms < 0) {
    uv_timer_stop(&timer_);
    return;
  }
  // 0 means "call socket_action as soon as possible", but not from inside this callback; as in
  // multi-uv.c, wait 1 ms, which also keeps libuv from re-running the timer in the same pass.
  uint64_t delay = timeout_ms == 0 ? 1 : static_cast<uint64_t>(timeout_ms);
  uv_timer_start(
      &timer_, [](uv_timer_t* timer) { static_cast<MultiClient*>(timer->data)->OnTimeout(); },
      delay, 0);
}

void MultiClient::OnPollEvent(curl_socket_t socket, int status, int events) {
  int flags = 0;
  if (status < 0) flags |= CURL_CSELECT_ERR;
  if (events & UV_READABLE) flags |= CURL_CSELECT_IN;
  if (events & UV_WRITABLE) flags |= CURL_CSELECT_OUT;
  SocketAction(socket, flags);
}

void MultiClient::OnTimeout() { SocketAction(CURL_SOCKET_TIMEOUT, 0); }

void MultiClient::SocketAction(curl_socket_t socket, int flags) {
  if (multi_ == nullptr) return;  // closed handles deliver no events; this is a guard
  int running = 0;
  curl_multi_socket_action(multi_, socket, flags, &running);
  CompleteFinished();
}

void MultiClient::CompleteFinished() {
  std::vector<Completion> finished;
  int queued = 0;
  while (CURLMsg* msg = curl_multi_info_read(multi_, &queued)) {
    if (msg->msg != CURLMSG_DONE) continue;
    // Copy out of msg now: curl_multi_remove_handle invalidates it.
    CURL* easy = msg->easy_handle;
    CURLcode code = msg->data.result;
    char* request_ptr = nullptr;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, &request_ptr);
    auto* request = reinterpret_cast<Request*>(request_ptr);
    curl_multi_remove_handle(multi_, easy);
    finished.push_back({std::move(request->cb), request->transfer.Finish(easy, code)});
    requests_.erase(request->id);
  }
  // Every callback runs after curl has returned, so each may call Start, Cancel or Close.
  RunAll(finished);
}

void MultiClient::Defer(Callback cb, Status status) {
  ready_.push_back({std::move(cb), std::move(status)});
  // While closing, the idle handle is closing too; OnHandleClosed runs what is in ready_.
  if (closing_) return;
  uv_idle_start(&deferred_,
                [](uv_idle_t* idle) { static_cast<MultiClient*>(idle->data)->OnDeferred(); });
}

void MultiClient::OnDeferred() {
  uv_idle_stop(&deferred_);
  std::vector<Completion> batch;
  batch.swap(ready_);
  RunAll(batch);
}

void MultiClient::RunAll(std::vector<Completion>& completions) {
  for (Completion& completion : completions) {
    if (completion.cb) completion.cb(std::move(completion.result));
  }
}

void MultiClient::ClosePoll(SocketPoll* poll) {
  auto it = polls_.find(poll->socket);
  if (it != polls_.end() && it->second == poll) polls_.erase(it);
  uv_close(reinterpret_cast<uv_handle_t*>(&poll->handle), [](uv_handle_t* handle) {
    auto* p = static_cast<SocketPoll*>(handle->data);
    MultiClient* owner = p->owner;
    delete p;
    owner->OnHandleClosed();
  });
}

void MultiClient::CloseHandle(uv_handle_t* handle) {
  uv_close(handle, [](uv_handle_t* h) { static_cast<MultiClient*>(h->data)->OnHandleClosed(); });
}

void MultiClient::OnHandleClosed() {
  --open_handles_;
  if (!closing_ || open_handles_ > 0) return;
  std::vector<Completion> owed;
  owed.swap(ready_);
  RunAll(owed);
  closed_ = true;
  std::function<void()> on_closed = std::move(on_closed_);
  // on_closed may destroy this client; nothing below may touch a member.
  if (on_closed) on_closed();
}

}  // namespace jobctl::http
