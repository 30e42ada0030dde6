#include "wire/log_batch.h"

#include <algorithm>
#include <charconv>

namespace jobctl::wire {
namespace {

// A decimal number of at most 19 digits (no sign), taking it off the front of `s`.
bool TakeNumber(std::string_view* s, int64_t* out) {
  const char* end = s->data() + std::min<size_t>(s->size(), 19);
  auto [ptr, ec] = std::from_chars(s->data(), end, *out);
  if (ec != std::errc() || ptr == s->data() || *out < 0) return false;
  s->remove_prefix(static_cast<size_t>(ptr - s->data()));
  return true;
}

bool TakeSpace(std::string_view* s) {
  if (s->empty() || s->front() != ' ') return false;
  s->remove_prefix(1);
  return true;
}

Status Bad(size_t index, std::string_view what) {
  return Status::InvalidArgument("log batch record " + std::to_string(index + 1) + ": " +
                                 std::string(what));
}

}  // namespace

void AppendLogRecord(std::string* body, int64_t seq, std::string_view stream, int64_t at_ms,
                     std::string_view data) {
  body->append(std::to_string(seq)).append(" ").append(stream).append(" ");
  body->append(std::to_string(at_ms)).append(" ").append(std::to_string(data.size()));
  body->push_back('\n');
  body->append(data);
}

Result<std::vector<LogRecord>> ParseLogBatch(std::string_view body) {
  std::vector<LogRecord> records;
  if (body.empty()) return Status::InvalidArgument("log batch is empty");
  while (!body.empty()) {
    size_t index = records.size();
    size_t newline = body.substr(0, kMaxLogRecordHeader).find('\n');
    if (newline == std::string_view::npos) return Bad(index, "header line missing or too long");
    std::string_view head = body.substr(0, newline);
    body.remove_prefix(newline + 1);
    LogRecord r;
    int64_t length = 0;
    if (!TakeNumber(&head, &r.seq) || r.seq < 1 || !TakeSpace(&head)) {
      return Bad(index, "expected \"<seq> <stream> <at_ms> <length>\"; seq is a number from 1");
    }
    size_t space = head.find(' ');
    r.stream = head.substr(0, space);
    if (r.stream != "stdout" && r.stream != "stderr" && r.stream != "marker") {
      return Bad(index, "stream is stdout, stderr or marker");
    }
    head.remove_prefix(space == std::string_view::npos ? head.size() : space);
    if (!TakeSpace(&head) || !TakeNumber(&head, &r.at_ms) || !TakeSpace(&head) ||
        !TakeNumber(&head, &length) || !head.empty()) {
      return Bad(index, "expected \"<seq> <stream> <at_ms> <length>\" with numbers");
    }
    if (static_cast<uint64_t>(length) > body.size())
      return Bad(index, "body ends inside the chunk");
    if (!records.empty() && r.seq <= records.back().seq) return Bad(index, "seqs must ascend");
    r.data = body.substr(0, static_cast<size_t>(length));
    body.remove_prefix(static_cast<size_t>(length));
    records.push_back(r);
  }
  return records;
}

}  // namespace jobctl::wire
