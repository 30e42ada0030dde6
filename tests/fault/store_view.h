// StoreView is what the checker reads from a coordinator's stores after a fault test (its
// data directory, or the PostgreSQL database several coordinators shared):
// the jobs (with their compiled schedules), every run with its shards, the recorded misses
// and the stored log chunks, all through lib/store's API. Tests of the checker build one by
// hand. Value type; any thread.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "base/status.h"
#include "model/job.h"
#include "model/run.h"
#include "model/schedule.h"
#include "store/log_store.h"
#include "store/store.h"

namespace jobctl::fault {

struct JobView {
  int64_t id = 0;
  Job spec;
  std::shared_ptr<const Schedule> schedule;
  std::optional<int64_t> next_fire_ms;  // the first instant not yet handled
  bool active = true;
  bool paused = false;
};

// (run, shard, attempt)
using AttemptId = std::tuple<int64_t, int, int>;

struct StoreView {
  std::map<std::string, JobView> jobs;  // by name
  std::vector<RunRecord> runs;          // oldest first, with shards
  std::vector<store::MissRow> misses;
  std::map<AttemptId, std::map<int64_t, store::LogChunk>> chunks;  // by seq

  const RunRecord* FindRun(int64_t id) const;
  const JobView* FindJob(int64_t id) const;
  // The attempt's stored bytes of one stream, in seq order.
  std::string Output(AttemptId attempt, store::LogStream stream) const;
};

// A JobView for `spec` with its schedule compiled (for hand-made views).
Result<JobView> MakeJobView(int64_t id, Job spec, std::optional<int64_t> next_fire_ms);

// Opens DIR/jobctl.db and DIR/logs.db (the coordinator must not be running) and reads them.
Result<StoreView> ReadStores(const std::string& data_dir);
// Reads a PostgreSQL store (postgresql://...) through the same API, once no coordinator
// holds it any more (opening it takes the hold).
Result<StoreView> ReadStoreAt(const std::string& url);

}  // namespace jobctl::fault
