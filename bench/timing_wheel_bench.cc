// TimingWheel against the std::priority_queue a coordinator would otherwise use, at 1M timers
// due uniformly over one day (jobs' next fires). The heap cancels lazily, as a coordinator
// would: a map from id to the generation of its live entry, and stale entries skipped when
// they reach the top. Both advance the way the schedule loop does, sleeping until NextWakeup.
//
// Counters: time/timer is the iteration time divided by the timers in it; B/timer is heap bytes
// in use (malloc's count) after all timers are in, divided by their number; the wheel also
// reports its own MemoryBytes() figure.
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <queue>
#include <random>
#include <unordered_map>
#include <vector>

#include "model/timing_wheel.h"

namespace jobctl {
namespace {

constexpr int64_t kStart = 1'700'000'000'000;
constexpr int64_t kDay = 86'400'000;
constexpr size_t kTimers = 1'000'000;
constexpr int kIterations = 2;  // each iteration handles 1M timers; keeps the whole run short

struct Workload {
  std::vector<uint64_t> ids;  // job ids 0..n-1 in random order
  std::vector<int64_t> dues;
  std::vector<uint64_t> cancel_order;
};

Workload MakeWorkload(size_t n) {
  std::mt19937_64 rng(1);
  Workload w;
  for (uint64_t id = 0; id < n; ++id) w.ids.push_back(id);
  std::shuffle(w.ids.begin(), w.ids.end(), rng);
  for (size_t i = 0; i < n; ++i) w.dues.push_back(kStart + 1 + static_cast<int64_t>(rng() % kDay));
  w.cancel_order = w.ids;
  std::shuffle(w.cancel_order.begin(), w.cancel_order.end(), rng);
  return w;
}

size_t HeapBytesInUse() {
  struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;  // small chunks plus mmapped ones (the big arrays)
}

void SetTimePerTimer(benchmark::State& state) {
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kTimers));
  state.counters["time/timer"] = benchmark::Counter(
      static_cast<double>(kTimers),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// The alternative: a binary heap with lazy deletion.
class LazyHeap {
 public:
  void Schedule(uint64_t id, int64_t due_ms) {
    live_[id] = ++generation_;
    heap_.push(Entry{due_ms, id, generation_});
  }
  bool Cancel(uint64_t id) { return live_.erase(id) > 0; }
  void Advance(int64_t now_ms, const TimingWheel::OnDue& on_due) {
    while (!heap_.empty() && heap_.top().due_ms <= now_ms) {
      Entry e = heap_.top();
      heap_.pop();
      auto it = live_.find(e.id);
      if (it == live_.end() || it->second != e.generation) continue;
      live_.erase(it);
      on_due(e.id, e.due_ms);
    }
  }
  std::optional<int64_t> NextWakeup() {
    DropStaleTop();
    if (heap_.empty()) return std::nullopt;
    return heap_.top().due_ms;
  }
  // Pops stale entries until a live one is on top: where a coordinator pays for its cancels.
  void DropStaleTop() {
    while (!heap_.empty()) {
      auto it = live_.find(heap_.top().id);
      if (it != live_.end() && it->second == heap_.top().generation) return;
      heap_.pop();
    }
  }
  bool empty() const { return heap_.empty(); }

 private:
  struct Entry {
    int64_t due_ms;
    uint64_t id;
    uint64_t generation;
  };
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const { return a.due_ms > b.due_ms; }
  };
  using Heap = std::priority_queue<Entry, std::vector<Entry>, Later>;

  Heap heap_;
  std::unordered_map<uint64_t, uint64_t> live_;  // id -> generation of its live entry
  uint64_t generation_ = 0;
};

void BM_WheelInsertCancel(benchmark::State& state) {
  Workload w = MakeWorkload(kTimers);
  size_t heap_bytes = 0;
  size_t computed_bytes = 0;
  for (auto _ : state) {
    size_t before = HeapBytesInUse();
    TimingWheel wheel(kStart);
    for (size_t i = 0; i < kTimers; ++i) wheel.Schedule(w.ids[i], w.dues[i]);
    heap_bytes = HeapBytesInUse() - before;
    computed_bytes = wheel.MemoryBytes();
    for (uint64_t id : w.cancel_order) wheel.Cancel(id);
    benchmark::DoNotOptimize(wheel.size());
  }
  SetTimePerTimer(state);
  state.counters["B/timer"] = static_cast<double>(heap_bytes) / kTimers;
  state.counters["computed_B/timer"] = static_cast<double>(computed_bytes) / kTimers;
}

void BM_HeapInsertCancel(benchmark::State& state) {
  Workload w = MakeWorkload(kTimers);
  size_t heap_bytes = 0;
  for (auto _ : state) {
    size_t before = HeapBytesInUse();
    LazyHeap heap;
    for (size_t i = 0; i < kTimers; ++i) heap.Schedule(w.ids[i], w.dues[i]);
    heap_bytes = HeapBytesInUse() - before;
    for (uint64_t id : w.cancel_order) heap.Cancel(id);
    heap.DropStaleTop();  // every entry is stale by now
    benchmark::DoNotOptimize(heap.empty());
  }
  SetTimePerTimer(state);
  state.counters["B/timer"] = static_cast<double>(heap_bytes) / kTimers;
}

void BM_WheelInsertAdvance(benchmark::State& state) {
  Workload w = MakeWorkload(kTimers);
  size_t fired = 0;
  size_t wakeups = 0;
  TimingWheel::OnDue count = [&fired](uint64_t, int64_t) { ++fired; };
  for (auto _ : state) {
    TimingWheel wheel(kStart);
    for (size_t i = 0; i < kTimers; ++i) wheel.Schedule(w.ids[i], w.dues[i]);
    wakeups = 0;
    while (std::optional<int64_t> wake = wheel.NextWakeup()) {
      wheel.Advance(*wake, count);
      ++wakeups;
    }
  }
  if (fired != kTimers * state.iterations()) state.SkipWithError("lost timers");
  SetTimePerTimer(state);
  state.counters["wakeups"] = static_cast<double>(wakeups);
}

void BM_HeapInsertAdvance(benchmark::State& state) {
  Workload w = MakeWorkload(kTimers);
  size_t fired = 0;
  size_t wakeups = 0;
  TimingWheel::OnDue count = [&fired](uint64_t, int64_t) { ++fired; };
  for (auto _ : state) {
    LazyHeap heap;
    for (size_t i = 0; i < kTimers; ++i) heap.Schedule(w.ids[i], w.dues[i]);
    wakeups = 0;
    while (std::optional<int64_t> wake = heap.NextWakeup()) {
      heap.Advance(*wake, count);
      ++wakeups;
    }
  }
  if (fired != kTimers * state.iterations()) state.SkipWithError("lost timers");
  SetTimePerTimer(state);
  state.counters["wakeups"] = static_cast<double>(wakeups);
}

// An idle coordinator asks this before every sleep.
void BM_WheelNextWakeup(benchmark::State& state) {
  Workload w = MakeWorkload(kTimers);
  TimingWheel wheel(kStart);
  for (size_t i = 0; i < kTimers; ++i) wheel.Schedule(w.ids[i], w.dues[i] + state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(wheel.NextWakeup());
}

void BM_HeapNextWakeup(benchmark::State& state) {
  Workload w = MakeWorkload(kTimers);
  LazyHeap heap;
  for (size_t i = 0; i < kTimers; ++i) heap.Schedule(w.ids[i], w.dues[i] + state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(heap.NextWakeup());
}

BENCHMARK(BM_WheelInsertCancel)->Unit(benchmark::kMillisecond)->Iterations(kIterations);
BENCHMARK(BM_HeapInsertCancel)->Unit(benchmark::kMillisecond)->Iterations(kIterations);
BENCHMARK(BM_WheelInsertAdvance)->Unit(benchmark::kMillisecond)->Iterations(kIterations);
BENCHMARK(BM_HeapInsertAdvance)->Unit(benchmark::kMillisecond)->Iterations(kIterations);
// Arg: how far the earliest entry is beyond the wheel's time (0: level 0, 1 year: a top level).
// A fixed count, because each run of the function first fills a 1M wheel.
BENCHMARK(BM_WheelNextWakeup)->Arg(0)->Arg(365 * kDay)->Iterations(10'000'000);
BENCHMARK(BM_HeapNextWakeup)->Arg(0)->Iterations(10'000'000);

}  // namespace
}  // namespace jobctl

BENCHMARK_MAIN();
