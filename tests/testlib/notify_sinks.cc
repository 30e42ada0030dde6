#include "testlib/notify_sinks.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

#include "base/base64.h"
#include "testlib/postgres.h"

namespace jobctl::testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kMissingModule = 3;  // smtp_sink.py's exit code without aiosmtpd

// The Python that runs the sinks: $JOBCTL_PYTHON, else Debian's (where apt installs
// python3-aiosmtpd, whatever python3 comes first on PATH), else python3 on PATH.
std::string Python() {
  if (const char* env = std::getenv("JOBCTL_PYTHON"); env != nullptr && *env != '\0') return env;
  if (access("/usr/bin/python3", X_OK) == 0) return "/usr/bin/python3";
  return "python3";
}

std::string Script(const std::string& name) { return std::string(TESTLIB_DIR) + "/" + name; }

// The NNNN.json files of `dir`, in order.
std::vector<std::string> RecordFiles(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".json") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

bool WaitForFiles(const std::string& dir, size_t count, std::chrono::milliseconds timeout) {
  return Coordinator::Eventually([&] { return RecordFiles(dir).size() >= count; }, timeout);
}

// Starts `argv` (its last argument the port) on free ports until one is had: "ready PORT"
// in its output within 20 s. The sink's exit code kMissingModule is kNotFound.
Result<std::unique_ptr<Daemon>> StartOnFreePort(std::vector<std::string> argv,
                                                const std::string& log, int* port) {
  Status last = Status::Ok();
  for (int attempt = 0; attempt < 5; ++attempt) {
    *port = FreeLoopbackPort();
    argv.back() = std::to_string(*port);
    std::unique_ptr<Daemon> process;
    try {
      process = std::make_unique<Daemon>(argv, log);
    } catch (const std::exception& e) {
      return Status::Io(e.what());
    }
    std::string ready = "ready " + std::to_string(*port) + "\n";
    auto deadline = Clock::now() + std::chrono::seconds(20);
    while (Clock::now() < deadline && process->running() &&
           ReadFile(log).find(ready) == std::string::npos) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (ReadFile(log).find(ready) != std::string::npos) return process;
    int rc = process->running() ? -1000 : process->Wait(std::chrono::milliseconds(0));
    if (rc == kMissingModule) return Status::NotFound(ReadFile(log));
    last = Status::Unavailable(argv[1] + " did not start (exit " + std::to_string(rc) + "):\n" +
                               ReadFile(log));
    if (rc == -1000) break;  // it hangs: another port will not help
  }
  return last;
}

}  // namespace

Result<TlsFiles> MakeSelfSignedCert(const std::string& dir) {
  TlsFiles files{dir + "/cert.pem", dir + "/key.pem"};
  ProcessResult r =
      Run({"/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
           "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
           "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", files.key, "-out", files.cert});
  if (r.exit_code != 0) return Status::Io("openssl req failed: " + r.err);
  return files;
}

Result<std::unique_ptr<SmtpSink>> SmtpSink::Start(const Options& options) {
  std::unique_ptr<SmtpSink> sink(new SmtpSink());
  std::vector<std::string> argv = {Python(), Script("smtp_sink.py"), "--dir", sink->dir_.path()};
  if (!options.user.empty()) {
    argv.insert(argv.end(), {"--user", options.user, "--password", options.password});
  }
  if (!options.cert.empty())
    argv.insert(argv.end(), {"--cert", options.cert, "--key", options.key});
  if (options.smtps) argv.push_back("--smtps");
  if (options.require_starttls) argv.push_back("--require-starttls");
  argv.insert(argv.end(), {"--port", "0"});
  sink->smtps_ = options.smtps;
  Result<std::unique_ptr<Daemon>> process =
      StartOnFreePort(argv, sink->dir_.path() + "/sink.log", &sink->port_);
  if (!process.ok()) return process.status();
  sink->process_ = std::move(*process);
  return sink;
}

SmtpSink::~SmtpSink() = default;  // Daemon's destructor kills the sink by its pid

std::string SmtpSink::url() const {
  return std::string(smtps_ ? "smtps" : "smtp") + "://127.0.0.1:" + std::to_string(port_);
}

std::vector<ReceivedMail> SmtpSink::Received() const {
  std::vector<ReceivedMail> mails;
  for (const std::string& file : RecordFiles(dir_.path())) {
    auto j = nlohmann::json::parse(ReadFile(file), nullptr, false);
    if (j.is_discarded()) continue;
    ReceivedMail mail;
    mail.mail_from = j.value("mail_from", "");
    mail.rcpt_tos = j.value("rcpt_tos", std::vector<std::string>{});
    if (j["auth_user"].is_string()) mail.auth_user = j["auth_user"];
    mail.tls = j.value("tls", false);
    mail.data = ReadFile(file.substr(0, file.size() - 5) + ".eml");
    mails.push_back(std::move(mail));
  }
  return mails;
}

bool SmtpSink::WaitForMail(size_t count, std::chrono::milliseconds timeout) const {
  return WaitForFiles(dir_.path(), count, timeout);
}

std::string SmtpSink::Log() const { return ReadFile(dir_.path() + "/sink.log"); }

Result<std::unique_ptr<HttpSink>> HttpSink::Start(const Options& options) {
  std::unique_ptr<HttpSink> sink(new HttpSink());
  std::vector<std::string> argv = {Python(),        Script("http_sink.py"),
                                   "--dir",         sink->dir_.path(),
                                   "--fail-first",  std::to_string(options.fail_first),
                                   "--fail-status", std::to_string(options.fail_status),
                                   "--fail-body",   options.fail_body};
  if (!options.cert.empty())
    argv.insert(argv.end(), {"--cert", options.cert, "--key", options.key});
  argv.insert(argv.end(), {"--port", "0"});
  sink->https_ = !options.cert.empty();
  Result<std::unique_ptr<Daemon>> process =
      StartOnFreePort(argv, sink->dir_.path() + "/sink.log", &sink->port_);
  if (!process.ok()) return process.status();
  sink->process_ = std::move(*process);
  return sink;
}

HttpSink::~HttpSink() = default;

std::string HttpSink::url(const std::string& path) const {
  return std::string(https_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_) + path;
}

std::vector<ReceivedRequest> HttpSink::Received() const {
  std::vector<ReceivedRequest> requests;
  for (const std::string& file : RecordFiles(dir_.path())) {
    auto j = nlohmann::json::parse(ReadFile(file), nullptr, false);
    if (j.is_discarded()) continue;
    ReceivedRequest r;
    r.method = j.value("method", "");
    r.path = j.value("path", "");
    for (const auto& [name, value] : j["headers"].items()) {
      std::string lower = name;
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      r.headers[lower] = value.get<std::string>();
    }
    r.body = Base64Decode(j.value("body_base64", std::string()));
    requests.push_back(std::move(r));
  }
  return requests;
}

bool HttpSink::WaitForRequests(size_t count, std::chrono::milliseconds timeout) const {
  return WaitForFiles(dir_.path(), count, timeout);
}

std::string HttpSink::Log() const { return ReadFile(dir_.path() + "/sink.log"); }

}  // namespace jobctl::testing
