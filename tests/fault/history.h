// History is what the processes of a fault test wrote to their event logs (see
// lib/base/event_log.h), read back for the checker: the coordinator's lines in the order it
// wrote them (one file across restarts), each agent's lines, and the probe jobs' lines.
// Value types; any thread.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"

namespace jobctl::fault {

struct Event {
  std::string src;  // "coord", "agent", "probe"
  std::string ev;
  int64_t pid = 0;
  int64_t mono_ns = 0;
  int64_t wall_ms = 0;
  nlohmann::json fields;  // the whole line
  std::string where;      // "FILE:LINE", for reports

  int64_t Int(const char* key, int64_t fallback = 0) const;
  std::string Str(const char* key) const;
  bool Has(const char* key) const { return fields.contains(key); }
};

struct History {
  std::vector<Event> coordinator;                    // in file order (MergeCoordinators)
  std::map<std::string, std::vector<Event>> agents;  // by agent name, in file order
  std::vector<Event> probes;                         // in file order
  int torn_lines = 0;  // last lines of writers killed mid-write (skipped)
};

// Parses JSON lines (`name` is used in Event::where). A line that is not a JSON object with
// src, ev and mono_ns is an error naming it, unless it is the torn last line of a killed
// writer: at the end of the text (with or without its newline), or followed by another
// process's lines (a restarted writer ends the torn line first); those are counted and skipped.
Status ParseEvents(const std::string& text, const std::string& name, History* into);
// The coordinators' lines of several event logs (several coordinators on one database, each
// writing its own) merged into one sequence in the order the database saw them, each log's
// lines kept in its own order: a commit and the lines after it (the events it made true) at
// the instant its transaction began (the commit line's began_ns), other lines at their
// mono_ns. Each line gets that instant as the field order_ns (CommitOrderNs).
void MergeCoordinators(History* h);
int64_t CommitOrderNs(const Event& e);  // order_ns, else mono_ns
// Reads and parses each file (then MergeCoordinators); a missing file is an error.
Result<History> ReadHistory(const std::vector<std::string>& paths);

}  // namespace jobctl::fault
