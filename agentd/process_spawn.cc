#include "process_spawn.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <vector>

namespace jobctl::agentd {
namespace {

// execvp's path when the environment has no PATH.
constexpr const char* kExecvpDefaultPath = "/bin:/usr/bin";

std::string ErrnoText(int err) { return std::strerror(err); }

// The spec's PATH, or nullptr.
const std::string* EnvPath(const SpawnSpec& spec) {
  for (const std::string& e : spec.env) {
    if (e.rfind("PATH=", 0) == 0) return &e;
  }
  return nullptr;
}

// Owns what posix_spawn needs, so every return path frees it.
class SpawnSetup {
 public:
  SpawnSetup() {
    posix_spawn_file_actions_init(&actions_);
    posix_spawnattr_init(&attr_);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions_);
    posix_spawnattr_destroy(&attr_);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;

  // `input_fd` >= 0 becomes the child's descriptor 3.
  int Prepare(int stdout_fd, int stderr_fd, int input_fd, const std::string& cwd) {
    int rc = posix_spawn_file_actions_addopen(&actions_, 0, "/dev/null", O_RDONLY, 0);
    if (rc == 0) rc = posix_spawn_file_actions_adddup2(&actions_, stdout_fd, 1);
    if (rc == 0) rc = posix_spawn_file_actions_adddup2(&actions_, stderr_fd, 2);
    if (rc == 0 && input_fd >= 0) rc = posix_spawn_file_actions_adddup2(&actions_, input_fd, 3);
    // Nothing of agentd's leaks into a job: not libcurl's sockets, not what agentd inherited.
    if (rc == 0) rc = posix_spawn_file_actions_addclosefrom_np(&actions_, input_fd >= 0 ? 4 : 3);
    if (rc == 0 && !cwd.empty()) rc = posix_spawn_file_actions_addchdir_np(&actions_, cwd.c_str());
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    if (rc == 0) rc = posix_spawnattr_setsigmask(&attr_, &none);
    if (rc == 0) rc = posix_spawnattr_setsigdefault(&attr_, &all);
    if (rc == 0) {
      rc = posix_spawnattr_setflags(
          &attr_, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    }
    return rc;
  }
  int Spawn(pid_t* pid, const std::string& file, const std::vector<char*>& argv,
            const std::vector<char*>& env) {
    return posix_spawn(pid, file.c_str(), &actions_, &attr_, argv.data(), env.data());
  }

 private:
  posix_spawn_file_actions_t actions_;
  posix_spawnattr_t attr_;
};

// An anonymous file holding `data`, read from its start: the helper's input. A file rather
// than a pipe, so that no size can block agentd's loop.
class InputFile {
 public:
  ~InputFile() {
    if (fd_ >= 0) close(fd_);
  }
  Status Fill(const std::string& data) {
    fd_ = memfd_create("agentd-job-env", MFD_CLOEXEC);
    if (fd_ < 0) return Status::Unavailable("memfd_create: " + ErrnoText(errno));
    for (size_t done = 0; done < data.size();) {
      ssize_t n = write(fd_, data.data() + done, data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Status::Unavailable("writing the job's environment: " + ErrnoText(errno));
      done += static_cast<size_t>(n);
    }
    if (lseek(fd_, 0, SEEK_SET) != 0) return Status::Unavailable("lseek: " + ErrnoText(errno));
    return Status::Ok();
  }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

// The child's side of SpawnIntoCgroup, after clone3: agentd's memory (shared while agentd's
// thread waits, on x86-64, else a copy), one thread, every signal blocked. Only raw system
// calls from here on: another thread of agentd may have held a lock (malloc's, a sanitizer's)
// at the clone, and no interposed library function runs. syscall() sets errno in the waiting
// thread's TLS, which nothing there reads. As with glibc's posix_spawn, a child that crashes
// before its exec takes agentd with it on kernels before 5.16 (they share the memory).
struct ChildPlan {
  int stdout_fd, stderr_fd, input_fd, error_fd;
  // >= 0: the child moves itself into this cgroup first (kernels without CLONE_INTO_CGROUP).
  int join_cgroup_fd;
  int max_fd;       // where closing descriptors one by one stops, without close_range (Linux 5.9)
  const char* cwd;  // nullptr: stay
  const char* file;
  char* const* argv;
  char* const* sh_argv;  // /bin/sh FILE ARGS... for a file without "#!"
  char* const* env;
};

constexpr int kErrorFdFloor = 10;

std::atomic<bool> join_by_write_for_testing{false};

[[noreturn, gnu::no_sanitize("address", "undefined")]] void ChildExit(int error_fd, int err) {
  syscall(SYS_write, error_fd, &err, sizeof err);
  syscall(SYS_exit_group, 127);
  __builtin_unreachable();
}

// dup2, clearing close-on-exec where the descriptor is already in place.
[[gnu::no_sanitize("address", "undefined")]] long MoveFd(int from, int to) {
  if (from == to) return syscall(SYS_fcntl, to, F_SETFD, 0);
  return syscall(SYS_dup3, from, to, 0);
}

[[noreturn, gnu::no_sanitize("address", "undefined")]] void RunChild(const ChildPlan& p) {
  if (p.join_cgroup_fd >= 0) {
    long procs = syscall(SYS_openat, p.join_cgroup_fd, "cgroup.procs", O_WRONLY | O_CLOEXEC, 0);
    if (procs < 0) ChildExit(p.error_fd, errno);
    if (syscall(SYS_write, static_cast<int>(procs), "0", 1) != 1) ChildExit(p.error_fd, errno);
    syscall(SYS_close, static_cast<int>(procs));
  }
  // Every handler back to the default (an ignored signal stays ignored across exec).
  struct {
    void* handler;
    unsigned long flags;
    void* restorer;
    uint64_t mask;
  } dfl{};  // the kernel's struct sigaction: SIG_DFL is 0
  for (int sig = 1; sig <= 64; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    syscall(SYS_rt_sigaction, sig, &dfl, nullptr, sizeof(uint64_t));
  }
  if (syscall(SYS_setsid) < 0) ChildExit(p.error_fd, errno);
  long null_fd = syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDONLY, 0);
  if (null_fd < 0) ChildExit(p.error_fd, errno);
  if (null_fd != 0) {
    if (syscall(SYS_dup3, static_cast<int>(null_fd), 0, 0) < 0) ChildExit(p.error_fd, errno);
    syscall(SYS_close, static_cast<int>(null_fd));
  }
  if (MoveFd(p.stdout_fd, 1) < 0 || MoveFd(p.stderr_fd, 2) < 0) ChildExit(p.error_fd, errno);
  if (p.input_fd >= 0 && MoveFd(p.input_fd, 3) < 0) ChildExit(p.error_fd, errno);
  // The error pipe (above kErrorFdFloor) is close-on-exec; everything else of agentd's goes.
  int keep_from = p.input_fd >= 0 ? 4 : 3;
  if (syscall(SYS_close_range, keep_from, p.error_fd - 1, 0) != 0 ||
      syscall(SYS_close_range, p.error_fd + 1, ~0U, 0) != 0) {
    for (int fd = keep_from; fd <= p.max_fd; ++fd) {
      if (fd != p.error_fd) syscall(SYS_close, fd);
    }
  }
  if (p.cwd != nullptr && syscall(SYS_chdir, p.cwd) < 0) ChildExit(p.error_fd, errno);
  uint64_t none = 0;
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, nullptr, sizeof none);
  syscall(SYS_execve, p.file, p.argv, p.env);
  if (errno == ENOEXEC) syscall(SYS_execve, "/bin/sh", p.sh_argv, p.env);
  ChildExit(p.error_fd, errno);
}

#if defined(__x86_64__)
// clone3 with CLONE_VM | CLONE_VFORK, as posix_spawn clones: the child runs RunChild(plan) on a
// stack of its own in agentd's memory, and agentd's thread waits until it has executed the
// job or exited. So no page table is copied, and a spawn costs the same from a large agentd
// as from a small one. The child's stack is one mapping per thread, reused (agentd waits for
// the child to leave it). x86-64 only: elsewhere the clone copies the memory.
[[noreturn, gnu::no_sanitize("address", "undefined")]] void RunChildOnItsStack(void* plan) {
  RunChild(*static_cast<const ChildPlan*>(plan));
}

// The child's stack: 256 KiB above a guard page (an overflow faults instead of writing into
// agentd's memory), mapped once per thread and unmapped with it.
class ChildStack {
 public:
  static constexpr size_t kSize = 256 * 1024, kGuard = 4096;
  ~ChildStack() {
    if (base_ != nullptr) munmap(base_, kGuard + kSize);
  }
  // The lowest usable byte, or nullptr when it cannot be mapped.
  void* Get() {
    if (base_ == nullptr) {
      void* m = mmap(nullptr, kGuard + kSize, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
      if (m == MAP_FAILED) return nullptr;
      if (mprotect(m, kGuard, PROT_NONE) != 0) {
        munmap(m, kGuard + kSize);
        return nullptr;
      }
      base_ = m;
    }
    return static_cast<char*>(base_) + kGuard;
  }

 private:
  void* base_ = nullptr;
};

// -1 with errno as clone3 sets it; kNoStack when the child's stack cannot be mapped.
constexpr long kNoStack = -2;

long CloneIntoCgroupSharingMemory(clone_args* args, const ChildPlan* plan) {
  static thread_local ChildStack child_stack;
  void* stack = child_stack.Get();
  if (stack == nullptr) return kNoStack;
  clone_args a = *args;
  a.flags |= CLONE_VM | CLONE_VFORK;
  a.stack = reinterpret_cast<uint64_t>(stack);
  a.stack_size = ChildStack::kSize;
  long ret;
  // The child starts at the instruction after `syscall` with rsp at the top of its stack
  // (16-byte aligned) and every other register as the parent's: r12 and r13 bring it the
  // function and its argument. It never returns here.
  register void (*fn)(void*) asm("r12") = RunChildOnItsStack;
  register const void* arg asm("r13") = plan;
  asm volatile(
      "syscall\n\t"
      "test %%rax, %%rax\n\t"
      "jnz 1f\n\t"
      "xor %%ebp, %%ebp\n\t"
      "mov %%r13, %%rdi\n\t"
      "call *%%r12\n\t"
      "mov $231, %%eax\n\t"  // exit_group, should RunChild ever return
      "mov $127, %%edi\n\t"
      "syscall\n\t"
      "1:\n\t"
      : "=a"(ret)
      : "a"(static_cast<long>(SYS_clone3)), "D"(&a), "S"(sizeof a), "r"(fn), "r"(arg)
      : "rcx", "r11", "memory");
  if (ret < 0) {
    errno = static_cast<int>(-ret);
    return -1;
  }
  return ret;
}
#endif

// SpawnDetached's set-up, in a child made with clone3(CLONE_INTO_CGROUP) (Linux 5.7): the
// child is in the cgroup from its first instruction, so nothing it starts can be outside it.
// glibc 2.36's posix_spawn cannot do this. On x86-64 the child shares agentd's memory until
// it executes the job (CloneIntoCgroupSharingMemory); elsewhere the clone copies agentd's page
// tables, like fork, which costs more from a large agentd: see agent_bench.
// Where clone3 or CLONE_INTO_CGROUP is missing (older kernels, a seccomp filter that refuses
// clone3), a plain fork-like clone whose child moves itself into the cgroup before anything
// else.
int SpawnIntoCgroup(pid_t* pid, int cgroup_fd, const ChildPlan& plan_in) {
  int err_pipe[2];
  if (pipe2(err_pipe, O_CLOEXEC) != 0) return errno;
  // Above the child's 0 to 3, which it sets up before it could report an error.
  if (err_pipe[1] < kErrorFdFloor) {
    int high = fcntl(err_pipe[1], F_DUPFD_CLOEXEC, kErrorFdFloor);
    int e = errno;
    close(err_pipe[1]);
    if (high < 0) {
      close(err_pipe[0]);
      return e;
    }
    err_pipe[1] = high;
  }
  ChildPlan plan = plan_in;
  plan.error_fd = err_pipe[1];
  plan.join_cgroup_fd = -1;
  long open_max = sysconf(_SC_OPEN_MAX);
  plan.max_fd = open_max > 0 && open_max < (1 << 20) ? static_cast<int>(open_max) : (1 << 16);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  clone_args args{};
  args.flags = CLONE_INTO_CGROUP;
  args.exit_signal = SIGCHLD;
  args.cgroup = static_cast<uint64_t>(cgroup_fd);
  long r = -1;
  errno = ENOSYS;
  if (!join_by_write_for_testing) {
#if defined(__x86_64__)
    r = CloneIntoCgroupSharingMemory(&args, &plan);
    // No stack for the child, or a kernel or seccomp filter that refuses the shared memory
    // (CLONE_VM after unshare(CLONE_NEWTIME), say) but maybe not clone3: a clone that copies
    // the memory, as fork does, still into the cgroup.
    if (r == kNoStack || (r < 0 && errno != ENOSYS && errno != E2BIG)) {
      r = syscall(SYS_clone3, &args, sizeof args);
    }
#else
    r = syscall(SYS_clone3, &args, sizeof args);
#endif
  }
  if (r == 0) RunChild(plan);
  if (r < 0 && (errno == ENOSYS || errno == EINVAL || errno == E2BIG || errno == EPERM)) {
    plan.join_cgroup_fd = cgroup_fd;
    r = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    if (r == 0) RunChild(plan);
  }
  int clone_errno = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  close(err_pipe[1]);
  if (r < 0) {
    close(err_pipe[0]);
    return clone_errno;
  }
  // EOF: the exec happened. Four bytes: the child's errno, and it has exited.
  int child_errno = 0;
  ssize_t n;
  do {
    n = read(err_pipe[0], &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  int read_errno = errno;
  close(err_pipe[0]);
  if (n != 0) {
    // The child failed (its errno), or what it did cannot be known: it does not run unwatched.
    if (n != sizeof child_errno) kill(static_cast<pid_t>(r), SIGKILL);
    waitpid(static_cast<pid_t>(r), nullptr, 0);
    if (n != sizeof child_errno) return n < 0 ? read_errno : EIO;
    return child_errno != 0 ? child_errno : EIO;
  }
  *pid = static_cast<pid_t>(r);
  return 0;
}

}  // namespace

Result<std::string> FindProgram(const std::string& program, const std::string& path) {
  if (program.empty()) return Status::NotFound(ErrnoText(ENOENT));
  if (program.find('/') != std::string::npos) return program;
  std::string_view dirs = path.empty() ? std::string_view(kExecvpDefaultPath) : path;
  bool denied = false;
  while (true) {
    size_t colon = dirs.find(':');
    std::string_view dir = dirs.substr(0, colon);
    // An empty entry is the current directory, as for execvp.
    std::string file = (dir.empty() ? std::string(".") : std::string(dir)) + "/" + program;
    struct stat st {};
    if (stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      if (access(file.c_str(), X_OK) == 0) return file;
      denied = true;
    }
    if (colon == std::string_view::npos) break;
    dirs.remove_prefix(colon + 1);
  }
  return denied ? Status::PermissionDenied(ErrnoText(EACCES)) : Status::NotFound(ErrnoText(ENOENT));
}

Result<pid_t> SpawnDetached(const SpawnSpec& spec, int stdout_fd, int stderr_fd, int cgroup_fd) {
  if (spec.argv.empty()) return Status::InvalidArgument("empty argv");
  if (stdout_fd <= 2 || stderr_fd <= 2)
    return Status::InvalidArgument("pipe on a stdio descriptor");
  const std::string* env_path = EnvPath(spec);
  Result<std::string> file =
      FindProgram(spec.argv[0], env_path ? env_path->substr(5) : std::string());
  if (!file.ok()) return file.status();
  std::vector<char*> argv, env;
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : spec.env) env.push_back(const_cast<char*>(e.c_str()));
  env.push_back(nullptr);
  InputFile input;
  if (!spec.helper_input.empty()) {
    if (Status s = input.Fill(spec.helper_input); !s.ok()) return s;
  }
  if (cgroup_fd >= 0) {
    std::vector<char*> sh = {const_cast<char*>("/bin/sh"), const_cast<char*>(file->c_str())};
    sh.insert(sh.end(), argv.begin() + 1, argv.end());
    ChildPlan plan{stdout_fd,
                   stderr_fd,
                   input.fd(),
                   -1,
                   -1,
                   0,
                   spec.cwd.empty() ? nullptr : spec.cwd.c_str(),
                   file->c_str(),
                   argv.data(),
                   sh.data(),
                   env.data()};
    pid_t pid = 0;
    int rc = SpawnIntoCgroup(&pid, cgroup_fd, plan);
    if (rc != 0) {
      return rc == ENOENT ? Status::NotFound(ErrnoText(rc)) : Status::Unavailable(ErrnoText(rc));
    }
    return pid;
  }
  SpawnSetup setup;
  if (int rc = setup.Prepare(stdout_fd, stderr_fd, input.fd(), spec.cwd); rc != 0) {
    return Status::Internal("posix_spawn setup: " + ErrnoText(rc));
  }
  pid_t pid = 0;
  int rc = setup.Spawn(&pid, *file, argv, env);
  if (rc == ENOEXEC) {
    // No "#!" line: the shell runs it, as execvp would.
    std::vector<char*> sh = {const_cast<char*>("/bin/sh"), const_cast<char*>(file->c_str())};
    sh.insert(sh.end(), argv.begin() + 1, argv.end());
    rc = setup.Spawn(&pid, "/bin/sh", sh, env);
  }
  if (rc != 0) {
    return rc == ENOENT ? Status::NotFound(ErrnoText(rc)) : Status::Unavailable(ErrnoText(rc));
  }
  return pid;
}

void UseCgroupJoinByWriteForTesting(bool on) { join_by_write_for_testing = on; }

Result<int> OpenPidfd(pid_t pid) {
  // Through syscall(): glibc's wrapper is from 2.36, and the binary should run on older ones.
  long fd = syscall(SYS_pidfd_open, pid, 0);
  if (fd < 0 && errno == ENOSYS) return -1;
  if (fd < 0) return Status::Unavailable("pidfd_open: " + ErrnoText(errno));
  return static_cast<int>(fd);
}

}  // namespace jobctl::agentd
