#include "step_output.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace jobctl::agentd {
namespace {

Status Errno(const std::string& what) { return Status::Io(what + ": " + std::strerror(errno)); }

}  // namespace

Status PrepareOutputDir(const std::string& dir) {
  if (mkdir(dir.c_str(), 0711) != 0 && errno != EEXIST) return Errno("cannot create " + dir);
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) return Errno(dir);
  if (!S_ISDIR(st.st_mode)) return Status::InvalidArgument(dir + " is not a directory");
  if (st.st_uid != geteuid()) {
    return Status::PermissionDenied(dir + " is not owned by agentd's user");
  }
  if (chmod(dir.c_str(), 0711) != 0) return Errno("cannot chmod " + dir);
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return Errno(dir);
  Status s = Status::Ok();
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (unlinkat(dirfd(d), name.c_str(), 0) != 0 && errno != ENOENT) {
      s = Errno("cannot remove " + dir + "/" + name);
      break;
    }
  }
  closedir(d);
  return s;
}

Result<std::string> CreateStepOutput(const std::string& dir, const AttemptKey& key,
                                     const std::string& suffix, const UserInfo& user,
                                     bool switch_user) {
  std::string path = dir + "/r" + std::to_string(key.run) + "-s" + std::to_string(key.shard) +
                     "-a" + std::to_string(key.attempt) + "-" + suffix;
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("JOB_OUTPUT: cannot create " + path);
  Status s = Status::Ok();
  if (switch_user && fchown(fd, user.uid, user.gid) != 0) {
    s = Errno("JOB_OUTPUT: cannot give " + path + " to " + user.name);
  }
  close(fd);
  if (!s.ok()) {
    unlink(path.c_str());
    return s;
  }
  return path;
}

Result<StepOutputs> CollectStepOutput(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    // A link in its place (ELOOP) goes too; it is in agentd's directory.
    Status s = Errno("JOB_OUTPUT: cannot open " + path);
    unlink(path.c_str());
    return s;
  }
  struct stat st {};
  std::string data;
  Status s = Status::Ok();
  if (fstat(fd, &st) != 0) {
    s = Errno("JOB_OUTPUT: " + path);
  } else if (!S_ISREG(st.st_mode)) {
    s = Status::InvalidArgument("JOB_OUTPUT: not a regular file");
  } else {
    // One byte past the limit is enough to know it is over.
    char buf[8192];
    ssize_t n = 0;
    while (data.size() <= kMaxStepOutputBytes && (n = read(fd, buf, sizeof buf)) > 0) {
      data.append(buf, static_cast<size_t>(n));
    }
    if (n < 0) s = Errno("JOB_OUTPUT: cannot read " + path);
  }
  close(fd);
  unlink(path.c_str());
  if (!s.ok()) return s;
  if (data.size() > kMaxStepOutputBytes) {
    return Status::ResourceExhausted("JOB_OUTPUT: over the limit of " +
                                     std::to_string(kMaxStepOutputBytes) + " bytes");
  }
  Result<StepOutputs> out = ParseStepOutput(data);
  if (!out.ok()) return out.status().WithContext("JOB_OUTPUT");
  return out;
}

}  // namespace jobctl::agentd
