// RunReporter reports how each attempt ended (POST /v1/agent/result), after the attempt's
// last log chunk was acknowledged, and retries with backoff until the coordinator answers.
// When the coordinator takes batches (its claim replies say so: SetBatchLimit), the results
// ready at a time go in one POST /v1/agent/results, one batch in flight, so a burst of short
// shards costs one request and one commit per round trip instead of one per shard; a
// coordinator that does not know the route (an older one, after a failover) gets them one
// by one again.
// Every result is first written to the state dir (results/journal, ResultJournal), so an
// agentd restart still reports it; it is struck from there once the coordinator acknowledged
// the result or refused it for good (409 stale token, 4xx).
//
// Loop thread only; owned by the Agent. on_done fires once per result, when it is settled.
#pragma once

#include <uv.h>

#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "assignment.h"
#include "backoff.h"
#include "coordinator_link.h"
#include "result_journal.h"
#include "uvx/handles.h"

namespace jobctl::agentd {

class RunReporter {
 public:
  static constexpr int kMaxInFlight = 8;     // single results
  static constexpr size_t kMaxBatch = 1000;  // results per batch, at most
  // A batch stops growing past this many bytes: well inside the coordinator's 1 MiB body.
  static constexpr size_t kMaxBatchBytes = 512 * 1024;

  // `random` (not owned; nullptr: the retry backoff's own) draws the retry delays.
  RunReporter(uv_loop_t* loop, CoordinatorLink* link, std::string dir, std::string agent,
              std::function<void(const ShardResult&, bool accepted)> on_done,
              Random* random = nullptr);

  // Creates the directory and loads the results a previous agentd did not get to report.
  Status Open();
  std::vector<AttemptKey> Pending() const;

  // Persists a result and holds it until Release.
  void Add(const ShardResult& result);
  // The attempt's output is all in and ends at `output_seq` (the result keeps the larger of
  // this and any end it already had): send (and retry) its result. Unknown keys are ignored.
  void Release(AttemptKey key, int64_t output_seq);
  // The lease is gone (stale): forget the result.
  void Drop(AttemptKey key);
  void Close();
  // The most results the coordinator takes per request (0: one per request, the default).
  void SetBatchLimit(size_t results);

  bool idle() const { return results_.empty(); }
  size_t batch_limit() const { return batch_limit_; }

 private:
  struct Entry {
    ShardResult result;
    std::string json;  // ResultToJson(result): the body, and the file's content
    bool released = false;
    bool in_flight = false;
  };
  Status Persist(AttemptKey key, const std::string& json);
  // Struck from the journal: a restart does not report it.
  void Forget(AttemptKey key);
  void SendMore();
  void SendBatch();
  void OnReply(AttemptKey key, Result<http::HttpResponse> r);
  void OnBatchReply(std::vector<AttemptKey> keys, Result<http::HttpResponse> r);
  // Sends again later, in the same order, after a failure of the coordinator.
  void Retry(const std::vector<AttemptKey>& keys, int64_t at_least_ms = 0);
  void Settle(AttemptKey key, bool accepted);

  CoordinatorLink* link_;
  ResultJournal journal_;
  std::string agent_;
  std::function<void(const ShardResult&, bool)> on_done_;
  std::map<AttemptKey, Entry> results_;
  std::deque<AttemptKey> ready_;  // released, waiting to be sent
  int in_flight_ = 0;
  size_t batch_limit_ = 0;
  bool paused_ = false;
  bool closed_ = false;
  Backoff backoff_;
  uvx::Timer retry_timer_;
};

}  // namespace jobctl::agentd
