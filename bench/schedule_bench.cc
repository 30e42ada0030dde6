// How long one Schedule::Next() takes, over a mix of expressions a fleet really uses.
// The engine never scans minute by minute; this prints ns per call for UTC and zoned
// schedules, and for 5-field, 6-field and quartz forms.
//   build/release/bench/schedule_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "model/schedule.h"
#include "model/time_format.h"

namespace jobctl {
namespace {

struct Case {
  const char* expr;
  Dialect dialect;
};

const std::vector<Case> kFiveField = {
    {"* * * * *", Dialect::kCron},
    {"*/5 * * * *", Dialect::kCron},
    {"15 2 * * *", Dialect::kCron},
    {"0 9-17 * * mon-fri", Dialect::kCron},
    {"0 0 1 * *", Dialect::kCron},
    {"0 0 13 * 5", Dialect::kCron},
    {"30 4 1,15 * *", Dialect::kCron},
    {"0 0 29 2 *", Dialect::kCron},
    {"H H * * *", Dialect::kCron},
    {"0 12 * * 5L", Dialect::kCron},
    {"5-50/10 */2 * jan-jun *", Dialect::kCron},
    {"0 0 L * *", Dialect::kCron},
};
const std::vector<Case> kSecondsAndQuartz = {
    {"*/10 * * * * *", Dialect::kCron},   {"0 0 12 ? * MON-FRI", Dialect::kQuartz},
    {"0 15 10 ? * 6L", Dialect::kQuartz}, {"0 0 0 15W * ?", Dialect::kQuartz},
    {"0 0 0 ? * 3#2", Dialect::kQuartz},  {"0 0 0 LW * ? 2025-2099", Dialect::kQuartz},
};

void RunMix(benchmark::State& state, const std::vector<Case>& cases, const char* zone) {
  std::vector<Schedule> schedules;
  for (const Case& c : cases) {
    schedules.push_back(*Schedule::Parse({c.expr, c.dialect, zone, "bench-job"}));
  }
  // Advance through time so every call starts somewhere new (and crosses DST borders).
  std::vector<WallTime> at(schedules.size(), *ParseInstant("2024-01-01T00:00:00Z"));
  size_t i = 0;
  for (auto _ : state) {
    std::optional<WallTime> next = schedules[i].Next(at[i]);
    benchmark::DoNotOptimize(next);
    at[i] = next ? *next : *ParseInstant("2024-01-01T00:00:00Z");
    if (++i == schedules.size()) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_Next_FiveField_Utc(benchmark::State& s) { RunMix(s, kFiveField, "UTC"); }
void BM_Next_FiveField_NewYork(benchmark::State& s) { RunMix(s, kFiveField, "America/New_York"); }
void BM_Next_SecondsAndQuartz_Utc(benchmark::State& s) { RunMix(s, kSecondsAndQuartz, "UTC"); }
void BM_Next_SecondsAndQuartz_Berlin(benchmark::State& s) {
  RunMix(s, kSecondsAndQuartz, "Europe/Berlin");
}
void BM_Parse_FiveField(benchmark::State& state) {
  size_t i = 0;
  for (auto _ : state) {
    Result<Schedule> s = Schedule::Parse({kFiveField[i].expr, kFiveField[i].dialect});
    benchmark::DoNotOptimize(s);
    if (++i == kFiveField.size()) i = 0;
  }
}

BENCHMARK(BM_Next_FiveField_Utc);
BENCHMARK(BM_Next_FiveField_NewYork);
BENCHMARK(BM_Next_SecondsAndQuartz_Utc);
BENCHMARK(BM_Next_SecondsAndQuartz_Berlin);
BENCHMARK(BM_Parse_FiveField);

}  // namespace
}  // namespace jobctl

BENCHMARK_MAIN();
