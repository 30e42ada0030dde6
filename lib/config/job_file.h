// ParseJobFile reads jobs.toml, the file a sysadmin keeps in git, into checked Job and Flow
// values with [defaults] applied. It reports every problem it finds in one pass, each located at
// the value that is wrong (or at the [[job]] header when a key is missing), so one run of
// `jobctl apply` or `jobctl diff` shows the whole list. The format is documented in
// man/jobs.toml.5.scd. Pure function of its input, any thread; the only I/O is the first
// lookup of a time zone (see model/zone.h, which is not thread-safe).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "model/flow_spec.h"
#include "model/job.h"

namespace jobctl {

// One problem in a job file. Messages start with the key they are about, written as a path
// from the job ("retry.max", "env.HOME", "command[1]") or from the root for [defaults]
// ("defaults.timeout"); file-level problems name the table or key.
struct Diagnostic {
  std::string file;
  int line = 0;     // 1-based; 0 when unknown
  int column = 0;   // 1-based, in characters
  std::string job;  // the job's name when it has a valid one; "" otherwise
  std::string message;
  std::string flow;  // the [[flow]]'s name when it is about one (and valid); "" otherwise
  std::string step;  // and the [[flow.step]]'s name when it is about one

  // "jobs.toml:14:10: job "backup": retry.max: expected an integer >= 0, got "three"",
  // "jobs.toml:41:11: flow "etl": step "load": needs[1]: ..."
  std::string ToString() const;
  bool operator==(const Diagnostic&) const = default;
};

struct JobFile {
  std::vector<Job> jobs;    // in file order, defaults applied
  std::vector<Flow> flows;  // in file order, defaults applied
  // The steps of `flows` that have their own command, as jobs named StepJobName(flow, step),
  // in file order, with [defaults] applied except notify, notify_on and repeat_after (a step
  // notifies only when it says so). They have no schedule: they run as steps.
  std::vector<Job> step_jobs;
};

struct JobFileResult {
  // When errors is non-empty, jobs and flows hold only those that had no error of their own;
  // it is best-effort, for display. Nothing may be synced from a result that is not ok().
  JobFile file;
  std::vector<Diagnostic> errors;  // all problems found, ordered by line and column
  bool ok() const { return errors.empty(); }
  // Where each flow of file.flows has its name, in the same order (1-based).
  struct Place {
    int line = 0, column = 0;
  };
  std::vector<Place> flow_places;
};

// `filename` only labels the diagnostics; the text is not read from disk.
JobFileResult ParseJobFile(std::string_view text, std::string_view filename);

}  // namespace jobctl
