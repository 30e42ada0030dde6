#include "testlib/cluster.h"

#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "base/base64.h"

extern char** environ;

namespace jobctl::testing {

int64_t UnixMs(const std::string& rfc3339) {
  if (rfc3339.size() < 20) return -1;
  std::tm tm{};
  if (!strptime(rfc3339.c_str(), "%Y-%m-%dT%H:%M:%S", &tm)) return -1;
  int64_t ms = static_cast<int64_t>(timegm(&tm)) * 1000;
  if (rfc3339[19] == '.') ms += std::atoi(rfc3339.substr(20, 3).c_str());
  return ms;
}

double MetricValue(const std::string& page, const std::string& name) {
  size_t at = page.find("\n" + name + " ");
  return at == std::string::npos ? -1.0 : std::stod(page.substr(at + name.size() + 2));
}

Daemon::Daemon(std::vector<std::string> argv, std::string log_path,
               std::map<std::string, std::string> env)
    : log_path_(std::move(log_path)) {
  int fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot open " + log_path_);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fd, 1);
  posix_spawn_file_actions_adddup2(&fa, fd, 2);
  std::vector<std::string> envs;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    std::string key = kv.substr(0, kv.find('='));
    if (!env.count(key)) envs.push_back(kv);
  }
  for (const auto& [k, v] : env) envs.push_back(k + "=" + v);
  std::vector<char*> args, envp;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  for (std::string& e : envs) envp.push_back(e.data());
  envp.push_back(nullptr);
  int rc = posix_spawn(&pid_, args[0], &fa, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(fd);
  if (rc != 0) throw std::runtime_error("cannot start " + argv[0]);
}

Daemon::~Daemon() {
  if (!reaped_ && pid_ > 0) {
    ::kill(pid_, SIGCONT);
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

void Daemon::Signal(int sig) {
  if (!reaped_) ::kill(pid_, sig);
}

bool Daemon::running() {
  if (reaped_) return false;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    reaped_ = true;
    status_ = status;
    return false;
  }
  return true;
}

int Daemon::Wait(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (running()) {
    if (std::chrono::steady_clock::now() > deadline) return -1000;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFEXITED(status_)) return WEXITSTATUS(status_);
  if (WIFSIGNALED(status_)) return -WTERMSIG(status_);
  return -1;
}

bool Daemon::WaitForLog(const std::string& text, std::chrono::milliseconds timeout) {
  return Coordinator::Eventually(
      [&] { return ReadFile(log_path_).find(text) != std::string::npos; }, timeout);
}

Coordinator::Coordinator(const TempDir& dir, const std::string& config, std::string host)
    : dir_(dir), host_(std::move(host)) {
  data_dir_ = dir.path() + "/data";
  config_path_ = dir.Write("coordinator.toml", config);
}

Coordinator::~Coordinator() {
  if (daemon_) {
    daemon_->Signal(SIGCONT);
    daemon_->Signal(SIGTERM);
    daemon_->Wait(std::chrono::seconds(10));
  }
}

void Coordinator::Start() {
  std::string log = dir_.path() + "/coordinator.log";
  std::string marker = "jobctl serve: listening on " + host_ + ":";
  size_t seen = ReadFile(log).size();
  Spawn();
  bool up = Eventually(
      [&] {
        std::string text = ReadFile(log);
        size_t at = text.find(marker, seen);
        if (at == std::string::npos) return false;
        port_ = std::stoi(text.substr(at + marker.size()));
        return true;
      },
      std::chrono::seconds(20));
  if (!up) throw std::runtime_error("coordinator did not start:\n" + ReadFile(log));
}

void Coordinator::Spawn() {
  std::string log = dir_.path() + "/coordinator.log";
  ++starts_;
  std::string listen = host_ + ":" + std::to_string(port_);
  std::vector<std::string> argv = launch_.prefix;
  for (const char* a : {JOBCTL_BIN, "serve", "--config"}) argv.push_back(a);
  for (const std::string& a :
       {config_path_, std::string("--listen"), listen, std::string("--data"), data_dir_}) {
    argv.push_back(a);
  }
  daemon_ = std::make_unique<Daemon>(argv, log, launch_.env);
}

void Coordinator::Kill9() {
  daemon_->Signal(SIGKILL);
  daemon_->Wait(std::chrono::seconds(10));
}

void Coordinator::Stop() {
  daemon_->Signal(SIGTERM);
  int rc = daemon_->Wait(std::chrono::seconds(20));
  if (rc != 0) throw std::runtime_error("coordinator exited " + std::to_string(rc) + "\n" + Logs());
}

std::string Coordinator::admin_token() const {
  std::string t = ReadFile(data_dir_ + "/admin.token");
  return t.substr(0, t.find('\n'));
}

std::string Coordinator::agent_token() const {
  std::string t = ReadFile(data_dir_ + "/agent.token");
  return t.substr(0, t.find('\n'));
}

http::HttpResponse Coordinator::Enrol(const std::string& name,
                                      const std::map<std::string, std::string>& labels,
                                      const std::string& token) const {
  http::BlockingClient client(url(), token.empty() ? agent_token() : token);
  http::RequestOptions o;
  o.method = "POST";
  o.body = nlohmann::json{{"agent", name}, {"labels", labels}}.dump();
  Result<http::HttpResponse> r = client.Request("/v1/agent/enrol", o);
  if (!r.ok()) throw std::runtime_error("enrol " + name + ": " + r.status().ToString());
  return *r;
}

std::string Coordinator::AgentCredential(const std::string& name) const {
  std::lock_guard<std::mutex> lock(agents_mu_);
  if (auto it = credentials_.find(name); it != credentials_.end()) return it->second;
  if (auto it = state_dirs_.find(name); it != state_dirs_.end()) {
    std::string t = ReadFile(it->second + "/credential");
    t = t.substr(0, t.find('\n'));
    if (!t.empty()) return t;
  }
  http::HttpResponse r = Enrol(name);
  if (r.status != 201)
    throw std::runtime_error("enrol " + name + ": HTTP " + std::to_string(r.status) + " " + r.body);
  std::string token = nlohmann::json::parse(r.body)["token"];
  credentials_[name] = token;
  return token;
}

void Coordinator::NoteAgentStateDir(const std::string& name, const std::string& state_dir) const {
  std::lock_guard<std::mutex> lock(agents_mu_);
  state_dirs_[name] = state_dir;
}

std::string Coordinator::Logs() const { return ReadFile(dir_.path() + "/coordinator.log"); }

http::HttpResponse Coordinator::Request(const std::string& method, const std::string& path,
                                        const std::string& body, const std::string& token) {
  std::string t = token == "admin" ? admin_token() : token == "agent" ? agent_token() : token;
  http::BlockingClient client(url(), t);
  http::RequestOptions o;
  o.method = method;
  o.body = body;
  Result<http::HttpResponse> r = client.Request(path, o);
  if (!r.ok()) throw std::runtime_error(r.status().ToString());
  return *r;
}

nlohmann::json Coordinator::GetJson(const std::string& path) {
  http::HttpResponse r = Request("GET", path);
  if (r.status != 200)
    throw std::runtime_error("GET " + path + ": " + std::to_string(r.status) + " " + r.body);
  return nlohmann::json::parse(r.body);
}

nlohmann::json Coordinator::PostJson(const std::string& path, const nlohmann::json& body) {
  http::HttpResponse r = Request("POST", path, body.dump());
  if (r.status / 100 != 2) {
    throw std::runtime_error("POST " + path + ": " + std::to_string(r.status) + " " + r.body);
  }
  return nlohmann::json::parse(r.body);
}

nlohmann::json Coordinator::Apply(const std::string& toml) {
  return PostJson("/v1/jobfile", {{"text", toml}, {"base_revision", -1}});
}

nlohmann::json Coordinator::Runs(const std::string& job, int limit) {
  return GetJson("/v1/runs?job=" + job + "&limit=" + std::to_string(limit));
}

nlohmann::json Coordinator::WaitRun(int64_t id, std::chrono::milliseconds timeout) {
  nlohmann::json run;
  Eventually(
      [&] {
        run = GetJson("/v1/runs/" + std::to_string(id) + "/wait?timeout_ms=1000");
        return run.value("done", false) || !run["finished_at"].get<std::string>().empty();
      },
      timeout);
  return run;
}

std::string Coordinator::Output(int64_t run, int shard, const std::string& stream, int attempt) {
  std::string out;
  int64_t after = 0;
  while (true) {
    // Markers have no stream filter of their own: read every chunk and keep them.
    nlohmann::json r = GetJson(
        "/v1/runs/" + std::to_string(run) + "/logs?after=" + std::to_string(after) +
        "&shard=" + std::to_string(shard) + (stream == "marker" ? "" : "&stream=" + stream));
    if (r["chunks"].empty()) break;
    for (const auto& c : r["chunks"]) {
      if (c["stream"] == stream && (attempt == 0 || c["attempt"] == attempt)) {
        out += Base64Decode(c["data"].get<std::string>());
      }
    }
    after = r["next"];
  }
  return out;
}

double Coordinator::Metric(const std::string& name) {
  return MetricValue(Request("GET", "/metrics").body, name);
}

bool Coordinator::Eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (pred()) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

AgentProcess::AgentProcess(const Coordinator& c, const TempDir& dir, std::string name,
                           std::vector<std::string> extra_args, const std::string& config,
                           const Launch& launch, const std::string& token)
    : name_(std::move(name)) {
  state_dir_ = dir.path() + "/agent-" + name_;
  c.NoteAgentStateDir(name_, state_dir_);
  // The join token: agentd enrols with it on its first start.
  std::string token_file =
      dir.Write("agent-" + name_ + ".token", (token.empty() ? c.agent_token() : token) + "\n");
  // agentd refuses to run jobs as root unless allowed; tests run jobs as whoever runs them.
  std::string text = config;
  if (text.find("allow_run_as") == std::string::npos) {
    struct passwd* pw = getpwuid(geteuid());
    text += "allow_run_as = [\"" + std::string(pw ? pw->pw_name : "root") + "\"]\n";
  }
  std::string config_file = dir.Write("agent-" + name_ + ".toml", text);
  std::vector<std::string> argv = launch.prefix;
  for (const std::string& a :
       {std::string(AGENTD_BIN), std::string("--config"), config_file, std::string("--coordinator"),
        c.url(), std::string("--token-file"), token_file, std::string("--name"), name_,
        std::string("--state-dir"), state_dir_}) {
    argv.push_back(a);
  }
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  daemon_ = std::make_unique<Daemon>(argv, dir.path() + "/agent-" + name_ + ".log", launch.env);
}

std::string AgentProcess::Logs() const { return ReadFile(daemon_->log_path()); }

TestAgent::TestAgent(const Coordinator& c, std::string name,
                     std::map<std::string, std::string> labels)
    : TestAgent(c, name, std::move(labels), c.AgentCredential(name)) {}

TestAgent::TestAgent(const Coordinator& c, std::string name,
                     std::map<std::string, std::string> labels, std::string token)
    : name_(std::move(name)),
      labels_(std::move(labels)),
      url_(c.url()),
      token_(std::move(token)),
      http_(url_, token_) {}

http::HttpResponse TestAgent::ClaimRaw(int free, int wait_ms) {
  http::RequestOptions o;
  o.method = "POST";
  o.body = nlohmann::json{{"agent", name_},       {"labels", labels_}, {"slots", std::max(free, 1)},
                          {"free", free},         {"version", "test"}, {"wait_ms", wait_ms},
                          {"features", features_}}
               .dump();
  o.timeout = std::chrono::milliseconds(wait_ms + 30'000);
  Result<http::HttpResponse> r = http_.Request("/v1/agent/claim", o);
  if (!r.ok()) throw std::runtime_error("claim: " + r.status().ToString());
  return *r;
}

std::vector<nlohmann::json> TestAgent::Claim(int free, int wait_ms) {
  http::HttpResponse r = ClaimRaw(free, wait_ms);
  if (r.status != 200) throw std::runtime_error("claim: " + r.body);
  std::vector<nlohmann::json> out;
  nlohmann::json body = nlohmann::json::parse(r.body);
  for (auto& a : body["assignments"]) out.push_back(a);
  return out;
}

std::vector<nlohmann::json> TestAgent::ClaimUpTo(size_t n, int wait_ms) {
  std::vector<nlohmann::json> got;
  while (got.size() < n) {
    std::vector<nlohmann::json> more = Claim(static_cast<int>(n - got.size()), wait_ms);
    if (more.empty()) break;
    got.insert(got.end(), more.begin(), more.end());
  }
  return got;
}

http::HttpResponse TestAgent::Heartbeat(const std::vector<nlohmann::json>& leases) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& a : leases)
    list.push_back({{"run", a["run"]}, {"shard", a["shard"]}, {"token", a["token"]}});
  http::RequestOptions o;
  o.method = "POST";
  o.body = nlohmann::json{{"agent", name_}, {"free", 1}, {"leases", list}}.dump();
  Result<http::HttpResponse> r = http_.Request("/v1/agent/heartbeat", o);
  if (!r.ok()) throw std::runtime_error(r.status().ToString());
  return *r;
}

http::HttpResponse TestAgent::Log(const nlohmann::json& a, int64_t seq, const std::string& stream,
                                  const std::string& data, int64_t token_override) {
  int64_t token = token_override >= 0 ? token_override : a["token"].get<int64_t>();
  std::string path = "/v1/agent/logs?run=" + std::to_string(a["run"].get<int64_t>()) +
                     "&shard=" + std::to_string(a["shard"].get<int>()) +
                     "&attempt=" + std::to_string(a["attempt"].get<int>()) +
                     "&seq=" + std::to_string(seq) + "&stream=" + stream +
                     "&token=" + std::to_string(token);
  http::RequestOptions o;
  o.method = "POST";
  o.body = data;
  o.content_type = "application/octet-stream";
  Result<http::HttpResponse> r = http_.Request(path, o);
  if (!r.ok()) throw std::runtime_error(r.status().ToString());
  return *r;
}

nlohmann::json TestAgent::ResultBody(const nlohmann::json& a, int exit_code,
                                     const std::string& outcome, int64_t token_override) const {
  return {{"agent", name_},
          {"run", a["run"]},
          {"shard", a["shard"]},
          {"attempt", a["attempt"]},
          {"token", token_override >= 0 ? token_override : a["token"].get<int64_t>()},
          {"outcome", outcome},
          {"exit_code", exit_code}};
}

http::HttpResponse TestAgent::Finish(const nlohmann::json& a, int exit_code,
                                     const std::string& outcome, int64_t token_override) {
  http::RequestOptions o;
  o.method = "POST";
  o.body = ResultBody(a, exit_code, outcome, token_override).dump();
  Result<http::HttpResponse> r = http_.Request("/v1/agent/result", o);
  if (!r.ok()) throw std::runtime_error(r.status().ToString());
  return *r;
}

http::HttpResponse TestAgent::PostResult(const nlohmann::json& body) {
  http::RequestOptions o;
  o.method = "POST";
  o.body = body.dump();
  Result<http::HttpResponse> r = http_.Request("/v1/agent/result", o);
  if (!r.ok()) throw std::runtime_error(r.status().ToString());
  return *r;
}

http::HttpResponse TestAgent::FinishAll(const std::vector<nlohmann::json>& results) {
  http::RequestOptions o;
  o.method = "POST";
  o.body = nlohmann::json{{"results", results}}.dump();
  Result<http::HttpResponse> r = http_.Request("/v1/agent/results", o);
  if (!r.ok()) throw std::runtime_error(r.status().ToString());
  return *r;
}

}  // namespace jobctl::testing
