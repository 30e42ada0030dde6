#include "agent.h"

#include <unistd.h>

#include <climits>
#include <filesystem>

#include "base/log.h"
#include "base/secret_file.h"
#include "model/env_rules.h"
#include "secrets.h"
#include "step_output.h"

namespace jobctl::agentd {
namespace {

// After the last shard ended, how long a stopping agent still tries to deliver output and
// results before leaving them in the state dir for its next start.
constexpr uint64_t kFlushOnStopMs = 10'000;

}  // namespace

Agent::Agent(uv_loop_t* loop, const Clock* clock, AgentSettings settings, Random* random)
    : loop_(loop),
      clock_(clock),
      settings_(std::move(settings)),
      random_(random != nullptr ? random : &own_random_),
      link_(std::make_unique<CoordinatorLink>(loop, settings_.coordinators, settings_.token,
                                              settings_.tls)),
      enroller_(loop, link_.get(), settings_.state_dir, settings_.token, random_),
      spool_(settings_.state_dir + "/spool", settings_.spool_max_bytes),
      runner_(loop),
      fence_(loop),
      start_timer_(loop),
      drain_timer_(loop),
      flush_timer_(loop) {
  shipper_ =
      std::make_unique<LogShipper>(loop, link_.get(), &spool_, &events_,
                                   LogShipper::Callbacks{[this](AttemptKey k, int64_t last_seq) {
                                                           reporter_->Release(k, last_seq);
                                                           MaybeFinishStop();
                                                         },
                                                         [this](AttemptKey k) { OnLogsStale(k); }},
                                   random_);
  reporter_ = std::make_unique<RunReporter>(
      loop, link_.get(), settings_.state_dir + "/results", settings_.identity.name,
      [this](const ShardResult& r, bool accepted) { OnResultSettled(r, accepted); }, random_);
  leases_ = std::make_unique<LeaseKeeper>(
      loop, link_.get(), clock, settings_.identity.name, [this] { return FreeSlots(); },
      LeaseKeeper::Callbacks{
          [this](ShardKey k, int64_t token) { OnLeaseRenewed(k, token); },
          [this](ShardKey k, int64_t token, LeaseLoss loss) { OnLeaseLost(k, token, loss); }});
  claimer_ = std::make_unique<Claimer>(
      loop, link_.get(), clock, settings_.identity,
      [this](std::vector<Assignment> list, int64_t sent) { OnAssignments(std::move(list), sent); },
      [this](const wire::ClaimReply& extras) {
        // Once a coordinator said it takes batches, the agent keeps sending them (until one
        // is refused: then the LogShipper and the RunReporter fall back to one per request).
        if (extras.log_batch_bytes)
          shipper_->SetBatchLimit(static_cast<size_t>(*extras.log_batch_bytes));
        if (extras.result_batch_max)
          reporter_->SetBatchLimit(static_cast<size_t>(*extras.result_batch_max));
        for (const wire::LeaseRef& l : extras.canceled) OnCanceledEarly(l.key, l.token);
      },
      random_);
}

Agent::~Agent() = default;

Status Agent::Start() {
  Result<UserInfo> me = CurrentUser();
  if (!me.ok()) return me.status();
  self_info_ = *me;
  if (Status s = events_.Open(settings_.event_log, "agent", {{"agent", settings_.identity.name}});
      !s.ok()) {
    return s;
  }
  self_ = {me->name, geteuid() == 0};
  if (Status s = MakePrivateDir(settings_.state_dir); !s.ok()) {
    return s.WithContext("state dir");
  }
  if (Status s = spool_.Open(); !s.ok()) return s;
  if (Status s = reporter_->Open(); !s.ok()) return s;
  if (Status s = leases_->Init(); !s.ok()) return s;
  if (Status s = start_timer_.Init(); !s.ok()) return s;
  if (Result<CgroupTree> tree = CgroupTree::Open(/*move_self=*/true); tree.ok()) {
    cgroups_ = std::move(*tree);
    runner_.UseCgroups(&*cgroups_);
    int swept = cgroups_->Sweep();
    std::string controllers;
    for (const std::string& c : cgroups_->controllers()) {
      controllers += (controllers.empty() ? "" : " ") + c;
    }
    log::Info("each shard runs in a cgroup of its own",
              {{"cgroup", cgroups_->dir()},
               {"controllers", controllers.empty() ? "none" : controllers},
               {"old_trees_removed", static_cast<int64_t>(swept)}});
  } else {
    runner_.NoCgroups(tree.status().message());
    log::Warn(
        "shards run without a cgroup of their own: a process a job starts with setsid outlives "
        "its timeout, cancel or fence",
        {{"reason", tree.status().message()}});
  }
  if (Status s = fence_.Start(settings_.exe_path, settings_.event_log, settings_.identity.name,
                              cgroups_ ? cgroups_->dir() : "");
      !s.ok()) {
    log::Warn("cannot start the fence; shards are fenced only while agentd runs",
              {{"error", s.message()}});
  }
  // Flow steps come only to agents that say they can take them: one that cannot make its
  // output directory runs everything else. Every agentd reads limits (enforcing or refusing).
  // And every one starts a shard granted ahead of its instant at the instant.
  settings_.identity.features = {wire::kLimitsFeature, wire::kEarlyStartFeature};
  claimer_->SetIdentity(settings_.identity);
  if (Status s = PrepareOutputDir(settings_.output_dir); !s.ok()) {
    log::Warn("cannot use the output directory; this agent takes no flow steps",
              {{"output_dir", settings_.output_dir}, {"error", s.message()}});
  } else {
    step_output_ready_ = true;
    step_output_shared_ = ReachableByOthers(settings_.output_dir);
    settings_.identity.features.push_back(wire::kStepOutputFeature);
    claimer_->SetIdentity(settings_.identity);
  }
  log::Info("agentd started", {{"agent", settings_.identity.name},
                               {"coordinator", link_->current_url()},
                               {"slots", settings_.identity.slots},
                               {"user", self_.name},
                               {"state_dir", settings_.state_dir}});
  started_ = true;
  enroller_.Start(settings_.identity.name, settings_.identity.labels, [this] { OnEnrolled(); });
  return Status::Ok();
}

void Agent::OnEnrolled() {
  if (stopping_) return;
  enrolled_ = true;
  // Output and results a previous agentd left: output first, each result after its output.
  shipper_->Recover();
  for (AttemptKey key : reporter_->Pending()) {
    if (std::optional<int64_t> last = shipper_->Finish(key)) reporter_->Release(key, *last);
  }
  UpdateClaim();
}

void Agent::Reconfigure(std::map<std::string, std::string> labels, int slots) {
  settings_.identity.labels = std::move(labels);
  settings_.identity.slots = slots;
  log::Info("configuration reloaded", {{"slots", slots}});
  claimer_->SetIdentity(settings_.identity);
  if (enrolled_) UpdateClaim();  // else the first claim, after enrolment
}

int Agent::FreeSlots() const {
  return std::max(0, settings_.identity.slots - static_cast<int>(shards_.size()));
}

std::string Agent::NewSpanId() {
  uint64_t v = 0;
  while (v == 0) v = random_->Next();
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

void Agent::OnAssignments(std::vector<Assignment> list, int64_t sent_ms) {
  for (Assignment& a : list) Accept(std::move(a), sent_ms);
  UpdateClaim();
}

void Agent::Accept(Assignment a, int64_t sent_ms) {
  events_.Write("claimed", {{"job", a.job},
                            {"run", a.key.run},
                            {"shard", a.key.shard},
                            {"attempt", a.key.attempt},
                            {"token", a.token},
                            {"start_in_us", a.start_in_us}});
  if (stopping_) {
    // Leased just as the agent began to stop: give it back at once, for another agent.
    leases_->Add(a.key.shard_key(), a.token, a.ttl_ms, a.heartbeat_ms, sent_ms);
    Report({a.key, a.token, Outcome::kLeaseLost, std::nullopt, "agentd is stopping"});
    return;
  }
  if (Status s = CheckPolicy(a, settings_.policy, self_); !s.ok()) {
    log::Warn(
        "shard refused by policy",
        {{"job", a.job}, {"run", a.key.run}, {"shard", a.key.shard}, {"reason", s.message()}});
    leases_->Add(a.key.shard_key(), a.token, a.ttl_ms, a.heartbeat_ms, sent_ms);
    Report({a.key, a.token, Outcome::kPolicy, std::nullopt, s.message()});
    return;
  }
  AttemptKey key = a.key;
  auto shard = std::make_unique<RunningShard>(
      loop_, &runner_, clock_, std::move(a), settings_.kill_grace, &events_,
      RunningShard::Callbacks{[this](AttemptKey k, Chunk c) { shipper_->Push(k, std::move(c)); },
                              [this](ShardResult r) { OnShardDone(std::move(r)); }});
  int64_t token = shard->assignment().token, ttl = shard->assignment().ttl_ms,
          heartbeat = shard->assignment().heartbeat_ms,
          start_in_us = shard->assignment().start_in_us;
  RunningShard& ref = *shard;
  shards_[key] = std::move(shard);
  // After a claim held open for long the lease is unconfirmed: the LeaseKeeper renews it at
  // once and the shard starts then (OnLeaseRenewed). Granted ahead of its instant, the lease
  // counts from the instant, which is start_in after the coordinator answered, so no sooner
  // than start_in after the claim was sent.
  leases_->Add(key.shard_key(), token, ttl, heartbeat, sent_ms + start_in_us / 1000);
  if (start_in_us > 0) {
    // Started on this agent's own monotonic clock, start_in after the answer arrived: never
    // before the instant on the coordinator's. Until then the claim stays open, so that a
    // cancel reaches it (OnCanceledEarly).
    int64_t due_us = clock_->MonotonicUs() + start_in_us;
    Unwait(key);
    waiting_[key] = due_us;
    due_order_.emplace(due_us, key);
    ArmStartTimer();
    return;  // OnAssignments tells the Claimer, once, with the free slots
  }
  if (leases_->MayRun(key.shard_key(), token)) {
    Launch(ref);
  } else {
    log::Debug("lease needs a renewal before the shard starts",
               {{"run", key.run},
                {"shard", key.shard},
                {"token", token},
                {"claim_age_ms", clock_->MonotonicMs() - sent_ms}});
  }
}

void Agent::UpdateClaim() {
  // Free slots and whether a shard waits for its instant, in one call: the Claimer claims
  // (or replaces its claim) once, with both right.
  claimer_->Set(FreeSlots(), !waiting_.empty());
}

void Agent::ArmStartTimer() {
  if (due_order_.empty()) return start_timer_.Disarm();
  start_timer_.ArmAtUs(due_order_.begin()->first, [this] { OnStartTimer(); });
}

void Agent::OnStartTimer() {
  int64_t now = clock_->MonotonicUs();
  std::vector<AttemptKey> due;
  for (auto it = due_order_.begin(); it != due_order_.end() && it->first <= now; ++it) {
    due.push_back(it->second);
  }
  for (AttemptKey key : due) OnStartTime(key);
  ArmStartTimer();
}

void Agent::OnStartTime(AttemptKey key) {
  if (!Unwait(key)) return;
  UpdateClaim();
  auto it = shards_.find(key);
  if (it == shards_.end() || it->second->started() || stopping_) return;
  RunningShard& shard = *it->second;
  if (leases_->MayRun(key.shard_key(), shard.assignment().token)) return Launch(shard);
  // Not confirmed yet, or its deadline passed while agentd was stopped: it starts at the
  // renewal (OnLeaseRenewed), or ends with the lease.
  log::Debug("lease needs a renewal before the shard starts",
             {{"run", key.run}, {"shard", key.shard}, {"token", shard.assignment().token}});
  leases_->RenewSoon();
}

void Agent::OnCanceledEarly(ShardKey key, int64_t token) {
  RunningShard* shard = Find(key, token);
  // A started shard learns it at the heartbeat, like any other.
  if (shard == nullptr || shard->started()) return;
  log::Info("canceled before its instant; not started",
            {{"run", key.run}, {"shard", key.shard}, {"token", token}});
  EndUnstarted(shard->assignment().key, Outcome::kCanceled, "canceled by the coordinator");
}

void Agent::Launch(RunningShard& shard) {
  const Assignment& a = shard.assignment();
  // agentd is the policy on its host: whatever a coordinator sends, no name that the loader or
  // the C library reads at start-up, and none of the agent's own, reaches a job.
  for (const auto& [name, value] : a.env) {
    if (std::string problem = EnvNameProblem(name); !problem.empty()) {
      return EndUnstarted(a.key, Outcome::kSpawnFailed,
                          "env " + name.substr(0, 64) + " refused by agentd: " + problem);
    }
  }
  Result<std::map<std::string, std::string>> secrets =
      ReadSecrets(a.secrets, settings_.secrets_dir);
  if (!secrets.ok()) return EndUnstarted(a.key, Outcome::kSpawnFailed, secrets.status().message());
  UserInfo user = self_info_;
  bool switch_user = false;
  if (!a.run_as.empty() && a.run_as != self_info_.name) {
    // getpwnam may block on NSS; shards that switch users are rare enough to afford it.
    Result<UserInfo> u = LookUpUser(a.run_as);
    if (!u.ok())
      return EndUnstarted(a.key, Outcome::kSpawnFailed, "run_as: " + u.status().message());
    user = *u;
    switch_user = true;
  }
  std::string output_path;
  if (a.step) {
    if (!step_output_ready_) {
      return EndUnstarted(a.key, Outcome::kSpawnFailed,
                          "this agentd cannot run flow steps: its output_dir is not usable");
    }
    if (switch_user && !step_output_shared_) {
      // The step could not write its file: it fails here, saying why, not later downstream.
      return EndUnstarted(a.key, Outcome::kSpawnFailed,
                          "JOB_OUTPUT: " + settings_.output_dir + " cannot be reached by " +
                              user.name +
                              " (a directory on its path is not searchable by others); set "
                              "output_dir in agentd.toml to one that is, as /run/agentd/outputs");
    }
    Result<std::string> path =
        CreateStepOutput(settings_.output_dir, a.key, NewSpanId(), user, switch_user);
    if (!path.ok()) return EndUnstarted(a.key, Outcome::kSpawnFailed, path.status().message());
    output_path = *path;
    step_outputs_[a.key] = output_path;
  }
  SpawnSpec spec = BuildSpawnSpec(a, {settings_.exe_path, settings_.state_dir, user, switch_user,
                                      NewSpanId(), std::move(*secrets), output_path});
  shipper_->Open(a.key, a.token);
  if (Status s = shard.Start(spec); !s.ok()) {
    if (!output_path.empty()) {
      ::unlink(output_path.c_str());
      step_outputs_.erase(a.key);
    }
    log::Warn("cannot start shard", {{"job", a.job},
                                     {"run", a.key.run},
                                     {"shard", a.key.shard},
                                     {"error", s.message()},
                                     {"trace", a.trace_id}});
    return EndUnstarted(a.key, Outcome::kSpawnFailed, s.message());
  }
  ArmFence(shard);
  events_.Write("started", {{"run", a.key.run},
                            {"shard", a.key.shard},
                            {"attempt", a.key.attempt},
                            {"token", a.token},
                            {"pid", shard.pid()}});
  log::Info("run started", {{"job", a.job},
                            {"run", a.key.run},
                            {"shard", a.key.shard},
                            {"attempt", a.key.attempt},
                            {"token", a.token},
                            {"user", user.name},
                            {"trace", a.trace_id}});
}

void Agent::EndUnstarted(AttemptKey key, Outcome outcome, std::string message) {
  auto it = shards_.find(key);
  if (it == shards_.end()) return;
  int64_t token = it->second->assignment().token;
  shards_.erase(it);
  if (Unwait(key)) ArmStartTimer();  // disarmed with the last one
  Report({key, token, outcome, std::nullopt, std::move(message)});
  UpdateClaim();
  MaybeFinishStop();
}

void Agent::OnShardDone(ShardResult result) {
  auto it = shards_.find(result.key);
  if (it == shards_.end()) return;
  log::Info("run finished", {{"job", it->second->assignment().job},
                             {"run", result.key.run},
                             {"shard", result.key.shard},
                             {"attempt", result.key.attempt},
                             {"outcome", OutcomeName(result.outcome)},
                             {"exit", result.exit_code ? std::to_string(*result.exit_code) : "-"},
                             {"message", result.message},
                             {"trace", it->second->assignment().trace_id}});
  events_.Write("exited", {{"run", result.key.run},
                           {"shard", result.key.shard},
                           {"attempt", result.key.attempt},
                           {"token", result.token},
                           {"pid", it->second->pid()},
                           {"outcome", OutcomeName(result.outcome)},
                           {"exit", result.exit_code.value_or(-1)}});
  if (it->second->pid() > 0) fence_.Disarm(it->second->pid(), result.key);
  if (auto out = step_outputs_.find(result.key); out != step_outputs_.end()) {
    // What the step left for the steps that need it; read (and removed) whatever the ending.
    Result<StepOutputs> outputs = CollectStepOutput(out->second);
    step_outputs_.erase(out);
    if (result.outcome == Outcome::kExited && result.exit_code == 0) {
      if (outputs.ok()) {
        result.outputs = std::move(*outputs);
      } else {
        // It exited 0 but what it wrote does not read: its dependents would run without it.
        result.outcome = Outcome::kBadOutput;
        result.message = outputs.status().message();
      }
    }
  }
  // Destroys the RunningShard, whose callback this is; it touches nothing after calling it.
  shards_.erase(it);
  if (stale_.erase(result.key) > 0) {
    // The coordinator refused this attempt's token: its result would be refused too.
    shipper_->Discard(result.key);
    leases_->Remove(result.key.shard_key(), result.token);
  } else {
    Report(result);
  }
  UpdateClaim();
  MaybeFinishStop();
}

void Agent::Report(const ShardResult& result) {
  reporter_->Add(result);
  if (std::optional<int64_t> last = shipper_->Finish(result.key)) {
    reporter_->Release(result.key, *last);
  }
}

bool Agent::Unwait(AttemptKey key) {
  auto it = waiting_.find(key);
  if (it == waiting_.end()) return false;
  due_order_.erase({it->second, key});
  waiting_.erase(it);
  return true;
}

RunningShard* Agent::Find(ShardKey key, int64_t token) {
  // The attempts of one shard are adjacent in shards_ (ordered by run, shard, attempt).
  for (auto it = shards_.lower_bound(AttemptKey{key.run, key.shard, INT_MIN});
       it != shards_.end() && it->first.shard_key() == key; ++it) {
    if (it->second->assignment().token == token) return it->second.get();
  }
  return nullptr;
}

void Agent::ArmFence(RunningShard& shard) {
  const Assignment& a = shard.assignment();
  std::optional<int64_t> deadline = leases_->DeadlineOf(a.key.shard_key(), a.token);
  if (deadline && shard.pid() > 0) fence_.Arm(shard.pid(), *deadline + kFenceSlackMs, a.key);
}

void Agent::OnLeaseRenewed(ShardKey key, int64_t token) {
  RunningShard* shard = Find(key, token);
  if (shard != nullptr && shard->started()) ArmFence(*shard);
  if (shard != nullptr && !shard->started() && !stopping_ &&
      waiting_.count(shard->assignment().key) == 0 && leases_->MayRun(key, token)) {
    Launch(*shard);
  }
}

void Agent::OnLeaseLost(ShardKey key, int64_t token, LeaseLoss loss) {
  RunningShard* shard = Find(key, token);
  if (shard == nullptr) return;  // already ended; its result tells the coordinator
  Outcome outcome = loss == LeaseLoss::kCanceled ? Outcome::kCanceled : Outcome::kLeaseLost;
  // kFinished with the shard still here: the coordinator holds a result for this lease
  // (its timeout backstop, say), so the process must not go on.
  std::string why = loss == LeaseLoss::kCanceled ? "canceled by the coordinator"
                    : loss == LeaseLoss::kStale  ? "lease revoked by the coordinator (stale token)"
                    : loss == LeaseLoss::kFinished
                        ? "the coordinator already holds a result for this lease"
                        : "lease not renewed before its deadline";
  log::Warn("lease lost; stopping the shard", {{"run", key.run},
                                               {"shard", key.shard},
                                               {"token", token},
                                               {"reason", LeaseLossName(loss)},
                                               {"trace", shard->assignment().trace_id}});
  if (!shard->started()) return EndUnstarted(shard->assignment().key, outcome, why);
  // A canceled run is not handed to anyone else: its shard gets its whole kill_grace, and the
  // fence waits for that (and a second more) instead of the lease's last deadline.
  if (loss == LeaseLoss::kCanceled && shard->pid() > 0) {
    fence_.Arm(shard->pid(), clock_->MonotonicMs() + shard->grace().count() + 1000,
               shard->assignment().key);
  }
  shard->Stop(loss == LeaseLoss::kCanceled ? StopReason::kCanceled : StopReason::kLeaseLost, why);
}

void Agent::OnLogsStale(AttemptKey key) {
  auto it = shards_.find(key);
  if (it != shards_.end()) {
    stale_[key] = it->second->assignment().token;
    it->second->Stop(StopReason::kStale, "log chunk refused: stale token");
    return;
  }
  reporter_->Drop(key);  // ended already; its lease lapses at the next heartbeat
  MaybeFinishStop();
}

void Agent::OnResultSettled(const ShardResult& result, bool accepted) {
  // The reporter logged a refusal.
  if (accepted)
    events_.Write("result_acked", {{"run", result.key.run},
                                   {"shard", result.key.shard},
                                   {"attempt", result.key.attempt},
                                   {"token", result.token},
                                   {"outcome", OutcomeName(result.outcome)},
                                   {"exit", result.exit_code.value_or(-1)}});
  leases_->Remove(result.key.shard_key(), result.token);
  MaybeFinishStop();
}

void Agent::Stop(std::function<void()> on_stopped) {
  if (stopping_) {
    KillAll("agentd stopping (second signal)");
    return;
  }
  stopping_ = true;
  on_stopped_ = std::move(on_stopped);
  if (!started_) return Shutdown();  // Start() failed: nothing to drain
  log::Info("stopping: no more claims; draining running shards",
            {{"running", static_cast<uint64_t>(shards_.size())},
             {"drain_timeout_ms", static_cast<int64_t>(settings_.drain_timeout.count())}});
  bool withdrawn = claimer_->Stop([this] { MaybeFinishStop(); });
  (void)withdrawn;  // either way MaybeFinishStop waits for claimer_->idle()
  drain_timer_.Once(static_cast<uint64_t>(settings_.drain_timeout.count()),
                    [this] { KillAll("agentd stopping: drain_timeout passed"); });
  // Shards still waiting for their lease to be confirmed will not start now.
  EndWaiting("agentd is stopping");
  MaybeFinishStop();
}

void Agent::EndWaiting(const std::string& why) {
  std::vector<AttemptKey> waiting;
  for (const auto& [key, shard] : shards_) {
    if (!shard->started()) waiting.push_back(key);
  }
  for (AttemptKey key : waiting) EndUnstarted(key, Outcome::kLeaseLost, why);
}

void Agent::KillAll(const std::string& why) {
  EndWaiting(why);
  for (auto& [key, shard] : shards_) shard->Stop(StopReason::kDraining, why);
}

void Agent::MaybeFinishStop() {
  if (!stopping_ || shutting_down_ || !shards_.empty()) return;
  drain_timer_.Stop();
  if (shipper_->idle() && reporter_->idle() && claimer_->idle()) return Shutdown();
  if (!flush_timer_.active()) flush_timer_.Once(kFlushOnStopMs, [this] { Shutdown(); });
}

void Agent::Shutdown() {
  shutting_down_ = true;
  drain_timer_.Stop();
  flush_timer_.Stop();
  shipper_->Suspend();
  if (!shipper_->idle() || !reporter_->idle()) {
    log::Warn("coordinator did not take everything; the rest is sent at the next start",
              {{"spool_bytes", spool_.bytes()}});
  }
  enroller_.Close();
  reporter_->Close();
  leases_->Close();
  claimer_->Close();
  start_timer_.Disarm();  // an armed timerfd would keep the loop running
  fence_.Close();
  runner_.Close([this] {
    link_->Close([this] {
      log::Info("agentd stopped");
      std::function<void()> done = std::move(on_stopped_);
      if (done) done();
    });
  });
}

}  // namespace jobctl::agentd
