#include "step_output.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>

namespace jobctl::agentd {
namespace {

Status Errno(const std::string& what) { return Status::Io(what + ": " + std::strerror(errno)); }

// r<run>-s<shard>-a<attempt>-<16 hex>: a name CreateStepOutput gives.
bool IsOutputName(std::string_view name) {
  auto digits = [&](char tag) {
    if (name.empty() || name[0] != tag) return false;
    size_t n = 1;
    while (n < name.size() && name[n] >= '0' && name[n] <= '9') ++n;
    if (n == 1 || n >= name.size() || name[n] != '-') return false;
    name.remove_prefix(n + 1);
    return true;
  };
  if (!digits('r') || !digits('s') || !digits('a') || name.size() != 16) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace

Status PrepareOutputDir(const std::string& dir) {
  // Its parent: whoever could write there could put a link to elsewhere in its place
  // between the checks below and a later open by path.
  std::string parent = std::filesystem::path(dir).parent_path().string();
  struct stat up {};
  if (parent.empty() || stat(parent.c_str(), &up) != 0)
    return Errno("cannot stat parent of " + dir);
  if ((up.st_uid != 0 && up.st_uid != geteuid()) || (up.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return Status::PermissionDenied(parent + " (the parent of " + dir +
                                    ") may be written by other users; the output directory "
                                    "needs a parent only root or agentd's user can write");
  }
  if (mkdir(dir.c_str(), 0711) != 0 && errno != EEXIST) return Errno("cannot create " + dir);
  // Everything below goes through this descriptor: a link put in the directory's place is
  // refused, never followed.
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return Errno(dir + " (a directory, not a link)");
  struct stat st {};
  Status s = Status::Ok();
  if (fstat(fd, &st) != 0) {
    s = Errno(dir);
  } else if (st.st_uid != geteuid()) {
    s = Status::PermissionDenied(dir + " is not owned by agentd's user");
  } else if (fchmod(fd, 0711) != 0) {
    s = Errno("cannot chmod " + dir);
  }
  if (!s.ok()) {
    close(fd);
    return s;
  }
  DIR* d = fdopendir(fd);
  if (d == nullptr) {
    s = Errno(dir);
    close(fd);
    return s;
  }
  // Only what an earlier agentd created goes; anything else is left alone.
  while (dirent* e = readdir(d)) {
    if (!IsOutputName(e->d_name)) continue;
    if (unlinkat(dirfd(d), e->d_name, 0) != 0 && errno != ENOENT) {
      s = Errno("cannot remove " + dir + "/" + e->d_name);
      break;
    }
  }
  closedir(d);
  return s;
}

bool ReachableByOthers(const std::string& dir) {
  std::filesystem::path p = std::filesystem::path(dir);
  for (; !p.empty(); p = p.parent_path()) {
    struct stat st {};
    if (stat(p.c_str(), &st) != 0 || (st.st_mode & S_IXOTH) == 0) return false;
    if (p == p.root_path()) break;
  }
  return true;
}

Result<std::string> CreateStepOutput(const std::string& dir, const AttemptKey& key,
                                     const std::string& suffix, const UserInfo& user,
                                     bool switch_user) {
  std::string path = dir + "/r" + std::to_string(key.run) + "-s" + std::to_string(key.shard) +
                     "-a" + std::to_string(key.attempt) + "-" + suffix;
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("JOB_OUTPUT: cannot create " + path);
  Status s = Status::Ok();
  if (fchmod(fd, 0600) != 0) {  // whatever the umask
    s = Errno("JOB_OUTPUT: cannot chmod " + path);
  } else if (switch_user && fchown(fd, user.uid, user.gid) != 0) {
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
  // O_NONBLOCK: a FIFO in the file's place must not hold up the loop (S_ISREG refuses it).
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
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
