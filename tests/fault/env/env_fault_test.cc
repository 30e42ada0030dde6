#include "fault/env/env_fault_test.h"

#include <openssl/evp.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace jobctl::testing {

using nlohmann::json;
using std::chrono::seconds;

std::string Sha256Hex(const std::string& data) {
  unsigned char d[32];
  unsigned int n = 0;
  EVP_Digest(data.data(), data.size(), d, &n, EVP_sha256(), nullptr);
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < n; ++i) {
    out += kHex[d[i] >> 4];
    out += kHex[d[i] & 15];
  }
  return out;
}

long RssKib(pid_t pid) {
  std::string status = ReadFile("/proc/" + std::to_string(pid) + "/status");
  size_t at = status.find("VmRSS:");
  return at == std::string::npos ? -1 : std::atol(status.c_str() + at + 6);
}

double CpuSeconds(pid_t pid) {
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return -1;
  // Fields after "pid (comm)": state is the 3rd; utime and stime are the 14th and 15th.
  std::istringstream in(stat.substr(paren + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && in >> field; ++i) {
    if (i >= 14) ticks += std::stod(field);
  }
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

void EnvFaultTest::StartCoordinator(const std::string& config, const std::string& host,
                                    const Launch& launch) {
  std::string text = config;
  if (event_logs_) text += "\nevent_log = \"" + dir_.path() + "/events-coordinator.jsonl\"\n";
  coord_ = std::make_unique<Coordinator>(dir_, text, host);
  coord_->set_launch(launch);
  coord_->Start();
}

AgentProcess& EnvFaultTest::AddAgent(const std::string& name, std::vector<std::string> args,
                                     const std::string& config, const Launch& launch) {
  std::string text = config;
  if (event_logs_)
    text += "\nevent_log = \"" + dir_.path() + "/events-agent-" + name + ".jsonl\"\n";
  agents_.push_back(
      std::make_unique<AgentProcess>(*coord_, dir_, name, std::move(args), text, launch));
  return *agents_.back();
}

void EnvFaultTest::WaitForAgents(size_t n) {
  ASSERT_TRUE(Coordinator::Eventually(
      [&] {
        size_t connected = 0;
        for (const auto& a : coord_->GetJson("/v1/agents")) connected += a["connected"].get<bool>();
        return connected >= n;
      },
      seconds(30)))
      << coord_->GetJson("/v1/agents").dump();
}

json EnvFaultTest::Trigger(const std::string& job) {
  return coord_->PostJson("/v1/jobs/" + job + "/trigger", json::object());
}

json EnvFaultTest::GetRun(int64_t id) { return coord_->GetJson("/v1/runs/" + std::to_string(id)); }

json EnvFaultTest::WaitRun(int64_t id, seconds timeout) { return coord_->WaitRun(id, timeout); }

std::string EnvFaultTest::Output(int64_t run, int shard, const std::string& stream, int attempt) {
  return coord_->Output(run, shard, stream, attempt);
}

fault::Report EnvFaultTest::CheckInvariants(const fault::CheckOptions& options) {
  for (auto& a : agents_) a->process().Signal(SIGTERM);
  for (auto& a : agents_) EXPECT_GE(a->process().Wait(seconds(30)), -SIGKILL) << a->name();
  coord_->Stop();
  fault::History history;
  for (const auto& entry : std::filesystem::directory_iterator(dir_.path())) {
    std::string name = entry.path().filename().string();
    if (name.rfind("events-", 0) != 0) continue;
    Status s = fault::ParseEvents(ReadFile(entry.path().string()), name, &history);
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  Result<fault::StoreView> store = fault::ReadStores(coord_->data_dir());
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  if (!store.ok()) return {};
  fault::Report report = fault::Check(history, *store, options);
  for (const fault::Violation& v : report.violations) {
    ADD_FAILURE() << v.invariant << ": " << v.what;
  }
  return report;
}

std::string EnvFaultTest::JobPids() const { return "echo $$ >> " + dir_.path() + "/job-pids; "; }

void EnvFaultTest::TearDown() {
  // Jobs lead their own process groups; none may outlive the test, whatever its agent did.
  std::istringstream pids(ReadFile(dir_.path() + "/job-pids"));
  for (pid_t pid = 0; pids >> pid;) {
    if (pid > 1) ::kill(-pid, SIGKILL);
  }
  if (!HasFailure()) return;
  if (coord_) std::cerr << "---- coordinator log ----\n" << coord_->Logs();
  for (auto& a : agents_) std::cerr << "---- agent " << a->name() << " log ----\n" << a->Logs();
}

}  // namespace jobctl::testing
