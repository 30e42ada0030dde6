#include "base/log.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace jobctl::log {
namespace {

// The only global of the project: configured once in main(), read on the loop thread.
struct State {
  Options options;
  bool journal = false;
  Sink sink;
};
State& GetState() {
  static State state;
  return state;
}

std::string_view LevelName(Level level) {
  switch (level) {
    case Level::kDebug: return "debug";
    case Level::kInfo: return "info";
    case Level::kWarn: return "warn";
    case Level::kError: return "error";
  }
  return "info";
}

// syslog priorities understood by journald's stderr prefix parsing.
int Priority(Level level) {
  switch (level) {
    case Level::kDebug: return 7;
    case Level::kInfo: return 6;
    case Level::kWarn: return 4;
    case Level::kError: return 3;
  }
  return 6;
}

bool NeedsQuotes(std::string_view v) {
  if (v.empty()) return true;
  for (char c : v) {
    if (c == ' ' || c == '"' || c == '=' || c == '\\' || static_cast<unsigned char>(c) < 0x20)
      return true;
  }
  return false;
}

void AppendValue(std::string& out, std::string_view v) {
  if (!NeedsQuotes(v)) {
    out += v;
    return;
  }
  out += '"';
  for (char c : v) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

bool StderrIsJournal() {
  const char* js = std::getenv("JOURNAL_STREAM");
  if (js == nullptr) return false;
  struct stat st {};
  if (fstat(STDERR_FILENO, &st) != 0) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(js, "%llu:%llu", &dev, &ino) != 2) return false;
  return dev == static_cast<unsigned long long>(st.st_dev) &&
         ino == static_cast<unsigned long long>(st.st_ino);
}

}  // namespace

Value::Value(double v) : text(fmt::format("{:.3f}", v)) {}

void Configure(const Options& options) {
  State& s = GetState();
  s.options = options;
  s.journal =
      options.format == Format::kJournal || (options.format == Format::kAuto && StderrIsJournal());
}

void SetSink(Sink sink) { GetState().sink = std::move(sink); }

std::string Render(Level level, std::string_view msg, Fields fields) {
  std::string out = "level=";
  out += LevelName(level);
  out += " msg=";
  AppendValue(out, msg);
  for (const Field& f : fields) {
    out += ' ';
    out += f.key;
    out += '=';
    AppendValue(out, f.value.text);
  }
  return out;
}

void Write(Level level, std::string_view msg, Fields fields) {
  State& s = GetState();
  if (level < s.options.min_level) return;
  std::string line = Render(level, msg, fields);
  if (s.sink) {
    s.sink(level, line);
    return;
  }
  std::string out;
  if (s.journal) {
    out = fmt::format("<{}>{}\n", Priority(level), line);
  } else {
    std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    char ts[32];
    std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    out = s.options.program.empty() ? fmt::format("{} {}\n", ts, line)
                                    : fmt::format("{} {}: {}\n", ts, s.options.program, line);
  }
  // One write per line keeps lines whole when several processes share a terminal.
  ssize_t ignored = ::write(STDERR_FILENO, out.data(), out.size());
  (void)ignored;
}

}  // namespace jobctl::log
