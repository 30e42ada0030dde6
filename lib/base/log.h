// One logging module for every binary: one line per event on stderr, as key=value.
//
//   log::Info("run finished", {{"job", job}, {"run", run}, {"exit", code}});
//   -> level=info msg="run finished" job=backup run=r-81f2 exit=0
//
// Under journald (JOURNAL_STREAM set) lines start with a <N> priority prefix and carry no
// time of their own; on a terminal they start with the local time. main() configures the
// logger once; tests may install a sink to capture lines. Not thread-safe by design: every
// daemon has one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>

namespace jobctl::log {

enum class Level { kDebug, kInfo, kWarn, kError };

// A value of any common type, rendered once into text.
struct Value {
  Value(std::string_view s) : text(s) {}          // NOLINT
  Value(const std::string& s) : text(s) {}        // NOLINT
  Value(const char* s) : text(s) {}               // NOLINT
  Value(int64_t v) : text(std::to_string(v)) {}   // NOLINT
  Value(int v) : text(std::to_string(v)) {}       // NOLINT
  Value(uint64_t v) : text(std::to_string(v)) {}  // NOLINT
  Value(unsigned v) : text(std::to_string(v)) {}  // NOLINT
  Value(double v);                                // NOLINT
  Value(bool v) : text(v ? "true" : "false") {}   // NOLINT
  std::string text;
};

struct Field {
  std::string_view key;
  Value value;
};
using Fields = std::initializer_list<Field>;

enum class Format { kAuto, kJournal, kPlain };

struct Options {
  Level min_level = Level::kInfo;
  Format format = Format::kAuto;
  std::string program;  // prefix shown in plain format, e.g. "agentd"
};
void Configure(const Options& options);

// Replaces stderr output; pass an empty function to restore it. For tests.
using Sink = std::function<void(Level, const std::string& line)>;
void SetSink(Sink sink);

// Renders one line without the level prefix: msg="..." k=v ... (for tests and reuse).
std::string Render(Level level, std::string_view msg, Fields fields);

void Write(Level level, std::string_view msg, Fields fields);
inline void Debug(std::string_view m, Fields f = {}) { Write(Level::kDebug, m, f); }
inline void Info(std::string_view m, Fields f = {}) { Write(Level::kInfo, m, f); }
inline void Warn(std::string_view m, Fields f = {}) { Write(Level::kWarn, m, f); }
inline void Error(std::string_view m, Fields f = {}) { Write(Level::kError, m, f); }

}  // namespace jobctl::log
