// The coordinator on PostgreSQL (`store = "postgresql://..."`), with the real binaries and a
// real PostgreSQL server (testlib/postgres.h): jobs, runs and output live in the database,
// not in the data directory, so another coordinator on another host carries on with them;
// and a second coordinator on the same database waits, then takes over when the first is
// killed, without ending the shard an agent is running.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "testlib/cluster.h"
#include "testlib/postgres.h"

namespace jobctl::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

class PostgresStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::unique_ptr<PostgresServer>> pg = PostgresServer::Start();
    if (!pg.ok()) {
      if (RunningInCi()) FAIL() << pg.status().ToString();
      GTEST_SKIP() << "PostgreSQL not available: " << pg.status().ToString();
    }
    pg_ = std::move(*pg);
    ASSERT_TRUE(pg_->CreateDatabase("jobctl").ok());
  }

  // coordinator.toml for the test database, and `more`.
  std::string Config(const std::string& more = "") const {
    return "store = \"" + pg_->Url("jobctl") + "\"\n" + more;
  }

  // Gives `dir` the admin token of `from` (a coordinator on another host is handed it by
  // its operator: the tokens themselves live in the database).
  static void CopyAdminToken(const Coordinator& from, const TempDir& dir) {
    std::filesystem::create_directories(dir.path() + "/data");
    chmod((dir.path() + "/data").c_str(), 0700);
    std::ofstream(dir.path() + "/data/admin.token") << from.admin_token() << "\n";
    chmod((dir.path() + "/data/admin.token").c_str(), 0600);
  }

  std::unique_ptr<PostgresServer> pg_;
};

TEST_F(PostgresStoreTest, RunsAndOutputLiveInTheDatabaseAndAnotherCoordinatorCarriesOn) {
  TempDir da;
  Coordinator a(da, Config());
  a.Start();
  AgentProcess agent(a, da, "h1");
  a.Apply(
      "[[job]]\nname = \"hello\"\nschedule = \"@yearly\"\nshell = \"echo hello from $JOB_NAME\"\n");
  int64_t id = a.PostJson("/v1/jobs/hello/trigger", json::object())["id"];
  json done = a.WaitRun(id, seconds(60));
  ASSERT_EQ(done["state"], "succeeded") << done.dump() << a.Logs();
  EXPECT_EQ(a.Output(id, 0, "stdout"), "hello from hello\n");
  // Nothing of the store is in the data directory: only this host's token files.
  EXPECT_FALSE(std::filesystem::exists(a.data_dir() + "/jobctl.db"));
  EXPECT_FALSE(std::filesystem::exists(a.data_dir() + "/logs.db"));

  // The first host is lost; a coordinator on another (another data directory) has it all.
  a.Kill9();
  TempDir db;
  CopyAdminToken(a, db);
  Coordinator b(db, Config());
  b.Start();
  json run = b.GetJson("/v1/runs/" + std::to_string(id));
  EXPECT_EQ(run["state"], "succeeded") << run.dump();
  EXPECT_EQ(b.Output(id, 0, "stdout"), "hello from hello\n");
  json jobs = b.GetJson("/v1/jobs");
  ASSERT_EQ(jobs.size(), 1u) << jobs.dump();
  // And it runs jobs: the agent finds it among its coordinators.
  EXPECT_FALSE(std::filesystem::exists(db.path() + "/data/agent.token"))
      << "tokens exist already: a second coordinator writes none";
}

TEST_F(PostgresStoreTest, ASecondCoordinatorWaitsThenTakesOverWithoutEndingARunningShard) {
  TempDir da;
  TempDir db;
  std::string conf = Config("lease_ttl = \"8s\"\nheartbeat = \"2s\"\n");
  Coordinator a(da, conf);
  a.set_port(FreeLoopbackPort());
  a.Start();
  Coordinator b(db, conf);
  b.set_port(FreeLoopbackPort());
  CopyAdminToken(a, db);
  // b waits without listening while a holds the database.
  std::string b_failed;
  std::thread start_b([&] {
    try {
      b.Start();
    } catch (const std::exception& e) {
      b_failed = e.what();
    }
  });
  struct Join {
    std::thread& t;
    ~Join() {
      if (t.joinable()) t.join();
    }
  } join{start_b};
  ASSERT_TRUE(Coordinator::Eventually(
      [&] { return ReadFile(db.path() + "/coordinator.log").find("standby") != std::string::npos; },
      seconds(20)))
      << ReadFile(db.path() + "/coordinator.log");

  AgentProcess agent(a, da, "h1", {"--coordinator", b.url()});
  a.Apply(
      "[[job]]\nname = \"long\"\nschedule = \"@yearly\"\n"
      "shell = \"echo started; sleep 5; echo finished\"\n");
  int64_t id = a.PostJson("/v1/jobs/long/trigger", json::object())["id"];
  ASSERT_TRUE(Coordinator::Eventually([&] { return a.Output(id, 0, "stdout") == "started\n"; },
                                      seconds(20)));

  a.Kill9();
  auto killed = std::chrono::steady_clock::now();
  start_b.join();
  ASSERT_EQ(b_failed, "");
  EXPECT_LE(std::chrono::steady_clock::now() - killed, seconds(5)) << "takeover too slow";
  json done = b.WaitRun(id, seconds(60));
  ASSERT_EQ(done["state"], "succeeded") << done.dump() << b.Logs();
  // The shard the agent was running went on: the same attempt, not a second one.
  EXPECT_EQ(done["shards"][0]["attempt"], 1) << done.dump();
  EXPECT_EQ(done["shards"][0]["agent"], "h1");
  EXPECT_EQ(b.Output(id, 0, "stdout"), "started\nfinished\n");
}

}  // namespace
}  // namespace jobctl::testing
