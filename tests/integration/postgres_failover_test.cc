// The coordinator through a failover of PostgreSQL itself, with real servers
// (testlib/postgres.h): a primary whose every commit waits for a synchronous
// streaming-replication standby, coordinators on the libpq multi-host URL of both with
// target_session_attrs=read-write, and an agent. The primary is killed with SIGKILL and the
// standby promoted: the serving coordinator reconnects to it by itself and carries on, every
// run it acknowledged there with its output; a coordinator waiting as a standby waits
// through it and leaves the promoted server to the serving one; and a write sent while no
// server takes writes is refused and stops the coordinator, which serves once restarted.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "testlib/cluster.h"
#include "testlib/postgres.h"

namespace jobctl::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

// Gives `dir` the admin token of `from`, as its operator would to a second coordinator.
void CopyAdminToken(const Coordinator& from, const TempDir& dir) {
  std::filesystem::create_directories(dir.path() + "/data");
  chmod((dir.path() + "/data").c_str(), 0700);
  std::ofstream(dir.path() + "/data/admin.token") << from.admin_token() << "\n";
  chmod((dir.path() + "/data/admin.token").c_str(), 0600);
}

class PostgresFailoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::unique_ptr<PostgresServer>> primary =
        PostgresServer::Start({.synchronous_standby = "replica"});
    if (!primary.ok()) {
      if (RunningInCi()) FAIL() << primary.status().ToString();
      GTEST_SKIP() << "PostgreSQL not available: " << primary.status().ToString();
    }
    primary_ = std::move(*primary);
    Result<std::unique_ptr<PostgresServer>> replica =
        PostgresServer::StartStandby(*primary_, {.application_name = "replica"});
    ASSERT_TRUE(replica.ok()) << replica.status().ToString() << primary_->Log();
    replica_ = std::move(*replica);
    ASSERT_TRUE(primary_->CreateDatabase("jobctl").ok());
  }

  // The coordinator's view of the database: both servers, the one that takes writes.
  std::string StoreUrl() const {
    return "postgresql://jobctl@127.0.0.1:" + std::to_string(primary_->port()) +
           ",127.0.0.1:" + std::to_string(replica_->port()) +
           "/jobctl?target_session_attrs=read-write";
  }

  // `sql` on the database of `server`, with psql.
  static ProcessResult Psql(const PostgresServer& server, const std::string& sql) {
    return testing::Run({FindPostgresBin() + "/psql", server.Url("jobctl"), "-Atc", sql});
  }
  // One value from the database of `server`.
  static std::string Query(const PostgresServer& server, const std::string& sql) {
    ProcessResult r = Psql(server, sql);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }

  std::unique_ptr<PostgresServer> primary_;
  std::unique_ptr<PostgresServer> replica_;  // the synchronous standby server
};

TEST_F(PostgresFailoverTest, TheCoordinatorCarriesOnOnThePromotedStandbyWithEveryAcknowledgedRun) {
  TempDir dir;
  Coordinator coord(dir, "store = \"" + StoreUrl() + "\"\n");
  coord.Start();
  AgentProcess agent(coord, dir, "h1");
  coord.Apply(
      "[[job]]\nname = \"hello\"\nschedule = \"@yearly\"\n"
      "shell = \"echo run $JOB_RUN_ID of $JOB_NAME\"\n"
      "[[job]]\nname = \"other\"\nschedule = \"@yearly\"\n"
      "shell = \"echo run $JOB_RUN_ID of $JOB_NAME; echo to stderr >&2\"\n");
  std::vector<int64_t> acknowledged;
  for (int i = 0; i < 3; ++i) {
    for (const char* job : {"hello", "other"}) {
      acknowledged.push_back(
          coord.PostJson(std::string("/v1/jobs/") + job + "/trigger", json::object())["id"]);
    }
  }
  for (int64_t id : acknowledged) {
    json done = coord.WaitRun(id, seconds(60));
    ASSERT_EQ(done["state"], "succeeded") << done.dump() << coord.Logs();
  }
  std::string epoch = Query(*primary_, "SELECT epoch FROM leader");

  // The primary crashes; the operator (or a failover manager) promotes the standby.
  primary_->Kill();
  auto killed = std::chrono::steady_clock::now();
  ASSERT_TRUE(replica_->Promote().ok()) << replica_->Log();
  double promoted =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();

  // Every run the coordinator acknowledged is in the promoted server, with its output.
  EXPECT_EQ(Query(*replica_, "SELECT count(*) FROM runs WHERE state = 'succeeded'"),
            std::to_string(acknowledged.size()) + "\n");
  for (size_t i = 0; i < acknowledged.size(); ++i) {
    int64_t id = acknowledged[i];
    std::string job = i % 2 == 0 ? "hello" : "other";
    json run = coord.GetJson("/v1/runs/" + std::to_string(id));
    EXPECT_EQ(run["state"], "succeeded") << run.dump();
    EXPECT_EQ(coord.Output(id, 0, "stdout"), "run " + std::to_string(id) + " of " + job + "\n");
    if (job == "other") {
      EXPECT_EQ(coord.Output(id, 0, "stderr"), "to stderr\n");
    }
  }

  // The coordinator went on by itself: a new trigger is stored on the promoted server and
  // runs, by the same coordinator in the same epoch (it held the database again: the lock
  // free there, the epoch its own).
  int64_t id = coord.PostJson("/v1/jobs/hello/trigger", json::object())["id"];
  json done = coord.WaitRun(id, seconds(60));
  double served = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  std::printf("standby promoted %.2f s after SIGKILL of the primary; a new run done after %.2f s\n",
              promoted, served);
  ASSERT_EQ(done["state"], "succeeded") << done.dump() << coord.Logs();
  EXPECT_EQ(coord.Output(id, 0, "stdout"), "run " + std::to_string(id) + " of hello\n");
  EXPECT_EQ(Query(*replica_, "SELECT state FROM runs WHERE id = " + std::to_string(id)),
            "succeeded\n");
  EXPECT_EQ(Query(*replica_, "SELECT epoch FROM leader"), epoch);
  EXPECT_TRUE(coord.process().running()) << coord.Logs();
  EXPECT_NE(coord.Logs().find("PostgreSQL connection lost; reconnecting"), std::string::npos)
      << coord.Logs();
  EXPECT_EQ(coord.Logs().find("lost the hold"), std::string::npos) << coord.Logs();
}

TEST_F(PostgresFailoverTest,
       ACoordinatorWaitingAsStandbyWaitsThroughTheFailoverAndTheServingOneCarriesOn) {
  TempDir da;
  TempDir db;
  // a reconnects within a second of the promotion; b leaves it hold_ttl to do so.
  std::string conf = "store = \"" + StoreUrl() + "\"\nhold_ttl = \"5s\"\n";
  Coordinator a(da, conf);
  a.set_port(FreeLoopbackPort());
  a.Start();
  Coordinator b(db, conf);
  b.set_port(FreeLoopbackPort());
  AgentProcess agent(a, da, "h1", {"--coordinator", b.url()});
  a.Apply("[[job]]\nname = \"hello\"\nschedule = \"@yearly\"\nshell = \"echo run $JOB_RUN_ID\"\n");
  std::vector<int64_t> acknowledged;
  for (int i = 0; i < 3; ++i) {
    acknowledged.push_back(a.PostJson("/v1/jobs/hello/trigger", json::object())["id"]);
  }
  for (int64_t id : acknowledged) {
    json done = a.WaitRun(id, seconds(60));
    ASSERT_EQ(done["state"], "succeeded") << done.dump() << a.Logs();
  }
  std::string epoch = Query(*primary_, "SELECT epoch FROM leader");
  // b starts as a hot standby: it listens, answers reads and waits for the hold.
  CopyAdminToken(a, db);
  std::string b_log = db.path() + "/coordinator.log";
  b.Start();
  ASSERT_NE(ReadFile(b_log).find("standby: another"), std::string::npos) << ReadFile(b_log);

  // No server takes writes until the standby server is promoted: the waiting coordinator
  // finds the database gone at its next try, and waits on.
  primary_->Kill();
  ASSERT_TRUE(Coordinator::Eventually(
      [&] { return ReadFile(b_log).find("standby: cannot") != std::string::npos; }, seconds(10)))
      << ReadFile(b_log);
  ASSERT_TRUE(replica_->Promote().ok()) << replica_->Log();

  // On the promoted server the lock is free for both. The waiting coordinator leaves it to
  // the one that held the database, which holds it again in its epoch (the leader row names
  // its session, which holds the lock) and carries on.
  std::string held;
  ASSERT_TRUE(Coordinator::Eventually(
      [&] {
        ProcessResult r =
            Psql(*replica_,
                 "SELECT l.epoch FROM leader l WHERE EXISTS (SELECT 1 FROM pg_locks k WHERE "
                 "k.pid = l.pid AND k.locktype = 'advisory' AND k.granted AND k.classid = 1 AND "
                 "k.objid = 3167051988 AND k.objsubid = 1)");
        held = r.exit_code == 0 ? r.out : "";
        return !held.empty();
      },
      seconds(30)))
      << a.Logs() << ReadFile(b_log);
  ASSERT_EQ(held, epoch) << a.Logs() << ReadFile(b_log);
  // b reaches the promoted server too (before a or after), and waits on.
  EXPECT_TRUE(Coordinator::Eventually(
      [&] { return ReadFile(b_log).find("standby: the database is back") != std::string::npos; },
      seconds(20)))
      << ReadFile(b_log);
  for (int64_t id : acknowledged) {
    json run = a.GetJson("/v1/runs/" + std::to_string(id));
    EXPECT_EQ(run["state"], "succeeded") << run.dump();
    EXPECT_EQ(a.Output(id, 0, "stdout"), "run " + std::to_string(id) + "\n");
  }
  int64_t id = a.PostJson("/v1/jobs/hello/trigger", json::object())["id"];
  json done = a.WaitRun(id, seconds(60));
  ASSERT_EQ(done["state"], "succeeded") << done.dump() << a.Logs() << agent.Logs();
  acknowledged.push_back(id);
  // b waited through it all and still waits; it does hold the database once a is gone.
  EXPECT_EQ(ReadFile(b_log).find("taking over: this coordinator holds"), std::string::npos)
      << ReadFile(b_log);
  a.Kill9();
  ASSERT_TRUE(Coordinator::Eventually(
      [&] {
        return ReadFile(b_log).find("taking over: this coordinator holds") != std::string::npos;
      },
      seconds(30)))
      << ReadFile(b_log);
  EXPECT_EQ(Query(*replica_, "SELECT epoch FROM leader"),
            std::to_string(std::stoll(epoch) + 1) + "\n");
  for (int64_t run_id : acknowledged) {
    EXPECT_EQ(b.Output(run_id, 0, "stdout"), "run " + std::to_string(run_id) + "\n");
  }
}

TEST_F(PostgresFailoverTest,
       AWriteWhileNoServerTakesWritesIsRefusedAndStopsTheCoordinatorWhichServesOnceRestarted) {
  TempDir dir;
  Coordinator coord(dir, "store = \"" + StoreUrl() + "\"\n");
  coord.Start();
  AgentProcess agent(coord, dir, "h1");
  coord.Apply(
      "[[job]]\nname = \"hello\"\nschedule = \"@yearly\"\nshell = \"echo run $JOB_RUN_ID\"\n");
  int64_t before = coord.PostJson("/v1/jobs/hello/trigger", json::object())["id"];
  ASSERT_EQ(coord.WaitRun(before, seconds(60))["state"], "succeeded") << coord.Logs();

  // Between the loss of the primary and the promotion, a write cannot be stored: it is
  // refused, and the coordinator, which cannot reload its state from the database then,
  // stops with 75 for its service to restart it.
  primary_->Kill();
  http::HttpResponse refused = coord.Request("POST", "/v1/jobs/hello/pause", "{}");
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_EQ(coord.process().Wait(seconds(20)), 75) << coord.Logs();
  // It says why: it still held the database, but could not read its state back.
  EXPECT_NE(coord.Logs().find("this coordinator cannot reload its state from the database"),
            std::string::npos)
      << coord.Logs();
  EXPECT_EQ(coord.Logs().find("lost its hold"), std::string::npos) << coord.Logs();
  ASSERT_TRUE(replica_->Promote().ok()) << replica_->Log();

  // Restarted (as its service would), it holds the promoted server in a new epoch: the run
  // acknowledged before is there, the refused pause is not, and a new trigger runs.
  coord.Start();
  EXPECT_EQ(coord.Output(before, 0, "stdout"), "run " + std::to_string(before) + "\n");
  EXPECT_EQ(coord.GetJson("/v1/jobs/hello")["paused"], false);
  int64_t after = coord.PostJson("/v1/jobs/hello/trigger", json::object())["id"];
  json done = coord.WaitRun(after, seconds(60));
  ASSERT_EQ(done["state"], "succeeded") << done.dump() << coord.Logs() << agent.Logs();
  EXPECT_EQ(coord.Output(after, 0, "stdout"), "run " + std::to_string(after) + "\n");
}

}  // namespace
}  // namespace jobctl::testing
