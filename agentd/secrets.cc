#include "secrets.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "model/env_rules.h"

namespace jobctl::agentd {
namespace {

Result<std::string> ReadOne(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return Status::NotFound(std::string(std::strerror(errno)));
  struct stat st {};
  std::string data;
  Status s = Status::Ok();
  if (fstat(fd, &st) != 0) {
    s = Status::Io(std::strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    s = Status::InvalidArgument("not a regular file");
  } else if (static_cast<size_t>(st.st_size) > kMaxSecretBytes) {
    s = Status::InvalidArgument("over " + std::to_string(kMaxSecretBytes) + " bytes");
  } else {
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0 && data.size() <= kMaxSecretBytes) {
      data.append(buf, static_cast<size_t>(n));
    }
    if (n < 0) s = Status::Io(std::strerror(errno));
    if (data.size() > kMaxSecretBytes) {
      s = Status::InvalidArgument("over " + std::to_string(kMaxSecretBytes) + " bytes");
    }
  }
  close(fd);
  if (!s.ok()) return s;
  if (data.find('\0') != std::string::npos) return Status::InvalidArgument("holds a NUL byte");
  if (!data.empty() && data.back() == '\n') data.pop_back();
  return data;
}

}  // namespace

Result<std::map<std::string, std::string>> ReadSecrets(
    const std::map<std::string, std::string>& wanted, const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& [var, file] : wanted) {
    std::string what = "secret " + var.substr(0, 64);
    if (!EnvNameProblem(var).empty())
      return Status::InvalidArgument(what + ": not a variable name");
    if (!IsSecretFileName(file)) {
      return Status::InvalidArgument(what + ": \"" + file.substr(0, 64) +
                                     "\" is not a file name in secrets_dir");
    }
    std::string path = dir + "/" + file;
    Result<std::string> value = ReadOne(path);
    if (!value.ok()) return value.status().WithContext(what + ": " + path);
    out[var] = std::move(*value);
  }
  return out;
}

}  // namespace jobctl::agentd
