#include "coordinator/coordinator.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "base/duration.h"
#include "base/log.h"
#include "base/secret_file.h"
#include "model/time_format.h"

namespace jobctl::coordinator {
namespace {

constexpr const char* kLostHold = "lost its hold on the database";

// The store has no tokens when this is called, so a token file already there belongs to a
// store that was deleted: it is replaced (its secret would no longer work anyway).
Status WriteSecretFile(const std::string& path, const std::string& secret) {
  if (::access(path.c_str(), F_OK) == 0) {
    log::Warn("replacing a token file left by an earlier store", {{"path", path}});
    ::unlink(path.c_str());
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Io("cannot create " + path + ": " + std::strerror(errno));
  std::string text = secret + "\n";
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
            ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) return Status::Io("cannot write " + path + ": " + std::strerror(errno));
  return Status::Ok();
}

}  // namespace

Status SplitHostPort(const std::string& listen, std::string* host, int* port) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return Status::InvalidArgument("listen address \"" + listen + "\": expected HOST:PORT");
  }
  *host = listen.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  if (host->empty()) *host = "0.0.0.0";
  std::string p = listen.substr(colon + 1);
  char* end = nullptr;
  long v = std::strtol(p.c_str(), &end, 10);
  if (p.empty() || *end != '\0' || v < 0 || v > 65535) {
    return Status::InvalidArgument("listen address \"" + listen + "\": bad port \"" + p + "\"");
  }
  *port = static_cast<int>(v);
  return Status::Ok();
}

Coordinator::Coordinator(uv_loop_t* loop, const Clock* clock, CoordinatorConfig config)
    : auth_(clock) {
  ctx_.loop = loop;
  ctx_.clock = clock;
  ctx_.config = std::move(config);
  ctx_.metrics = &metrics_;
  ctx_.events = &events_;
}

Coordinator::~Coordinator() = default;

// Two coordinators on one store would each believe their memory is the truth: both would
// fire every job and hand out the same fencing tokens. The lock is taken before the stores
// open, and dies with the process, so a restart after kill -9 finds it free.
Status Coordinator::LockDataDir() {
  std::string path = ctx_.config.data_dir + "/serve.lock";
  Result<LockFile> lock = LockFile::Acquire(path);
  if (lock.ok()) {
    data_lock_.emplace(std::move(*lock));
    return Status::Ok();
  }
  if (lock.status().code() != Status::Code::kConflict) return lock.status();
  std::optional<int64_t> pid = LockFile::ReadHolder(path);
  return Status::Conflict("data directory in use by another jobctl serve (" +
                          (pid ? "pid " + std::to_string(*pid) : std::string("pid unknown")) +
                          "); one data directory serves one coordinator");
}

Status Coordinator::OpenStores() {
  const std::string& dir = ctx_.config.data_dir;
  if (Status s = MakePrivateDir(dir); !s.ok()) return s.WithContext("data directory");
  if (Status s = LockDataDir(); !s.ok()) return s;
  const std::string& url = ctx_.config.store;
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  Result<std::unique_ptr<store::Store>> store =
      store::OpenStore({.path = dir + "/jobctl.db",
                        .url = url,
                        .holder = std::string(host) + " " + ctx_.config.listen,
                        .hold_ttl_ms = ctx_.config.hold_ttl.count(),
                        .standby = true});
  if (!store.ok()) return store.status();
  store_ = std::move(*store);
  // Every write goes through the group commit, which fails the whole turn on any failed
  // write: those that read nothing back need not wait for their outcome one by one.
  store_->PipelineWrites(true);
  Result<std::unique_ptr<store::LogStore>> logs =
      store::OpenLogStore({.path = dir + "/logs.db",
                           .url = url,
                           .run_cap_bytes = ctx_.config.log_cap_bytes,
                           .standby = !store_->held()});
  if (!logs.ok()) return logs.status();
  logs_ = std::move(*logs);
  ctx_.store = store_.get();
  ctx_.logs = logs_.get();
  batch_ = std::make_unique<WriteBatch>(ctx_.loop, store_.get(), logs_.get());
  ctx_.batch = batch_.get();
  return Status::Ok();
}

Status Coordinator::Bootstrap() {
  bool any = false;
  if (Status s = store_->ForEachToken([&any](store::TokenRow&&) { any = true; }); !s.ok()) return s;
  if (any) return Status::Ok();
  // First start: an admin token for people and a join token for agents, as k3s and Vault do.
  // The join token only enrols: each agent then speaks with a credential of its own.
  if (Status s = store_->Begin(); !s.ok()) return s;
  std::string note;
  for (auto [file, role] : {std::pair{"admin", "admin"}, std::pair{"agent", "join"}}) {
    Result<std::string> secret = NewSecret();
    if (!secret.ok()) return secret.status();
    std::string path = ctx_.config.data_dir + "/" + file + ".token";
    Status s = WriteSecretFile(path, *secret);
    if (s.ok()) {
      store::TokenRow row;
      row.name = std::string("bootstrap-") + role;
      row.role = role;
      row.hash = HashSecret(*secret);
      row.created_ms = ctx_.NowMs();
      s = store_->InsertToken(row).status();
    }
    if (!s.ok()) {
      store_->Rollback();
      return s;
    }
    note += std::string(note.empty() ? "" : "; ") + role + " token written to " + path;
  }
  if (Status s = store_->Commit(); !s.ok()) return s;
  bootstrap_note_ = note;
  return Status::Ok();
}

Status Coordinator::Load(bool quiet) {
  // Memory is rebuilt from the store here: the leases listed next are all that are live.
  if (!quiet) events_.Write("loading", {});
  auth_.Clear();
  if (Status s = store_->ForEachToken([this](store::TokenRow&& t) { auth_.Add(t); }); !s.ok()) {
    return s;
  }
  Status bad;
  int64_t unreadable = 0;
  Status s = store_->ForEachJobHead(
      [&](const store::JobHead& h) {
        JobEntry* e = jobs_.Add(h.id, h.name);
        if (e == nullptr) {
          if (bad.ok()) {
            bad = Status::Corrupt("job " + std::to_string(h.id) + " (" + std::string(h.name) +
                                  "): id out of range or name held by another job");
          }
          return;
        }
        e->active = h.active;
        e->paused = h.paused;
        e->next_fire_ms = h.next_fire_ms;
        e->enabled = h.enabled;
        e->misfire = h.misfire;
        e->overlap = h.overlap;
        e->misfire_cap = h.misfire_cap;
        e->expect_success_within_ms = h.expect_success_within_ms;
        e->since_ms = h.updated_ms;
        e->kind = h.kind;
        if (h.active) {
          jobs_.SetTiming(*e, h.schedule, h.dialect, h.timezone, h.anchor_ms);
          jobs_.SetLabels(*e, h.on_labels);
        }
      },
      &unreadable);
  if (!s.ok()) return s;
  if (!bad.ok()) return bad;
  if (unreadable > 0) {
    log::Error("stored job timings name an unknown dialect, misfire or overlap; defaults used",
               {{"jobs", unreadable}});
  }
  s = store_->ForEachLastResult([this](const store::LastResult& r) {
    if (JobEntry* e = jobs_.Find(r.job_id)) {
      e->last_state = r.state;
      e->last_finished_ms = r.finished_ms;
      e->last_duration_ms = r.duration_ms;
      e->last_success_ms = r.last_success_ms.value_or(0);
    }
  });
  if (!s.ok()) return s;
  Result<int64_t> token = store_->GetCounter("token");
  if (!token.ok()) return token.status();
  dispatcher_->SetNextToken(*token);
  s = store_->ForEachAgent([this](store::AgentRow&& a) { dispatcher_->LoadAgent(a); });
  if (!s.ok()) return s;
  Status load_error;
  s = store_->ForEachOpenRun([&](RunRecord&& run) {
    if (Status l = book_->Load(std::move(run)); !l.ok() && load_error.ok()) load_error = l;
  });
  if (!s.ok()) return s;
  if (!load_error.ok()) return load_error;
  scheduler_->TrackAll();
  loaded_ = true;
  if (quiet) return Status::Ok();
  events_.Write("loaded", {{"ttl_ms", ctx_.config.lease_ttl.count()},
                           {"heartbeat_ms", ctx_.config.heartbeat.count()},
                           {"leases", dispatcher_->active_leases()},
                           {"last_token", *token},
                           {"epoch", store_->epoch()}});
  return Status::Ok();
}

void Coordinator::ClearMemory() {
  loaded_ = false;
  jobs_.Clear();
  dispatcher_->Clear();
  book_->Clear();
  flow_book_->Clear();
  scheduler_->Clear();
}

void Coordinator::Reload() {
  ClearMemory();
  Status s = Load();
  if (s.ok()) flow_book_->Reconcile();
  if (!s.ok()) {
    // A shared store that cannot be read again (the database is down, or held by another
    // coordinator now): stop, so that the service restarts this one, as a standby if need be,
    // rather than serve nothing.
    if (!ctx_.config.store.empty()) {
      log::Error("cannot reload state from the database", {{"error", s.ToString()}});
      return LostStore("cannot reload its state from the database");
    }
    log::Error("cannot reload state from the store; retrying at the next failure or restart",
               {{"error", s.ToString()}});
  }
}

Status Coordinator::Start() {
  if (Status s = events_.Open(ctx_.config.event_log, "coord"); !s.ok()) return s;
  if (Status s = OpenStores(); !s.ok()) return s;
  dispatcher_ = std::make_unique<Dispatcher>(&ctx_);
  book_ = std::make_unique<RunBook>(&ctx_, &jobs_, dispatcher_.get());
  RunBook* book = book_.get();
  flow_book_ = std::make_unique<FlowBook>(&ctx_, &jobs_, book);
  book_->set_flow_hooks(flow_book_->Hooks());
  dispatcher_->set_shard_events(
      {[book](ShardKey key, const std::string& agent, int64_t token, int64_t now_ms) {
         return book->Grant(key, agent, token, now_ms);
       },
       [book](ShardKey key, int64_t token) { return book->EndedByResult(key, token); },
       [book](ShardKey key, int64_t token) { book->OnLeaseExpired(key, token); }});
  scheduler_ = std::make_unique<Scheduler>(&ctx_, &jobs_, book_.get());
  applier_ = std::make_unique<Applier>(&ctx_, &jobs_, scheduler_.get());
  log_hub_ = std::make_unique<LogHub>(&ctx_);
  Scheduler* scheduler = scheduler_.get();
  pruner_ = std::make_unique<Pruner>(
      &ctx_, [book](int64_t run) { return book->FindOpen(run) != nullptr; },
      [scheduler] { return scheduler->NextDueMs(); },
      [scheduler] { return scheduler->FiredInTurn(); });
  notifier_ = std::make_unique<Notifier>(&ctx_, &jobs_);
  if (Status s = notifier_->Configure(); !s.ok()) return s;
  Notifier* notifier = notifier_.get();
  applier_->target_problem = [notifier](const std::string& t) {
    return notifier->TargetProblem(t);
  };
  book_->on_run_ended = [notifier](JobEntry& job, const NotifyPolicy& notify,
                                   const RunRecord& run) { notifier->RunEnded(job, notify, run); };
  book_->on_agent_lost = [notifier](JobEntry& job, const Job& spec, const RunRecord& run,
                                    const ShardRecord& shard) {
    notifier->Notice(job, spec.notify, NotifyEvent::kAgentLost, run.id,
                     fmt::format("agent {} lost while running shard {} (attempt {}); {}",
                                 shard.agent, shard.index, shard.attempt,
                                 spec.on_lost == OnLost::kRerun ? "the shard is run again"
                                                                : "the shard is lost"));
  };
  // A skip or a miss may come without the job's definition in memory (a miss always does
  // after a long outage): it is read only when a channel could take the notification.
  book_->on_skipped = [this](JobEntry& job, const RunRecord& skipped) {
    if (!notifier_->HasChannels()) return;
    Result<NotifyPolicy> notify = NotifyOf(job);
    if (notify.ok())
      notifier_->Notice(job, *notify, NotifyEvent::kSkipped, skipped.id, skipped.note);
  };
  scheduler_->on_missed = [this](JobEntry& job, const std::string& detail) {
    if (!notifier_->HasChannels()) return;
    Result<NotifyPolicy> notify = NotifyOf(job);
    if (notify.ok()) notifier_->Notice(job, *notify, NotifyEvent::kMissed, 0, detail);
  };
  notifier_->on_overdue_check = [this] { CheckOverdue(); };
  book_->on_runs_ended = [this](JobEntry& job) { scheduler_->OnRunsEnded(job); };
  book_->on_finished = [this](int64_t run) {
    log_hub_->Notify(run);
    log_hub_->Notify(-run);
  };
  batch_->on_failure = [this](const Status&) {
    if (!store_->held()) return LostStore(kLostHold);
    Reload();
  };
  batch_->on_commit_seconds = [this](double s) {
    ctx_.metrics->commit_latency.Observe(s);
    // Before the events of this commit (they are written by its callbacks, which follow).
    events_.Write("commit", {{"us", static_cast<int64_t>(s * 1e6)},
                             {"began_ns", batch_->last_began_ns()},
                             {"epoch", store_->epoch()}});
  };
  if (store_->held()) {
    if (Status s = Lead(); !s.ok()) return s;
  } else {
    StandBy();
  }

  api_ = std::make_unique<Api>(
      &ctx_, Parts{&jobs_, book_.get(), dispatcher_.get(), scheduler_.get(), applier_.get(), &auth_,
                   log_hub_.get(), [this] { return loaded_; }, [this] { return standby_; },
                   [this] { return store_->Holder(); }, notifier_.get(), flow_book_.get()});
  http::Limits limits;
  limits.body_limit = [max = static_cast<size_t>(ctx_.config.max_jobfile_bytes)](
                          const http::Request& head) { return Api::BodyLimit(head, max); };
  // Long-polls hold a connection up to a minute (no timer runs while a request waits);
  // idle keep-alive connections are kept a little longer by default.
  limits.header_timeout_ms = static_cast<uint64_t>(ctx_.config.header_timeout.count());
  limits.body_timeout_ms = static_cast<uint64_t>(ctx_.config.body_timeout.count());
  limits.idle_timeout_ms = static_cast<uint64_t>(ctx_.config.idle_timeout.count());
  // Authentication, role and rate limit are decided at the headers: a body is buffered only
  // for a caller allowed to send it.
  limits.admit = [this](const http::Request& head) { return api_->Admit(head); };
  limits.max_connections = static_cast<size_t>(ctx_.config.max_connections);
  limits.max_connections_per_client = static_cast<size_t>(ctx_.config.max_connections_per_client);
  limits.max_body_bytes_in_flight = static_cast<size_t>(ctx_.config.max_inflight_bytes);
  limits.max_body_bytes_in_flight_per_client =
      static_cast<size_t>(ctx_.config.max_inflight_bytes_per_client);
  server_ = std::make_unique<http::HttpServer>(
      ctx_.loop, limits, [this](http::Request&& req, std::shared_ptr<http::Responder> res) {
        api_->Handle(std::move(req), std::move(res));
      });
  if (!ctx_.config.tls_cert.empty()) {
    auto tls = http::TlsContext::Create(
        {ctx_.config.tls_cert, ctx_.config.tls_key, ctx_.config.tls_client_ca});
    if (!tls.ok()) return tls.status();
    tls_ = *tls;
    server_->UseTls(tls_);
  }
  std::string host;
  int port = 0;
  if (Status s = SplitHostPort(ctx_.config.listen, &host, &port); !s.ok()) return s;
  if (Status s = server_->Listen(host, port); !s.ok()) return s;
  return Status::Ok();
}

Status Coordinator::Lead() {
  if (Status s = logs_->Hold(store_->epoch()); !s.ok()) return s;
  if (Status s = Bootstrap(); !s.ok()) return s;
  if (standby_) {
    standby_timer_->Stop();  // not destroyed: Lead may run inside its callback
    ClearMemory();  // the standby's view: rebuilt below from the store as this holder sees it
    standby_ = false;
  }
  ctx_.metrics->standby = 0;
  if (!ctx_.config.store.empty()) {
    // Between writes too: a coordinator the database lost sight of learns it within a
    // second, and stops answering (heartbeats included) from what it remembers.
    hold_timer_ = std::make_unique<uvx::Timer>(ctx_.loop);
    hold_timer_->Every(1000, [this] {
      store_->CheckHold();
      if (!store_->held()) LostStore(kLostHold);
    });
  }
  batch_->Start();
  dispatcher_->Start();
  book_->Start();
  log_hub_->Start();
  if (Status s = Load(); !s.ok()) return s.WithContext("loading state from the store");
  // What only a crash between a step's end and its commit could leave: none, as each step's
  // end commits with what follows from it; this writes only if that ever failed.
  flow_book_->Reconcile();
  scheduler_->Start();
  // Only the holder prunes: a standby writes nothing, and its pruner is not armed until it
  // takes over.
  pruner_->Start();
  if (Status s = notifier_->Load(); !s.ok()) return s.WithContext("loading alert states");
  notifier_->Start();
  return Status::Ok();
}

void Coordinator::StandBy() {
  standby_ = true;
  ctx_.metrics->standby = 1;
  log::Info(
      "standby: another coordinator holds the database; answering reads from it and taking "
      "over when its session ends or it stops renewing its hold",
      {{"holder", store_->Holder()}, {"hold_ttl_ms", ctx_.config.hold_ttl.count()}});
  RefreshView();
  // The hold is tried four times a second; the view of the store (jobs, agents, tokens,
  // open runs) is rebuilt at most once a second, and no more often than four times as long
  // as rebuilding it took, so a large store does not keep the standby busy.
  standby_timer_ = std::make_unique<uvx::Timer>(ctx_.loop);
  standby_timer_->Every(250, [this] {
    Result<bool> got = store_->TryHold();
    if (!got.ok()) {
      if (!standby_error_)
        log::Warn("standby: cannot reach the database", {{"error", got.status().ToString()}});
      standby_error_ = true;
      return;
    }
    standby_error_ = false;
    if (*got) {
      log::Info("taking over: this coordinator holds the database now",
                {{"epoch", store_->epoch()}});
      if (Status s = Lead(); !s.ok()) {
        log::Error("cannot take over the database", {{"error", s.ToString()}});
        LostStore("could not take over the database");
      }
      return;
    }
    if (ctx_.MonoMs() >= next_refresh_mono_) RefreshView();
  });
}

void Coordinator::RefreshView() {
  int64_t start = ctx_.MonoMs();
  ClearMemory();
  // A standby's view is not an event: the parts that log what they load log to nothing.
  ctx_.events = &no_events_;
  Status s = Load(/*quiet=*/true);
  ctx_.events = &events_;
  int64_t took = ctx_.MonoMs() - start;
  next_refresh_mono_ = ctx_.MonoMs() + std::max<int64_t>(1000, 4 * took);
  if (!s.ok()) {
    ClearMemory();
    if (!standby_error_) log::Warn("standby: cannot read the database", {{"error", s.ToString()}});
    standby_error_ = true;
  }
}

void Coordinator::CheckOverdue() {
  if (!notifier_->HasChannels()) return;
  int64_t now = ctx_.NowMs();
  jobs_.ForEach([&](JobEntry& job) {
    bool overdue = job.expect_success_within_ms != 0 && job.Overdue(now);
    if (!overdue && !notifier_->OverdueAlerted(job.id)) return;
    Result<NotifyPolicy> notify = NotifyOf(job);
    if (!notify.ok()) return;
    std::string detail;
    if (overdue) {
      detail = job.last_success_ms != 0
                   ? "no success since " + FormatUtc(FromUnixMs(job.last_success_ms))
                   : "no success since it was defined at " + FormatUtc(FromUnixMs(job.since_ms));
      detail +=
          " (expect_success_within " + FormatDuration(Millis(job.expect_success_within_ms)) + ")";
    }
    notifier_->Overdue(job, *notify, overdue, detail);
  });
}

Result<NotifyPolicy> Coordinator::NotifyOf(JobEntry& job) {
  if (job.kind == JobKind::kFlow) return flow_book_->NotifyOf(job);
  Result<std::shared_ptr<const Job>> spec = book_->SpecOf(job);
  if (!spec.ok()) return spec.status();
  return (*spec)->notify;
}

Status Coordinator::ReloadTls() { return tls_ ? tls_->Reload() : Status::Ok(); }

void Coordinator::LostStore(const std::string& why) {
  if (hold_timer_) hold_timer_->Stop();
  if (standby_timer_) standby_timer_->Stop();
  if (pruner_) pruner_->Close();
  if (notifier_) notifier_->Close();
  if (on_lost_store) std::exchange(on_lost_store, nullptr)(why);
}

void Coordinator::Stop(std::function<void()> done) {
  if (hold_timer_) hold_timer_->Stop();
  if (standby_timer_) standby_timer_->Stop();
  if (server_) server_->StopAccepting();
  if (dispatcher_) dispatcher_->Close();
  if (log_hub_) log_hub_->Close();
  if (pruner_) pruner_->Close();
  if (notifier_) notifier_->Close();
  if (batch_) batch_->Flush();
  auto finish = [this, done = std::move(done)] {
    if (scheduler_) scheduler_->Close();
    if (book_) book_->Close();
    if (batch_) batch_->Close();
    done();
  };
  if (server_) {
    server_->Close(finish);
  } else {
    finish();
  }
}

}  // namespace jobctl::coordinator
