#include "fault/fault_cluster.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "httpclient/blocking_client.h"
#include "testlib/postgres.h"

namespace jobctl::fault {
using testing::ReadFile;

FaultCluster::FaultCluster(const std::string& coordinator_config, const ClusterOptions& options)
    : options_(options) {
  probe_events_ = dir_.path() + "/events-probe.jsonl";
  const int n = options_.store_url.empty() ? 1 : std::max(1, options_.coordinators);
  std::string store = options_.store_url.empty() ? "" : "store = \"" + options_.store_url + "\"\n";
  for (int i = 0; i < n; ++i) {
    const testing::TempDir* dir = &dir_;
    if (i > 0) dir = coord_dirs_.emplace_back(std::make_unique<testing::TempDir>()).get();
    std::string events =
        dir_.path() + "/events-coord" + (i == 0 ? "" : "-" + std::to_string(i)) + ".jsonl";
    auto place = options_.places.find(i);
    std::string here = store;
    if (place != options_.places.end() && !place->second.store_url.empty())
      here = "store = \"" + place->second.store_url + "\"\n";
    coords_.push_back(std::make_unique<testing::Coordinator>(
        *dir, coordinator_config + "\n" + here + "event_log = \"" + events + "\"\n",
        place != options_.places.end() ? place->second.host : "127.0.0.1"));
    if (place != options_.places.end()) coords_.back()->set_launch(place->second.launch);
    // A fixed port, so that the agents know every coordinator's URL before it serves.
    if (n > 1) coords_.back()->set_port(testing::FreeLoopbackPort());
  }
  coords_[0]->Start();
  // The tokens live in the database; each host is handed the admin token by its operator.
  for (int i = 1; i < n; ++i) {
    std::string data = coords_[static_cast<size_t>(i)]->data_dir();
    std::filesystem::create_directories(data);
    ::chmod(data.c_str(), 0700);
    std::ofstream(data + "/admin.token") << coords_[0]->admin_token() << "\n";
    ::chmod((data + "/admin.token").c_str(), 0600);
    coords_[static_cast<size_t>(i)]->Spawn();
  }
}

FaultCluster::~FaultCluster() {
  Keep();
  agents_.clear();  // SIGKILL whatever still runs
  coords_.clear();
  KillOrphans();
}

int FaultCluster::FindLeader(std::chrono::milliseconds timeout) {
  int found = -1;
  testing::Coordinator::Eventually(
      [&] {
        std::vector<int> serving;
        for (int i = 0; i < coordinators(); ++i) {
          testing::Coordinator& c = coord(i);
          if (!c.process().running()) continue;
          http::BlockingClient client(c.url(), "");
          http::RequestOptions o;
          // A stopped (SIGSTOP) coordinator accepts the connection and never answers.
          o.timeout = std::chrono::milliseconds(500);
          o.connect_timeout = std::chrono::milliseconds(500);
          Result<http::HttpResponse> r = client.Request("/readyz", o);
          if (r.ok() && r->status == 200) serving.push_back(i);
        }
        if (serving.size() != 1) return false;
        found = serving[0];
        return true;
      },
      timeout);
  if (found >= 0) leader_ = found;
  return found;
}

void FaultCluster::Respawn(int i) { coord(i).Spawn(); }

std::map<int, int> FaultCluster::RespawnExited() {
  std::map<int, int> exited;
  for (int i = 0; i < coordinators(); ++i) {
    testing::Daemon& process = coord(i).process();
    if (process.running()) continue;
    exited[i] = process.Wait(std::chrono::milliseconds(0));
    Respawn(i);
  }
  return exited;
}

testing::AgentProcess& FaultCluster::StartAgent(const std::string& name, int slots) {
  auto last_seen = [&]() -> std::optional<std::string> {
    for (const auto& a : coord().GetJson("/v1/agents")) {
      if (a["name"] == name && a["connected"].get<bool>()) return a["last_seen"].get<std::string>();
    }
    return std::nullopt;
  };
  std::optional<std::string> before = last_seen();
  agents_.erase(name);
  std::string config = "event_log = \"" + dir_.path() + "/events-agent-" + name + ".jsonl\"\n";
  std::vector<std::string> args{"--slots", std::to_string(slots)};
  for (int i = 1; i < coordinators(); ++i) {  // after coordinator 0's, in order
    args.push_back("--coordinator");
    args.push_back(coord(i).url());
  }
  auto agent = std::make_unique<testing::AgentProcess>(*coords_[0], dir_, name, args, config);
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
        for (const auto& a : coord().GetJson("/v1/agents")) connected += a["connected"].get<bool>();
        return connected >= n;
      },
      std::chrono::seconds(20));
  ASSERT_TRUE(up) << coord().GetJson("/v1/agents").dump();
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
  MergeCoordinators(&h);
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
    coord().PostJson("/v1/jobs/" + job + "/pause", nlohmann::json::object());
  return testing::Coordinator::Eventually(
      [&] {
        bool open = false;
        for (const char* state : {"pending", "running"}) {
          for (const auto& run :
               coord().GetJson(std::string("/v1/runs?state=") + state + "&limit=1000")) {
            open = true;
            // 409 when it finished meanwhile.
            coord().Request(
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
  // The standbys first, so that none takes over from the one that serves as it stops.
  for (int i = 0; i < coordinators(); ++i) {
    if (i == leader_ || !coord(i).process().running()) continue;
    coord(i).process().Signal(SIGTERM);
    int rc = coord(i).process().Wait(std::chrono::seconds(30));
    EXPECT_TRUE(rc == 0 || rc == -SIGTERM || rc == 75) << "coordinator " << i << " exited " << rc;
  }
  coord().Stop();
}

Report FaultCluster::Check(const CheckOptions& options) {
  History h = Read();
  Result<StoreView> store = options_.store_url.empty() ? ReadStores(coords_[0]->data_dir())
                                                       : ReadStoreAt(options_.store_url);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  if (!store.ok()) return {};
  return jobctl::fault::Check(h, *store, options);
}

std::string FaultCluster::Logs() const {
  std::string out;
  for (int i = 0; i < coordinators(); ++i)
    out += "---- coordinator " + std::to_string(i) + " ----\n" +
           coords_[static_cast<size_t>(i)]->Logs();
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
  for (size_t i = 0; i < coord_dirs_.size() && !ec; ++i) {
    std::filesystem::copy(coord_dirs_[i]->path(), to + "/coord-" + std::to_string(i + 1),
                          std::filesystem::copy_options::recursive, ec);
  }
  std::cerr << "fault: kept " << to << (ec ? " (" + ec.message() + ")" : "") << "\n";
}

}  // namespace jobctl::fault
