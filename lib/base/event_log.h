// EventLog appends what a daemon decided to a file, one JSON object per line, for the fault
// suite's checker (tests/fault) and for anyone auditing a history. Off unless a path is given
// (`jobctl serve --event-log`, `agentd --event-log`): a disabled EventLog renders nothing, so
// a hook costs one branch.
//
// Every line is one write(2) on an O_APPEND descriptor: lines are never torn or interleaved,
// even when several processes share the file, and a kill -9 loses nothing already written
// (the page cache outlives the process; no fsync, a power loss may lose the tail).
//
//   {"src":"coord","pid":812,"mono_ns":5123000000,"wall_ms":1718000000000,"ev":"grant",
//    "run":7,"shard":0,"attempt":1,"agent":"a","token":42}
//
// `mono_ns` is CLOCK_MONOTONIC, comparable between the processes of one machine; `wall_ms`
// the realtime clock. Both are stamped when the line is written. The events and their fields
// are listed in tests/fault/README.md. Loop thread only.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "base/status.h"

namespace jobctl {

// One "key":value pair of an event; strings are escaped, integers written as they are.
struct EventField {
  EventField(std::string_view k, int64_t v) : key(k), number(v) {}
  EventField(std::string_view k, int v) : key(k), number(v) {}
  EventField(std::string_view k, uint64_t v) : key(k), number(static_cast<int64_t>(v)) {}
  EventField(std::string_view k, bool v) : key(k), is_bool(true), number(v) {}
  EventField(std::string_view k, std::string_view v) : key(k), is_text(true), text(v) {}
  EventField(std::string_view k, const std::string& v) : key(k), is_text(true), text(v) {}
  EventField(std::string_view k, const char* v) : key(k), is_text(true), text(v) {}

  std::string_view key;
  bool is_text = false;
  bool is_bool = false;
  int64_t number = 0;
  std::string_view text;
};
using EventFields = std::initializer_list<EventField>;

class EventLog {
 public:
  EventLog() = default;  // disabled
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  // Opens (creates) `path` for appending. `src` names the writer ("coord", "agent",
  // "probe"); `fixed` fields go into every line (an agent's name). An empty path leaves the
  // log disabled.
  Status Open(const std::string& path, std::string_view src, EventFields fixed = {});
  bool enabled() const { return fd_ >= 0; }

  void Write(std::string_view ev, EventFields fields) const {
    if (enabled()) WriteRendered(Render(ev, fields));
  }
  // For an event that may only be written later (after a commit): the fields are rendered
  // now, the time when WriteRendered() writes the line.
  std::string Render(std::string_view ev, EventFields fields) const;
  void WriteRendered(std::string_view rendered) const;

 private:
  int fd_ = -1;
  std::string prefix_;  // {"src":...,"pid":...,
  mutable bool warned_ = false;
};

// Appends `s` as a JSON string literal (quotes included) to `out`.
void AppendJsonString(std::string* out, std::string_view s);

// CLOCK_MONOTONIC in nanoseconds: the clock of every event line.
int64_t MonotonicNs();

}  // namespace jobctl
