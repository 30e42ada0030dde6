// flow_bench measures flows with the real release binaries on 127.0.0.1: a coordinator and
// A agentd processes of S slots each. It prints figures; it asserts nothing.
//
// One flow of ten steps, a chain with a fan-out of three and its fan-in:
//   s0 -> s1 -> (s2, s3, s4) -> s5 -> s6 -> s7 -> s8 -> s9
// each step bench_probe, which appends (flow run, step, wall clock in us) when it starts and
// exits at once. The flow is triggered N times, evenly over D seconds; then the benchmark
// waits for every flow run to end and reads the stamps.
//
//   handoff   for each step with needs: the latest start of a step it needs -> its own start.
//             This is the whole way from one child to the next: the need's exit, agentd's
//             result, the coordinator's commit of the next step's run (made in the commit
//             that took the result), the claim, the lease, the spawn. p50/p90/p99/max.
//   flows     flow runs that succeeded, the time from the first trigger to the last end, and
//             the coordinator's and the agents' CPU over that time.
//
//   build/release/bench/flow_bench [--flows 1000] [--seconds 60] [--agents 2] [--slots 32]
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_util.h"
#include "testlib/cluster.h"

namespace {

using jobctl::bench::Clock;
using jobctl::bench::ParseFlags;
using jobctl::bench::Percentile;
using jobctl::bench::ProcSample;
using jobctl::bench::Sample;
using jobctl::bench::Seconds;
using jobctl::testing::AgentProcess;
using jobctl::testing::Coordinator;
using jobctl::testing::TempDir;
using nlohmann::json;

// The steps and what each needs.
const std::vector<std::pair<std::string, std::vector<std::string>>> kSteps = {
    {"s0", {}},     {"s1", {"s0"}}, {"s2", {"s1"}},
    {"s3", {"s1"}}, {"s4", {"s1"}}, {"s5", {"s2", "s3", "s4"}},
    {"s6", {"s5"}}, {"s7", {"s6"}}, {"s8", {"s7"}},
    {"s9", {"s8"}}};

std::string FlowToml(const std::string& stamps) {
  std::string t = "[[flow]]\nname = \"chain10\"\nschedule = \"@yearly\"\n";
  for (const auto& [name, needs] : kSteps) {
    t += "  [[flow.step]]\n  name = \"" + name + "\"\n";
    if (!needs.empty()) {
      t += "  needs = [";
      for (size_t i = 0; i < needs.size(); ++i) t += (i ? ", \"" : "\"") + needs[i] + "\"";
      t += "]\n";
    }
    t += "  command = [\"" BENCH_PROBE "\", \"step\", \"" + stamps + "\"]\n";
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  jobctl::bench::ExitOnUncaught();
  signal(SIGPIPE, SIG_IGN);
  int flows = 1000, seconds = 60, agents = 2, slots = 32;
  if (!ParseFlags(argc, argv, "[--flows N] [--seconds D] [--agents A] [--slots S]",
                  [&](const std::string& flag, const std::string& value) {
                    if (flag == "--flows")
                      flows = std::stoi(value);
                    else if (flag == "--seconds")
                      seconds = std::stoi(value);
                    else if (flag == "--agents")
                      agents = std::stoi(value);
                    else if (flag == "--slots")
                      slots = std::stoi(value);
                    else
                      return false;
                    return true;
                  })) {
    return 64;
  }
  TempDir dir;
  Coordinator coord(dir, "");
  coord.Start();
  std::vector<std::unique_ptr<AgentProcess>> hosts;
  for (int i = 0; i < agents; ++i) {
    hosts.push_back(
        std::make_unique<AgentProcess>(coord, dir, "h" + std::to_string(i),
                                       std::vector<std::string>{"--slots", std::to_string(slots)}));
  }
  while (coord.GetJson("/v1/agents").size() < static_cast<size_t>(agents))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::string stamps = dir.path() + "/stamps";
  coord.Apply(FlowToml(stamps));
  std::printf("flow_bench: %d flows of %zu steps over %d s; %d agents x %d slots\n", flows,
              kSteps.size(), seconds, agents, slots);

  ProcSample c0 = Sample(coord.process().pid());
  std::vector<ProcSample> a0;
  for (auto& h : hosts) a0.push_back(Sample(h->process().pid()));
  const auto begin = Clock::now();
  std::vector<int64_t> ids;
  for (int i = 0; i < flows; ++i) {
    auto due = begin + std::chrono::microseconds(static_cast<int64_t>(i) * seconds * 1'000'000 /
                                                 std::max(flows, 1));
    std::this_thread::sleep_until(due);
    json run = coord.PostJson("/v1/jobs/chain10/trigger", json::object());
    ids.push_back(run["id"].get<int64_t>());
  }
  const double trigger_s = Seconds(Clock::now() - begin);
  // Every flow run's end, newest first (the last triggered ends last, or near it).
  int succeeded = 0, other = 0;
  for (auto it = ids.rbegin(); it != ids.rend(); ++it) {
    json done = coord.WaitRun(*it, std::chrono::seconds(120));
    (done["state"] == "succeeded" ? succeeded : other)++;
  }
  const double total_s = Seconds(Clock::now() - begin);
  ProcSample c1 = Sample(coord.process().pid());
  double agent_cpu = 0;
  for (size_t i = 0; i < hosts.size(); ++i)
    agent_cpu += Sample(hosts[i]->process().pid()).cpu_s - a0[i].cpu_s;

  // (flow run, step) -> start, us.
  std::map<std::pair<int64_t, std::string>, int64_t> started;
  std::ifstream in(stamps);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    int64_t run = 0, us = 0;
    std::string step;
    if (f >> run >> step >> us) started[{run, step}] = us;
  }
  std::vector<double> handoff_ms;
  int64_t missing = 0;
  for (int64_t run : ids) {
    for (const auto& [name, needs] : kSteps) {
      if (needs.empty()) continue;
      auto self = started.find({run, name});
      int64_t last_need = 0;
      bool all = self != started.end();
      for (const std::string& n : needs) {
        auto it = started.find({run, n});
        if (it == started.end()) {
          all = false;
          break;
        }
        last_need = std::max(last_need, it->second);
      }
      if (!all) {
        ++missing;
        continue;
      }
      handoff_ms.push_back(static_cast<double>(self->second - last_need) / 1000.0);
    }
  }
  std::printf("flows: %d succeeded, %d not, of %d; triggered in %.1f s, all ended after %.1f s\n",
              succeeded, other, flows, trigger_s, total_s);
  std::printf("step handoffs: %zu measured, %lld missing\n", handoff_ms.size(),
              static_cast<long long>(missing));
  std::printf(
      "handoff (last need's child started -> dependent's child started), ms: "
      "p50 %.1f  p90 %.1f  p99 %.1f  max %.1f\n",
      Percentile(handoff_ms, 50), Percentile(handoff_ms, 90), Percentile(handoff_ms, 99),
      Percentile(handoff_ms, 100));
  std::printf("cpu over the run: coordinator %.1f s, agents %.1f s (of %.1f s wall, 2 cores)\n",
              c1.cpu_s - c0.cpu_s, agent_cpu, total_s);
  double m = coord.Metric("jobctl_flow_step_handoff_seconds_count");
  double sum = coord.Metric("jobctl_flow_step_handoff_seconds_sum");
  if (m > 0) {
    std::printf("coordinator's jobctl_flow_step_handoff_seconds: %.0f, mean %.2f ms\n", m,
                sum / m * 1000);
  }
  return 0;
}
