// How a child ends. Three things must happen, in any order: the process exits (its pidfd
// becomes readable and it is reaped), and each pipe reaches EOF. on_exit runs when all three
// have. A grandchild may keep a pipe open long after the process is gone (`sleep 1000 &`), so
// the process's exit arms a timer that force-closes the pipes after pipe_grace. Terminate's
// SIGKILL timer keeps going after the process exits, since the rest of the process group may
// still be alive; it stops once the child is over, so a later process can never get a signal
// meant for this group.
#include "job_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "base/log.h"
#include "process_spawn.h"
#include "uvx/handles.h"

namespace jobctl::agentd {

struct UvRunner::Child {
  UvRunner* owner = nullptr;
  ChildId id = 0;
  pid_t pid = 0;
  int pidfd = -1;
  uv_poll_t exit_watch{};  // readable once the process has exited
  uv_pipe_t out{};
  uv_pipe_t err{};
  bool watching = false;   // exit_watch is open
  bool by_signal = false;  // no pidfd: SIGCHLD tells when it exits
  bool out_open = false;
  bool err_open = false;
  bool exited = false;
  int open_handles = 0;
  ExitInfo exit;
  std::optional<AttemptKey> cgroup;  // its own cgroup, in the runner's tree
  std::chrono::milliseconds pipe_grace{0};
  Callbacks cb;
  std::unique_ptr<uvx::Timer> kill_timer;
  std::unique_ptr<uvx::Timer> pipe_timer;
};

namespace {

// How often (every 100 ms) a cgroup that still has processes is tried again.
constexpr int kRemoveTries = 600;

// A pipe end on 0, 1 or 2 (agentd started with a standard descriptor closed) would be undone
// by the child's own stdio set-up: move it above.
Status AboveStdio(int* fd) {
  if (*fd > 2) return Status::Ok();
  int moved = fcntl(*fd, F_DUPFD_CLOEXEC, 3);
  if (moved < 0) return Status::Unavailable(std::string("fcntl: ") + std::strerror(errno));
  close(*fd);
  *fd = moved;
  return Status::Ok();
}

void ClosePair(uv_file fds[2]) {
  close(fds[0]);
  close(fds[1]);
}

// A child that was started but cannot be watched must not run unobserved.
void KillAndReap(pid_t pid) {
  kill(-pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

}  // namespace

UvRunner::UvRunner(uv_loop_t* loop, ExitWatch watch) : loop_(loop), watch_(watch) {}

UvRunner::~UvRunner() = default;

Result<Runner::ChildId> UvRunner::Start(const SpawnSpec& spec, std::chrono::milliseconds pipe_grace,
                                        Callbacks callbacks) {
  if (closing_all_) return Status::Unavailable("agentd is stopping");
  if (spec.argv.empty()) return Status::InvalidArgument("empty argv");
  auto failed = [&spec](const Status& s) { return s.WithContext("cannot start " + spec.argv[0]); };
  if (!spec.limits.empty() && (cgroups_ == nullptr || !spec.cgroup)) {
    return failed(Status::Unavailable(
        "the job sets resource limits, and this agent runs shards without cgroup v2 (" +
        no_cgroups_ + "; see agentd(8), CGROUPS)"));
  }
  // The attempt's own cgroup, made before the pipes so that a failure leaves nothing open.
  int cgroup_fd = -1;
  std::optional<AttemptKey> cgroup;
  if (cgroups_ != nullptr && spec.cgroup) {
    Result<int> fd = cgroups_->Create(*spec.cgroup);
    if (!fd.ok()) return failed(fd.status());
    cgroup_fd = *fd;
    cgroup = spec.cgroup;
    if (Status s = cgroups_->SetLimits(*cgroup, spec.limits); !s.ok()) {
      close(cgroup_fd);
      cgroups_->Remove(*cgroup);
      return failed(s);
    }
  }
  // Every failure below: the cgroup goes again, and with it whatever the process started
  // before it was killed (RemoveCgroup kills, and retries the removal until it is empty).
  auto undo_cgroup = [&] {
    if (cgroup_fd >= 0) close(std::exchange(cgroup_fd, -1));
    if (cgroup) RemoveCgroup(*cgroup);
  };
  // Real pipes: the child's ends block, ours do not; both are close-on-exec, so no other
  // child inherits them (the child's copies on fds 1 and 2 are made by dup2).
  uv_file out_fds[2], err_fds[2];
  if (int rc = uv_pipe(out_fds, UV_NONBLOCK_PIPE, 0); rc != 0) {
    undo_cgroup();
    return failed(Status::Unavailable(uv_strerror(rc)));
  }
  if (int rc = uv_pipe(err_fds, UV_NONBLOCK_PIPE, 0); rc != 0) {
    ClosePair(out_fds);
    undo_cgroup();
    return failed(Status::Unavailable(uv_strerror(rc)));
  }
  Status moved = AboveStdio(&out_fds[1]);
  if (moved.ok()) moved = AboveStdio(&err_fds[1]);
  Result<pid_t> pid = moved.ok() ? SpawnDetached(spec, out_fds[1], err_fds[1], cgroup_fd) : moved;
  close(out_fds[1]);
  close(err_fds[1]);
  if (cgroup_fd >= 0) close(std::exchange(cgroup_fd, -1));
  Result<int> pidfd = !pid.ok()                     ? Result<int>(pid.status())
                      : watch_ == ExitWatch::kPidfd ? OpenPidfd(*pid)
                                                    : Result<int>(-1);
  if (!pidfd.ok()) {
    close(out_fds[0]);
    close(err_fds[0]);
    if (pid.ok()) KillAndReap(*pid);
    undo_cgroup();
    return failed(pidfd.status());
  }

  auto child = std::make_unique<Child>();
  Child* c = child.get();
  c->owner = this;
  c->id = next_id_++;
  c->pid = *pid;
  c->pidfd = *pidfd;
  c->cgroup = cgroup;
  c->cb = std::move(callbacks);
  c->pipe_grace = pipe_grace;
  c->exit_watch.data = c;
  if (c->pidfd >= 0) {
    if (int rc = uv_poll_init(loop_, &c->exit_watch, c->pidfd); rc != 0) {
      close(out_fds[0]);
      close(err_fds[0]);
      close(c->pidfd);
      KillAndReap(c->pid);
      undo_cgroup();
      return failed(Status::Unavailable(std::string("uv_poll_init: ") + uv_strerror(rc)));
    }
    c->watching = true;
    c->open_handles = 1;
    uv_poll_start(&c->exit_watch, UV_READABLE, [](uv_poll_t* h, int, int) {
      auto* ch = static_cast<Child*>(h->data);
      ch->owner->OnExitReadable(ch);
    });
  } else {
    WatchBySignal(c);
  }
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
  c->kill_timer = std::make_unique<uvx::Timer>(loop_);
  c->pipe_timer = std::make_unique<uvx::Timer>(loop_);
  ChildId id = c->id;
  children_.emplace(id, std::move(child));
  return id;
}

int UvRunner::PidOf(ChildId id) const {
  auto it = children_.find(id);
  return it == children_.end() ? 0 : it->second->pid;
}

void UvRunner::Terminate(ChildId id, std::chrono::milliseconds grace) {
  auto it = children_.find(id);
  if (it == children_.end()) return;
  Child* c = it->second.get();
  if (c->kill_timer->active()) return;  // already terminating
  pid_t pgid = c->pid;
  // Once to each process: through the cgroup, which holds the process group, where there is
  // one (a second SIGTERM makes some programs skip their clean exit).
  if (c->cgroup) {
    cgroups_->Signal(*c->cgroup, SIGTERM);
  } else {
    kill(-pgid, SIGTERM);
  }
  c->kill_timer->Once(static_cast<uint64_t>(grace.count()), [this, pgid, cgroup = c->cgroup] {
    kill(-pgid, SIGKILL);
    if (cgroup) {
      if (Status s = cgroups_->Kill(*cgroup); !s.ok()) {
        log::Error("cannot kill a shard's cgroup", {{"error", s.message()}});
      }
    }
  });
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
  uv_handle_t* h =
      reinterpret_cast<uv_handle_t*>(stream == ChunkStream::kStdout ? &c->out : &c->err);
  uv_close(h, [](uv_handle_t* handle) {
    auto* ch = static_cast<Child*>(handle->data);
    ch->owner->OnHandleClosed(ch);
  });
  MaybeFinish(c);
}

void UvRunner::OnExitReadable(Child* c) {
  int status = 0;
  ::rusage usage{};
  pid_t r = wait4(c->pid, &status, WNOHANG, &usage);
  if (r == 0 || (r < 0 && errno == EINTR)) return;  // not yet
  CloseExitWatch(c);
  if (r < 0) {
    // Reaped by someone else (nothing in agentd does): the exit status is unknown.
    log::Warn("lost the exit status of a shard process",
              {{"pid", static_cast<int64_t>(c->pid)}, {"error", std::strerror(errno)}});
    return OnExit(c, {255, 0});
  }
  OnWaitStatus(c, status, usage);
}

void UvRunner::OnWaitStatus(Child* c, int status, const ::rusage& usage) {
  ExitInfo exit;
  if (WIFSIGNALED(status)) {
    exit.term_signal = WTERMSIG(status);
  } else {
    exit.exit_status = WEXITSTATUS(status);
  }
  // ru_maxrss is in KiB on Linux: the process's own peak or its largest reaped descendant's.
  exit.peak_rss_bytes = static_cast<int64_t>(usage.ru_maxrss) * 1024;
  auto ms = [](const timeval& t) {
    return static_cast<int64_t>(t.tv_sec) * 1000 + static_cast<int64_t>(t.tv_usec) / 1000;
  };
  exit.cpu_ms = ms(usage.ru_utime) + ms(usage.ru_stime);
  OnExit(c, exit);
}

// Without pidfds every SIGCHLD is checked against every child so watched: slower with many
// children, and only for kernels before 5.3 (and valgrind).
void UvRunner::WatchBySignal(Child* c) {
  c->by_signal = true;
  if (by_signal_++ == 0 && sigchld_) sigchld_->Ref();
  if (sigchld_) return;
  sigchld_ = std::make_unique<uvx::Signal>(loop_);
  sigchld_->Start(SIGCHLD, [this](int) { OnSigchld(); });
  // This child may have ended before the handler was in place: look once, from the loop.
  kill(getpid(), SIGCHLD);
}

void UvRunner::OnSigchld() {
  struct Ended {
    Child* child;
    int status;
    ::rusage usage;
  };
  std::vector<Ended> ended;
  for (auto& [id, c] : children_) {
    if (!c->by_signal) continue;
    Ended e{c.get(), 0, {}};
    if (wait4(c->pid, &e.status, WNOHANG, &e.usage) == c->pid) ended.push_back(e);
  }
  for (const Ended& e : ended) {
    e.child->by_signal = false;
    if (--by_signal_ == 0) sigchld_->Unref();
    OnWaitStatus(e.child, e.status, e.usage);  // may move the child out of children_
  }
}

void UvRunner::CloseExitWatch(Child* c) {
  if (!c->watching) return;
  c->watching = false;
  uv_close(reinterpret_cast<uv_handle_t*>(&c->exit_watch), [](uv_handle_t* handle) {
    auto* ch = static_cast<Child*>(handle->data);
    close(ch->pidfd);
    ch->owner->OnHandleClosed(ch);
  });
}

void UvRunner::OnExit(Child* c, ExitInfo exit) {
  c->exited = true;
  c->exit = exit;
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
  if (c->cgroup) {
    // The figures of every process the run had, then an end to what it left running.
    CgroupUsage usage = cgroups_->Usage(*c->cgroup);
    if (usage.cpu_ms) exit.cpu_ms = usage.cpu_ms;
    if (usage.peak_rss_bytes) exit.peak_rss_bytes = usage.peak_rss_bytes;
    exit.out_of_memory = usage.oom_killed;
    RemoveCgroup(*c->cgroup);
  }
  closing_.emplace(c, std::move(it->second));
  children_.erase(it);
  if (c->open_handles == 0) closing_.erase(c);
  if (cb.on_exit) cb.on_exit(exit);
}

void UvRunner::RemoveCgroup(const AttemptKey& key) {
  if (Status s = cgroups_->Kill(key); !s.ok()) {
    log::Error("cannot kill what a shard left running", {{"error", s.message()}});
  }
  if (cgroups_->Remove(key)) return;
  // Processes take a moment to die after SIGKILL.
  to_remove_.emplace(key, 0);
  if (!remove_timer_) remove_timer_ = std::make_unique<uvx::Timer>(loop_);
  if (!remove_timer_->active()) remove_timer_->Every(100, [this] { RetryRemovals(); });
}

void UvRunner::RetryRemovals() {
  for (auto it = to_remove_.begin(); it != to_remove_.end();) {
    if (cgroups_->Remove(it->first)) {
      it = to_remove_.erase(it);
      continue;
    }
    // Killed again each time: a fork can race a kill on kernels without cgroup.kill.
    (void)cgroups_->Kill(it->first);
    if (++it->second == kRemoveTries) {
      // A process the kernel cannot kill (uninterruptible sleep); the next agentd's sweep
      // removes the cgroup once it is empty.
      log::Error("a shard's cgroup still has processes 60 s after they were killed; left",
                 {{"cgroup", cgroups_->RunDir(it->first)}});
      it = to_remove_.erase(it);
      continue;
    }
    ++it;
  }
  if (to_remove_.empty()) remove_timer_->Stop();
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
  c->cgroup.reset();  // left running: its cgroup too
  c->kill_timer.reset();
  c->pipe_timer.reset();
  c->cb = {};
  // The process is left running, no longer watched.
  c->exited = true;
  CloseExitWatch(c);
  if (std::exchange(c->by_signal, false)) --by_signal_;
  ClosePipe(c, ChunkStream::kStdout);
  ClosePipe(c, ChunkStream::kStderr);
}

void UvRunner::Close(std::function<void()> on_closed) {
  closing_all_ = true;
  on_closed_ = std::move(on_closed);
  if (!children_.empty()) {
    log::Warn("leaving shard processes running",
              {{"count", static_cast<uint64_t>(children_.size())}});
  }
  // CloseChild moves each child into closing_ (through MaybeFinish) while we iterate.
  while (!children_.empty()) CloseChild(children_.begin()->second.get());
  sigchld_.reset();
  remove_timer_.reset();  // what is left, the next agentd's sweep removes (cgroup.h)
  if (closing_.empty() && on_closed_) {
    // Nothing is closing: still never call back from inside Close().
    closed_later_ = std::make_unique<uvx::Idle>(loop_);
    closed_later_->Start([this] {
      closed_later_.reset();
      std::function<void()> done = std::move(on_closed_);
      if (done) done();
    });
  }
}

}  // namespace jobctl::agentd
