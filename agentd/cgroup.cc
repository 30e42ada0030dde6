#include "cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>

#include "base/fd_io.h"

namespace jobctl::agentd {
namespace {

std::string ErrnoText(int e) { return std::strerror(e); }

// The whole of a small file; nullopt (errno set) when it cannot be read.
std::optional<std::string> ReadSmall(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  if (int e = ReadToEnd(fd, &out, 1 << 20); e != 0) {
    close(fd);
    errno = e;
    return std::nullopt;
  }
  close(fd);
  return out;
}

// One write of `text`; 0 or the errno.
int WriteText(const std::string& path, std::string_view text) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  ssize_t n;
  do {
    n = write(fd, text.data(), text.size());
  } while (n < 0 && errno == EINTR);
  int e = n < 0 ? errno : 0;
  close(fd);
  return e;
}

// mountinfo escapes blanks and backslashes as \ooo.
std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      int v = 0;
      bool ok = true;
      for (size_t k = 1; k <= 3; ++k) {
        char c = s[i + k];
        if (c < '0' || c > '7') ok = false;
        v = v * 8 + (c - '0');
      }
      if (ok) {
        out.push_back(static_cast<char>(v));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

std::vector<std::string> Words(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::optional<int64_t> StatField(const std::string& text, std::string_view key) {
  std::istringstream in(text);
  for (std::string k, v; in >> k >> v;) {
    if (k != key) continue;
    int64_t n = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec == std::errc() && p == v.data() + v.size()) return n;
  }
  return std::nullopt;
}

std::vector<pid_t> Procs(const std::string& dir) {
  std::vector<pid_t> out;
  std::optional<std::string> text = ReadSmall(dir + "/cgroup.procs");
  if (!text) return out;
  for (const std::string& w : Words(*text)) {
    int pid = 0;
    auto [p, ec] = std::from_chars(w.data(), w.data() + w.size(), pid);
    if (ec == std::errc() && p == w.data() + w.size() && pid > 0) out.push_back(pid);
  }
  return out;
}

// `dir` and every cgroup below it, deepest first (a job running as root may make its own).
std::vector<std::string> Subtree(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    std::vector<std::string> subs;
    while (dirent* e = readdir(d)) {
      std::string_view n = e->d_name;
      if (e->d_type == DT_DIR && n != "." && n != "..") subs.push_back(dir + "/" + std::string(n));
    }
    closedir(d);
    for (const std::string& s : subs) {
      std::vector<std::string> below = Subtree(s);
      out.insert(out.end(), below.begin(), below.end());
    }
  }
  out.push_back(dir);
  return out;
}

bool Exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

}  // namespace

std::string CgroupRunName(const AttemptKey& key) {
  return "run-" + std::to_string(key.run) + "." + std::to_string(key.shard) + "." +
         std::to_string(key.attempt);
}

Result<std::string> CgroupTree::OwnDirectory() {
  std::optional<std::string> mounts = ReadSmall("/proc/self/mountinfo");
  if (!mounts) return Status::Unavailable("reading /proc/self/mountinfo: " + ErrnoText(errno));
  std::string mount, root;
  std::istringstream lines(*mounts);
  for (std::string line; std::getline(lines, line);) {
    size_t dash = line.find(" - ");
    if (dash == std::string::npos || line.compare(dash + 3, 8, "cgroup2 ") != 0) continue;
    std::vector<std::string> f = Words(line.substr(0, dash));
    if (f.size() < 5) continue;
    root = Unescape(f[3]);
    mount = Unescape(f[4]);
    break;
  }
  if (mount.empty()) return Status::Unavailable("no cgroup v2 hierarchy is mounted");
  std::optional<std::string> groups = ReadSmall("/proc/self/cgroup");
  if (!groups) return Status::Unavailable("reading /proc/self/cgroup: " + ErrnoText(errno));
  std::string own;
  std::istringstream glines(*groups);
  for (std::string line; std::getline(glines, line);) {
    if (line.rfind("0::", 0) == 0) own = line.substr(3);
  }
  if (own.empty() || own[0] != '/') {
    return Status::Unavailable("/proc/self/cgroup has no cgroup v2 entry");
  }
  // A mount of a subtree (a container's): the path is below its root.
  if (root != "/" && own.rfind(root, 0) == 0 &&
      (own.size() == root.size() || own[root.size()] == '/')) {
    own = own.substr(root.size());
  }
  if (own == "/") own.clear();
  return mount + own;
}

Result<CgroupTree> CgroupTree::Open(bool move_self) {
  Result<std::string> own = OwnDirectory();
  if (!own.ok()) return own.status();
  CgroupTree t;
  t.own_ = *own;
  t.dir_ = *own + "/agentd-" + std::to_string(getpid());
  if (mkdir(t.dir_.c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::Unavailable("cannot make a cgroup in " + *own + ": " + ErrnoText(errno) +
                               (errno == EACCES || errno == EROFS
                                    ? " (not delegated to agentd; under systemd: Delegate=yes)"
                                    : ""));
  }
  if (move_self) {
    std::string leaf = t.dir_ + "/agentd";
    if (mkdir(leaf.c_str(), 0755) != 0 && errno != EEXIST) {
      int e = errno;
      rmdir(t.dir_.c_str());
      return Status::Unavailable("cannot make " + leaf + ": " + ErrnoText(e));
    }
    if (int e = WriteText(leaf + "/cgroup.procs", std::to_string(getpid())); e != 0) {
      rmdir(leaf.c_str());
      rmdir(t.dir_.c_str());
      return Status::Unavailable("cannot move agentd into " + leaf + ": " + ErrnoText(e));
    }
  }
  // Controllers for the runs: enabled in OWN (refused while OWN has processes of its own,
  // unless it is the root) and then in the tree.
  std::optional<std::string> offered = ReadSmall(*own + "/cgroup.controllers");
  for (const std::string& c : Words(offered.value_or(""))) {
    if (c != "cpu" && c != "io" && c != "memory" && c != "pids") continue;
    WriteText(*own + "/cgroup.subtree_control", "+" + c);
    WriteText(t.dir_ + "/cgroup.subtree_control", "+" + c);
  }
  for (const std::string& c : Words(ReadSmall(t.dir_ + "/cgroup.subtree_control").value_or(""))) {
    t.controllers_.insert(c);
  }
  return t;
}

std::string CgroupTree::RunDir(const AttemptKey& key) const {
  return dir_ + "/" + CgroupRunName(key);
}

Result<int> CgroupTree::Create(const AttemptKey& key) const {
  std::string dir = RunDir(key);
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::Unavailable("cannot make the cgroup " + dir + ": " + ErrnoText(errno));
  }
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::Unavailable("cannot open the cgroup " + dir + ": " + ErrnoText(errno));
  return fd;
}

namespace {
std::atomic<bool> kill_without_cgroup_kill{false};
}  // namespace

void UseKillWithoutCgroupKillForTesting(bool on) { kill_without_cgroup_kill = on; }

Status KillCgroup(const std::string& dir) {
  int e = kill_without_cgroup_kill ? ENOENT : WriteText(dir + "/cgroup.kill", "1");
  if (e == 0) return Status::Ok();
  if (!Exists(dir)) return Status::Ok();  // gone: nothing left to kill
  // Kernels before 5.14 have no cgroup.kill: freeze the cgroup (5.2), so that nothing in it
  // can fork, SIGKILL every process it and the cgroups below it list, and thaw it so that the
  // signals are delivered.
  int frozen = WriteText(dir + "/cgroup.freeze", "1");
  for (const std::string& group : Subtree(dir)) {
    for (pid_t p : Procs(group)) kill(p, SIGKILL);
  }
  if (frozen == 0) WriteText(dir + "/cgroup.freeze", "0");
  if (frozen != 0 && frozen != ENOENT) {
    return Status::Unavailable("cannot freeze " + dir + " to kill it: " + ErrnoText(frozen));
  }
  return Status::Ok();
}

Status CgroupTree::Kill(const AttemptKey& key) const { return KillCgroup(RunDir(key)); }

void CgroupTree::Signal(const AttemptKey& key, int sig) const {
  for (const std::string& group : Subtree(RunDir(key))) {
    for (pid_t p : Procs(group)) kill(p, sig);
  }
}

CgroupUsage CgroupTree::Usage(const AttemptKey& key) const {
  CgroupUsage u;
  std::string dir = RunDir(key);
  if (std::optional<std::string> cpu = ReadSmall(dir + "/cpu.stat")) {
    if (std::optional<int64_t> us = StatField(*cpu, "usage_usec")) u.cpu_ms = *us / 1000;
  }
  if (std::optional<std::string> events = ReadSmall(dir + "/memory.events")) {
    u.oom_killed = StatField(*events, "oom_kill").value_or(0) > 0;
  }
  if (std::optional<std::string> peak = ReadSmall(dir + "/memory.peak")) {
    int64_t n = 0;
    std::string_view v = *peak;
    while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.remove_suffix(1);
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec == std::errc() && p == v.data() + v.size()) u.peak_rss_bytes = n;
  }
  return u;
}

Status CgroupTree::SetLimits(const AttemptKey& key, const ResourceLimits& limits) const {
  struct Limit {
    const char* job_key;
    const char* controller;
    const char* file;
    std::optional<std::string> value;
  };
  auto text = [](const std::optional<int64_t>& v, int64_t scale = 1, std::string prefix = "",
                 std::string suffix = "") -> std::optional<std::string> {
    if (!v) return std::nullopt;
    return prefix + std::to_string(*v * scale) + suffix;
  };
  std::string dir = RunDir(key);
  for (const Limit& l :
       {Limit{"memory_max", "memory", "memory.max", text(limits.memory_max_bytes)},
        Limit{"cpu_max", "cpu", "cpu.max", text(limits.cpu_max_percent, 1000, "", " 100000")},
        Limit{"pids_max", "pids", "pids.max", text(limits.pids_max)},
        Limit{"io_weight", "io", "io.weight", text(limits.io_weight, 1, "default ")}}) {
    if (!l.value) continue;
    if (!controllers_.count(l.controller)) {
      std::string enabled;
      for (const std::string& c : controllers_) enabled += (enabled.empty() ? "" : " ") + c;
      return Status::Unavailable(std::string(l.job_key) + " needs the cgroup v2 " + l.controller +
                                 " controller, which is not enabled for this agent's shards in " +
                                 dir_ + " (enabled: " + (enabled.empty() ? "none" : enabled) +
                                 "; see agentd(8), CGROUPS)");
    }
    if (int e = WriteText(dir + "/" + l.file, *l.value); e != 0) {
      return Status::Unavailable(
          "cannot set " + std::string(l.job_key) + ": writing \"" + *l.value + "\" to " + dir +
          "/" + l.file + ": " + ErrnoText(e) +
          (e == ENOENT ? " (this kernel does not have " + std::string(l.file) + ")" : ""));
    }
    if (std::string(l.controller) == "memory") {
      // Going over memory.max kills the whole cgroup, not one process of it; and without swap
      // accounting memory.swap.max is not there: then there is no swap to limit.
      for (const char* file : {"memory.oom.group", "memory.swap.max"}) {
        const char* value = std::string_view(file) == "memory.oom.group" ? "1" : "0";
        int e = WriteText(dir + "/" + file, value);
        if (e != 0 && e != ENOENT) {
          return Status::Unavailable("cannot set memory_max: writing " + std::string(value) +
                                     " to " + dir + "/" + file + ": " + ErrnoText(e));
        }
      }
    }
  }
  return Status::Ok();
}

bool CgroupTree::Remove(const AttemptKey& key) const {
  bool gone = true;
  for (const std::string& group : Subtree(RunDir(key))) {
    if (rmdir(group.c_str()) != 0 && errno != ENOENT) gone = false;
  }
  return gone;
}

int CgroupTree::Sweep() const {
  int removed = 0;
  DIR* d = opendir(own_.c_str());
  if (d == nullptr) return 0;
  std::vector<std::string> trees;
  while (dirent* e = readdir(d)) {
    std::string_view name = e->d_name;
    if (name.rfind("agentd-", 0) != 0) continue;
    int pid = 0;
    auto [p, ec] = std::from_chars(name.data() + 7, name.data() + name.size(), pid);
    if (ec != std::errc() || p != name.data() + name.size() || pid <= 0) continue;
    if (pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive
    trees.emplace_back(name);
  }
  closedir(d);
  for (const std::string& name : trees) {
    std::string tree = own_ + "/" + name;
    bool gone = true;
    for (const std::string& group : Subtree(tree)) {
      if (rmdir(group.c_str()) != 0 && errno != ENOENT) gone = false;
    }
    removed += gone;
  }
  return removed;
}

}  // namespace jobctl::agentd
