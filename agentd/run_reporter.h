// RunReporter reports how each attempt ended (POST /v1/agent/result), after the attempt's
// last log chunk was acknowledged, and retries with backoff until the coordinator answers.
// Every result is first written to the state dir (results/r<run>-s<shard>-a<attempt>.json,
// by rename), so an agentd restart still reports it; the file goes once the coordinator
// acknowledged the result or refused it for good (409 stale token, 4xx).
//
// Loop thread only; owned by the Agent. on_done fires once per result, when it is settled.
#pragma once

#include <uv.h>

#include <deque>
#include <functional>
#include <map>
#include <string>

#include "assignment.h"
#include "backoff.h"
#include "coordinator_link.h"
#include "timer.h"

namespace jobctl::agentd {

class RunReporter {
 public:
  static constexpr int kMaxInFlight = 8;

  RunReporter(uv_loop_t* loop, CoordinatorLink* link, std::string dir, std::string agent,
              std::function<void(const ShardResult&, bool accepted)> on_done);

  // Creates the directory and loads the results a previous agentd did not get to report.
  Status Open();
  std::vector<AttemptKey> Pending() const;

  // Persists a result and holds it until Release.
  void Add(const ShardResult& result);
  // The attempt's output is all in: send (and retry) its result. Unknown keys are ignored.
  void Release(AttemptKey key);
  // The lease is gone (stale): forget the result.
  void Drop(AttemptKey key);
  void Close();

  bool idle() const { return results_.empty(); }

 private:
  struct Entry {
    ShardResult result;
    bool released = false;
    bool in_flight = false;
  };
  std::string PathFor(AttemptKey key) const;
  Status Persist(const ShardResult& r);
  void SendMore();
  void OnReply(AttemptKey key, Result<http::HttpResponse> r);
  void Settle(AttemptKey key, bool accepted);

  CoordinatorLink* link_;
  std::string dir_;
  std::string agent_;
  std::function<void(const ShardResult&, bool)> on_done_;
  std::map<AttemptKey, Entry> results_;
  std::deque<AttemptKey> ready_;  // released, waiting to be sent
  int in_flight_ = 0;
  bool paused_ = false;
  bool closed_ = false;
  Backoff backoff_{500, 30'000};
  Timer retry_timer_;
};

}  // namespace jobctl::agentd
