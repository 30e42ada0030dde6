// A key table is how lib/config reads a TOML table whose keys it knows: jobs.toml (a job,
// [defaults], a job's retry and each parameter), agentd.toml, coordinator.toml and jobctl's
// own config file. A reader declares each key once, as one KeySpec in an array: its name and
// the function that reads its value. ReadKeys walks a table, hands each value to its key's
// function and reports each unknown key, with the closest known key or else the list of
// known keys, both taken from that same array. Every problem names where it is (file, line,
// column) and the key's path ("retry.max").
//
// The functions report to a sink: KeyProblems for the flat config files, a reader's own type
// where it keeps more (jobs.toml's Scope adds the job's name). A sink has
//   void Fail(const toml::source_region& at, std::string_view key, std::string_view message);
// Only lib/config uses this header (it includes toml++). Pure; any thread.
#pragma once

#include <toml++/toml.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "base/status.h"

namespace jobctl {

// Which tables may hold a key, in a file with a table of defaults ([defaults] in jobs.toml):
// a defaults table takes only kAnywhere keys.
enum class KeyPlace { kAnywhere, kNotInDefaults };

template <typename Target, typename Sink>
struct KeySpec {
  // Reads `value` into `target` and reports its problems to `sink`, naming `key`: the key's
  // path from the top of the file ("retry.max", "labels.role" for a value inside it).
  using Read = void (*)(const toml::node& value, std::string_view key, Sink& sink, Target& target);
  std::string_view name;
  Read read;  // nullptr: read elsewhere (a job's name, which the job's messages show)
  KeyPlace place = KeyPlace::kAnywhere;
};

// Where a table sits. `parent` is its key path ("" at the top of the file or of a job,
// "retry" below it). A non-empty `defaults_note` makes it a table of defaults: a key placed
// kNotInDefaults is refused with that note.
struct KeyScope {
  std::string_view parent;
  std::string_view defaults_note;
};

// The text in double quotes, with quotes, backslashes and control characters escaped.
std::string Quote(std::string_view s);
// " (did you mean "x"?)" for the candidate closest to `word`, or "" when none is close.
std::string DidYouMean(std::string_view word, std::span<const std::string_view> candidates);
// "a, b or c".
std::string ListOfNames(std::span<const std::string_view> names);
// `unknown key "colr" (did you mean "color"?)`, or `unknown key "x" (expected a, b or c)`
// when no known key is close.
std::string UnknownKeyMessage(std::string_view key, std::span<const std::string_view> known);
// "parent.key", or "key" at the top.
std::string KeyPath(std::string_view parent, std::string_view key);

template <typename Target, typename Sink>
const KeySpec<Target, Sink>* FindKey(std::span<const KeySpec<Target, Sink>> specs,
                                     std::string_view name) {
  for (const KeySpec<Target, Sink>& spec : specs) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

// The names of the keys `scope` may hold, in the table's order.
template <typename Target, typename Sink>
std::vector<std::string_view> KeyNames(std::span<const KeySpec<Target, Sink>> specs,
                                       KeyScope scope = {}) {
  std::vector<std::string_view> names;
  for (const KeySpec<Target, Sink>& spec : specs) {
    if (scope.defaults_note.empty() || spec.place == KeyPlace::kAnywhere) {
      names.push_back(spec.name);
    }
  }
  return names;
}

// Reads every key of `t` with its spec. Unknown keys are reported at the key, with the names
// the scope may hold (a defaults table does not suggest a key it refuses).
template <typename Target, typename Sink>
void ReadKeys(const toml::table& t, std::span<const KeySpec<Target, Sink>> specs, Sink& sink,
              Target& target, KeyScope scope = {}) {
  for (auto&& [key, value] : t) {
    const KeySpec<Target, Sink>* spec = FindKey(specs, key.str());
    if (spec == nullptr) {
      sink.Fail(key.source(), scope.parent, UnknownKeyMessage(key.str(), KeyNames(specs, scope)));
    } else if (!scope.defaults_note.empty() && spec->place == KeyPlace::kNotInDefaults) {
      sink.Fail(key.source(), KeyPath(scope.parent, key.str()), scope.defaults_note);
    } else if (spec->read != nullptr) {
      spec->read(value, KeyPath(scope.parent, key.str()), sink, target);
    }
  }
}

// For a C array of specs: ReadKeys(root, kAgentKeys, problems, config).
template <typename Target, typename Sink, size_t N>
void ReadKeys(const toml::table& t, const KeySpec<Target, Sink> (&specs)[N], Sink& sink,
              Target& target, KeyScope scope = {}) {
  ReadKeys(t, std::span<const KeySpec<Target, Sink>>(specs), sink, target, scope);
}

// The sink of a flat config file: each problem as "file:line:column: key: message", all of
// them in one InvalidArgument, one per line in the order of the file.
class KeyProblems {
 public:
  explicit KeyProblems(std::string_view file) : file_(file) {}

  // `key` "" leaves out the "key: ".
  void Fail(const toml::source_region& at, std::string_view key, std::string_view message);
  void Fail(const toml::node& at, std::string_view key, std::string_view message) {
    Fail(at.source(), key, message);
  }
  // Fail(at, key, "expected " + what): the value is not what the key takes.
  void Expected(const toml::node& at, std::string_view key, std::string_view what);

  bool empty() const { return problems_.empty(); }
  size_t size() const { return problems_.size(); }
  // Ok when there is no problem.
  Status ToStatus() const;

 private:
  struct Problem {
    int64_t line;
    int64_t column;
    std::string text;
  };
  std::string file_;
  std::vector<Problem> problems_;
};

// Parses TOML text; a syntax error is an InvalidArgument "file:line:column: what is wrong".
// toml++ reports those only by throwing, and this is where the flat config files catch it.
Result<toml::table> ParseTomlFile(std::string_view text, std::string_view filename);

}  // namespace jobctl
