// RawConnection is one TCP connection to a server under test that sends exactly the bytes it
// is given (truncated requests, oversized heads, slow drips) and reads back whatever comes:
// one HTTP/1.1 response at a time, or the server closing. Test thread only; blocking, with a
// deadline on every read.
#pragma once

#include <chrono>
#include <map>
#include <string>

namespace jobctl::testing {

struct RawResponse {
  int status = 0;  // 0: no complete response before the deadline or the close
  std::map<std::string, std::string> headers;  // names lower-case
  std::string body;
  bool closed = false;  // the server closed the connection (after this response, if any)
};

class RawConnection {
 public:
  // Throws when it cannot connect. `from`: a local address to connect from ("127.0.0.2", to
  // look like another client); empty: the kernel's choice.
  RawConnection(const std::string& host, int port, const std::string& from = "");
  ~RawConnection();
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  // Sends all of `bytes`; false when the server has closed the connection (EPIPE, reset).
  bool Send(const std::string& bytes);
  // Half-closes: the server sees the end of the request stream (a client that gave up).
  void CloseWrite();
  // Reads one response (head + Content-Length body) or up to the close or the deadline.
  RawResponse Read(std::chrono::milliseconds timeout);
  // Waits until the server closes the connection; false at the deadline.
  bool WaitClosed(std::chrono::milliseconds timeout);

 private:
  int fd_ = -1;
  std::string buffer_;  // bytes read past the last response
  bool eof_ = false;
  bool ReadMore(std::chrono::steady_clock::time_point deadline);
};

// A request as a client would send it, with Content-Length when there is a body.
std::string HttpRequest(const std::string& method, const std::string& target,
                        const std::string& token, const std::string& body,
                        const std::string& extra_headers = "");

}  // namespace jobctl::testing
