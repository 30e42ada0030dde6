#include "fault/fault_cluster.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace jobctl::fault {
using testing::ReadFile;

FaultCluster::FaultCluster(const std::string& coordinator_config) {
  coord_events_ = dir_.path() + "/events-coord.jsonl";
  probe_events_ = dir_.path() + "/events-probe.jsonl";
  coord_ = std::make_unique<testing::Coordinator>(
      dir_, coordinator_config + "\nevent_log = \"" + coord_events_ + "\"\n");
  coord_->Start();
}

FaultCluster::~FaultCluster() {
  Keep();
  agents_.clear();  // SIGKILL whatever still runs
  coord_.reset();
  KillOrphans();
}

testing::AgentProcess& FaultCluster::StartAgent(const std::string& name, int slots) {
  auto last_seen = [&]() -> std::optional<std::string> {
    for (const auto& a : coord_->GetJson("/v1/agents")) {
      if (a["name"] == name && a["connected"].get<bool>()) return a["last_seen"].get<std::string>();
    }
    return std::nullopt;
  };
  std::optional<std::string> before = last_seen();
  agents_.erase(name);
  std::string config = "event_log = \"" + dir_.path() + "/events-agent-" + name + ".jsonl\"\n";
  auto agent = std::make_unique<testing::AgentProcess>(
      *coord_, dir_, name, std::vector<std::string>{"--slots", std::to_string(slots)}, config);
  testing::AgentProcess& started = *(agents_[name] = std::move(agent));
  bool heard = testing::Coordinator::Eventually(
      [&] {
        std::optional<std::string> now = last_seen();
        return now && now != before;
      },
      std::chrono::seconds(20));
  EXPECT_TRUE(heard) << "agent " << name << " never reached the coordinator\n" << started.Logs();
  return started;
}

void FaultCluster::WaitForAgents(size_t n) {
  bool up = testing::Coordinator::Eventually(
      [&] {
        size_t connected = 0;
        for (const auto& a : coord_->GetJson("/v1/agents")) connected += a["connected"].get<bool>();
        return connected >= n;
      },
      std::chrono::seconds(20));
  ASSERT_TRUE(up) << coord_->GetJson("/v1/agents").dump();
}

std::string FaultCluster::ProbeJob(const ProbeArgs& a) const {
  return "command = [\"" PROBE_BIN "\", \"--lines\", \"" + std::to_string(a.lines) +
         "\", \"--sleep-ms\", \"" + std::to_string(a.sleep_ms) + "\", \"--exit\", \"" +
         std::to_string(a.exit_code) + "\"]\nenv = { PROBE_EVENT_LOG = \"" + probe_events_ +
         "\" }\n";
}

History FaultCluster::Read() const {
  History h;
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir_.path())) {
    std::string name = entry.path().filename().string();
    if (name.rfind("events-", 0) == 0) paths.push_back(entry.path().string());
  }
  std::sort(paths.begin(), paths.end());
  for (const std::string& p : paths) {
    Status s = ParseEvents(ReadFile(p), p, &h);
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  return h;
}

std::optional<Event> FaultCluster::WaitFor(
    const std::function<const std::vector<Event>&(const History&)>& events,
    const std::function<bool(const Event&)>& pred, std::chrono::milliseconds timeout) const {
  std::optional<Event> found;
  testing::Coordinator::Eventually(
      [&] {
        History h = Read();
        for (const Event& e : events(h)) {
          if (pred(e)) {
            found = e;
            return true;
          }
        }
        return false;
      },
      timeout);
  return found;
}

std::optional<Event> FaultCluster::WaitForCoord(const std::function<bool(const Event&)>& pred,
                                                std::chrono::milliseconds timeout) const {
  return WaitFor([](const History& h) -> const std::vector<Event>& { return h.coordinator; }, pred,
                 timeout);
}

std::optional<Event> FaultCluster::WaitForProbe(const std::function<bool(const Event&)>& pred,
                                                std::chrono::milliseconds timeout) const {
  return WaitFor([](const History& h) -> const std::vector<Event>& { return h.probes; }, pred,
                 timeout);
}

bool FaultCluster::Quiesce(const std::vector<std::string>& jobs,
                           std::chrono::milliseconds timeout) {
  for (const std::string& job : jobs)
    coord_->PostJson("/v1/jobs/" + job + "/pause", nlohmann::json::object());
  return testing::Coordinator::Eventually(
      [&] {
        bool open = false;
        for (const char* state : {"pending", "running"}) {
          for (const auto& run :
               coord_->GetJson(std::string("/v1/runs?state=") + state + "&limit=1000")) {
            open = true;
            // 409 when it finished meanwhile.
            coord_->Request(
                "POST", "/v1/runs/" + std::to_string(run["id"].get<int64_t>()) + "/cancel", "{}");
          }
        }
        return !open;
      },
      timeout);
}

void FaultCluster::StopAll() {
  for (auto& [name, agent] : agents_) {
    if (agent->process().running()) agent->process().Signal(SIGTERM);
  }
  for (auto& [name, agent] : agents_) {
    int rc = agent->process().Wait(std::chrono::seconds(30));
    EXPECT_TRUE(rc == 0 || rc == -SIGKILL) << "agent " << name << " exited " << rc;
  }
  coord_->Stop();
}

Report FaultCluster::Check(const CheckOptions& options) {
  History h = Read();
  Result<StoreView> store = ReadStores(coord_->data_dir());
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  if (!store.ok()) return {};
  return jobctl::fault::Check(h, *store, options);
}

std::string FaultCluster::Logs() const {
  std::string out = "---- coordinator ----\n" + coord_->Logs();
  for (const auto& [name, agent] : agents_) out += "---- agent " + name + " ----\n" + agent->Logs();
  return out;
}

void FaultCluster::KillOrphans() {
  // Probes run in their own process group (agentd starts each shard with setsid); after a
  // kill -9 of their agent they run on. Only processes that are still the probe are killed.
  History h = Read();
  for (const Event& e : h.probes) {
    if (e.ev != "start") continue;
    pid_t pid = static_cast<pid_t>(e.pid);
    std::string cmdline = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
    if (cmdline.rfind(PROBE_BIN, 0) == 0) ::kill(-pid, SIGKILL);
  }
}

void FaultCluster::Keep() {
  const char* keep = std::getenv("FAULT_KEEP");
  if (keep == nullptr || *keep == '\0') return;
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string to = std::string(keep) + "/" + (info ? info->name() : "fault");
  std::error_code ec;
  std::filesystem::remove_all(to, ec);
  std::filesystem::create_directories(to, ec);
  std::filesystem::copy(dir_.path(), to, std::filesystem::copy_options::recursive, ec);
  std::cerr << "fault: kept " << to << (ec ? " (" + ec.message() + ")" : "") << "\n";
}

}  // namespace jobctl::fault
