#include "client.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "base/secret_file.h"
#include "config/cli_config.h"
#include "wire/bounded_json.h"

namespace jobctl::cli {
namespace {

constexpr const char* kDefaultUrl = "http://127.0.0.1:7070";
// On the coordinator's own host, root can use the admin token that `jobctl serve` wrote on
// first start, as kubectl on a k3s server reads /etc/rancher/k3s/k3s.yaml.
constexpr const char* kLocalAdminToken = "/var/lib/jobctl/admin.token";

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

Result<std::string> ReadToken(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::InvalidArgument("cannot read token file " + path);
  if (std::optional<std::string> loose = LooseSecretFileMode(path, "token file")) Warn(*loose);
  std::string token;
  std::getline(in, token);
  while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
  if (token.empty()) return Status::InvalidArgument("token file " + path + " is empty");
  return token;
}

Status FromHttp(const http::HttpResponse& r, const nlohmann::json& body) {
  std::string msg = body.is_object() && body.contains("message") && body["message"].is_string()
                        ? body["message"].get<std::string>()
                        : "HTTP " + std::to_string(r.status);
  // A refused job file lists its problems, each at its file, line and column (at most 20).
  if (body.is_object() && body.contains("errors") && body["errors"].is_array()) {
    size_t shown = 0;
    for (const nlohmann::json& e : body["errors"]) {
      if (!e.is_object() || !e.contains("text") || !e["text"].is_string()) continue;
      if (++shown > 20) {
        msg += "\n... and " + std::to_string(body["errors"].size() - 20) +
               " more (jobctl validate lists every problem the file has by itself)";
        break;
      }
      msg += "\n" + e["text"].get<std::string>();
    }
  }
  switch (r.status) {
    case 400: return Status::InvalidArgument(msg);
    case 401:
      return Status::Unauthenticated(msg + " (check --token, --token-file or JOBCTL_TOKEN)");
    case 403: return Status::PermissionDenied(msg);
    case 404: return Status::NotFound(msg);
    case 409: return Status::Conflict(msg);
    case 413: return Status::InvalidArgument(msg);
    case 429: return Status::Unavailable(msg);  // over a rate limit: try again later
    case 503: return Status::Unavailable(msg);
    case 507: return Status::ResourceExhausted(msg);
    default: return Status::Internal(msg);
  }
}

}  // namespace

std::string UrlEncode(std::string_view s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

Client::Client(std::string url, const std::string& token, const http::TlsOptions& tls)
    : url_(std::move(url)) {
  for (size_t start = 0; start <= url_.size();) {
    size_t comma = url_.find(',', start);
    std::string one =
        url_.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    while (!one.empty() && (one.back() == '/' || one.back() == ' ')) one.pop_back();
    while (!one.empty() && one.front() == ' ') one.erase(0, 1);
    if (!one.empty()) http_.push_back(std::make_unique<http::BlockingClient>(one, token, tls));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (http_.empty())
    http_.push_back(std::make_unique<http::BlockingClient>(kDefaultUrl, token, tls));
}

namespace {

// Flag > environment > config file, like the coordinator's address; a file named but not
// readable is a configuration error before any request.
Result<std::string> TlsFile(const std::string& flag, const char* env, const std::string& file,
                            const char* what) {
  std::string path = !flag.empty() ? flag : !Env(env).empty() ? Env(env) : file;
  if (!path.empty() && access(path.c_str(), R_OK) != 0)
    return Status::InvalidArgument("cannot read " + std::string(what) + " " + path);
  return path;
}

}  // namespace

Result<std::unique_ptr<Client>> Client::Connect(const GlobalOptions& g) {
  Result<CliConfig> file = LoadCliConfig();
  if (!file.ok()) return file.status();
  std::string url = !g.coordinator.empty()               ? g.coordinator
                    : !Env("JOBCTL_COORDINATOR").empty() ? Env("JOBCTL_COORDINATOR")
                    : !file->coordinator.empty()         ? file->coordinator
                                                         : kDefaultUrl;
  std::string token;
  if (!g.token.empty()) {
    token = g.token;
  } else if (!g.token_file.empty()) {
    Result<std::string> t = ReadToken(g.token_file);
    if (!t.ok()) return t.status();
    token = *t;
  } else if (!Env("JOBCTL_TOKEN").empty()) {
    token = Env("JOBCTL_TOKEN");
  } else if (!file->token.empty()) {
    token = file->token;
    if (std::optional<std::string> loose =
            LooseSecretFileMode(file->path, "config file with a token")) {
      Warn(*loose);
    }
  } else if (!file->token_file.empty()) {
    Result<std::string> t = ReadToken(file->token_file);
    if (!t.ok()) return t.status();
    token = *t;
  } else if (Result<std::string> t = ReadToken(kLocalAdminToken); t.ok()) {
    token = *t;
  }
  Result<std::string> ca = TlsFile(g.ca_file, "JOBCTL_CA_FILE", file->ca_file, "CA file");
  if (!ca.ok()) return ca.status();
  Result<std::string> cert =
      TlsFile(g.client_cert, "JOBCTL_CLIENT_CERT", file->client_cert, "client certificate");
  if (!cert.ok()) return cert.status();
  Result<std::string> key =
      TlsFile(g.client_key, "JOBCTL_CLIENT_KEY", file->client_key, "client key");
  if (!key.ok()) return key.status();
  if (cert->empty() != key->empty()) {
    return Status::InvalidArgument(
        "--client-cert and --client-key go together: set both or neither");
  }
  return std::unique_ptr<Client>(new Client(url, token, {*ca, *cert, *key}));
}

Result<nlohmann::json> Client::Send(const std::string& path, const http::RequestOptions& options) {
  Result<http::HttpResponse> r = Status::Unavailable("no coordinator");
  std::string unreachable;  // why each coordinator tried could not be reached
  size_t tries = 0;
  for (; tries < http_.size(); ++tries) {
    r = http_[current_]->Request(path, options);
    // A standby answers reads itself and refuses the rest: those go to the next URL.
    if (r.ok() && http::IsStandby(*r) && http_.size() > 1) {
      unreachable +=
          (unreachable.empty() ? "" : "; ") + http_[current_]->base_url() + " is a standby";
      current_ = (current_ + 1) % http_.size();
      continue;
    }
    if (r.ok() || !http_[current_]->last_never_connected()) break;
    unreachable += (unreachable.empty() ? "" : "; ") + r.status().message();
    current_ = (current_ + 1) % http_.size();
  }
  if (tries == http_.size() && http_.size() > 1) {
    return Status::Unavailable("no coordinator could be reached: " + unreachable);
  }
  if (!r.ok()) return r.status();
  nlohmann::json body = r->body.empty() ? nlohmann::json() : wire::ParseJson(r->body);
  if (r->status >= 200 && r->status < 300) {
    if (body.is_discarded()) {
      return Status::Unavailable("the coordinator sent a response that is not JSON");
    }
    return body;
  }
  return FromHttp(*r, body);
}

Result<nlohmann::json> Client::Get(const std::string& path, std::chrono::milliseconds timeout) {
  http::RequestOptions o;
  o.timeout = timeout;
  return Send(path, o);
}

Result<nlohmann::json> Client::Post(const std::string& path, const nlohmann::json& body,
                                    std::chrono::milliseconds timeout) {
  http::RequestOptions o;
  o.method = "POST";
  o.body = body.dump();
  o.timeout = timeout;
  return Send(path, o);
}

Result<nlohmann::json> Client::Delete(const std::string& path) {
  http::RequestOptions o;
  o.method = "DELETE";
  return Send(path, o);
}

}  // namespace jobctl::cli
