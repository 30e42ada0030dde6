// Coordinator is the server behind `jobctl serve`: it opens the store, rebuilds its memory
// from it (jobs into the fire loop, open runs, leases with a fresh TTL, agents, tokens),
// creates the bootstrap tokens on first start, and serves the API on one libuv loop.
// Stop() stops accepting, answers parked long-polls, commits, and closes every handle.
// Loop thread only; owned by main().
#pragma once

#include <uv.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/clock.h"
#include "base/lock_file.h"
#include "config/coordinator_config.h"
#include "coordinator/api.h"
#include "coordinator/applier.h"
#include "coordinator/auth.h"
#include "coordinator/context.h"
#include "coordinator/dispatcher.h"
#include "coordinator/flow_book.h"
#include "coordinator/job_index.h"
#include "coordinator/log_hub.h"
#include "coordinator/metrics.h"
#include "coordinator/notifier.h"
#include "coordinator/pruner.h"
#include "coordinator/run_book.h"
#include "coordinator/scheduler.h"
#include "http/server.h"
#include "http/tls.h"
#include "uvx/handles.h"

namespace jobctl::coordinator {

class Coordinator {
 public:
  Coordinator(uv_loop_t* loop, const Clock* clock, CoordinatorConfig config);
  ~Coordinator();
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // Opens the data directory and the store, loads state, and listens. Errors name the path
  // or address; kConflict when another coordinator serves the data directory.
  Status Start();
  void Stop(std::function<void()> done);
  int port() const { return server_ ? server_->port() : 0; }
  bool tls() const { return tls_ != nullptr; }
  // SIGHUP: reads tls_cert and tls_key (and tls_client_ca) again; new connections get the new
  // pair. On error the old pair stays in use and the error is returned. Ok without TLS.
  Status ReloadTls();
  const std::string& bootstrap_note() const { return bootstrap_note_; }
  // Called once when this coordinator must stop serving a shared store: a write or the hold
  // check found it no longer holds it (store::Store::held; another coordinator may serve it
  // now), it cannot reload its state from it, or it could not take it over. `why` completes
  // "this coordinator ...".
  std::function<void(const std::string& why)> on_lost_store;

 private:
  Status LockDataDir();
  Status OpenStores();
  Status Bootstrap();
  // Rebuilds memory from the store; `quiet`: a standby's view, without events.
  Status Load(bool quiet = false);
  void ClearMemory();
  void Reload();
  void LostStore(const std::string& why);
  // Serves the store as its holder: bootstrap tokens, memory, fires, leases.
  Status Lead();
  // Another coordinator holds the shared store: answers reads from it (Api's standby), keeps
  // a view of it current, and tries the hold until it gets it (then Lead).
  void StandBy();
  void RefreshView();
  // The dead-man's switches: each job overdue, or no longer, goes to the Notifier.
  void CheckOverdue();
  // Whom a job or a flow tells: its notify keys, from its definition.
  Result<NotifyPolicy> NotifyOf(JobEntry& job);

  Context ctx_;
  Metrics metrics_;
  EventLog events_;
  EventLog no_events_;  // disabled: what a standby's view is loaded with (RefreshView)
  // <data>/serve.lock, held from before the stores open until after they close: one data
  // directory serves one coordinator.
  std::optional<LockFile> data_lock_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<store::LogStore> logs_;
  std::unique_ptr<WriteBatch> batch_;
  // A shared store: asks every second whether this coordinator still holds it.
  std::unique_ptr<uvx::Timer> hold_timer_;
  // A standby: tries the hold and refreshes its view.
  std::unique_ptr<uvx::Timer> standby_timer_;
  bool standby_ = false;
  bool standby_error_ = false;  // the last try failed (logged once until one succeeds)
  int64_t next_refresh_mono_ = 0;
  JobIndex jobs_;
  Auth auth_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<RunBook> book_;
  std::unique_ptr<FlowBook> flow_book_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<Applier> applier_;
  std::unique_ptr<LogHub> log_hub_;
  std::unique_ptr<Pruner> pruner_;
  std::unique_ptr<Notifier> notifier_;
  std::unique_ptr<Api> api_;
  std::unique_ptr<http::HttpServer> server_;
  std::shared_ptr<http::TlsContext> tls_;  // null: plain HTTP
  bool loaded_ = false;
  std::string bootstrap_note_;
};

// "127.0.0.1:7070", "[::1]:7070", ":7070" (all IPv4 addresses) -> host and port.
Status SplitHostPort(const std::string& listen, std::string* host, int* port);

}  // namespace jobctl::coordinator
