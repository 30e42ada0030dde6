#include "testlib/browser.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "base/base64.h"

extern char** environ;

namespace jobctl::testing {

using nlohmann::json;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

std::string Browser::Find() {
  const char* env = std::getenv("JOBCTL_CHROMIUM");
  std::string bin = env != nullptr && *env != '\0' ? env : "/usr/bin/chromium";
  return access(bin.c_str(), X_OK) == 0 ? bin : "";
}

Browser::Browser(const TempDir& dir, int width, int height) {
  std::string bin = Find();
  if (bin.empty()) throw std::runtime_error("chromium not found");
  int to[2], from[2];
  if (pipe2(to, O_CLOEXEC) != 0 || pipe2(from, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe failed");
  }
  std::string profile = dir.path() + "/chromium-profile";
  std::vector<std::string> args = {
      bin,
      "--headless=new",
      "--remote-debugging-pipe",
      "--user-data-dir=" + profile,
      "--no-first-run",
      "--no-default-browser-check",
      "--disable-gpu",
      "--disable-dev-shm-usage",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-extensions",
      "--hide-scrollbars",
      "--mute-audio",
      "--window-size=" + std::to_string(width) + "," + std::to_string(height),
      "about:blank"};
  // Chromium's sandbox needs user namespaces it does not get as root.
  if (geteuid() == 0) args.insert(args.begin() + 1, "--no-sandbox");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, to[0], 3);
  posix_spawn_file_actions_adddup2(&fa, from[1], 4);
  int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
  posix_spawn_file_actions_adddup2(&fa, devnull, 1);
  posix_spawn_file_actions_adddup2(&fa, devnull, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);  // its helpers are killed with it
  posix_spawnattr_setpgroup(&attr, 0);
  int rc = posix_spawn(&pid_, bin.c_str(), &fa, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(devnull);
  close(to[0]);
  close(from[1]);
  to_ = to[1];
  from_ = from[0];
  if (rc != 0) throw std::runtime_error("cannot start " + bin);
  // One tab of our own, attached in flat mode: page commands carry its session id.
  json target = Call("Target.createTarget", {{"url", "about:blank"}}, false);
  json attached = Call("Target.attachToTarget",
                       {{"targetId", target.at("targetId")}, {"flatten", true}}, false);
  session_ = attached.at("sessionId").get<std::string>();
  Call("Page.enable");
  Call("Network.enable");
  Call("Runtime.enable");
  Call("Log.enable");
}

Browser::~Browser() {
  if (pid_ > 0) {
    kill(-pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (to_ >= 0) close(to_);
  if (from_ >= 0) close(from_);
}

bool Browser::Read(json* message, Clock::time_point deadline) {
  for (;;) {
    size_t end = buffer_.find('\0');
    if (end != std::string::npos) {
      *message = json::parse(buffer_.substr(0, end), nullptr, false);
      buffer_.erase(0, end + 1);
      return true;
    }
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{from_, POLLIN, 0};
    int n = poll(&p, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    char chunk[65536];
    ssize_t got = read(from_, chunk, sizeof chunk);
    if (got <= 0) throw std::runtime_error("chromium closed its DevTools pipe");
    buffer_.append(chunk, static_cast<size_t>(got));
  }
}

void Browser::Note(const json& event) {
  const std::string method = event.value("method", "");
  const json& params = event.contains("params") ? event["params"] : json::object();
  if (method == "Network.requestWillBeSent") {
    requests_.push_back(params["request"].value("url", ""));
  } else if (method == "Network.responseReceived") {
    // Refusals (401, 403) are answers the page shows; any other error is a fault of the page's
    // requests or of the server.
    int status = params["response"].value("status", 0);
    if (status >= 400 && status != 401 && status != 403) {
      errors_.push_back("HTTP " + std::to_string(status) + " for " +
                        params["response"].value("url", ""));
    }
  } else if (method == "Runtime.exceptionThrown") {
    const json& d = params["exceptionDetails"];
    std::string text = d.value("text", "");
    if (d.contains("exception")) text += " " + d["exception"].value("description", "");
    errors_.push_back("exception: " + text);
  } else if (method == "Log.entryAdded") {
    const json& e = params["entry"];
    // A refusal the page handles (401, 403) is logged by the browser as a network error:
    // not a fault of the page.
    if (e.value("level", "") == "error" && e.value("source", "") != "network") {
      errors_.push_back(e.value("source", "") + ": " + e.value("text", "") + " (" +
                        e.value("url", "") + ")");
    }
  } else if (method == "Runtime.consoleAPICalled" && params.value("type", "") == "error") {
    errors_.push_back("console.error: " + params.dump());
  } else if (method == "Page.loadEventFired") {
    loaded_ = true;
  }
}

json Browser::Call(const std::string& method, const json& params, bool in_page,
                   milliseconds timeout) {
  int id = next_id_++;
  json msg = {{"id", id}, {"method", method}, {"params", params}};
  if (in_page) msg["sessionId"] = session_;
  std::string text = msg.dump();
  text.push_back('\0');
  for (size_t off = 0; off < text.size();) {
    ssize_t n = write(to_, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("cannot write to chromium");
    off += static_cast<size_t>(n);
  }
  Clock::time_point deadline = Clock::now() + timeout;
  json reply;
  while (Read(&reply, deadline)) {
    if (reply.is_discarded()) continue;
    if (reply.contains("id") && reply["id"] == id) {
      if (reply.contains("error")) {
        throw std::runtime_error(method + ": " + reply["error"].dump());
      }
      return reply.value("result", json::object());
    }
    if (reply.contains("method")) Note(reply);
  }
  throw std::runtime_error(method + ": no answer within " + std::to_string(timeout.count()) +
                           " ms");
}

void Browser::OpenTab(const std::string& url) {
  Call("Target.createTarget", {{"url", url}}, false);
}

void Browser::Navigate(const std::string& url) {
  loaded_ = false;
  json r = Call("Page.navigate", {{"url", url}});
  if (r.contains("errorText")) throw std::runtime_error("navigate: " + r["errorText"].dump());
  // A navigation within the page (a new #fragment) fires no load event.
  if (r.contains("loaderId")) {
    Clock::time_point deadline = Clock::now() + std::chrono::seconds(30);
    json ev;
    while (!loaded_ && Read(&ev, deadline)) {
      if (ev.contains("method")) Note(ev);
    }
    if (!loaded_) throw std::runtime_error("navigate: no load event for " + url);
  }
}

json Browser::Eval(const std::string& expression) {
  json r = Call("Runtime.evaluate",
                {{"expression", expression}, {"returnByValue", true}, {"awaitPromise", true}});
  if (r.contains("exceptionDetails")) {
    throw std::runtime_error("in the page: " + r["exceptionDetails"].dump());
  }
  return r["result"].value("value", json());
}

bool Browser::WaitFor(const std::string& expression, milliseconds timeout) {
  Clock::time_point deadline = Clock::now() + timeout;
  const std::string test = "!!(" + expression + ")";
  for (;;) {
    json v = Eval(test);
    if (v.is_boolean() && v.get<bool>()) return true;
    if (Clock::now() >= deadline) return false;
    // Events that arrived meanwhile are read in the next Call.
    std::this_thread::sleep_for(milliseconds(50));
  }
}

void Browser::AllowDownloads(const std::string& dir) {
  Call("Browser.setDownloadBehavior", {{"behavior", "allow"}, {"downloadPath", dir}}, false);
}

void Browser::Screenshot(const std::string& path) {
  json r = Call("Page.captureScreenshot", {{"format", "png"}});
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << Base64Decode(r.at("data").get<std::string>());
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace jobctl::testing
