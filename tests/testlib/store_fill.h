// FillStores writes ended runs and their output straight into a coordinator's embedded stores
// (DATA/jobctl.db and DATA/logs.db) through lib/store's API, as the coordinator would have:
// a store as a long-running fleet leaves it, made in seconds, for the retention tests. The
// coordinator must not be running; the jobs must exist (applied before). Header-only: a test
// that includes it links jobctl_store. Test thread only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "store/log_store.h"
#include "store/store.h"

namespace jobctl::testing {

// One ended run to write: its job (by name), when it ended, and its output (`chunks` chunks
// of `chunk_bytes` lines of text on stdout of shard 0, the last written just before the end).
struct RunToFill {
  std::string job;
  int64_t finished_ms = 0;
  int chunks = 1;
  int chunk_bytes = 4096;
};

struct FilledRun {
  int64_t run_id = 0;
  std::string job;
  int64_t finished_ms = 0;
  int64_t output_bytes = 0;
};

// Writes `runs` (in the order given: ids grow with it) in transactions of 500 runs; what was
// written, in the same order.
inline Result<std::vector<FilledRun>> FillStores(const std::string& data_dir,
                                                 const std::vector<RunToFill>& runs) {
  auto st = store::OpenStore({.path = data_dir + "/jobctl.db"});
  if (!st.ok()) return st.status();
  auto logs = store::OpenLogStore({.path = data_dir + "/logs.db", .run_cap_bytes = 1LL << 40});
  if (!logs.ok()) return logs.status();
  std::map<std::string, int64_t> ids;
  if (Status s = (*st)->ForEachJob([&](store::JobRow&& j) { ids[j.name] = j.id; }); !s.ok()) {
    return s;
  }
  const std::string line(63, 'o');
  std::vector<FilledRun> out;
  for (size_t first = 0; first < runs.size(); first += 500) {
    size_t last = std::min(runs.size(), first + 500);
    std::vector<RunRecord> recs;
    for (size_t i = first; i < last; ++i) {
      const RunToFill& p = runs[i];
      if (!ids.contains(p.job)) return Status::NotFound("job " + p.job);
      RunRecord r;
      r.job_id = ids[p.job];
      r.job = p.job;
      r.reason = RunReason::kManual;
      r.scheduled_ms = p.finished_ms - 30'000;
      r.created_ms = r.scheduled_ms;
      r.state = RunState::kSucceeded;
      r.trace_id = std::string(32, 'a');
      r.idempotency_key = "fill-" + std::to_string(i);
      r.finished_ms = p.finished_ms;
      ShardRecord s;
      s.state = RunState::kSucceeded;
      s.agent = "host-" + std::to_string(i % 50);
      s.token = static_cast<int64_t>(i) + 1;
      s.exit_code = 0;
      s.outcome = "exited";
      s.started_ms = r.scheduled_ms;
      s.finished_ms = p.finished_ms;
      r.shards.push_back(s);
      recs.push_back(std::move(r));
    }
    std::vector<bool> inserted;
    if (Status s = (*st)->Begin(); !s.ok()) return s;
    if (Status s = (*st)->InsertRuns(recs, inserted); !s.ok()) return s;
    if (Status s = (*st)->Commit(); !s.ok()) return s;
    if (Status s = (*logs)->Begin(); !s.ok()) return s;
    for (size_t i = first; i < last; ++i) {
      const RunToFill& p = runs[i];
      const RunRecord& r = recs[i - first];
      if (!inserted[i - first])
        return Status::Conflict("run " + std::to_string(i) + " not inserted");
      std::string data;
      while (data.size() < static_cast<size_t>(p.chunk_bytes)) data += line + "\n";
      data.resize(static_cast<size_t>(p.chunk_bytes));
      for (int c = 0; c < p.chunks; ++c) {
        store::LogChunk chunk{.run_id = r.id,
                              .seq = c + 1,
                              .at_ms = p.finished_ms - 1000 + c,
                              .data = data,
                              .job_id = r.job_id};
        if (Result<store::LogStore::AppendResult> a = (*logs)->Append(chunk); !a.ok()) {
          return a.status();
        }
      }
      out.push_back({r.id, p.job, p.finished_ms, int64_t{p.chunks} * p.chunk_bytes});
    }
    if (Status s = (*logs)->Commit(); !s.ok()) return s;
  }
  return out;
}

}  // namespace jobctl::testing
