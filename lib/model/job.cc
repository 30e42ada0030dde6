#include "model/job.h"

#include <array>
#include <utility>

namespace jobctl {
namespace {

template <typename E, size_t N>
std::string_view NameOf(const std::array<std::pair<E, std::string_view>, N>& table, E e) {
  for (const auto& [v, name] : table) {
    if (v == e) return name;
  }
  return "?";
}

template <typename E, size_t N>
std::optional<E> ValueOf(const std::array<std::pair<E, std::string_view>, N>& table,
                         std::string_view s) {
  for (const auto& [v, name] : table) {
    if (name == s) return v;
  }
  return std::nullopt;
}

constexpr std::array<std::pair<Route, std::string_view>, 6> kRoutes{{
    {Route::kSpread, "spread"},
    {Route::kRoundRobin, "round-robin"},
    {Route::kRandom, "random"},
    {Route::kHash, "hash"},
    {Route::kFailover, "failover"},
    {Route::kBroadcast, "broadcast"},
}};
constexpr std::array<std::pair<Overlap, std::string_view>, 3> kOverlaps{{
    {Overlap::kForbid, "forbid"}, {Overlap::kAllow, "allow"}, {Overlap::kReplace, "replace"}}};
constexpr std::array<std::pair<Misfire, std::string_view>, 3> kMisfires{{
    {Misfire::kFireOnce, "fire-once"}, {Misfire::kSkip, "skip"}, {Misfire::kFireAll, "fire-all"}}};
constexpr std::array<std::pair<OnLost, std::string_view>, 2> kOnLost{{
    {OnLost::kRerun, "rerun"}, {OnLost::kFail, "fail"}}};
constexpr std::array<std::pair<Backoff, std::string_view>, 2> kBackoffs{{
    {Backoff::kExponential, "exponential"}, {Backoff::kFixed, "fixed"}}};

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

}  // namespace jobctl
