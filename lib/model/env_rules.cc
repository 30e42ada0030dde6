#include "model/env_rules.h"

#include <algorithm>
#include <iterator>

namespace jobctl {
namespace {

// agentd sets these for every shard, and the flow ones for a flow's steps.
constexpr std::string_view kReserved[] = {"JOB_NAME",          "JOB_RUN_ID",  "JOB_SHARD_INDEX",
                                          "JOB_SHARD_TOTAL",   "JOB_ATTEMPT", "JOB_SCHEDULED_AT",
                                          "JOB_FENCING_TOKEN", "TRACEPARENT", "JOB_FLOW",
                                          "JOB_FLOW_RUN_ID",   "JOB_STEP",    "JOB_OUTPUT"};
// A flow's step gets one JOB_NEED_<STEP>_RUN_ID per step it needs, and JOB_OUT_<KEY> for each
// output of those steps.
constexpr std::string_view kReservedPrefixes[] = {"JOB_NEED_", "JOB_OUT_"};

// What ld.so and glibc read at start-up beyond the LD_ prefix: the names glibc itself drops
// for set-user-id programs (sysdeps/generic/unsecvars.h), less TMPDIR and TZDIR, which only
// say where a program keeps its files.
constexpr std::string_view kLoader[] = {
    "GCONV_PATH",   "GETCONF_DIR", "GLIBC_TUNABLES", "HOSTALIASES",      "LOCALDOMAIN", "LOCPATH",
    "MALLOC_TRACE", "NIS_PATH",    "NLSPATH",        "RESOLV_HOST_CONF", "RES_OPTIONS"};

// A trigger may not change who the user is or where programs are found.
constexpr std::string_view kIdentity[] = {"PATH", "HOME", "SHELL", "USER", "LOGNAME"};

template <size_t N>
bool In(const std::string_view (&list)[N], std::string_view name) {
  return std::find(std::begin(list), std::end(list), name) != std::end(list);
}

}  // namespace

bool IsEnvName(std::string_view name) {
  auto alpha = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  auto alnum = [&](char c) { return alpha(c) || (c >= '0' && c <= '9'); };
  return !name.empty() && name.size() <= kMaxEnvNameLength && alpha(name[0]) &&
         std::all_of(name.begin(), name.end(), alnum);
}

bool IsReservedEnvName(std::string_view name) {
  return In(kReserved, name) ||
         std::any_of(std::begin(kReservedPrefixes), std::end(kReservedPrefixes),
                     [name](std::string_view p) { return name.substr(0, p.size()) == p; });
}

bool IsLoaderEnvName(std::string_view name) {
  return name.substr(0, 3) == "LD_" || In(kLoader, name);
}

std::string EnvNameProblem(std::string_view name) {
  if (!IsEnvName(name)) {
    std::string shown(name.substr(0, 64));
    return "invalid variable name \"" + shown + (name.size() > 64 ? "...\"" : "\"") +
           " (expected [A-Za-z_][A-Za-z0-9_]*, at most " + std::to_string(kMaxEnvNameLength) +
           " characters)";
  }
  if (IsReservedEnvName(name)) return "reserved: the agent sets it for every run";
  if (IsLoaderEnvName(name)) {
    return "refused: the dynamic loader and the C library read it (a way to run code in "
           "another process)";
  }
  return "";
}

bool IsSecretFileName(std::string_view name) {
  auto ok = [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  };
  return !name.empty() && name.size() <= 128 && name[0] != '.' && name[0] != '-' &&
         std::all_of(name.begin(), name.end(), ok);
}

std::string ParamNameProblem(std::string_view name) {
  if (std::string p = EnvNameProblem(name); !p.empty()) return p;
  if (In(kIdentity, name)) return "refused: a trigger may not change the user's identity or PATH";
  return "";
}

Result<std::map<std::string, std::string>> ResolveParams(
    const std::map<std::string, Param>& declared, const std::map<std::string, std::string>& given) {
  for (const auto& [name, value] : given) {
    auto it = declared.find(name);
    if (it == declared.end()) {
      std::string shown = name.size() > 64 ? name.substr(0, 64) + "..." : name;
      return Status::InvalidArgument(
          "parameter \"" + shown + "\" is not declared by the job" +
          (declared.empty() ? " (it declares none: add it to the job's params in jobs.toml)" : ""));
    }
    if (value.size() > static_cast<size_t>(it->second.max_length)) {
      return Status::InvalidArgument("parameter \"" + name + "\" is " +
                                     std::to_string(value.size()) + " bytes, over its max_length " +
                                     std::to_string(it->second.max_length));
    }
    if (value.find('\0') != std::string::npos) {
      return Status::InvalidArgument("parameter \"" + name + "\" holds a NUL byte");
    }
  }
  std::map<std::string, std::string> env;
  for (const auto& [name, p] : declared) {
    auto it = given.find(name);
    if (it != given.end()) {
      env[name] = it->second;
    } else if (p.required) {
      return Status::InvalidArgument("parameter \"" + name + "\" is required");
    } else if (p.default_value) {
      env[name] = *p.default_value;
    }
  }
  return env;
}

}  // namespace jobctl
