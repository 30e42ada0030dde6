// The rules for the names and values a job's environment may hold, shared by the job file's
// checks, the coordinator (trigger parameters, grants) and agentd (a last check before it
// starts a shard). Pure functions; any thread.
//
// Three kinds of names are kept out of what a job file or a trigger may set:
// - reserved: agentd sets them for every shard (JOB_*, TRACEPARENT) or a flow's steps
//   (JOB_FLOW, JOB_FLOW_RUN_ID, JOB_STEP, JOB_OUTPUT, JOB_NEED_*);
// - loader-affecting: names the dynamic loader or glibc read at start-up (LD_*, GCONV_PATH,
//   GLIBC_TUNABLES, ...). A job runs with its user's rights, but a name like LD_PRELOAD in
//   the wrong place runs code in whatever process reads it first, so none is ever accepted;
// - for trigger parameters also the user's identity and search path (PATH, HOME, SHELL,
//   USER, LOGNAME): a trigger may choose values, never where programs come from.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace jobctl {

// [A-Za-z_][A-Za-z0-9_]*, at most kMaxEnvNameLength bytes.
inline constexpr size_t kMaxEnvNameLength = 128;
bool IsEnvName(std::string_view name);
bool IsReservedEnvName(std::string_view name);
bool IsLoaderEnvName(std::string_view name);

// Why `name` may not be set in a job's env ("" when it may): syntax, reserved, loader.
std::string EnvNameProblem(std::string_view name);

// One declared trigger parameter of a job (jobs.toml `params`).
struct Param {
  std::optional<std::string> default_value;  // set for scheduled runs and when not given
  bool required = false;                     // a trigger must give it (no default then)
  int max_length = 1024;                     // bytes
  bool operator==(const Param&) const = default;
};
inline constexpr int kMaxParamLength = 65536;
inline constexpr size_t kMaxParams = 64;

// A secret's file name in agentd's secrets_dir: [A-Za-z0-9][A-Za-z0-9._-]*, at most 128
// characters (no path: the host decides where its secrets live).
bool IsSecretFileName(std::string_view name);

// Why `name` may not be a parameter ("" when it may): EnvNameProblem, and PATH, HOME, SHELL,
// USER, LOGNAME.
std::string ParamNameProblem(std::string_view name);

// The environment a run adds to its job's env: each declared parameter's given value, else
// its default. kInvalidArgument naming the parameter for an undeclared name, a missing
// required one, a value over its max_length or holding a NUL byte.
Result<std::map<std::string, std::string>> ResolveParams(
    const std::map<std::string, Param>& declared, const std::map<std::string, std::string>& given);

}  // namespace jobctl
