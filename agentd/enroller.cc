#include "enroller.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/log.h"

namespace jobctl::agentd {
namespace {

std::string ReadSecret(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

}  // namespace

Enroller::Enroller(uv_loop_t* loop, CoordinatorLink* link, std::string state_dir,
                   std::string configured_token, Random* random)
    : link_(link),
      path_(std::move(state_dir) + "/credential"),
      configured_(std::move(configured_token)),
      backoff_(1000, 60'000, random),
      retry_timer_(loop) {}

void Enroller::Start(std::string name, std::map<std::string, std::string> labels,
                     std::function<void()> on_ready) {
  name_ = std::move(name);
  labels_ = std::move(labels);
  on_ready_ = std::move(on_ready);
  Try();
}

void Enroller::Close() {
  closed_ = true;
  retry_timer_.Stop();
}

void Enroller::Try() {
  if (closed_) return;
  std::string stored = ReadSecret(path_);
  link_->SetToken(stored.empty() ? configured_ : stored);
  nlohmann::json body = {{"agent", name_}, {"labels", labels_}};
  link_->Post(
      "/v1/agent/enrol", body.dump(), "application/json", std::chrono::seconds(30),
      [this, has = !stored.empty()](Result<http::HttpResponse> r) { OnReply(has, std::move(r)); });
}

void Enroller::OnReply(bool stored, Result<http::HttpResponse> r) {
  if (closed_) return;
  if (!r.ok() || r->status >= 500) return Retry("", RetryAfterMs(r));  // the link logs reachability
  if (stored && r->status == 401) {
    log::Warn(
        "the stored agent credential was refused (revoked or expired); enrolling again "
        "with the configured token",
        {{"agent", name_}, {"path", path_}, {"error", Describe(r)}});
    std::remove(path_.c_str());
    return Try();
  }
  nlohmann::json body = nlohmann::json::parse(r->body, nullptr, false);
  if (r->status == 201 && body.is_object() && body.contains("token") && body["token"].is_string()) {
    std::string secret = body["token"].get<std::string>();
    if (Status s = Save(secret); !s.ok()) {
      // Without the file the next start could not use this credential, and the name is now
      // taken: say so loudly, but run with it.
      log::Error(
          "cannot keep the agent credential; after a restart this agent must be "
          "removed (`jobctl agents rm`) before it can enrol again",
          {{"agent", name_}, {"error", s.message()}});
    }
    link_->SetToken(secret);
    log::Info("agent enrolled", {{"agent", name_}, {"credential", path_}});
  } else if (r->status != 200) {
    std::string why = Describe(r);
    if (r->status == 409)
      why += "; if this host was reinstalled, run `jobctl agents rm " + name_ + "`";
    return Retry(why, RetryAfterMs(r));
  }
  std::function<void()> ready = std::move(on_ready_);
  on_ready_ = nullptr;
  if (ready) ready();
}

void Enroller::Retry(const std::string& why, int64_t at_least_ms) {
  if (!why.empty() && why != last_error_) {
    log::Error("enrolment refused; retrying with backoff", {{"agent", name_}, {"error", why}});
  }
  last_error_ = why;
  retry_timer_.Once(static_cast<uint64_t>(backoff_.Next(at_least_ms)), [this] { Try(); });
}

Status Enroller::Save(const std::string& secret) {
  // Written whole with mode 0600, then renamed: a crash leaves no half credential.
  std::string tmp = path_ + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Io("cannot create " + tmp + ": " + std::strerror(errno));
  std::string text = secret + "\n";
  bool ok = ::fchmod(fd, 0600) == 0 &&
            ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
            ::fsync(fd) == 0;
  ok = ::close(fd) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path_.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return Status::Io("cannot write " + path_ + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace jobctl::agentd
