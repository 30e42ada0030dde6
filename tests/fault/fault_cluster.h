// FaultCluster is the bench every fault test stands on: a real coordinator (`jobctl serve`)
// and real agents on 127.0.0.1, each writing its event log into one temp directory, jobs
// whose command is the probe (which logs there too), ways to wait for an event with a
// deadline, and the checker run over the event logs and the stores at the end.
//
// Whatever happens to the test, the destructor kills what it started: the coordinator, the
// agents, and probe processes orphaned by a killed agent. With FAULT_KEEP=DIR set, the temp
// directory (event logs, data dir, process logs) is first copied to DIR/<test name>, for
// `fault_check` by hand. Test thread only.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "fault/checker.h"
#include "testlib/cluster.h"

namespace jobctl::fault {

struct ProbeArgs {
  int lines = 5;
  int64_t sleep_ms = 0;
  int exit_code = 0;
};

class FaultCluster {
 public:
  // `coordinator_config` is coordinator.toml without event_log (added here).
  explicit FaultCluster(const std::string& coordinator_config);
  ~FaultCluster();
  FaultCluster(const FaultCluster&) = delete;
  FaultCluster& operator=(const FaultCluster&) = delete;

  testing::Coordinator& coord() { return *coord_; }
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
  // SIGTERM to every agent, then to the coordinator; each must exit 0.
  void StopAll();
  // Runs the checker over the event logs and the stores (after StopAll).
  Report Check(const CheckOptions& options);
  std::string Logs() const;  // the processes' own logs, for failures

 private:
  void KillOrphans();
  void Keep();

  testing::TempDir dir_;
  std::string coord_events_, probe_events_;
  std::unique_ptr<testing::Coordinator> coord_;
  std::map<std::string, std::unique_ptr<testing::AgentProcess>> agents_;
};

}  // namespace jobctl::fault
