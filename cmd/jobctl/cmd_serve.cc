// jobctl serve: runs the coordinator in the foreground on one libuv loop until SIGTERM or
// SIGINT, then stops accepting, finishes what is in flight and exits 0. SIGHUP re-reads the
// TLS certificate and key.
#include <uv.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <vector>

#include "base/log.h"
#include "base/version.h"
#include "cli.h"
#include "coordinator/coordinator.h"
#include "exit_codes.h"
#include "http/tls.h"
#include "uvx/handles.h"

namespace jobctl::cli {
namespace {

struct ServeOptions {
  std::string config;
  std::string listen;
  std::string data;
  std::string store;
  std::string log_level;
  std::string event_log;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
};

bool IsLoopback(const std::string& host) {
  return host.rfind("127.", 0) == 0 || host == "::1" || host == "localhost";
}

std::string FirstOf(const std::string& flag, const char* env, const std::string& file_value) {
  if (!flag.empty()) return flag;
  if (const char* v = std::getenv(env); v != nullptr && *v != '\0') return v;
  return file_value;
}

int RunServe(const ServeOptions& opt) {
  bool explicit_config = !opt.config.empty();
  std::string path = explicit_config ? opt.config : "/etc/jobctl/coordinator.toml";
  Result<CoordinatorConfig> config = LoadCoordinatorConfig(path, explicit_config);
  if (!config.ok()) return Fail("serve", "", config.status(), kExitConfig);
  config->listen = FirstOf(opt.listen, "JOBCTL_LISTEN", config->listen);
  config->data_dir = FirstOf(opt.data, "JOBCTL_DATA_DIR", config->data_dir);
  config->store = FirstOf(opt.store, "JOBCTL_STORE", config->store);
  if (Status s = CheckStoreUrl(config->store); !s.ok())
    return Fail("serve", "--store", s, kExitConfig);
  config->log_level = FirstOf(opt.log_level, "JOBCTL_LOG_LEVEL", config->log_level);
  if (!opt.event_log.empty()) config->event_log = opt.event_log;
  if (!opt.tls_cert.empty()) config->tls_cert = opt.tls_cert;
  if (!opt.tls_key.empty()) config->tls_key = opt.tls_key;
  if (!opt.tls_client_ca.empty()) config->tls_client_ca = opt.tls_client_ca;
  if (Status s = CheckTlsFiles(*config); !s.ok())
    return Fail("serve", "--tls-cert", s, kExitConfig);
  log::Configure({config->log_level == "debug" ? log::Level::kDebug : log::Level::kInfo,
                  log::Format::kAuto, "jobctl-serve"});

  std::string host;
  int port = 0;
  if (Status s = coordinator::SplitHostPort(config->listen, &host, &port); !s.ok()) {
    return Fail("serve", "--listen", s, kExitConfig);
  }
  if (!IsLoopback(host) && config->tls_cert.empty()) {
    log::Warn(
        "listening on a non-loopback address without TLS: tokens and job output cross "
        "the network in clear text; set tls_cert and tls_key",
        {{"listen", config->listen}});
  }
  uv_loop_t loop;
  uv_loop_init(&loop);
  SystemClock clock;
  auto coord = std::make_unique<coordinator::Coordinator>(&loop, &clock, *config);
  if (Status s = coord->Start(); !s.ok()) {
    // Another coordinator on the data directory is a conflict (75): it may be gone by the
    // next try, unlike a bad setting (78) or a directory that cannot be opened (69).
    int rc = Fail("serve", config->data_dir, s,
                  s.code() == Status::Code::kInvalidArgument ? kExitConfig
                  : s.code() == Status::Code::kConflict      ? kExitTempFail
                                                             : kExitUnavailable);
    // Close whatever the partial start opened so the loop can be closed.
    coord->Stop([] {});
    uv_run(&loop, UV_RUN_DEFAULT);
    coord.reset();
    uv_loop_close(&loop);
    return rc;
  }
  if (!coord->bootstrap_note().empty()) {
    log::Info("first start: tokens created", {{"note", coord->bootstrap_note()}});
  }
  // The one line scripts and tests wait for: the address actually bound.
  std::cout << "jobctl serve: listening on "
            << (host.find(':') != std::string::npos ? "[" + host + "]" : host) << ":"
            << coord->port() << std::endl;
  log::Info(
      "coordinator started",
      {{"listen", host + ":" + std::to_string(coord->port())},
       {"data", config->data_dir},
       {"store", config->store.empty() ? std::string("embedded") : RedactStoreUrl(config->store)},
       {"version", kVersion},
       {"tls", !coord->tls()                   ? std::string("off")
               : config->tls_client_ca.empty() ? std::string("on")
                                               : std::string("mtls")}});
  if (coord->tls()) {
    log::Info(
        "TLS certificate loaded",
        {{"cert", config->tls_cert}, {"sha256", http::CertificateFingerprint(config->tls_cert)}});
  }

  // The signals are watched until the coordinator has stopped.
  std::vector<std::unique_ptr<uvx::Signal>> signals;
  bool stopping = false;
  const std::string tls_cert = config->tls_cert;
  auto on_stop = [&](int signum) {
    if (stopping) return;
    stopping = true;
    log::Info("stopping", {{"signal", signum}});
    coord->Stop([&signals] { signals.clear(); });
  };
  // A certificate renewed in place (certbot, cert-manager) takes effect for new connections;
  // a broken new pair is logged and the old one kept.
  auto on_hup = [&](int) {
    if (stopping || !coord->tls()) return;
    if (Status s = coord->ReloadTls(); !s.ok()) {
      log::Error("TLS reload failed; keeping the previous certificate", {{"error", s.message()}});
      return;
    }
    log::Info("TLS certificate reloaded",
              {{"cert", tls_cert}, {"sha256", http::CertificateFingerprint(tls_cert)}});
  };
  // Another coordinator may serve the shared database now: stop, and let the service manager
  // start this one again, to wait as a standby.
  int exit_code = kExitOk;
  coord->on_lost_store = [&](const std::string& why) {
    log::Error("this coordinator " + why + "; stopping");
    exit_code = kExitTempFail;
    on_stop(0);
  };
  for (int signum : {SIGTERM, SIGINT, SIGHUP}) {
    signals.push_back(std::make_unique<uvx::Signal>(&loop));
    if (signum == SIGHUP) {
      signals.back()->Start(signum, on_hup);
    } else {
      signals.back()->Start(signum, on_stop);
    }
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  signals.clear();
  coord.reset();
  uv_run(&loop, UV_RUN_DEFAULT);  // frees the handles closed above
  int rc = uv_loop_close(&loop);
  if (rc != 0) log::Warn("event loop closed with handles still open", {{"rc", rc}});
  log::Info("coordinator stopped");
  return exit_code;
}

}  // namespace

void RegisterServe(CLI::App& app, GlobalOptions& /*g*/, int* rc) {
  auto opt = std::make_shared<ServeOptions>();
  auto* sub = app.add_subcommand("serve", "Run the coordinator (store, fires, leases, API)");
  sub->add_option("--config", opt->config,
                  "Config file (default /etc/jobctl/coordinator.toml, if it exists)");
  sub->add_option("--listen", opt->listen,
                  "Address to serve on, HOST:PORT; port 0 picks a free one (env JOBCTL_LISTEN, "
                  "default 127.0.0.1:7070)");
  sub->add_option("--data", opt->data,
                  "Data directory (env JOBCTL_DATA_DIR, default /var/lib/jobctl)");
  sub->add_option("--store", opt->store,
                  "A PostgreSQL database instead of the embedded store, as a postgresql:// URL "
                  "(env JOBCTL_STORE, key store); several coordinators may share one");
  sub->add_option("--log-level", opt->log_level, "info or debug (env JOBCTL_LOG_LEVEL)");
  sub->add_option("--tls-cert", opt->tls_cert,
                  "Serve HTTPS with this certificate (PEM, with intermediates; key tls_cert); "
                  "re-read on SIGHUP");
  sub->add_option("--tls-key", opt->tls_key, "Private key of --tls-cert (PEM; key tls_key)");
  sub->add_option("--tls-client-ca", opt->tls_client_ca,
                  "Require client certificates signed by this CA (PEM; key tls_client_ca)");
  sub->add_option("--event-log", opt->event_log,
                  "Append every fire, lease and accepted result to FILE as JSON lines (key "
                  "event_log; off by default)");
  sub->footer(
      "On first start with an empty data directory, serve writes an admin token and an agent\n"
      "join token to DATA/admin.token and DATA/agent.token (mode 0600).\n"
      "Examples:\n"
      "  jobctl serve --data /var/lib/jobctl\n"
      "  jobctl serve --listen 127.0.0.1:0 --data /tmp/jc   # prints the port it got\n"
      "  jobctl serve --store 'postgresql://jobctl@db1/jobctl?passfile=/etc/jobctl/pgpass'\n"
      "  jobctl serve --listen 0.0.0.0:7070 --tls-cert coordinator.crt --tls-key coordinator.key\n"
      "One data directory serves one coordinator: a second serve on it is refused, naming the\n"
      "pid of the first (DATA/serve.lock). With --store, several coordinators (each with its\n"
      "own data directory) may run on one database: one holds it and serves; the others are\n"
      "standbys that answer reads (jobs, runs, output, agents, metrics) from the database,\n"
      "refuse the rest with 503 \"standby\" (jobctl and agentd move on to their next\n"
      "--coordinator URL), and take over when the holder's session ends or it stops renewing.\n"
      "Exit status: 0 after SIGTERM/SIGINT, 78 bad configuration, 69 cannot start, 75 the data\n"
      "directory is in use by another jobctl serve, or this coordinator lost its hold on a\n"
      "shared database (another may serve it) or could not read its state back from it.");
  sub->callback([opt, rc] { *rc = RunServe(*opt); });
}

}  // namespace jobctl::cli
