// Notifier turns run ends, misses, skips, lost agents and overdue jobs into notifications
// (jobs.toml notify, notify_on, repeat_after; model/notify.h decides when) and delivers them
// to the channels of coordinator.toml ([notify.NAME]; lib/notify sends).
//
// Nothing is lost: a notification is a row of the store's outbox written in the same turn,
// so the same commit, as the change that caused it, together with the job's AlertState. A
// delivery happens after that commit, on a worker thread (a slow or failing destination
// never holds the loop, so never a fire), one at a time, and is marked sent or retried with
// backoff in a later commit: at least once, also across a restart or a takeover; receivers
// de-duplicate on the delivery id. A row still failing a day after it was written is given
// up and kept as failed, with its last error, for `jobctl notifications`. Only the holder
// of the store delivers. Loop thread only; owned by the Coordinator.
#pragma once

#include <uv.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "base/status.h"
#include "coordinator/context.h"
#include "coordinator/job_index.h"
#include "model/job.h"
#include "model/notify.h"
#include "model/run.h"
#include "notify/notification.h"
#include "store/rows.h"
#include "uvx/handles.h"

namespace jobctl::coordinator {

class Notifier {
 public:
  // Retries: after 10 s, 30 s, 1 min, 2 min, 5 min, 10 min, 30 min, then hourly, until a
  // row is kGiveUpMs old.
  static constexpr int64_t kGiveUpMs = 24LL * 3600 * 1000;
  static constexpr size_t kTailBytes = 2048;  // of each failed shard's output

  Notifier(Context* ctx, JobIndex* jobs);
  ~Notifier();
  Notifier(const Notifier&) = delete;
  Notifier& operator=(const Notifier&) = delete;

  // Reads each channel's password_file or secret_file and checks the channel (at start);
  // an error names the channel and the file.
  Status Configure();
  // The holder: arms delivery and the overdue check. Load first.
  void Start();
  void Close();
  void Clear();
  // Each job's AlertState, from the store.
  Status Load();

  // In the turn (the write batch) of the change, with the job's (or flow's) notify keys;
  // each does nothing for one that notifies nobody.
  void RunEnded(JobEntry& job, const NotifyPolicy& notify, const RunRecord& run);
  void Notice(JobEntry& job, const NotifyPolicy& notify, NotifyEvent event, int64_t run_id,
              const std::string& detail);
  // The overdue check of one job: `overdue` says whether it is now, `detail` how long.
  void Overdue(JobEntry& job, const NotifyPolicy& notify, bool overdue, const std::string& detail);

  // "" when a job may name `target` (a channel of coordinator.toml, or mailto: with a
  // mailto_channel set); else why not.
  std::string TargetProblem(const std::string& target) const;
  // jobctl notify test CHANNEL: delivers a test notification through `channel` now, outside
  // the outbox, and calls `done` with the outcome (on the loop thread).
  void Test(const std::string& channel, std::function<void(Status)> done);
  bool HasChannel(const std::string& name) const;
  // Whether coordinator.toml has any channel: without one no job can be notified, and the
  // callers skip reading a job's definition for it.
  bool HasChannels() const { return !channels_.empty(); }
  // Whether the job's overdue alert is open (so that the check must also see it end).
  bool OverdueAlerted(int64_t job_id) const;

  // Called every 10 s on the holder: the Coordinator checks its jobs' dead-man's switches
  // (expect_success_within) and calls Overdue.
  std::function<void()> on_overdue_check;

 private:
  struct Delivery;
  struct Channel {
    std::optional<notify::EmailChannel> email;
    std::optional<notify::WebhookChannel> webhook;
  };
  void Enqueue(JobEntry& job, const NotifyPolicy& notify, const Alert& alert, int64_t run_id,
               const std::string& detail);
  void SaveAlertState(int64_t job_id, const AlertState& before, const AlertState& after);
  void Kick();
  void Pump();
  // The channel a target goes through, with the mailto: address as its only recipient;
  // an error for an unknown channel.
  Result<Channel> ChannelFor(const std::string& target) const;
  notify::Notification Facts(const store::NotificationRow& row);
  void Deliver(std::unique_ptr<Delivery> d);
  static void DoWork(uv_work_t* req);
  static void AfterWork(uv_work_t* req, int status);
  void Finished(Delivery& d);
  std::string ChannelLabel(const std::string& target) const;

  Context* ctx_;
  JobIndex* jobs_;
  std::map<std::string, Channel> channels_;
  std::map<int64_t, AlertState> alerts_;
  std::unique_ptr<uvx::Timer> timer_;
  std::unique_ptr<uvx::Timer> kick_;
  std::unique_ptr<uvx::Timer> overdue_timer_;
  Delivery* in_flight_ = nullptr;  // on the worker; owned by its uv_work_t until AfterWork
  // A delivery's outcome is written but not yet committed: the next one waits for it, so as
  // not to read that row as still due.
  bool recording_ = false;
  bool started_ = false;
};

// The retry delay after `attempts` failed attempts (pure).
int64_t NotifyRetryDelayMs(int64_t attempts);

}  // namespace jobctl::coordinator
