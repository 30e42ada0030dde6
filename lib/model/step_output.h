// What a flow step hands to the steps that need it: small "key=value" outputs. A step's
// process writes lines to the file named by $JOB_OUTPUT; agentd reads them when the process
// ends, and the steps that need it receive them as environment variables (JOB_OUT_<KEY>).
//
//   # a comment             blank lines and lines starting with '#' are ignored
//   ROWS=1200               KEY=value: KEY as an env name, the value the rest of the line
//   DAY=2026-03-01          a later line for the same KEY wins
//
// Keys follow the rules of trigger parameters (model/env_rules.h: no loader variables, no
// PATH, HOME, SHELL, USER, LOGNAME), may not start with JOB_, which agentd keeps for itself,
// nor be a name that makes a shell or interpreter run code (BASH_ENV, PYTHONPATH,
// NODE_OPTIONS, ...): the step that reads them may run as another user. Lines are UTF-8.
// Value types and pure functions, any thread.
#pragma once

#include <cstddef>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"

namespace jobctl {

using StepOutputs = std::map<std::string, std::string>;

// One attempt's $JOB_OUTPUT file, in bytes.
inline constexpr size_t kMaxStepOutputBytes = 64 << 10;
// Everything one step receives from the steps it needs, in bytes (keys and values): it
// becomes part of a process's environment, which execve bounds (ARG_MAX).
inline constexpr size_t kMaxNeededOutputBytes = 256 << 10;

// The outputs written in `text`, a $JOB_OUTPUT file's contents. Trailing '\r's are dropped
// from each line. kResourceExhausted past kMaxStepOutputBytes; kInvalidArgument naming the
// line ("line 3: ...") for a line that is no KEY=value, a bad key or a NUL byte.
Result<StepOutputs> ParseStepOutput(std::string_view text);

// Why `key` may not be an output ("" when it may).
std::string OutputKeyProblem(std::string_view key);
// Why `value` could not have been read from a $JOB_OUTPUT file ("" when it could): NUL,
// newline, a final carriage return, over kMaxStepOutputBytes, not UTF-8.
std::string OutputValueProblem(std::string_view value);

// Keys' and values' bytes.
size_t OutputBytes(const StepOutputs& outputs);

// `layers` merged in order, a later layer winning per key: the outputs of one step run from
// its shards by index, or what a step receives from its needs in the order it lists them.
StepOutputs MergeOutputs(std::span<const StepOutputs> layers);

// What a step receives from its needs (in its `needs` order): MergeOutputs, and
// kResourceExhausted when that is over kMaxNeededOutputBytes.
Result<StepOutputs> NeededOutputs(std::span<const StepOutputs> needs);

// The lines ParseStepOutput reads back as `outputs` (values hold no '\n' and end in
// no '\r').
std::string FormatStepOutput(const StepOutputs& outputs);

}  // namespace jobctl
