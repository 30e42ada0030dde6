// FaultCluster is the bench every fault test stands on: a real coordinator (`jobctl serve`)
// and real agents on 127.0.0.1, each writing its event log into one temp directory, jobs
// whose command is the probe (which logs there too), ways to wait for an event with a
// deadline, and the checker run over the event logs and the stores at the end.
//
// With a PostgreSQL store (ClusterOptions::store_url) it runs several coordinators on that
// one database, each with its own data directory, event log and fixed port: one holds the
// database and serves, the others wait as standbys. The agents are given every
// coordinator's URL. The test is the coordinators' service manager: it starts a stopped or
// killed one again (Respawn), and finds the one that serves by asking each /readyz
// (FindLeader). coord() is the one that served when last asked.
//
// Whatever happens to the test, the destructor kills what it started: the coordinators, the
// agents, and probe processes orphaned by a killed agent. With FAULT_KEEP=DIR set, the temp
// directory (event logs, data dir, process logs) is first copied to DIR/<test name>, for
// `fault_check` by hand (the other coordinators' directories to DIR/<test name>/coord-N).
// Test thread only.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fault/checker.h"
#include "testlib/cluster.h"

namespace jobctl::fault {

struct ProbeArgs {
  int lines = 5;
  int64_t sleep_ms = 0;
  int exit_code = 0;
};

// Where a coordinator runs, when not on 127.0.0.1 beside the test (a network namespace).
struct CoordinatorPlace {
  std::string host;        // the address it listens on
  testing::Launch launch;  // e.g. `ip netns exec NS`
  std::string store_url;   // the database as seen from there
};

struct ClusterOptions {
  std::string store_url;  // postgresql://...; empty: the embedded store, one coordinator
  int coordinators = 1;   // on store_url
  std::map<int, CoordinatorPlace> places;  // by coordinator index
};

class FaultCluster {
 public:
  // `coordinator_config` is coordinator.toml without event_log and store (added here).
  // Coordinator 0 starts first and serves; the others start after it, as standbys.
  explicit FaultCluster(const std::string& coordinator_config, const ClusterOptions& options = {});
  ~FaultCluster();
  FaultCluster(const FaultCluster&) = delete;
  FaultCluster& operator=(const FaultCluster&) = delete;

  // The coordinator that served when last found (FindLeader); coordinator 0 at first.
  testing::Coordinator& coord() { return *coords_[static_cast<size_t>(leader_)]; }
  testing::Coordinator& coord(int i) { return *coords_[static_cast<size_t>(i)]; }
  int coordinators() const { return static_cast<int>(coords_.size()); }
  int leader() const { return leader_; }
  // Asks each running coordinator's /readyz (200 only where it serves; a standby refuses
  // the connection or answers otherwise) until exactly one answers 200, and makes it coord().
  // Its index, or -1 at the deadline.
  int FindLeader(std::chrono::milliseconds timeout);
  // Starts coordinator `i` again on its data directory without waiting for it: the service
  // manager restarting a coordinator that died (it serves, or waits as a standby).
  void Respawn(int i);
  // The service manager's round: starts again (Respawn) every coordinator that has exited
  // since it last started, and returns each one's exit status (as Daemon::Wait), by index.
  std::map<int, int> RespawnExited();
  const std::string& dir() const { return dir_.path(); }
  // Starts agentd `name` (again, on the same state dir, if it ran before) and waits until the
  // coordinator has heard from it (its signal handlers are installed by then).
  testing::AgentProcess& StartAgent(const std::string& name, int slots = 4);
  testing::AgentProcess& agent(const std::string& name) { return *agents_.at(name); }
  void WaitForAgents(size_t n);

  // The TOML of a job's command and env running the probe.
  std::string ProbeJob(const ProbeArgs& args) const;

  // Every event so far, from all logs.
  History Read() const;
  // Waits until `pred` holds for some event of `events(history)`; returns the first such.
  std::optional<Event> WaitFor(
      const std::function<const std::vector<Event>&(const History&)>& events,
      const std::function<bool(const Event&)>& pred, std::chrono::milliseconds timeout) const;
  std::optional<Event> WaitForCoord(const std::function<bool(const Event&)>& pred,
                                    std::chrono::milliseconds timeout) const;
  std::optional<Event> WaitForProbe(const std::function<bool(const Event&)>& pred,
                                    std::chrono::milliseconds timeout) const;

  // Pauses the jobs, cancels every run still pending or running (a backlog left by the faults
  // would take long to drain), and waits until none is left.
  bool Quiesce(const std::vector<std::string>& jobs, std::chrono::milliseconds timeout);
  // SIGTERM to every agent, then to each coordinator, the standbys first; each agent and the
  // serving coordinator must exit 0 (a standby waiting for the database may end by the
  // signal, and one that lost its hold exits 75).
  void StopAll();
  // Runs the checker over the event logs and the stores (after StopAll).
  Report Check(const CheckOptions& options);
  std::string Logs() const;  // the processes' own logs, for failures

 private:
  void KillOrphans();
  void Keep();

  ClusterOptions options_;
  testing::TempDir dir_;
  std::vector<std::unique_ptr<testing::TempDir>> coord_dirs_;  // of coordinators 1..N-1
  std::string probe_events_;
  std::vector<std::unique_ptr<testing::Coordinator>> coords_;
  int leader_ = 0;
  std::map<std::string, std::unique_ptr<testing::AgentProcess>> agents_;
};

}  // namespace jobctl::fault
