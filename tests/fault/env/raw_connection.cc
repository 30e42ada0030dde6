#include "fault/env/raw_connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <stdexcept>

namespace jobctl::testing {

RawConnection::RawConnection(const std::string& host, int port, const std::string& from) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ >= 0 && !from.empty()) {
    sockaddr_in local{};
    local.sin_family = AF_INET;
    ::inet_pton(AF_INET, from.c_str(), &local.sin_addr);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
      ::close(fd_);
      throw std::runtime_error("cannot bind to " + from);
    }
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
  if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    throw std::runtime_error("cannot connect to " + host + ":" + std::to_string(port));
  }
}

RawConnection::~RawConnection() {
  if (fd_ >= 0) ::close(fd_);
}

bool RawConnection::Send(const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

void RawConnection::CloseWrite() { ::shutdown(fd_, SHUT_WR); }

bool RawConnection::ReadMore(std::chrono::steady_clock::time_point deadline) {
  if (eof_) return false;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) return false;
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
  char buf[65536];
  ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
  if (n <= 0) {
    eof_ = true;  // closed or reset
    return false;
  }
  buffer_.append(buf, static_cast<size_t>(n));
  return true;
}

RawResponse RawConnection::Read(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  RawResponse r;
  size_t head_end;
  while ((head_end = buffer_.find("\r\n\r\n")) == std::string::npos) {
    if (!ReadMore(deadline)) {
      r.closed = eof_;
      return r;
    }
  }
  std::string head = buffer_.substr(0, head_end);
  size_t line_end = head.find("\r\n");
  std::string status_line = head.substr(0, line_end);
  if (status_line.size() > 12) r.status = std::atoi(status_line.c_str() + 9);  // "HTTP/1.1 NNN"
  size_t at = line_end;
  while (at != std::string::npos && at < head.size()) {
    size_t next = head.find("\r\n", at + 2);
    std::string line =
        head.substr(at + 2, next == std::string::npos ? std::string::npos : next - at - 2);
    size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      size_t v = line.find_first_not_of(' ', colon + 1);
      r.headers[name] = v == std::string::npos ? "" : line.substr(v);
    }
    at = next;
  }
  size_t length = r.headers.count("content-length") ? std::stoul(r.headers["content-length"]) : 0;
  while (buffer_.size() < head_end + 4 + length) {
    if (!ReadMore(deadline)) {
      r.status = 0;  // incomplete
      r.closed = eof_;
      return r;
    }
  }
  r.body = buffer_.substr(head_end + 4, length);
  buffer_.erase(0, head_end + 4 + length);
  if (r.headers["connection"] == "close") r.closed = WaitClosed(timeout);
  return r;
}

bool RawConnection::WaitClosed(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!eof_) {
    if (!ReadMore(deadline) && !eof_) return false;
  }
  return true;
}

std::string HttpRequest(const std::string& method, const std::string& target,
                        const std::string& token, const std::string& body,
                        const std::string& extra_headers) {
  std::string r = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  if (!token.empty()) r += "Authorization: Bearer " + token + "\r\n";
  if (!body.empty() || method == "POST") {
    r +=
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  return r + extra_headers + "\r\n" + body;
}

}  // namespace jobctl::testing
