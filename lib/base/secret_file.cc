#include "base/secret_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "base/log.h"

namespace jobctl {

std::optional<std::string> LooseSecretFileMode(const std::string& path, std::string_view what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077) == 0) {
    return std::nullopt;
  }
  const char* who = (st.st_mode & 070) && (st.st_mode & 07) ? "group and others"
                    : (st.st_mode & 070)                    ? "its group"
                                                            : "others";
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  return std::string(what) + " " + path + " is accessible to " + who + " (mode " + mode +
         "); make it private: chmod 600 " + path;
}

Status MakePrivateDir(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return Status::Io("cannot create " + path + ": " + ec.message());
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Status::Io("cannot examine " + path + ": " + std::strerror(errno));
  }
  if ((st.st_mode & 07777) == 0700) return Status::Ok();
  if (::chmod(path.c_str(), 0700) != 0) {
    return Status::Io("cannot make " + path + " private (chmod 0700): " + std::strerror(errno));
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    log::Warn("directory was open to others; made it 0700", {{"path", path}, {"mode", mode}});
  }
  return Status::Ok();
}

}  // namespace jobctl
