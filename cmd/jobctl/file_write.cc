#include "file_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace jobctl::cli {
namespace {

Status Errno(const std::string& what) { return Status::Io(what + ": " + std::strerror(errno)); }

mode_t NewFileMode() {
  mode_t mask = umask(0);
  umask(mask);
  return 0666 & ~mask;
}

Status WriteAll(int fd, std::string_view text, const std::string& name) {
  while (!text.empty()) {
    ssize_t n = write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("cannot write " + name);
    text.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

}  // namespace

Status WriteFileAtomically(const std::string& path, std::string_view text) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path target = path;
  if (fs::is_symlink(target, ec)) {
    target = fs::weakly_canonical(target, ec);
    if (ec) return Status::Io("cannot resolve the link " + path + ": " + ec.message());
  }
  struct stat old {};
  bool exists = stat(target.c_str(), &old) == 0;
  fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  std::string tmp = (dir / ("." + target.filename().string() + ".jobctl-XXXXXX")).string();
  int fd = mkstemp(tmp.data());
  if (fd < 0) return Errno("cannot create a temporary file in " + dir.string());
  Status s = WriteAll(fd, text, tmp);
  if (s.ok() && exists) {
    // Only root may give a file away; anyone else ends up owning the new file, as after an
    // editor's save, so a failure here is not an error.
    [[maybe_unused]] int owner_kept = fchown(fd, old.st_uid, old.st_gid);
  }
  if (s.ok() && fchmod(fd, exists ? (old.st_mode & 07777) : NewFileMode()) != 0) {
    s = Errno("cannot set the mode of " + tmp);
  }
  if (s.ok() && fsync(fd) != 0) s = Errno("cannot flush " + tmp);
  if (close(fd) != 0 && s.ok()) s = Errno("cannot close " + tmp);
  if (s.ok() && rename(tmp.c_str(), target.c_str()) != 0) {
    s = Errno("cannot replace " + target.string());
  }
  if (!s.ok()) unlink(tmp.c_str());
  return s;
}

}  // namespace jobctl::cli
