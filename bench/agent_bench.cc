// agent_bench measures agentd with a real coordinator on 127.0.0.1, both release binaries,
// the way a host runs them. It prints figures; it asserts nothing. Phases:
//
//   latency  R fires/s (@every 10s, anchors spread) for D seconds; the job is bench_probe,
//            which stamps the wall clock when it starts: scheduled instant -> child started
//   spawn    one run of S shards of /bin/true on one agent: shards started and finished per s
//   logs     one shard writes B MiB of pseudo-random bytes: trigger -> run succeeded (every
//            chunk durable), MB/s, then the stored output is read back and compared byte by byte
//   idle     an agent with nothing to do for T seconds: CPU and RSS
//   spawncost  agentd's runner in this process, grown by 0 and M MiB of ballast: children
//            started per second and CPU per child, against libuv's fork-based uv_spawn
//
//   build/release/bench/agent_bench [--rates 10,100,500] [--seconds 20] [--shards 2000]
//       [--mib 256] [--idle 60] [--slots 64] [--ballast 0,512] [--only PHASE]
//       [--early-dispatch DURATION]
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/base64.h"
#include "base/clock.h"
#include "bench/bench_util.h"
#include "bench/probe_stream.h"
#include "bench/spawn_cost.h"
#include "model/time_format.h"
#include "testlib/cluster.h"

namespace {

using jobctl::bench::Clock;
using jobctl::bench::NowMs;
using jobctl::bench::ParseFlags;
using jobctl::bench::ParseList;
using jobctl::bench::Percentile;
using jobctl::bench::ProcSample;
using jobctl::bench::Sample;
using jobctl::bench::Seconds;
using jobctl::testing::AgentProcess;
using jobctl::testing::Coordinator;
using jobctl::testing::TempDir;
using nlohmann::json;

// The coordinator's config: early_dispatch as --early-dispatch says ("" : the default).
std::string g_early_dispatch;
std::string Config() {
  std::string config = "log_cap = \"4GiB\"\n";
  if (!g_early_dispatch.empty()) config += "early_dispatch = \"" + g_early_dispatch + "\"\n";
  return config;
}

// A coordinator and one agent with `slots` slots, connected.
struct Host {
  TempDir dir;
  Coordinator coord{dir, Config()};
  std::unique_ptr<AgentProcess> agent;
  explicit Host(int slots) {
    coord.Start();
    agent = std::make_unique<AgentProcess>(
        coord, dir, "bench", std::vector<std::string>{"--slots", std::to_string(slots)});
    while (coord.GetJson("/v1/agents").empty())
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  pid_t agent_pid() { return agent->process().pid(); }
  pid_t coord_pid() { return coord.process().pid(); }
  // Waits until the run is no longer pending or running; returns its final JSON.
  json WaitRun(int64_t id) {
    while (true) {
      json run = coord.GetJson("/v1/runs/" + std::to_string(id));
      std::string state = run["state"];
      if (state != "pending" && state != "running") return run;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
};

void LatencyPhase(int rate, int seconds, int slots) {
  Host h(slots);
  std::string stamps = h.dir.path() + "/stamps";
  const int period_s = 10, n = rate * period_s;
  std::string toml;
  for (int i = 0; i < n; ++i) {
    int64_t offset_ms = static_cast<int64_t>(i) * period_s * 1000 / n;
    char name[16];
    std::snprintf(name, sizeof name, "j%07d", i);
    toml +=
        std::string("[[job]]\nname = \"") + name + "\"\nschedule = \"@every 10s\"\nanchor = \"" +
        jobctl::FormatUtc(jobctl::FromUnixMs(1767225600000 + offset_ms)) +
        "\"\noverlap = \"allow\"\ncommand = [\"" BENCH_PROBE "\", \"stamp\", \"" + stamps + "\"]\n";
  }
  h.coord.Apply(toml);
  int64_t start = NowMs() + 3000, end = start + seconds * 1000LL;
  std::this_thread::sleep_for(std::chrono::milliseconds(start - NowMs()));
  ProcSample a0 = Sample(h.agent_pid()), c0 = Sample(h.coord_pid());
  std::this_thread::sleep_for(std::chrono::milliseconds(end - NowMs()));
  ProcSample a1 = Sample(h.agent_pid()), c1 = Sample(h.coord_pid());
  std::this_thread::sleep_for(std::chrono::seconds(3));  // late starts of the window's fires
  std::ifstream in(stamps);
  std::string job, at;
  int64_t us = 0;
  std::map<std::pair<std::string, int64_t>, double> first;  // (job, instant) -> lateness ms
  size_t duplicates = 0;
  while (in >> job >> at >> us) {
    int64_t scheduled = jobctl::ToUnixMs(*jobctl::ParseInstant(at));
    if (scheduled < start || scheduled >= end) continue;
    double late = static_cast<double>(us) / 1000 - static_cast<double>(scheduled);
    if (!first.emplace(std::make_pair(job, scheduled), late).second) ++duplicates;
  }
  std::vector<double> lateness;
  for (const auto& [key, ms] : first) lateness.push_back(ms);
  std::printf(
      "latency   %4d fires/s for %d s: started %zu of %lld, %zu twice; scheduled -> child started "
      "min %.2f ms p50 %.2f ms p99 %.2f ms max %.1f ms; agent CPU %.0f%%, coordinator CPU %.0f%% "
      "of a core; "
      "agent RSS %.1f MiB\n",
      rate, seconds, lateness.size(), static_cast<long long>(rate) * seconds, duplicates,
      Percentile(lateness, 0), Percentile(lateness, 50), Percentile(lateness, 99),
      Percentile(lateness, 100), (a1.cpu_s - a0.cpu_s) / seconds * 100,
      (c1.cpu_s - c0.cpu_s) / seconds * 100, a1.rss_mib);
  std::fflush(stdout);
}

void SpawnPhase(int shards, int slots) {
  Host h(slots);
  h.coord.Apply("[[job]]\nname = \"wide\"\nschedule = \"@yearly\"\nshards = " +
                std::to_string(shards) + "\ncommand = [\"/bin/true\"]\n");
  ProcSample a0 = Sample(h.agent_pid());
  auto t0 = Clock::now();
  json run = h.coord.PostJson("/v1/jobs/wide/trigger", json::object());
  json done = h.WaitRun(run["id"].get<int64_t>());
  double s = Seconds(Clock::now() - t0);
  ProcSample a1 = Sample(h.agent_pid());
  std::printf(
      "spawn     %d shards of /bin/true on one agent (%d slots): run %s in %.2f s = %.0f shards/s "
      "started and reported; agent CPU %.0f%% of a core, RSS %.1f MiB\n",
      shards, slots, done["state"].get<std::string>().c_str(), s, shards / s,
      (a1.cpu_s - a0.cpu_s) / s * 100, a1.rss_mib);
  std::fflush(stdout);
}

void LogsPhase(int mib, int slots) {
  Host h(slots);
  int64_t bytes = static_cast<int64_t>(mib) << 20;
  h.coord.Apply("[[job]]\nname = \"loud\"\nschedule = \"@yearly\"\ncommand = [\"" BENCH_PROBE
                "\", \"write\", \"" +
                std::to_string(bytes) + "\", \"42\"]\n");
  ProcSample a0 = Sample(h.agent_pid()), c0 = Sample(h.coord_pid());
  auto t0 = Clock::now();
  json run = h.coord.PostJson("/v1/jobs/loud/trigger", json::object());
  int64_t id = run["id"].get<int64_t>();
  json done = h.WaitRun(id);
  double s = Seconds(Clock::now() - t0);
  ProcSample a1 = Sample(h.agent_pid()), c1 = Sample(h.coord_pid());
  // Read it back and compare with the stream the probe wrote.
  std::string expected(static_cast<size_t>(bytes), '\0');
  jobctl::bench::ProbeStream(42).Fill(expected.data(), expected.size());
  size_t at = 0;
  bool same = true;
  int64_t after = 0;
  while (true) {
    json page =
        h.coord.GetJson("/v1/runs/" + std::to_string(id) + "/logs?after=" + std::to_string(after));
    for (const json& ch : page["chunks"]) {
      if (ch["stream"] != "stdout") continue;
      std::string data = jobctl::Base64Decode(ch["data"].get<std::string>());
      same = same && at + data.size() <= expected.size() &&
             expected.compare(at, data.size(), data) == 0;
      at += data.size();
    }
    if (page["done"].get<bool>() || page["chunks"].empty()) break;
    after = page["next"].get<int64_t>();
  }
  same = same && at == expected.size();
  std::printf(
      "logs      %d MiB on stdout: run %s, every byte durable %.2f s after the trigger = %.0f MB/s "
      "(%.0f MiB/s); read back %s; agent CPU %.0f%%, coordinator CPU %.0f%% of a core\n",
      mib, done["state"].get<std::string>().c_str(), s, static_cast<double>(bytes) / 1e6 / s,
      mib / s, same ? "byte-exact" : "DIFFERENT", (a1.cpu_s - a0.cpu_s) / s * 100,
      (c1.cpu_s - c0.cpu_s) / s * 100);
  std::fflush(stdout);
}

// The process's own memory (USS: its private pages, clean and dirty), from smaps_rollup.
double UssMib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/smaps_rollup");
  std::string key;
  int64_t kib = 0, total = 0;
  std::string unit;
  while (in >> key) {
    if (key == "Private_Clean:" || key == "Private_Dirty:") {
      in >> kib >> unit;
      total += kib;
    } else {
      in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
    }
  }
  return static_cast<double>(total) / 1024;
}

void IdlePhase(int seconds, int slots) {
  Host h(slots);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  ProcSample a0 = Sample(h.agent_pid());
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  ProcSample a1 = Sample(h.agent_pid());
  double cpu = a1.cpu_s - a0.cpu_s;
  std::printf(
      "idle      agent over %d s: %.2f CPU s (%.2f CPU s per hour = %.4f%% of a core), RSS %.1f "
      "MiB, USS %.1f MiB\n",
      seconds, cpu, cpu * 3600 / seconds, cpu / seconds * 100, a1.rss_mib, UssMib(h.agent_pid()));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  jobctl::bench::ExitOnUncaught();
  signal(SIGPIPE, SIG_IGN);
  std::vector<int> rates = {10, 100, 500}, ballast = {0, 512};
  int seconds = 20, shards = 2000, mib = 256, idle = 60, slots = 64;
  std::string only;
  bool flags_ok =
      ParseFlags(argc, argv,
                 "[--rates R,R] [--seconds D] [--shards S] [--mib B] [--idle T] [--slots N]\n"
                 "  [--ballast MIB,MIB] [--only latency|spawn|logs|idle|spawncost]\n"
                 "  [--early-dispatch DURATION] (the coordinator's early_dispatch; 0s: off)",
                 [&](const std::string& flag, const std::string& value) {
                   if (flag == "--rates")
                     rates = ParseList(value);
                   else if (flag == "--seconds")
                     seconds = std::stoi(value);
                   else if (flag == "--shards")
                     shards = std::stoi(value);
                   else if (flag == "--mib")
                     mib = std::stoi(value);
                   else if (flag == "--idle")
                     idle = std::stoi(value);
                   else if (flag == "--slots")
                     slots = std::stoi(value);
                   else if (flag == "--ballast")
                     ballast = ParseList(value);
                   else if (flag == "--only")
                     only = value;
                   else if (flag == "--early-dispatch")
                     g_early_dispatch = value;
                   else
                     return false;
                   return true;
                 });
  if (!flags_ok) return 64;
  std::printf(
      "agent_bench on %u cores (coordinator and agent share them; figures from one run); "
      "early_dispatch %s\n",
      std::thread::hardware_concurrency(),
      g_early_dispatch.empty() ? "default (1s)" : g_early_dispatch.c_str());
  if (only.empty() || only == "latency") {
    for (int r : rates) LatencyPhase(r, seconds, slots);
  }
  if (only.empty() || only == "spawn") SpawnPhase(shards, slots);
  if (only.empty() || only == "logs") LogsPhase(mib, slots);
  if (only.empty() || only == "idle") IdlePhase(idle, slots);
  if (only.empty() || only == "spawncost") jobctl::bench::SpawnCostPhase(shards, ballast);
  return 0;
}
