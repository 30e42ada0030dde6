#include "fence.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <vector>

#include "base/clock.h"
#include "base/event_log.h"
#include "base/log.h"
#include "cgroup.h"

extern char** environ;

namespace jobctl::agentd {
namespace {

// CLOCK_BOOTTIME, as agentd's lease deadlines are measured.
int64_t BootMs() { return SystemClock().MonotonicMs(); }

std::string ErrnoText(int e) { return std::strerror(e); }

void Kill(const FenceCommand& c, const EventLog& events, const std::string& cgroups) {
  // The attempt's cgroup first (everything the shard started, also after a setsid), then its
  // process group (where there is no cgroup).
  Status in_cgroup =
      cgroups.empty() ? Status::Ok() : KillCgroup(cgroups + "/" + CgroupRunName(c.key));
  int rc = kill(static_cast<pid_t>(-c.pgid), SIGKILL);
  int err = errno;
  if (!in_cgroup.ok()) {
    log::Error("the fence cannot kill a shard's cgroup", {{"error", in_cgroup.message()}});
  }
  // Written right after the signal, before anything slower: the checker takes it as the
  // moment the shard's process ended.
  events.Write("fenced", {{"run", c.key.run},
                          {"shard", c.key.shard},
                          {"attempt", c.key.attempt},
                          {"pid", c.pgid},
                          {"gone", rc != 0 && err == ESRCH},
                          {"error", rc != 0 && err != ESRCH ? ErrnoText(err) : std::string()}});
  if (rc != 0 && err == ESRCH) return;  // it had ended already
  if (rc != 0) {
    log::Error(
        "lease deadline passed without a renewal, and the fence cannot kill the shard",
        {{"run", c.key.run}, {"shard", c.key.shard}, {"pid", c.pgid}, {"error", ErrnoText(err)}});
    return;
  }
  log::Warn(
      "lease deadline passed without a renewal: the fence killed the shard",
      {{"run", c.key.run}, {"shard", c.key.shard}, {"attempt", c.key.attempt}, {"pid", c.pgid}});
}

}  // namespace

int FenceMain(int argc, char** argv) {
  // Only agentd closing its end (or SIGKILL) ends the fence.
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGPIPE}) signal(sig, SIG_IGN);
  log::Configure({log::Level::kInfo, log::Format::kAuto, "agentd-fence"});
  EventLog events;
  if (argc >= 4 && argv[2][0] != '\0') {
    if (Status s = events.Open(argv[2], "agent", {{"agent", std::string_view(argv[3])}}); !s.ok()) {
      log::Warn("cannot open the event log", {{"error", s.message()}});
    }
  }
  std::string cgroups = argc >= 5 ? argv[4] : "";
  std::map<int64_t, FenceCommand> armed;
  bool open = true;
  std::string buf;
  char chunk[4096];
  while (true) {
    int64_t now = BootMs();
    for (auto it = armed.begin(); it != armed.end();) {
      if (it->second.deadline_ms > now) {
        ++it;
        continue;
      }
      Kill(it->second, events, cgroups);
      it = armed.erase(it);
    }
    if (!open && armed.empty()) return 0;
    // At most a second at a time: poll's timeout does not count a suspend, the deadlines do.
    int64_t wait = 1000;
    for (const auto& [pgid, c] : armed) wait = std::min(wait, c.deadline_ms - now);
    struct pollfd p {
      0, POLLIN, 0
    };
    int n = poll(&p, open ? 1 : 0, static_cast<int>(std::max<int64_t>(wait, 0)));
    if (n < 0 && errno != EINTR) return 1;
    if (!open || n <= 0) continue;
    ssize_t got = read(0, chunk, sizeof chunk);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) {
      open = false;  // agentd is gone or closed its end: the armed deadlines still hold
      continue;
    }
    buf.append(chunk, static_cast<size_t>(got));
    size_t from = 0;
    for (size_t nl; (nl = buf.find('\n', from)) != std::string::npos; from = nl + 1) {
      std::string_view line(buf.data() + from, nl - from);
      std::optional<FenceCommand> c = ParseFenceCommand(line);
      if (!c) {
        log::Warn("fence command not understood", {{"line", std::string(line.substr(0, 80))}});
      } else if (c->kind == FenceCommand::Kind::kDisarm) {
        auto it = armed.find(c->pgid);
        if (it != armed.end() && it->second.key == c->key) armed.erase(it);
      } else {
        armed[c->pgid] = *c;
      }
    }
    buf.erase(0, from);
    if (buf.size() > kMaxFenceLine) {
      log::Warn("fence command too long; dropped", {{"bytes", static_cast<int64_t>(buf.size())}});
      buf.clear();
    }
  }
}

Fence::Fence(uv_loop_t* loop) : loop_(loop) {}

Fence::~Fence() {
  writable_.reset();
  if (fd_ >= 0) close(fd_);
}

Status Fence::Start(std::string exe, std::string event_log, std::string agent,
                    std::string cgroups) {
  exe_ = std::move(exe);
  event_log_ = std::move(event_log);
  agent_ = std::move(agent);
  cgroups_ = std::move(cgroups);
  return Spawn();
}

Status Fence::Spawn() {
  last_spawn_ms_ = BootMs();
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    return Status::Unavailable("socketpair: " + ErrnoText(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  int rc = posix_spawn_file_actions_adddup2(&actions, sv[1], 0);
  if (rc == 0) rc = posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  if (rc == 0) rc = posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  if (rc == 0) rc = posix_spawnattr_setsigmask(&attr, &none);
  if (rc == 0) rc = posix_spawnattr_setsigdefault(&attr, &all);
  if (rc == 0) {
    rc = posix_spawnattr_setflags(
        &attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  }
  std::vector<std::string> args = {exe_, "--fence"};
  if (!event_log_.empty() || !cgroups_.empty()) {
    args.push_back(event_log_);
    args.push_back(agent_);
  }
  if (!cgroups_.empty()) args.push_back(cgroups_);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (rc == 0) rc = posix_spawn(&pid, exe_.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(sv[1]);
  if (rc != 0) {
    close(sv[0]);
    return Status::Unavailable("starting " + exe_ + " --fence: " + ErrnoText(rc));
  }
  fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
  fd_ = sv[0];
  pid_ = pid;
  backlog_.clear();
  // Active only while commands wait to be sent: it keeps the loop alive no longer than that.
  writable_ = std::make_unique<uvx::Poll>(loop_, fd_);
  for (const auto& [pgid, c] : armed_) backlog_ += FormatFenceCommand(c);
  Flush();
  return Status::Ok();
}

void Fence::Arm(pid_t pgid, int64_t deadline_ms, AttemptKey key) {
  FenceCommand c{FenceCommand::Kind::kArm, pgid, deadline_ms, key};
  armed_[pgid] = c;
  Send(c);
}

void Fence::Disarm(pid_t pgid, AttemptKey key) {
  auto it = armed_.find(pgid);
  if (it == armed_.end() || !(it->second.key == key)) return;
  armed_.erase(it);
  Send({FenceCommand::Kind::kDisarm, pgid, 0, key});
}

void Fence::Send(const FenceCommand& c) {
  if (closed_ || exe_.empty()) return;
  Reap();
  // The fence is gone: a new one is on its way, armed with all there is (this command too).
  if (fd_ < 0) return;
  backlog_ += FormatFenceCommand(c);
  Flush();
}

void Fence::Respawn() {
  if (closed_ || fd_ >= 0) return;
  int64_t wait = last_spawn_ms_ + 5000 - BootMs();
  if (wait > 0) {
    if (!respawn_) {
      respawn_ = std::make_unique<uvx::Timer>(loop_);
    }
    respawn_->Once(static_cast<uint64_t>(wait), [this] { Respawn(); });
    return;
  }
  if (Status s = Spawn(); !s.ok()) {
    log::Warn("cannot start a new fence; shards are fenced only while agentd runs",
              {{"error", s.message()}});
    return Respawn();  // again in 5 s
  }
  log::Info("fence started again", {{"pid", static_cast<int64_t>(pid_)}});
}

void Fence::Reap() {
  std::erase_if(unreaped_, [](pid_t p) { return waitpid(p, nullptr, WNOHANG) != 0; });
}

void Fence::Flush() {
  while (!backlog_.empty() && fd_ >= 0) {
    ssize_t n = send(fd_, backlog_.data(), backlog_.size(), MSG_NOSIGNAL);
    if (n > 0) {
      backlog_.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // The fence is not reading (stopped?): the rest goes once it does.
      writable_->Start(UV_WRITABLE, [this](int status, int) {
        if (status < 0) return Lost(uv_strerror(status));
        writable_->Stop();
        Flush();
      });
      return;
    }
    return Lost(n < 0 ? ErrnoText(errno) : "nothing written");
  }
}

void Fence::Lost(const std::string& why) {
  log::Warn("the fence is gone; a new one is started, armed with every shard's deadline",
            {{"pid", static_cast<int64_t>(pid_)}, {"error", why}});
  writable_.reset();
  close(fd_);
  fd_ = -1;
  backlog_.clear();
  if (pid_ > 0) unreaped_.push_back(pid_);
  pid_ = 0;
  Reap();
  Respawn();
}

void Fence::Close() {
  closed_ = true;
  respawn_.reset();
  if (fd_ < 0) return;
  // What is still unsent is sent while agentd closes; a disarm lost here only leaves the
  // fence a deadline that kills nothing (the shard has ended).
  writable_.reset();
  close(fd_);
  fd_ = -1;
}

}  // namespace jobctl::agentd
