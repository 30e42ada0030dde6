// agentd: the per-host daemon of jobctl. main() reads the settings, owns the one libuv loop
// and the Agent, turns signals into Stop (SIGTERM, SIGINT) and Reconfigure (SIGHUP), tells
// systemd (Type=notify) when it is ready and when it stops, and maps errors to exit codes.
//
// `agentd --exec-as USER ...` is not the daemon but its exec helper (exec_as.h), run in a
// shard's child process; it is dispatched before anything else.
#include <systemd/sd-daemon.h>
#include <uv.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <vector>

#include "agent.h"
#include "base/log.h"
#include "base/version.h"
#include "exec_as.h"
#include "fence.h"
#include "settings.h"
#include "uvx/handles.h"

namespace jobctl::agentd {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 64;       // EX_USAGE
constexpr int kExitCantCreate = 73;  // EX_CANTCREAT: the state dir
constexpr int kExitConfig = 78;      // EX_CONFIG

int ExitCodeFor(const Status& s) {
  switch (s.code()) {
    case Status::Code::kOk: return kExitOk;
    case Status::Code::kInvalidArgument: return kExitConfig;
    case Status::Code::kIo: return kExitCantCreate;
    default: return kExitFailed;
  }
}

std::string ExePath() {
  char buf[4096];
  size_t size = sizeof buf;
  if (uv_exepath(buf, &size) != 0) return "/proc/self/exe";
  return std::string(buf, size);
}

// The signals main() listens to while the Agent runs; closed once the Agent has stopped.
struct Signals {
  Agent* agent = nullptr;
  Flags flags;
  std::vector<std::unique_ptr<uvx::Signal>> watched;

  void Start(uv_loop_t* loop) {
    for (int signum : {SIGTERM, SIGINT, SIGHUP}) {
      watched.push_back(std::make_unique<uvx::Signal>(loop));
      if (signum == SIGHUP) {
        watched.back()->Start(signum, [this](int) { OnHup(); });
      } else {
        watched.back()->Start(signum, [this](int sig) { OnStop(sig); });
      }
    }
  }
  void OnStop(int signum) {
    log::Info("signal received; stopping", {{"signal", signum}});
    sd_notify(0, "STOPPING=1");
    agent->Stop([this] { Close(); });
  }
  void OnHup() {
    // Only labels and slots change at run time; the rest needs a restart.
    Result<LoadedSettings> s = LoadSettings(flags, std::getenv("AGENTD_TOKEN"), ExePath());
    if (!s.ok()) {
      log::Error("reload failed; keeping the old configuration", {{"error", s.status().message()}});
      return;
    }
    agent->Reconfigure(s->agent.identity.labels, s->agent.identity.slots);
  }
  void Close() { watched.clear(); }
};

int Run(const Flags& flags) {
  Result<LoadedSettings> settings = LoadSettings(flags, std::getenv("AGENTD_TOKEN"), ExePath());
  if (!settings.ok()) {
    std::cerr << "agentd: " << settings.status().message() << "\n";
    return kExitConfig;
  }
  log::Configure({settings->log_level, log::Format::kAuto, "agentd"});

  uv_loop_t loop;
  uv_loop_init(&loop);
  SystemClock clock;
  auto agent = std::make_unique<Agent>(&loop, &clock, settings->agent);
  Signals signals;
  signals.agent = agent.get();
  signals.flags = flags;
  int rc = kExitOk;
  if (Status s = agent->Start(); !s.ok()) {
    log::Error("cannot start", {{"error", s.message()}});
    rc = ExitCodeFor(s);
    agent->Stop([] {});
  } else {
    signals.Start(&loop);
    sd_notify(0, "READY=1");
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  // The Agent's last handles close with it; one more turn runs their close callbacks.
  agent.reset();
  uv_run(&loop, UV_RUN_DEFAULT);
  if (int close_rc = uv_loop_close(&loop); close_rc != 0) {
    log::Warn("event loop closed with handles still open", {{"rc", close_rc}});
  }
  return rc;
}

int Main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--exec-as") return ExecAsMain(argc, argv);
  if (argc > 1 && std::string(argv[1]) == "--fence") return FenceMain(argc, argv);

  CLI::App app{
      "agentd: the jobctl agent. Runs the shards the coordinator assigns to this host "
      "as subprocesses, streams their output and reports their results."};
  app.name("agentd");
  app.set_version_flag("--version", std::string("agentd ") + kVersion);
  Flags flags;
  app.add_option("--config", flags.config,
                 "Config file (default /etc/agentd/agentd.toml, if it exists)");
  app.add_option("--coordinator", flags.coordinators,
                 "Coordinator URL; repeat for failover, tried in order (default "
                 "http://127.0.0.1:7070)");
  app.add_option("--token-file", flags.token_file,
                 "Read the agent token from this file (else "
                 "AGENTD_TOKEN, else token_file in the config)");
  app.add_option("--name", flags.name, "Agent name (default: the host name)");
  app.add_option("--labels", flags.labels, "Labels, k=v[,k=v...]");
  app.add_option("--slots", flags.slots, "Shards run at once (default: the number of CPUs)")
      ->check(CLI::Range(1, 4096));
  app.add_option("--state-dir", flags.state_dir,
                 "Spool and pending results (default /var/lib/agentd)");
  app.add_option("--log-level", flags.log_level, "debug, info, warn or error");
  app.add_option("--event-log", flags.event_log,
                 "Append every claim, start, kill, exit and acknowledgement to FILE as JSON lines");
  bool foreground = true;
  app.add_flag("--foreground", foreground,
               "Stay in the foreground (always; for systemd and tests)");
  app.footer(
      "Signals: SIGTERM/SIGINT drain and exit 0 (a second one kills the running shards at once);\n"
      "SIGHUP reloads labels and slots.\n"
      "Exit status: 0 stopped, 64 bad usage, 73 state dir unusable, 78 bad configuration.\n"
      "See agentd(8) and agentd.toml(5).");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  flags.labels_set = app.count("--labels") > 0;
  return Run(flags);
}

}  // namespace
}  // namespace jobctl::agentd

int main(int argc, char** argv) {
  try {
    return jobctl::agentd::Main(argc, argv);
  } catch (const std::exception& e) {
    jobctl::log::Error("fatal", {{"error", e.what()}});
    return 70;  // EX_SOFTWARE
  }
}
