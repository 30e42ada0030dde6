#include "fault/env/loop_mount.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>
#include <stdexcept>

#include "fault/env/must_run.h"
#include "testlib/subprocess.h"

namespace jobctl::testing {
namespace {

constexpr const char* kLosetup = "/usr/sbin/losetup";
constexpr const char* kMkfs = "/usr/sbin/mkfs.ext4";
constexpr const char* kImagePrefix = "fault-fs-";  // fault-fs-<pid>.img

// Loop devices whose image belongs to a test process that died: unmount and detach them.
void SweepLeftovers() {
  ProcessResult list = Run({kLosetup, "-n", "-l", "-O", "NAME,BACK-FILE"});
  std::istringstream in(list.out);
  std::string device, file;
  while (in >> device >> file) {
    size_t at = file.rfind(kImagePrefix);
    if (at == std::string::npos) continue;
    pid_t pid = static_cast<pid_t>(std::atol(file.c_str() + at + std::string(kImagePrefix).size()));
    if (pid <= 0 || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    Run({"/usr/bin/umount", "-l", device});
    Run({kLosetup, "-d", device});
  }
}

}  // namespace

std::string LoopMount::Unavailable() {
  if (::geteuid() != 0) return "needs root to attach a loop device and mount it";
  if (::access(kMkfs, X_OK) != 0) return "needs e2fsprogs (mkfs.ext4)";
  if (::access(kLosetup, X_OK) != 0) return "needs util-linux (losetup)";
  if (::access("/dev/loop-control", F_OK) != 0) return "the kernel has no loop devices";
  return "";
}

LoopMount::LoopMount(const std::string& image_dir, std::string mount_point, int mib)
    : mount_point_(std::move(mount_point)) {
  SweepLeftovers();
  image_ = image_dir + "/" + kImagePrefix + std::to_string(::getpid()) + ".img";
  ::mkdir(mount_point_.c_str(), 0700);
  if (::truncate(image_.c_str(), 0) != 0) {
    int fd = ::open(image_.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    if (fd >= 0) ::close(fd);
  }
  if (::truncate(image_.c_str(), static_cast<off_t>(mib) << 20) != 0) {
    throw std::runtime_error("cannot size " + image_);
  }
  // No blocks reserved for root (the coordinator runs as root here), and every inode table
  // written now, so that nothing writes in the background after mounting.
  MustRun({kMkfs, "-q", "-F", "-m", "0", "-E", "lazy_itable_init=0,lazy_journal_init=0", image_});
  ProcessResult attach = Run({kLosetup, "--find", "--show", image_});
  if (attach.exit_code != 0) throw std::runtime_error("losetup: " + attach.err);
  device_ = attach.out.substr(0, attach.out.find('\n'));
  try {
    MustRun({"/usr/bin/mount", "-t", "ext4", device_, mount_point_});
  } catch (...) {
    Run({kLosetup, "-d", device_});
    throw;
  }
  mounted_ = true;
}

LoopMount::~LoopMount() {
  if (mounted_ && Run({"/usr/bin/umount", mount_point_}).exit_code != 0) {
    // Something (a process the test could not stop) still has a file open: detach it now,
    // the kernel finishes the unmount when the last file closes.
    Run({"/usr/bin/umount", "-l", mount_point_});
  }
  if (!device_.empty()) Run({kLosetup, "-d", device_});
  ::unlink(image_.c_str());
}

void LoopMount::Fill() {
  std::string path = mount_point_ + "/filler";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("cannot create " + path);
  // Reserve what statvfs reports free in one go, then write whatever blocks are left.
  int64_t free = free_bytes();
  struct stat st {};
  ::fstat(fd, &st);
  if (free > 0) (void)::posix_fallocate(fd, st.st_size, free);
  std::string block(4096, 'f');
  while (::write(fd, block.data(), block.size()) > 0) {
  }
  ::fsync(fd);
  ::close(fd);
}

void LoopMount::Free() {
  std::string path = mount_point_ + "/filler";
  ::unlink(path.c_str());
  ::sync();
}

int64_t LoopMount::free_bytes() const {
  struct statvfs vfs {};
  if (::statvfs(mount_point_.c_str(), &vfs) != 0) return -1;
  return static_cast<int64_t>(vfs.f_bavail) * static_cast<int64_t>(vfs.f_frsize);
}

}  // namespace jobctl::testing
