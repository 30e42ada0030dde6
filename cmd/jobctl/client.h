// Client is how a jobctl command talks to the coordinator: it resolves the address and
// token (flags > environment > config file > defaults), sends JSON, and turns HTTP errors
// into a Status whose code decides the exit code (401 -> not authorized, unreachable ->
// unavailable, ...) and whose message is the coordinator's own explanation.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "cli.h"
#include "httpclient/blocking_client.h"
#include "wire/views.h"

namespace jobctl::cli {

class Client {
 public:
  // Resolves the connection settings; kInvalidArgument (exit 78) for a broken config file or
  // an unreadable token file.
  static Result<std::unique_ptr<Client>> Connect(const GlobalOptions& g);

  Result<nlohmann::json> Get(const std::string& path,
                             std::chrono::milliseconds timeout = std::chrono::seconds(30));
  Result<nlohmann::json> Post(const std::string& path, const nlohmann::json& body,
                              std::chrono::milliseconds timeout = std::chrono::seconds(30));
  Result<nlohmann::json> Delete(const std::string& path);
  // The coordinator URLs as given (comma-separated when several).
  const std::string& url() const { return url_; }

 private:
  Client(std::string url, const std::string& token, const http::TlsOptions& tls);
  Result<nlohmann::json> Send(const std::string& path, const http::RequestOptions& options);

  std::string url_;
  // One per URL. A request goes to the one that last answered; one that could not connect
  // goes to the next (a standby coordinator does not listen), never one that reached a
  // server, so that nothing is done twice.
  std::vector<std::unique_ptr<http::BlockingClient>> http_;
  size_t current_ = 0;
};

// A reply read as its typed message (wire/views.h) or list of them. A reply that does not
// decode is kUnavailable (exit 69, never 70): the coordinator answered, but not in a shape
// this jobctl knows, and the message names the field and says the versions may differ.
template <typename T>
Result<T> ReplyAs(const nlohmann::json& body) {
  Result<T> v = T::FromJson(body);
  if (!v.ok()) return Status::Unavailable(v.status().message());
  return v;
}
template <typename T>
Result<std::vector<T>> ReplyListAs(const nlohmann::json& body) {
  Result<std::vector<T>> v = wire::ListFromJson<T>(body);
  if (!v.ok()) return Status::Unavailable(v.status().message());
  return v;
}

// Percent-encodes a path segment or query value.
std::string UrlEncode(std::string_view s);

}  // namespace jobctl::cli
