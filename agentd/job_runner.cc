// How a child ends. Three things must happen, in any order: the process exits (exit_cb), and
// each pipe reaches EOF. on_exit runs when all three have. A grandchild may keep a pipe open
// long after the process is gone (`sleep 1000 &`), so the process's exit arms a timer that
// force-closes the pipes after pipe_grace. Terminate's SIGKILL timer keeps going after the
// process exits, since the rest of the process group may still be alive; it stops once the
// child is over, so a later process can never get a signal meant for this group.
#include "job_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "base/log.h"
#include "timer.h"

namespace jobctl::agentd {

struct UvRunner::Child {
  UvRunner* owner = nullptr;
  ChildId id = 0;
  uv_process_t process{};
  uv_pipe_t out{};
  uv_pipe_t err{};
  bool out_open = false;
  bool err_open = false;
  bool exited = false;
  int open_handles = 0;
  ExitInfo exit;
  std::chrono::milliseconds pipe_grace{0};
  Callbacks cb;
  std::unique_ptr<Timer> kill_timer;
  std::unique_ptr<Timer> pipe_timer;
};

namespace {

// Marks every descriptor above stdio close-on-exec, so a job inherits nothing of agentd:
// not libcurl's wake-up socketpair, not descriptors agentd itself inherited from whoever
// started it. libuv and our own code open with O_CLOEXEC already; this catches the rest.
// One thread, so nothing can open a descriptor between this and the spawn.
void CloseOnExecAbove2() {
  for (const std::filesystem::directory_entry& e :
       std::filesystem::directory_iterator("/proc/self/fd", std::filesystem::directory_options::skip_permission_denied)) {
    int fd = std::atoi(e.path().filename().c_str());
    if (fd <= 2) continue;
    int flags = fcntl(fd, F_GETFD);
    if (flags >= 0 && !(flags & FD_CLOEXEC)) fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
  }
}

Status SpawnError(const SpawnSpec& spec, int rc) {
  return Status::Unavailable("cannot start " + (spec.argv.empty() ? "" : spec.argv[0]) + ": " +
                             uv_strerror(rc));
}

}  // namespace

UvRunner::UvRunner(uv_loop_t* loop) : loop_(loop) {}

UvRunner::~UvRunner() = default;

Result<Runner::ChildId> UvRunner::Start(const SpawnSpec& spec,
                                        std::chrono::milliseconds pipe_grace,
                                        Callbacks callbacks) {
  if (closing_all_) return Status::Unavailable("agentd is stopping");
  if (spec.argv.empty()) return Status::InvalidArgument("empty argv");
  // Real pipes: the child's ends block, ours do not; both are close-on-exec, so no other
  // child inherits them (the child's copies on fds 1 and 2 are made by dup2).
  uv_file out_fds[2], err_fds[2];
  if (int rc = uv_pipe(out_fds, UV_NONBLOCK_PIPE, 0); rc != 0) return SpawnError(spec, rc);
  if (int rc = uv_pipe(err_fds, UV_NONBLOCK_PIPE, 0); rc != 0) {
    close(out_fds[0]);
    close(out_fds[1]);
    return SpawnError(spec, rc);
  }
  std::vector<char*> argv, env;
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : spec.env) env.push_back(const_cast<char*>(e.c_str()));
  env.push_back(nullptr);
  uv_stdio_container_t stdio[3];
  stdio[0].flags = UV_IGNORE;  // libuv opens /dev/null for it
  stdio[1].flags = UV_INHERIT_FD;
  stdio[1].data.fd = out_fds[1];
  stdio[2].flags = UV_INHERIT_FD;
  stdio[2].data.fd = err_fds[1];
  uv_process_options_t options{};
  options.file = argv[0];
  options.args = argv.data();
  options.env = env.data();
  options.cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str();
  options.flags = UV_PROCESS_DETACHED;
  options.stdio_count = 3;
  options.stdio = stdio;
  options.exit_cb = [](uv_process_t* p, int64_t status, int signal) {
    auto* c = static_cast<Child*>(p->data);
    c->owner->OnExit(c, status, signal);
  };

  auto child = std::make_unique<Child>();
  Child* c = child.get();
  c->owner = this;
  c->id = next_id_++;
  c->cb = std::move(callbacks);
  c->pipe_grace = pipe_grace;
  c->process.data = c;
  CloseOnExecAbove2();
  int rc = uv_spawn(loop_, &c->process, &options);
  close(out_fds[1]);
  close(err_fds[1]);
  if (rc != 0) {
    close(out_fds[0]);
    close(err_fds[0]);
    // A failed uv_spawn still initialized the handle; it must be closed before it is freed.
    uv_close(reinterpret_cast<uv_handle_t*>(&c->process),
             [](uv_handle_t* h) { delete static_cast<Child*>(h->data); });
    child.release();
    return SpawnError(spec, rc);
  }
  c->open_handles = 1;
  struct PipeSetup {
    uv_pipe_t* pipe;
    int fd;
    ChunkStream stream;
    bool* open;
  };
  for (PipeSetup p : {PipeSetup{&c->out, out_fds[0], ChunkStream::kStdout, &c->out_open},
                      PipeSetup{&c->err, err_fds[0], ChunkStream::kStderr, &c->err_open}}) {
    uv_pipe_init(loop_, p.pipe, 0);
    ++c->open_handles;
    p.pipe->data = c;
    uv_pipe_open(p.pipe, p.fd);
    *p.open = true;
    auto alloc = [](uv_handle_t* h, size_t, uv_buf_t* buf) {
      auto* ch = static_cast<Child*>(h->data);
      *buf = uv_buf_init(ch->owner->read_buf_, sizeof ch->owner->read_buf_);
    };
    if (p.stream == ChunkStream::kStdout) {
      uv_read_start(reinterpret_cast<uv_stream_t*>(p.pipe), alloc,
                    [](uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
                      auto* ch = static_cast<Child*>(s->data);
                      ch->owner->OnRead(ch, ChunkStream::kStdout, n, buf);
                    });
    } else {
      uv_read_start(reinterpret_cast<uv_stream_t*>(p.pipe), alloc,
                    [](uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
                      auto* ch = static_cast<Child*>(s->data);
                      ch->owner->OnRead(ch, ChunkStream::kStderr, n, buf);
                    });
    }
  }
  c->kill_timer = std::make_unique<Timer>(loop_);
  c->pipe_timer = std::make_unique<Timer>(loop_);
  ChildId id = c->id;
  children_.emplace(id, std::move(child));
  return id;
}

int UvRunner::PidOf(ChildId id) const {
  auto it = children_.find(id);
  return it == children_.end() ? 0 : it->second->process.pid;
}

void UvRunner::Terminate(ChildId id, std::chrono::milliseconds grace) {
  auto it = children_.find(id);
  if (it == children_.end()) return;
  Child* c = it->second.get();
  if (c->kill_timer->active()) return;  // already terminating
  pid_t pgid = c->process.pid;
  kill(-pgid, SIGTERM);
  c->kill_timer->Once(static_cast<uint64_t>(grace.count()), [pgid] { kill(-pgid, SIGKILL); });
  // A process that is gone while its group lingers: the pipes get the same grace.
  if (c->exited && !c->pipe_timer->active()) {
    c->pipe_timer->Once(static_cast<uint64_t>(grace.count()), [this, c] {
      ClosePipe(c, ChunkStream::kStdout);
      ClosePipe(c, ChunkStream::kStderr);
    });
  }
}

void UvRunner::OnRead(Child* c, ChunkStream stream, ssize_t nread, const uv_buf_t* buf) {
  if (nread > 0) {
    c->cb.on_output(stream, std::string_view(buf->base, static_cast<size_t>(nread)));
    return;
  }
  if (nread < 0) ClosePipe(c, stream);  // UV_EOF, or an error: either way the stream ended
}

void UvRunner::ClosePipe(Child* c, ChunkStream stream) {
  bool* open = stream == ChunkStream::kStdout ? &c->out_open : &c->err_open;
  if (!*open) return;
  *open = false;
  uv_handle_t* h = reinterpret_cast<uv_handle_t*>(stream == ChunkStream::kStdout ? &c->out : &c->err);
  uv_close(h, [](uv_handle_t* handle) {
    auto* ch = static_cast<Child*>(handle->data);
    ch->owner->OnHandleClosed(ch);
  });
  MaybeFinish(c);
}

void UvRunner::OnExit(Child* c, int64_t exit_status, int term_signal) {
  c->exited = true;
  c->exit = {exit_status, term_signal};
  uv_close(reinterpret_cast<uv_handle_t*>(&c->process), [](uv_handle_t* handle) {
    auto* ch = static_cast<Child*>(handle->data);
    ch->owner->OnHandleClosed(ch);
  });
  if ((c->out_open || c->err_open) && !c->pipe_timer->active()) {
    c->pipe_timer->Once(static_cast<uint64_t>(c->pipe_grace.count()), [this, c] {
      ClosePipe(c, ChunkStream::kStdout);
      ClosePipe(c, ChunkStream::kStderr);
    });
  }
  MaybeFinish(c);
}

void UvRunner::MaybeFinish(Child* c) {
  if (!c->exited || c->out_open || c->err_open) return;
  auto it = children_.find(c->id);
  if (it == children_.end()) return;  // already over
  // Over: no more signals to this group, and the Child waits for its handles in closing_.
  c->kill_timer.reset();
  c->pipe_timer.reset();
  Callbacks cb = std::move(c->cb);
  ExitInfo exit = c->exit;
  closing_.emplace(c, std::move(it->second));
  children_.erase(it);
  if (c->open_handles == 0) closing_.erase(c);
  if (cb.on_exit) cb.on_exit(exit);
}

void UvRunner::OnHandleClosed(Child* c) {
  --c->open_handles;
  if (c->open_handles > 0) return;
  closing_.erase(c);
  if (closing_all_ && closing_.empty() && children_.empty() && on_closed_) {
    std::function<void()> done = std::move(on_closed_);
    done();
  }
}

void UvRunner::CloseChild(Child* c) {
  c->kill_timer.reset();
  c->pipe_timer.reset();
  c->cb = {};
  if (!c->exited) {
    c->exited = true;
    uv_close(reinterpret_cast<uv_handle_t*>(&c->process), [](uv_handle_t* handle) {
      auto* ch = static_cast<Child*>(handle->data);
      ch->owner->OnHandleClosed(ch);
    });
  }
  ClosePipe(c, ChunkStream::kStdout);
  ClosePipe(c, ChunkStream::kStderr);
}

void UvRunner::Close(std::function<void()> on_closed) {
  closing_all_ = true;
  on_closed_ = std::move(on_closed);
  if (!children_.empty()) {
    log::Warn("leaving shard processes running", {{"count", static_cast<uint64_t>(children_.size())}});
  }
  // CloseChild moves each child into closing_ (through MaybeFinish) while we iterate.
  while (!children_.empty()) CloseChild(children_.begin()->second.get());
  if (closing_.empty() && on_closed_) {
    // Nothing is closing: still never call back from inside Close().
    auto* idle = new uv_idle_t;
    uv_idle_init(loop_, idle);
    idle->data = this;
    uv_idle_start(idle, [](uv_idle_t* i) {
      auto* self = static_cast<UvRunner*>(i->data);
      uv_close(reinterpret_cast<uv_handle_t*>(i),
               [](uv_handle_t* h) { delete reinterpret_cast<uv_idle_t*>(h); });
      std::function<void()> done = std::move(self->on_closed_);
      if (done) done();
    });
  }
}

}  // namespace jobctl::agentd
