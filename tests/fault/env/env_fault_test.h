// EnvFaultTest is the fixture of the environment fault tests (tests/fault/env): a real
// coordinator and real agents (testlib/cluster.h) plus the pieces of machine a test breaks
// (a network namespace, a loop-mounted disk), declared so that they outlive the processes
// that use them: the processes die first, then the mount and the namespace go, then the temp
// directory. Jobs record their process group (JobPids()) so that none outlives the test
// either, and every process's output is printed when a test fails. With UseEventLogs() the
// coordinator and agents write event logs, and CheckInvariants() runs the fault suite's
// checker (tests/fault/checker.h) over them and the store at the end.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "fault/checker.h"
#include "fault/env/loop_mount.h"
#include "fault/env/veth_namespace.h"
#include "testlib/cluster.h"

namespace jobctl::testing {

std::string Sha256Hex(const std::string& data);
// Resident set size of a process in KiB (VmRSS), or -1 when it is gone.
long RssKib(pid_t pid);
// CPU time (user + system) a process has used so far, in seconds; -1 when it is gone.
double CpuSeconds(pid_t pid);

class EnvFaultTest : public ::testing::Test {
 protected:
  void StartCoordinator(const std::string& config = "", const std::string& host = "127.0.0.1",
                        const Launch& launch = {});
  AgentProcess& AddAgent(const std::string& name, std::vector<std::string> args = {},
                         const std::string& config = "", const Launch& launch = {});
  void WaitForAgents(size_t n);
  nlohmann::json Trigger(const std::string& job);
  nlohmann::json GetRun(int64_t id);
  // Waits until the run is over (or the timeout), and returns it.
  nlohmann::json WaitRun(int64_t id, std::chrono::seconds timeout = std::chrono::seconds(60));
  // All output of one shard and stream, in order (attempt 0: every attempt).
  std::string Output(int64_t run, int shard, const std::string& stream, int attempt = 0);
  // Before StartCoordinator/AddAgent: every process writes an event log into the temp dir.
  void UseEventLogs() { event_logs_ = true; }
  // Stops the agents (SIGTERM) and the coordinator, runs the checker and expects no violation
  // of I1-I8; returns the report for its figures (failovers, overlaps).
  fault::Report CheckInvariants(const fault::CheckOptions& options = {});
  // A shell command for the start of a job: records the job's process group for TearDown.
  std::string JobPids() const;
  void TearDown() override;

  bool event_logs_ = false;
  TempDir dir_;
  std::unique_ptr<VethNamespace> netns_;
  std::unique_ptr<LoopMount> disk_;
  std::unique_ptr<Coordinator> coord_;
  std::vector<std::unique_ptr<AgentProcess>> agents_;
};

}  // namespace jobctl::testing
