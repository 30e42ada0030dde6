// The coordinator's data directory on a small loop-mounted ext4 that fills up: writes (apply,
// trigger, log chunks, results) are refused with 507 and a message saying why, reads and
// /healthz keep working, nothing acknowledged before or during is lost, and once space
// returns new fires and writes succeed without a restart.
#include <gtest/gtest.h>

#include <map>
#include <thread>

#include "fault/env/env_fault_test.h"

namespace jobctl::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

class FullDiskTest : public EnvFaultTest {
 protected:
  void SetUp() override {
    if (std::string why = LoopMount::Unavailable(); !why.empty()) GTEST_SKIP() << why;
    disk_ = std::make_unique<LoopMount>(dir_.path(), dir_.path() + "/data", 32);
    UseEventLogs();
    // Leases outlast the test's slowest step: it is about the disk, not about expiry.
    StartCoordinator("lease_ttl = \"120s\"\nheartbeat = \"40s\"\nmisfire_grace = \"5s\"\n");
  }

  // A refused write: 507 (or 503 when the store is still catching up), JSON, and a message
  // that says the disk is full.
  static void ExpectDiskFull(int status, const std::string& body, const std::string& what) {
    EXPECT_TRUE(status == 507 || status == 503) << what << ": " << status << " " << body;
    json j = json::parse(body, nullptr, false);
    ASSERT_TRUE(j.is_object()) << what << ": " << body;
    EXPECT_EQ(j.value("error", ""), status == 507 ? "insufficient_storage" : "unavailable") << body;
    EXPECT_NE(j.value("message", "").find("full"), std::string::npos) << what << ": " << body;
  }

  // Reads and the health checks work while the disk is full.
  void ExpectReadsWork(int64_t run) {
    ASSERT_TRUE(coord_->process().running());
    EXPECT_EQ(coord_->Request("GET", "/healthz", "", "").status, 200);
    EXPECT_EQ(coord_->Request("GET", "/readyz", "", "").status, 200);
    for (std::string path :
         {"/v1/jobs", "/v1/runs?job=manual", "/v1/agents", "/v1/jobfile", "/metrics"}) {
      EXPECT_EQ(coord_->Request("GET", path).status, 200) << path;
    }
    EXPECT_EQ(coord_->Request("GET", "/v1/runs/" + std::to_string(run)).status, 200);
    EXPECT_EQ(coord_->Request("GET", "/v1/runs/" + std::to_string(run) + "/logs").status, 200);
  }
};

// 64 KiB of bytes that differ per chunk, so a chunk stored twice or out of place shows.
std::string ChunkData(int64_t seq) {
  std::string data(64 << 10, '\0');
  uint32_t x = static_cast<uint32_t>(seq) * 2654435761u + 1;
  for (char& ch : data) {
    x = x * 1664525u + 1013904223u;
    ch = static_cast<char>(x >> 24);
  }
  return data;
}

TEST_F(FullDiskTest, WritesAreRefusedWith507ReadsWorkNothingAckedIsLostAndItRecoversAlone) {
  coord_->Apply(
      "[[job]]\nname = \"manual\"\nschedule = \"@yearly\"\nshell = \"true\"\n"
      "[[job]]\nname = \"tick\"\nschedule = \"@every 1s\"\noverlap = \"allow\"\n"
      "on = [\"role=elsewhere\"]\nshell = \"true\"\n");
  TestAgent agent(*coord_, "a");
  int64_t run = Trigger("manual")["id"];
  std::vector<json> claimed = agent.Claim(1, 5000);
  ASSERT_EQ(claimed.size(), 1u);
  json lease = claimed[0];
  ASSERT_EQ(lease["run"], run);

  std::map<int64_t, std::string> acked;  // seq -> bytes, every chunk answered 200
  int64_t seq = 1;
  for (; seq <= 8; ++seq) {
    ASSERT_EQ(agent.Log(lease, seq, "stdout", ChunkData(seq)).status, 200);
    acked[seq] = ChunkData(seq);
  }
  std::vector<int64_t> acked_runs = {run};

  disk_->Fill();
  auto full_since = std::chrono::steady_clock::now();
  // Log chunks until one is refused: the first that needs a new block on disk.
  int64_t refused_seq = -1;
  for (int i = 0; i < 1000 && refused_seq < 0; ++i, ++seq) {
    http::HttpResponse r = agent.Log(lease, seq, "stdout", ChunkData(seq));
    if (r.status == 200) {
      acked[seq] = ChunkData(seq);
      continue;
    }
    ExpectDiskFull(r.status, r.body, "log chunk " + std::to_string(seq));
    std::cout << "refused: " << r.status << " " << r.body << "\n";
    refused_seq = seq;
  }
  ASSERT_GT(refused_seq, 0) << "64 MiB of log chunks fit on a full 32 MiB disk";
  std::cout << "log chunks acknowledged after the disk filled: " << refused_seq - 9 << "\n";

  // Triggers, an apply and the result: refused (a few may still fit in space SQLite holds).
  bool trigger_refused = false;
  for (int i = 0; i < 50 && !trigger_refused; ++i) {
    http::HttpResponse r = coord_->Request("POST", "/v1/jobs/manual/trigger", "{}");
    if (r.status == 201) {
      acked_runs.push_back(json::parse(r.body)["id"]);
      continue;
    }
    ExpectDiskFull(r.status, r.body, "trigger");
    trigger_refused = true;
  }
  EXPECT_TRUE(trigger_refused);
  std::string extra = "[[job]]\nname = \"extra\"\nschedule = \"@yearly\"\nshell = \"true\"\n";
  std::string jobfile = coord_->GetJson("/v1/jobfile").value("text", "");
  http::HttpResponse apply = coord_->Request(
      "POST", "/v1/jobfile", json{{"text", jobfile + extra}, {"base_revision", -1}}.dump());
  bool apply_acked = apply.status == 200;
  if (!apply_acked) ExpectDiskFull(apply.status, apply.body, "apply");
  http::HttpResponse result = agent.Finish(lease, 0);
  bool result_acked = result.status == 200;
  if (!result_acked) ExpectDiskFull(result.status, result.body, "result");
  // Renewals are soft state: they go on.
  EXPECT_EQ(agent.Heartbeat({lease}).status, 200);
  ExpectReadsWork(run);
  // The full disk is no reason to fall over or to spin, even after a while (the scheduled job
  // keeps coming due).
  double cpu_before = CpuSeconds(coord_->process().pid());
  std::this_thread::sleep_for(seconds(3));
  double cpu_share = (CpuSeconds(coord_->process().pid()) - cpu_before) / 3;
  std::cout << "coordinator CPU while the disk is full: " << cpu_share * 100 << "% of a core\n";
  EXPECT_LT(cpu_share, 0.25) << "the coordinator spins on the full disk";
  ExpectReadsWork(run);

  // Space returns: no restart, and writes go through again.
  disk_->Free();
  auto freed = std::chrono::system_clock::now();
  std::cout << "disk full for "
            << std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() -
                                                        full_since)
                   .count()
            << " ms\n";
  // The refused chunk is sent again, as an agent would, then the ones after it.
  for (int64_t s = refused_seq; s < refused_seq + 3; ++s) {
    http::HttpResponse r = agent.Log(lease, s, "stdout", ChunkData(s));
    ASSERT_EQ(r.status, 200) << "chunk " << s << " after space returned: " << r.body;
    acked[s] = ChunkData(s);
  }
  if (!result_acked) {
    result = agent.Finish(lease, 0);
    ASSERT_EQ(result.status, 200) << "result after space returned: " << result.body;
  }
  http::HttpResponse again = coord_->Request("POST", "/v1/jobs/manual/trigger", "{}");
  ASSERT_EQ(again.status, 201) << again.body;
  acked_runs.push_back(json::parse(again.body)["id"]);
  if (!apply_acked) {
    apply = coord_->Request("POST", "/v1/jobfile",
                            json{{"text", jobfile + extra}, {"base_revision", -1}}.dump());
    ASSERT_EQ(apply.status, 200) << apply.body;
  }
  EXPECT_EQ(coord_->GetJson("/v1/jobs/extra")["name"], "extra");
  // The scheduled job fires again on its own.
  std::string since =
      "@" +
      std::to_string(std::chrono::duration_cast<seconds>(freed.time_since_epoch()).count() + 1);
  ASSERT_TRUE(Coordinator::Eventually(
      [&] { return !coord_->GetJson("/v1/runs?job=tick&limit=1&since=" + since).empty(); },
      seconds(10)))
      << "no fire after space returned";

  // Nothing acknowledged was lost, before a restart and after it.
  for (int pass = 0; pass < 2; ++pass) {
    std::string want;
    for (const auto& [s, data] : acked) want += data;
    std::string got = Output(run, 0, "stdout");
    EXPECT_EQ(got.size(), want.size()) << "pass " << pass;
    EXPECT_EQ(Sha256Hex(got), Sha256Hex(want)) << "pass " << pass;
    for (int64_t id : acked_runs) {
      EXPECT_EQ(coord_->Request("GET", "/v1/runs/" + std::to_string(id)).status, 200)
          << "run " << id;
    }
    EXPECT_EQ(GetRun(run)["state"], "succeeded");
    if (pass == 0) {
      coord_->Stop();
      coord_->Start();
    }
  }
  CheckInvariants();
}

}  // namespace
}  // namespace jobctl::testing
