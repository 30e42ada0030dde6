// A log batch: several log chunks of one attempt in one request body, so that an agent can
// send a backlog (or output interleaved between stdout and stderr) in one round trip and one
// commit instead of one per chunk (POST /v1/agent/logs?...&batch=1, man jobctl-api(7)).
//
// The body is a sequence of records, each a header line and the chunk's bytes as they are:
//
//   <seq> <stream> <at_ms> <length>\n<length bytes>
//
// seq counts from 1 per attempt and ascends within a batch; stream is stdout, stderr or
// marker; at_ms is the unix ms of the chunk's first byte, 0 for none (the coordinator then
// uses its own clock). A batch holds at least one record. Pure; any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace jobctl::wire {

inline constexpr std::string_view kLogBatchContentType = "application/vnd.jobctl.log-batch";
// The largest batch body a coordinator takes (it says so in every claim reply, as
// "log_batch_bytes"; an agent that was not told sends one chunk per request).
inline constexpr size_t kMaxLogBatchBytes = size_t{4} << 20;
// A record header is at most this long, newline included.
inline constexpr size_t kMaxLogRecordHeader = 72;
// The largest seq an attempt's output may reach, and so the largest end of output a result
// may declare ("output_seq"): a billion chunks, far past any run's log cap.
inline constexpr int64_t kMaxOutputSeq = 1'000'000'000;

struct LogRecord {
  int64_t seq = 0;
  std::string_view stream;  // "stdout", "stderr" or "marker"
  int64_t at_ms = 0;
  std::string_view data;  // points into the body
};

void AppendLogRecord(std::string* body, int64_t seq, std::string_view stream, int64_t at_ms,
                     std::string_view data);
// The bytes a record of `data_bytes` takes in a body, at most.
inline size_t LogRecordSize(size_t data_bytes) { return kMaxLogRecordHeader + data_bytes; }

// Every record of `body`, or kInvalidArgument saying what is wrong (nothing is taken from a
// batch that does not parse whole).
Result<std::vector<LogRecord>> ParseLogBatch(std::string_view body);

}  // namespace jobctl::wire
