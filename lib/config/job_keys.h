// The reading of job keys shared by the readers of jobs.toml: a [[job]], [defaults] and a
// flow's steps (config/flow_file.h). Values are read by small functions from a key table
// (kJobKeys, kRetryKeys, kParamKeys; key_table.h reads them and reports unknown keys, as for
// every config file) into a Draft, a Job under construction; problems go to a Scope, which
// prefixes each message with the key's path and counts the errors of the table it reads.
// Internal to lib/config (it includes toml++). Pure; any thread.
#pragma once

#include <fmt/format.h>
#include <toml++/toml.h>

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/job_file.h"
#include "config/key_table.h"
#include "model/job.h"
#include "model/time_format.h"

namespace jobctl::jobs_toml {

using Node = toml::node;
using Key = std::string_view;  // a key path relative to the scope: "timeout", "retry.max"

// The value as it would read in TOML, so "got ..." shows what the user wrote: strings in
// double quotes, numbers and dates as toml++ prints them (hex stays hex), cut at 60
// characters; "a table" for a table.
std::string Render(const Node& n);

// ---- Reporting ---------------------------------------------------------------------------

// What a diagnostic is about: a job, or a flow and maybe one of its steps (valid names only).
struct Subject {
  std::string job, flow, step;
};

class Reporter {
 public:
  Reporter(std::string_view file, std::vector<Diagnostic>* out) : file_(file), out_(out) {}
  void Report(const toml::source_region& at, std::string_view job, std::string message) {
    Report(at, Subject{.job = std::string(job)}, std::move(message));
  }
  void Report(const toml::source_region& at, const Subject& about, std::string message) {
    out_->push_back({file_, static_cast<int>(at.begin.line), static_cast<int>(at.begin.column),
                     about.job, std::move(message), about.flow, about.step});
  }
  // Whether a "did you mean" over many names (every job of the file) may still be computed:
  // the first kSuggestions of a file are, so that a file of many wrong names costs no more
  // than one of a few.
  bool TakeSuggestion() { return suggestions_ > 0 && suggestions_-- > 0; }

 private:
  static constexpr int kSuggestions = 100;
  std::string file_;
  std::vector<Diagnostic>* out_;
  int suggestions_ = kSuggestions;
};

// Where keys are being read: [defaults], one [[job]], [[flow]] or [[flow.step]]. Prefixes
// every message with the key path and counts the errors, so a table with errors of its own
// stays out of the result.
class Scope {
 public:
  // `root` prefixes every key path: "defaults" for [defaults], "" for a job.
  Scope(Reporter& reporter, std::string job, std::string_view root)
      : Scope(reporter, Subject{.job = std::move(job)}, root) {}
  Scope(Reporter& reporter, Subject about, std::string_view root)
      : reporter_(reporter), about_(std::move(about)), root_(root) {}

  void Fail(const Node& at, Key key, std::string_view detail) { Fail(at.source(), key, detail); }
  void Fail(const toml::source_region& at, Key key, std::string_view detail) {
    std::string path = KeyPath(root_, key);
    ++errors_;
    reporter_.Report(at, about_,
                     path.empty() ? std::string(detail) : fmt::format("{}: {}", path, detail));
  }
  bool in_defaults() const { return root_ == "defaults"; }
  int errors() const { return errors_; }

 private:
  Reporter& reporter_;
  Subject about_;
  std::string root_;
  int errors_ = 0;
};

// ---- Reading one value -------------------------------------------------------------------

std::optional<std::string> ReadString(const Node& n, Key k, Scope& s);
std::optional<std::string> ReadNonEmptyString(const Node& n, Key k, Scope& s);
std::optional<int> ReadInt(const Node& n, Key k, Scope& s, int min, int max);
std::optional<bool> ReadBool(const Node& n, Key k, Scope& s);
enum class Zero { kAllowed, kRejected };
std::optional<Millis> ReadDuration(const Node& n, Key k, Scope& s, Zero zero);

template <typename E>
std::optional<E> ReadEnum(const Node& n, Key k, Scope& s, std::optional<E> (*parse)(Key),
                          std::span<const std::string_view> names) {
  auto text = n.value_exact<std::string>();
  if (text) {
    if (std::optional<E> e = parse(*text)) return e;
  }
  s.Fail(n, k,
         fmt::format("expected {}, got {}{}", ListOfNames(names), Render(n),
                     text ? DidYouMean(*text, names) : ""));
  return std::nullopt;
}

// The names the Parse* functions of model/ accept, for messages and suggestions.
inline constexpr std::string_view kDialects[] = {"cron", "quartz"};
inline constexpr std::string_view kRoutes[] = {"spread", "round-robin", "random",
                                               "hash",   "failover",    "broadcast"};
inline constexpr std::string_view kOverlaps[] = {"forbid", "allow", "replace"};
inline constexpr std::string_view kMisfires[] = {"fire-once", "skip", "fire-all"};
inline constexpr std::string_view kOnLosts[] = {"rerun", "fail"};
inline constexpr std::string_view kBackoffs[] = {"exponential", "fixed"};

template <typename T>
void Set(T& field, std::optional<T> value) {
  if (value) field = std::move(*value);
}

// ---- Key tables ------------------------------------------------------------------------

// A job under construction, with whether its schedule can be checked: a bad dialect or zone
// has its own error and would only make the schedule's error misleading.
struct Draft {
  Job job;
  bool dialect_ok = true;
  bool timezone_ok = true;
};

using JobKey = KeySpec<Draft, Scope>;

// The keys of a [[job]] and of [defaults].
std::span<const JobKey> JobKeys();

// Reads the keys of `t` with `specs` into `d`; `parent` is the key path of `t` ("" for the
// job or [defaults] itself, "retry" below it).
void ApplyKeys(const toml::table& t, std::span<const JobKey> specs, Key parent, Scope& s, Draft& d);

// Reports a table of `t` with neither or both of command and shell (`what` names the table:
// "a job").
void CheckCommand(const toml::table& t, Scope& s, std::string_view what = "a job");

// Reports a schedule of `d` (named by t's "schedule") that does not parse, and an anchor on a
// schedule that is not @every. Nothing when d has no schedule or a bad dialect or zone.
void CheckSchedule(const toml::table& t, const Draft& d, Scope& s);

}  // namespace jobctl::jobs_toml
