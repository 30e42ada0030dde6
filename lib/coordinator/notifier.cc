#include "coordinator/notifier.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "base/log.h"
#include "base/secret_file.h"
#include "coordinator/metrics.h"
#include "coordinator/write_batch.h"
#include "notify/send.h"

namespace jobctl::coordinator {

namespace {

constexpr std::string_view kMailto = "mailto:";
constexpr size_t kMaxDetail = 1024;
constexpr size_t kMaxError = 1024;

Result<std::string> ReadSecret(const std::string& channel, const std::string& path,
                               std::string_view what) {
  if (std::optional<std::string> loose = LooseSecretFileMode(path, what)) {
    log::Warn(*loose, {{"channel", channel}});
  }
  std::ifstream in(path);
  if (!in) {  // a configuration error: jobctl serve exits 78
    return Status::InvalidArgument(fmt::format("notify channel \"{}\": cannot read {} {}: {}",
                                               channel, what, path, std::strerror(errno)));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string value = ss.str();
  while (!value.empty() && (value.back() == '\n' || value.back() == '\r')) value.pop_back();
  if (value.empty() || value.size() > 1024) {
    return Status::InvalidArgument(fmt::format(
        "notify channel \"{}\": {} {} must hold one line of 1 to 1024 bytes", channel, what, path));
  }
  return value;
}

std::string Bounded(std::string s, size_t max) {
  if (s.size() <= max) return s;
  size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  s.resize(cut);
  return s;
}

bool FailedShard(const ShardRecord& s) {
  return s.state == RunState::kFailed || s.state == RunState::kTimedOut ||
         s.state == RunState::kLost || s.state == RunState::kCanceled;
}

}  // namespace

int64_t NotifyRetryDelayMs(int64_t attempts) {
  static constexpr int64_t kDelays[] = {10'000,  30'000,  60'000,   120'000,
                                        300'000, 600'000, 1'800'000};
  if (attempts < 1) return 0;
  if (attempts <= static_cast<int64_t>(std::size(kDelays))) return kDelays[attempts - 1];
  return 3'600'000;
}

// One delivery on the worker thread: copies of everything it needs, and its outcome.
struct Notifier::Delivery {
  uv_work_t req{};
  Notifier* self = nullptr;  // nullptr once the Notifier closed: the outcome is dropped
  store::NotificationRow row;
  Channel channel;
  notify::Notification facts;
  int64_t now_ms = 0;
  Status result;
  std::function<void(Status)> done;  // a test delivery: no row
};

Notifier::Notifier(Context* ctx, JobIndex* jobs) : ctx_(ctx), jobs_(jobs) {}

Notifier::~Notifier() { Close(); }

Status Notifier::Configure() {
  for (const NotifyChannelConfig& c : ctx_->config.notify_channels) {
    Channel ch;
    if (c.type == "email") {
      notify::EmailChannel e;
      e.name = c.name;
      e.url = c.url;
      e.from = c.from;
      e.to = c.to;
      e.username = c.username;
      if (!c.password_file.empty()) {
        Result<std::string> p = ReadSecret(c.name, c.password_file, "password_file");
        if (!p.ok()) return p.status();
        e.password = *p;
      }
      e.starttls = c.starttls == "try"  ? notify::EmailChannel::Tls::kTry
                   : c.starttls == "no" ? notify::EmailChannel::Tls::kNone
                                        : notify::EmailChannel::Tls::kRequired;
      e.ca_file = c.ca_file;
      e.timeout_ms = c.timeout.count();
      // A channel used only through mailto: targets may list nobody itself.
      notify::EmailChannel check = e;
      if (check.to.empty()) check.to = {check.from};
      if (Status s = notify::CheckEmailChannel(check); !s.ok()) return s;
      ch.email = std::move(e);
    } else {
      notify::WebhookChannel w;
      w.name = c.name;
      w.url = c.url;
      if (!c.secret_file.empty()) {
        Result<std::string> k = ReadSecret(c.name, c.secret_file, "secret_file");
        if (!k.ok()) return k.status();
        w.secret = *k;
      }
      w.ca_file = c.ca_file;
      w.timeout_ms = c.timeout.count();
      if (Status s = notify::CheckWebhookChannel(w); !s.ok()) return s;
      ch.webhook = std::move(w);
    }
    channels_[c.name] = std::move(ch);
  }
  return Status::Ok();
}

void Notifier::Start() {
  if (started_) return;
  started_ = true;
  timer_ = std::make_unique<uvx::Timer>(ctx_->loop);
  kick_ = std::make_unique<uvx::Timer>(ctx_->loop);
  timer_->Every(1000, [this] { Pump(); });
  overdue_timer_ = std::make_unique<uvx::Timer>(ctx_->loop);
  overdue_timer_->Every(10'000, [this] {
    if (on_overdue_check && ctx_->store->held()) on_overdue_check();
  });
  Kick();
}

void Notifier::Close() {
  started_ = false;
  recording_ = false;
  if (timer_) timer_->Stop();
  if (kick_) kick_->Stop();
  if (overdue_timer_) overdue_timer_->Stop();
  if (in_flight_ != nullptr) {
    // The worker may be sending: its outcome is dropped and the row stays pending, so it is
    // delivered again after a restart (at least once).
    in_flight_->self = nullptr;
    in_flight_ = nullptr;
  }
}

void Notifier::Clear() { alerts_.clear(); }

Status Notifier::Load() {
  alerts_.clear();
  return ctx_->store->ForEachAlertState(
      [this](int64_t job, const AlertState& a) { alerts_[job] = a; });
}

bool Notifier::HasChannel(const std::string& name) const { return channels_.contains(name); }

bool Notifier::OverdueAlerted(int64_t job_id) const {
  auto it = alerts_.find(job_id);
  return it != alerts_.end() && it->second.overdue_sent_ms != 0;
}

std::string Notifier::TargetProblem(const std::string& target) const {
  if (target.starts_with(kMailto)) {
    if (ctx_->config.mailto_channel.empty()) {
      return fmt::format(
          "\"{}\" needs mailto_channel in the coordinator's coordinator.toml (the email channel "
          "that sends to mailto: addresses)",
          target);
    }
    return "";
  }
  if (channels_.contains(target)) return "";
  std::string known;
  for (const auto& [name, ch] : channels_) known += (known.empty() ? "" : ", ") + name;
  return fmt::format("no channel \"{}\" in the coordinator's coordinator.toml ({})", target,
                     known.empty() ? "it has no [notify.NAME] channel" : "it has " + known);
}

Result<Notifier::Channel> Notifier::ChannelFor(const std::string& target) const {
  if (target.starts_with(kMailto)) {
    auto it = channels_.find(ctx_->config.mailto_channel);
    if (it == channels_.end() || !it->second.email) {
      return Status::InvalidArgument("no mailto_channel in coordinator.toml to send " + target);
    }
    Channel ch = it->second;
    ch.email->to = {target.substr(kMailto.size())};
    return ch;
  }
  auto it = channels_.find(target);
  if (it == channels_.end()) {
    return Status::InvalidArgument("no channel \"" + target + "\" in coordinator.toml");
  }
  if (it->second.email && it->second.email->to.empty()) {
    return Status::InvalidArgument("notify channel \"" + target +
                                   "\" has no \"to\": it sends only to mailto: targets");
  }
  return it->second;
}

std::string Notifier::ChannelLabel(const std::string& target) const {
  std::string name = target.starts_with(kMailto) ? ctx_->config.mailto_channel : target;
  return channels_.contains(name) ? name : "unknown";
}

// ---- Writing notifications (in the turn of the change) -----------------------------------

void Notifier::SaveAlertState(int64_t job_id, const AlertState& before, const AlertState& after) {
  if (before == after) return;
  ctx_->batch->Stage([&] { return ctx_->store->PutAlertState(job_id, after); });
}

void Notifier::Enqueue(JobEntry& job, const NotifyPolicy& notify, const Alert& alert,
                       int64_t run_id, const std::string& detail) {
  int64_t now = ctx_->NowMs();
  for (const std::string& target : notify.to) {
    store::NotificationRow row;
    row.created_ms = now;
    row.job_id = job.id;
    row.job = std::string(job.name);
    row.run_id = run_id;
    row.event = std::string(NotifyEventName(alert.event));
    row.reminder = alert.reminder;
    row.failures = alert.failures;
    row.failing_since_ms = alert.failing_since_ms;
    row.detail = Bounded(detail, kMaxDetail);
    row.target = target;
    row.next_ms = now;
    ctx_->batch->Stage([&] { return ctx_->store->InsertNotification(row); });
  }
  ctx_->metrics->notifications_queued_total += notify.to.size();
  ctx_->batch->OnCommit([this](const Status& s) {
    if (s.ok()) Kick();
  });
}

void Notifier::RunEnded(JobEntry& job, const NotifyPolicy& notify, const RunRecord& run) {
  if (notify.to.empty() || !started_) return;
  AlertState& state = alerts_[job.id];
  AlertState before = state;
  std::optional<Alert> alert = OnRunEnded(state, run.state, notify, ctx_->NowMs());
  SaveAlertState(job.id, before, state);
  if (alert) Enqueue(job, notify, *alert, run.id, run.note);
}

void Notifier::Notice(JobEntry& job, const NotifyPolicy& notify, NotifyEvent event, int64_t run_id,
                      const std::string& detail) {
  if (notify.to.empty() || !started_) return;
  AlertState& state = alerts_[job.id];
  AlertState before = state;
  std::optional<Alert> alert = OnNotice(state, event, notify, ctx_->NowMs());
  SaveAlertState(job.id, before, state);
  if (alert) Enqueue(job, notify, *alert, run_id, detail);
}

void Notifier::Overdue(JobEntry& job, const NotifyPolicy& notify, bool overdue,
                       const std::string& detail) {
  if (notify.to.empty() || !started_) return;
  AlertState& state = alerts_[job.id];
  AlertState before = state;
  std::optional<Alert> alert = OnOverdueCheck(state, overdue, notify, ctx_->NowMs());
  SaveAlertState(job.id, before, state);
  if (alert) Enqueue(job, notify, *alert, 0, detail);
}

// ---- Delivering (after the commit) -------------------------------------------------------

void Notifier::Kick() {
  if (kick_ && started_) kick_->Once(0, [this] { Pump(); });
}

notify::Notification Notifier::Facts(const store::NotificationRow& row) {
  notify::Notification n;
  n.delivery_id = fmt::format("jobctl-{}-{}", row.id, row.created_ms);
  n.created_ms = row.created_ms;
  n.event = row.event;
  n.reminder = row.reminder;
  n.failures_since = static_cast<int>(row.failures);
  n.failing_since_ms = row.failing_since_ms;
  n.job = row.job;
  n.run_id = row.run_id;
  n.detail = row.detail;
  n.coordinator = ctx_->config.public_url;
  if (row.run_id == 0) return n;
  Result<std::optional<RunRecord>> run = ctx_->store->GetRun(row.run_id);
  if (!run.ok() || !*run) return n;  // pruned since: the row's own facts are what is left
  const RunRecord& r = **run;
  n.run_state = std::string(RunStateName(r.state));
  n.run_reason = std::string(RunReasonName(r.reason));
  n.trace_id = r.trace_id;
  n.scheduled_ms = r.scheduled_ms;
  n.finished_ms = r.finished_ms.value_or(0);
  bool pruned = false;
  if (ctx_->logs != nullptr) {
    Result<std::optional<store::RunOutput>> out = ctx_->logs->OutputOf(r.id);
    pruned = out.ok() && *out && (*out)->pruned_ms.has_value();
  }
  std::vector<const ShardRecord*> order;
  for (const ShardRecord& s : r.shards) order.push_back(&s);
  std::stable_partition(order.begin(), order.end(),
                        [](const ShardRecord* s) { return FailedShard(*s); });
  for (const ShardRecord* s : order) {
    if (s->outcome == kKeptOutcome) continue;  // it ran in the retried run
    if (s->started_ms && (n.started_ms == 0 || *s->started_ms < n.started_ms)) {
      n.started_ms = *s->started_ms;
    }
  }
  for (const ShardRecord* s : order) {
    if (n.shards.size() == 16) break;
    notify::ShardFacts f;
    f.index = s->index;
    f.host = s->agent;
    f.attempt = s->attempt;
    if (s->exit_code) f.exit_code = static_cast<int>(*s->exit_code);
    f.outcome = s->state == RunState::kTimedOut ? "timed out" : std::string(RunStateName(s->state));
    if (FailedShard(*s) && ctx_->logs != nullptr) {
      f.output_pruned = pruned;
      if (!pruned) {
        Result<std::string> tail = ctx_->logs->Tail(r.id, s->index, s->attempt, kTailBytes);
        if (tail.ok()) f.output_tail = std::move(*tail);
      }
    }
    n.shards.push_back(std::move(f));
  }
  return n;
}

void Notifier::Pump() {
  if (!started_ || in_flight_ != nullptr || recording_ || !ctx_->store->held()) return;
  // Rows this turn wrote are not committed yet: deliver only what the store holds.
  if (ctx_->store->in_transaction()) {
    kick_->Once(10, [this] { Pump(); });
    return;
  }
  int64_t now = ctx_->NowMs();
  Result<std::vector<store::NotificationRow>> due = ctx_->store->DueNotifications(now, 1);
  if (!due.ok()) {
    log::Warn("cannot read the notifications to deliver", {{"error", due.status().ToString()}});
    return;
  }
  if (due->empty()) return;
  auto d = std::make_unique<Delivery>();
  d->row = std::move(due->front());
  d->now_ms = now;
  Result<Channel> channel = ChannelFor(d->row.target);
  if (!channel.ok()) {
    d->result = channel.status();
    Finished(*d);
    return;
  }
  d->channel = std::move(*channel);
  d->facts = Facts(d->row);
  Deliver(std::move(d));
}

void Notifier::Deliver(std::unique_ptr<Delivery> d) {
  d->self = this;
  d->req.data = d.get();
  in_flight_ = d.get();
  int rc = uv_queue_work(ctx_->loop, &d->req, &Notifier::DoWork, &Notifier::AfterWork);
  if (rc != 0) {
    d->result = Status::Internal(std::string("cannot start a delivery: ") + uv_strerror(rc));
    Finished(*d);
    return;
  }
  d.release();  // AfterWork frees it
}

void Notifier::DoWork(uv_work_t* req) {
  auto* d = static_cast<Delivery*>(req->data);
  if (d->channel.email) {
    d->result = notify::SendEmail(*d->channel.email, d->facts, d->now_ms);
  } else if (d->channel.webhook) {
    d->result = notify::PostWebhook(*d->channel.webhook, d->facts, d->now_ms);
  }
}

void Notifier::AfterWork(uv_work_t* req, int status) {
  std::unique_ptr<Delivery> d(static_cast<Delivery*>(req->data));
  if (status == UV_ECANCELED) d->result = Status::Unavailable("delivery canceled");
  if (d->self != nullptr) d->self->Finished(*d);
}

void Notifier::Finished(Delivery& d) {
  in_flight_ = nullptr;
  std::string label = d.done ? d.facts.channel : ChannelLabel(d.row.target);
  if (d.result.ok()) {
    ++ctx_->metrics->notifications_sent_total[label];
  } else {
    ++ctx_->metrics->notification_failures_total[label];
  }
  if (d.done) {  // a test: nothing to record
    std::function<void(Status)> done = std::move(d.done);
    done(d.result);
    Kick();
    return;
  }
  store::NotificationRow& row = d.row;
  int64_t now = ctx_->NowMs();
  ++row.attempts;
  if (d.result.ok()) {
    row.state = "sent";
    row.done_ms = now;
    row.last_error.clear();
    log::Info("notification sent", {{"job", row.job},
                                    {"event", row.event},
                                    {"run", row.run_id},
                                    {"target", row.target},
                                    {"attempts", row.attempts}});
  } else {
    row.last_error = Bounded(d.result.message(), kMaxError);
    bool permanent = d.result.code() == Status::Code::kInvalidArgument;
    if (permanent || now - row.created_ms >= kGiveUpMs) {
      row.state = "failed";
      row.done_ms = now;
      ++ctx_->metrics->notifications_given_up_total[label];
      log::Error("notification given up", {{"job", row.job},
                                           {"event", row.event},
                                           {"target", row.target},
                                           {"attempts", row.attempts},
                                           {"error", row.last_error}});
    } else {
      row.next_ms = now + NotifyRetryDelayMs(row.attempts);
      log::Warn("notification not delivered; will retry", {{"job", row.job},
                                                           {"target", row.target},
                                                           {"attempts", row.attempts},
                                                           {"retry_in_ms", row.next_ms - now},
                                                           {"error", row.last_error}});
    }
  }
  Status s = ctx_->batch->Write([&] { return ctx_->store->UpdateNotification(row); });
  if (!s.ok()) return;  // the turn rolls back; the row stays due and is tried again
  recording_ = true;
  ctx_->batch->OnCommit([this](const Status&) {
    recording_ = false;
    Kick();
  });
}

void Notifier::Test(const std::string& channel, std::function<void(Status)> done) {
  auto it = channels_.find(channel);
  if (it == channels_.end()) {
    std::string known;
    for (const auto& [name, ch] : channels_) known += (known.empty() ? "" : ", ") + name;
    return done(Status::NotFound(fmt::format("no channel \"{}\" in coordinator.toml ({})", channel,
                                             known.empty() ? "none" : known)));
  }
  if (in_flight_ != nullptr) {
    return done(Status::Unavailable("a delivery is in progress; try again in a moment"));
  }
  auto d = std::make_unique<Delivery>();
  d->channel = it->second;
  if (d->channel.email && d->channel.email->to.empty()) {
    return done(Status::InvalidArgument("notify channel \"" + channel +
                                        "\" has no \"to\": it sends only to mailto: targets"));
  }
  d->now_ms = ctx_->NowMs();
  d->facts.delivery_id = fmt::format("jobctl-test-{}", d->now_ms);
  d->facts.created_ms = d->now_ms;
  d->facts.event = "test";
  d->facts.channel = channel;
  d->facts.coordinator = ctx_->config.public_url;
  d->done = std::move(done);
  Deliver(std::move(d));
}

}  // namespace jobctl::coordinator
