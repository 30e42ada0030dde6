// Cluster starts the real binaries for integration tests: `jobctl serve` on 127.0.0.1 with
// port 0 and its own temp data directory (restartable on the same directory, killable with
// SIGKILL or SIGSTOP), and agentd processes pointed at it. Each process's output goes to a
// file in the temp directory and is printed when a test fails. Also a small synchronous
// test agent that speaks the agent protocol by hand, for coordinator-only tests.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "httpclient/blocking_client.h"
#include "testlib/subprocess.h"

namespace jobctl::testing {

// How a daemon is started beyond its own flags: a command put in front of it (`ip netns exec
// NS`, `prlimit --nproc=N`) and environment additions (LD_PRELOAD for libfaketime).
struct Launch {
  std::vector<std::string> prefix;
  std::map<std::string, std::string> env;
};

// "2026-11-22T10:00:00Z" or "...:00.250Z" (the coordinator's UTC times) as Unix ms; -1 for
// anything else, "" included.
int64_t UnixMs(const std::string& rfc3339);

// The value of an unlabeled metric in a /metrics page; -1 when it is not there.
double MetricValue(const std::string& page, const std::string& name);

// A child process with its output in a file; killed (SIGKILL) when destroyed.
class Daemon {
 public:
  Daemon(std::vector<std::string> argv, std::string log_path,
         std::map<std::string, std::string> env = {});
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;
  pid_t pid() const { return pid_; }
  void Signal(int sig);
  // Waits for the process to exit; returns its exit status (-signal if killed), or -1000 on
  // timeout.
  int Wait(std::chrono::milliseconds timeout);
  bool running();
  const std::string& log_path() const { return log_path_; }
  // Waits until the log file contains `text`; false at the deadline.
  bool WaitForLog(const std::string& text, std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  std::string log_path_;
  int status_ = 0;
  bool reaped_ = false;
};

class Coordinator {
 public:
  // `config` is written to coordinator.toml in the data directory's parent (may be empty).
  // `host` is the address it listens on (an address of this machine).
  explicit Coordinator(const TempDir& dir, const std::string& config = "",
                       std::string host = "127.0.0.1");
  ~Coordinator();
  void Start();  // (re)starts on the same data dir; waits for the port
  // Starts it without waiting for it to listen (a standby on a shared database may wait
  // long before it does); the port must be set (set_port).
  void Spawn();
  void set_launch(Launch launch) { launch_ = std::move(launch); }  // for the next Start()
  void set_port(int port) { port_ = port; }  // listen on this port (0: any free one)
  void Kill9();                              // SIGKILL, reaped
  void Stop();                               // SIGTERM, waits for exit 0
  Daemon& process() { return *daemon_; }
  int port() const { return port_; }
  std::string url() const { return "http://" + host_ + ":" + std::to_string(port_); }
  std::string admin_token() const;
  // The bootstrap join token (agent.token): it only enrols agents (POST /v1/agent/enrol).
  std::string agent_token() const;
  // POST /v1/agent/enrol as `name` with `token` (the join token when empty): the raw answer.
  http::HttpResponse Enrol(const std::string& name,
                           const std::map<std::string, std::string>& labels = {},
                           const std::string& token = "") const;
  // A credential of agent `name`: the one a TestAgent of this coordinator already enrolled,
  // else the one its agentd keeps in its state dir, else a new one enrolled with the join
  // token. Throws if none can be had.
  std::string AgentCredential(const std::string& name) const;
  // AgentProcess says where its agentd keeps its credential.
  void NoteAgentStateDir(const std::string& name, const std::string& state_dir) const;
  const std::string& data_dir() const { return data_dir_; }
  std::string Logs() const;  // everything the coordinator printed, all starts

  // Requests with the admin token; throws on transport errors (the test fails).
  http::HttpResponse Request(const std::string& method, const std::string& path,
                             const std::string& body = "", const std::string& token = "admin");
  nlohmann::json GetJson(const std::string& path);
  nlohmann::json PostJson(const std::string& path, const nlohmann::json& body);
  // Applies a job file (base_revision -1); the response must be 200.
  nlohmann::json Apply(const std::string& toml);
  nlohmann::json Runs(const std::string& job, int limit = 1000);
  // The run once it finished (long-polls its /wait), or as it is at the deadline.
  nlohmann::json WaitRun(int64_t id, std::chrono::milliseconds timeout);
  // All stored output of one shard of a run and one stream ("stdout", "stderr" or "marker"),
  // in order; attempt 0 means every attempt.
  std::string Output(int64_t run, int shard, const std::string& stream, int attempt = 0);
  // The value of an unlabeled metric from /metrics; -1 when it is not there.
  double Metric(const std::string& name);
  // Polls `pred` every 20 ms until true or the deadline.
  static bool Eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout);

 private:
  const TempDir& dir_;
  std::string host_;
  Launch launch_;
  std::string data_dir_;
  std::string config_path_;
  int port_ = 0;
  int starts_ = 0;
  std::unique_ptr<Daemon> daemon_;
  mutable std::mutex agents_mu_;
  mutable std::map<std::string, std::string> credentials_;  // by agent name
  mutable std::map<std::string, std::string> state_dirs_;   // agentd's, by agent name
};

// A real agentd pointed at the coordinator, with its own state directory.
class AgentProcess {
 public:
  // `config` is the agentd.toml text (empty: an empty file, flags only). agentd gets the
  // join token and enrols at its first start, unless `token` (an agent token) is given.
  AgentProcess(const Coordinator& c, const TempDir& dir, std::string name,
               std::vector<std::string> extra_args = {}, const std::string& config = "",
               const Launch& launch = {}, const std::string& token = "");
  Daemon& process() { return *daemon_; }
  const std::string& name() const { return name_; }
  const std::string& state_dir() const { return state_dir_; }
  std::string Logs() const;

 private:
  std::string name_;
  std::string state_dir_;
  std::unique_ptr<Daemon> daemon_;
};

// Speaks the agent protocol synchronously: claim, heartbeat, logs, result. It speaks as agent
// `name` with that agent's credential (Coordinator::AgentCredential: enrolled through the
// join token the first time), or with the token given.
class TestAgent {
 public:
  TestAgent(const Coordinator& c, std::string name, std::map<std::string, std::string> labels = {});
  TestAgent(const Coordinator& c, std::string name, std::map<std::string, std::string> labels,
            std::string token);
  // The raw answer to one claim (for tests of refusals).
  http::HttpResponse ClaimRaw(int free, int wait_ms);
  const std::string& token() const { return token_; }
  // One claim with the given wait; the assignments (possibly none).
  std::vector<nlohmann::json> Claim(int free, int wait_ms);
  // Claims until `n` shards are granted; fewer when a claim brings nothing within `wait_ms`.
  std::vector<nlohmann::json> ClaimUpTo(size_t n, int wait_ms = 5000);
  http::HttpResponse Heartbeat(const std::vector<nlohmann::json>& leases);
  http::HttpResponse Log(const nlohmann::json& a, int64_t seq, const std::string& stream,
                         const std::string& data, int64_t token_override = -1);
  http::HttpResponse Finish(const nlohmann::json& a, int exit_code,
                            const std::string& outcome = "exited", int64_t token_override = -1);
  // The body Finish sends, for a batch: POST /v1/agent/results {"results": [ResultBody, ...]}.
  nlohmann::json ResultBody(const nlohmann::json& a, int exit_code,
                            const std::string& outcome = "exited",
                            int64_t token_override = -1) const;
  http::HttpResponse FinishAll(const std::vector<nlohmann::json>& results);
  // POST /v1/agent/result with this body as it is (ResultBody plus fields of a test's own).
  http::HttpResponse PostResult(const nlohmann::json& body);
  const std::string& name() const { return name_; }
  // What its claims say it can do beyond the base protocol (default: run flow steps, read
  // limits).
  void set_features(std::vector<std::string> f) { features_ = std::move(f); }

 private:
  std::vector<std::string> features_{"step_output", "limits"};
  std::string name_;
  std::map<std::string, std::string> labels_;
  std::string url_;
  std::string token_;
  http::BlockingClient http_;
};

}  // namespace jobctl::testing
