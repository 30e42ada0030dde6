#include "model/job.h"

#include "base/enum_names.h"

namespace jobctl {
namespace {

constexpr EnumNames<Route, 6> kRoutes{{
    {Route::kSpread, "spread"},
    {Route::kRoundRobin, "round-robin"},
    {Route::kRandom, "random"},
    {Route::kHash, "hash"},
    {Route::kFailover, "failover"},
    {Route::kBroadcast, "broadcast"},
}};
constexpr EnumNames<Overlap, 3> kOverlaps{
    {{Overlap::kForbid, "forbid"}, {Overlap::kAllow, "allow"}, {Overlap::kReplace, "replace"}}};
constexpr EnumNames<Misfire, 3> kMisfires{
    {{Misfire::kFireOnce, "fire-once"}, {Misfire::kSkip, "skip"}, {Misfire::kFireAll, "fire-all"}}};
constexpr EnumNames<OnLost, 2> kOnLost{{{OnLost::kRerun, "rerun"}, {OnLost::kFail, "fail"}}};
constexpr EnumNames<Backoff, 2> kBackoffs{
    {{Backoff::kExponential, "exponential"}, {Backoff::kFixed, "fixed"}}};

}  // namespace

std::string_view RouteName(Route r) { return NameOf(kRoutes, r); }
std::string_view OverlapName(Overlap o) { return NameOf(kOverlaps, o); }
std::string_view MisfireName(Misfire m) { return NameOf(kMisfires, m); }
std::string_view OnLostName(OnLost o) { return NameOf(kOnLost, o); }
std::string_view BackoffName(Backoff b) { return NameOf(kBackoffs, b); }
std::optional<Route> ParseRoute(std::string_view s) { return ValueOf(kRoutes, s); }
std::optional<Overlap> ParseOverlap(std::string_view s) { return ValueOf(kOverlaps, s); }
std::optional<Misfire> ParseMisfire(std::string_view s) { return ValueOf(kMisfires, s); }
std::optional<OnLost> ParseOnLost(std::string_view s) { return ValueOf(kOnLost, s); }
std::optional<Backoff> ParseBackoff(std::string_view s) { return ValueOf(kBackoffs, s); }

bool IsValidJobName(std::string_view name) {
  if (name.empty() || name.size() > 128) return false;
  auto lower_digit = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!lower_digit(name[0])) return false;
  for (char c : name) {
    if (!lower_digit(c) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

std::string FormatSize(int64_t bytes) {
  struct Unit {
    int64_t size;
    const char* name;
  };
  for (Unit u : {Unit{1LL << 30, "GiB"}, Unit{1LL << 20, "MiB"}, Unit{1LL << 10, "KiB"}}) {
    if (bytes >= u.size && bytes % u.size == 0) return std::to_string(bytes / u.size) + u.name;
  }
  return std::to_string(bytes) + "B";
}

bool IsValidUserName(std::string_view name) {
  if (name.size() > kMaxUserNameLength) return false;
  if (name.ends_with('$')) name.remove_suffix(1);
  if (name.empty()) return false;
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!letter(name[0])) return false;
  for (char c : name) {
    if (!letter(c) && !(c >= '0' && c <= '9') && c != '.' && c != '-') return false;
  }
  return true;
}

std::map<std::string, std::string> ShardEnv(const Job& job,
                                            const std::map<std::string, std::string>& run_params) {
  std::map<std::string, std::string> env;
  for (const auto& [name, value] : job.env) {
    if (EnvNameProblem(name).empty()) env[name] = value;
  }
  for (const auto& [name, param] : job.params) {
    if (!ParamNameProblem(name).empty()) continue;
    auto it = run_params.find(name);
    if (it != run_params.end()) {
      env[name] = it->second;
    } else if (param.default_value) {
      env[name] = *param.default_value;
    }
  }
  return env;
}

}  // namespace jobctl
