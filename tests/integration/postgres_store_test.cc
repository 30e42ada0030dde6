// The coordinator on PostgreSQL (`store = "postgresql://..."`), with the real binaries and a
// real PostgreSQL server (testlib/postgres.h): jobs, runs and output live in the database,
// not in the data directory, so another coordinator on another host carries on with them;
// a second coordinator on the same database serves as a standby (reads from the database,
// the rest refused so that clients move on to the holder), then takes over when the first
// is killed, without ending the shard an agent is running.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <csignal>
#include <cstdio>
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

  // A coordinator started on another host after `from` was lost: a data directory of its
  // own, given from's admin token.
  struct Successor {
    Successor(const Coordinator& from, const std::string& conf) : c(dir, conf) {
      CopyAdminToken(from, dir);
      c.Start();
    }
    TempDir dir;
    Coordinator c;
  };

  // Two coordinators on the test database, each with a data directory of its own: `a`
  // started first, so it holds the database, then `b`, a standby, given a's admin token.
  struct Pair {
    explicit Pair(const std::string& conf) : a(da, conf), b(db, conf) {
      a.set_port(FreeLoopbackPort());
      a.Start();
      b.set_port(FreeLoopbackPort());
      CopyAdminToken(a, db);
      b.Start();
    }
    TempDir da;
    TempDir db;
    Coordinator a;
    Coordinator b;
  };

  std::unique_ptr<PostgresServer> pg_;
};

// Whether `c` answers /readyz with 200: it holds the database (a standby answers 503).
bool Holds(Coordinator& c) {
  try {
    return c.Request("GET", "/readyz", "").status == 200;
  } catch (const std::exception&) {
    return false;  // not listening (killed, or not started)
  }
}

// Waits until `b` holds the database; the seconds it took, or -1 past `timeout`.
double WaitForHold(Coordinator& b, seconds timeout) {
  auto start = std::chrono::steady_clock::now();
  if (!Coordinator::Eventually([&] { return Holds(b); }, timeout)) return -1;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

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
  Successor next(a, Config());
  Coordinator& b = next.c;
  json run = b.GetJson("/v1/runs/" + std::to_string(id));
  EXPECT_EQ(run["state"], "succeeded") << run.dump();
  EXPECT_EQ(b.Output(id, 0, "stdout"), "hello from hello\n");
  json jobs = b.GetJson("/v1/jobs");
  ASSERT_EQ(jobs.size(), 1u) << jobs.dump();
  // And it runs jobs: the agent finds it among its coordinators.
  EXPECT_FALSE(std::filesystem::exists(next.dir.path() + "/data/agent.token"))
      << "tokens exist already: a second coordinator writes none";
}

// A retry of the failed shards on PostgreSQL: the kept shard is stored with the new run, so
// another coordinator reading the database shows it as the first did.
TEST_F(PostgresStoreTest, ARetryOfTheFailedShardsKeepsTheOthersInTheDatabase) {
  TempDir da;
  Coordinator a(da, Config());
  a.Start();
  AgentProcess agent(a, da, "h1");
  std::string fixed = da.path() + "/fixed";
  a.Apply(
      "[[job]]\nname = \"pair\"\nschedule = \"@yearly\"\nshards = 2\n"
      "shell = \"[ $JOB_SHARD_INDEX = 0 ] || [ -e " +
      fixed + " ]\"\n");
  int64_t id = a.PostJson("/v1/jobs/pair/trigger", json::object())["id"];
  ASSERT_EQ(a.WaitRun(id, seconds(60))["state"], "failed") << a.Logs();
  da.Write("fixed", "");
  json retry = a.PostJson("/v1/runs/" + std::to_string(id) + "/retry", {{"failed_shards", true}});
  int64_t second = retry["id"];
  json done = a.WaitRun(second, seconds(60));
  ASSERT_EQ(done["state"], "succeeded") << done.dump() << a.Logs();

  a.Kill9();
  Successor next(a, Config());
  json run = next.c.GetJson("/v1/runs/" + std::to_string(second));
  EXPECT_EQ(run["state"], "succeeded") << run.dump();
  ASSERT_EQ(run["shards"].size(), 2u);
  EXPECT_EQ(run["shards"][0]["outcome"], "kept") << run.dump();
  EXPECT_EQ(run["shards"][0]["message"], "succeeded in run " + std::to_string(id));
  EXPECT_EQ(run["shards"][0]["agent"], "h1");
  EXPECT_EQ(run["shards"][1]["outcome"], "exited");
}

TEST_F(PostgresStoreTest, ASecondCoordinatorWaitsThenTakesOverWithoutEndingARunningShard) {
  Pair p(Config("lease_ttl = \"8s\"\nheartbeat = \"2s\"\n"));
  Coordinator& a = p.a;
  Coordinator& b = p.b;
  // b listens, as a standby, while a holds the database.
  EXPECT_FALSE(Holds(b));

  AgentProcess agent(a, p.da, "h1", {"--coordinator", b.url()});
  a.Apply(
      "[[job]]\nname = \"long\"\nschedule = \"@yearly\"\n"
      "shell = \"echo started; sleep 5; echo finished\"\n");
  int64_t id = a.PostJson("/v1/jobs/long/trigger", json::object())["id"];
  ASSERT_TRUE(Coordinator::Eventually([&] { return a.Output(id, 0, "stdout") == "started\n"; },
                                      seconds(20)));

  a.Kill9();
  double took = WaitForHold(b, seconds(20));
  ASSERT_GE(took, 0) << b.Logs();
  std::printf("takeover after SIGKILL: %.2f s\n", took);
  EXPECT_LE(took, 5.0) << "takeover too slow";
  json done = b.WaitRun(id, seconds(60));
  ASSERT_EQ(done["state"], "succeeded") << done.dump() << b.Logs();
  // The shard the agent was running went on: the same attempt, not a second one.
  EXPECT_EQ(done["shards"][0]["attempt"], 1) << done.dump();
  EXPECT_EQ(done["shards"][0]["agent"], "h1");
  EXPECT_EQ(b.Output(id, 0, "stdout"), "started\nfinished\n");

  // jobctl with both URLs reaches the one that serves, past the one that is gone.
  ProcessResult ls = testing::Run({JOBCTL_BIN, "--coordinator", a.url() + "," + b.url(), "--token",
                                   a.admin_token(), "runs", "long", "-o", "json"});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  json runs = json::parse(ls.out);
  ASSERT_EQ(runs.size(), 1u) << ls.out;
  EXPECT_EQ(runs[0]["id"], id);
  // With none of them there, it says which it tried.
  ProcessResult none = testing::Run({JOBCTL_BIN, "--coordinator", a.url() + "," + a.url(),
                                     "--token", a.admin_token(), "runs", "long"});
  EXPECT_EQ(none.exit_code, 69);
  EXPECT_NE(none.err.find("no coordinator could be reached"), std::string::npos) << none.err;
}

TEST_F(PostgresStoreTest, AStandbyAnswersReadsFromTheDatabaseAndSendsTheRestToTheHolder) {
  Pair p(Config());
  Coordinator& a = p.a;
  Coordinator& b = p.b;
  a.Apply("[[job]]\nname = \"hello\"\nschedule = \"@yearly\"\nshell = \"echo hello\"\n");
  std::ofstream(p.db.path() + "/data/agent.token") << a.agent_token() << "\n";
  ASSERT_TRUE(Holds(a));
  // The standby's view of the jobs follows within a second or so.
  ASSERT_TRUE(
      Coordinator::Eventually([&] { return b.GetJson("/v1/jobs").size() == 1; }, seconds(10)))
      << b.GetJson("/v1/jobs").dump();
  EXPECT_FALSE(Holds(b));

  // agentd and jobctl are given the standby first: they move on to the holder.
  AgentProcess agent(b, p.db, "h1", {"--coordinator", a.url()});
  ProcessResult trigger = testing::Run({JOBCTL_BIN, "--coordinator", b.url() + "," + a.url(),
                                        "--token", a.admin_token(), "trigger", "hello", "--wait"});
  ASSERT_EQ(trigger.exit_code, 0) << trigger.err << a.Logs() << agent.Logs();
  json runs = a.Runs("hello");
  ASSERT_EQ(runs.size(), 1u) << runs.dump();
  int64_t id = runs[0]["id"];

  // The standby answers reads from the database: the run, its output, the jobs, the agents.
  EXPECT_EQ(b.GetJson("/v1/runs/" + std::to_string(id))["state"], "succeeded");
  EXPECT_EQ(b.Output(id, 0, "stdout"), "hello\n");
  ProcessResult ls = testing::Run({JOBCTL_BIN, "--coordinator", b.url(), "--token", a.admin_token(),
                                   "runs", "hello", "-o", "json"});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  EXPECT_EQ(json::parse(ls.out).size(), 1u) << ls.out;
  // Per-job health comes along with its view of the jobs.
  EXPECT_TRUE(Coordinator::Eventually(
      [&] { return b.Metric("jobctl_job_last_run_succeeded{job_name=\"hello\"}") == 1; },
      seconds(10)))
      << b.Request("GET", "/metrics").body;
  EXPECT_GT(b.Metric("jobctl_job_last_success_timestamp_seconds{job_name=\"hello\"}"), 0);
  EXPECT_TRUE(b.GetJson("/v1/jobs")[0]["last_success"].is_string()) << b.GetJson("/v1/jobs");
  // Its view follows the holder's writes.
  a.Apply(
      "[[job]]\nname = \"hello\"\nschedule = \"@yearly\"\nshell = \"echo hello\"\n"
      "[[job]]\nname = \"later\"\nschedule = \"@yearly\"\nshell = \"true\"\n");
  EXPECT_TRUE(
      Coordinator::Eventually([&] { return b.GetJson("/v1/jobs").size() == 2; }, seconds(10)))
      << b.GetJson("/v1/jobs").dump();
  EXPECT_TRUE(Coordinator::Eventually(
      [&] {
        for (const json& x : b.GetJson("/v1/agents"))
          if (x.value("name", "") == "h1") return true;
        return false;
      },
      seconds(10)))
      << b.GetJson("/v1/agents").dump();
  EXPECT_NE(b.Request("GET", "/metrics").body.find("jobctl_standby 1"), std::string::npos);
  EXPECT_NE(a.Request("GET", "/metrics").body.find("jobctl_standby 0"), std::string::npos);

  // What only the holder does is refused, naming it, and nothing is written.
  http::HttpResponse write = b.Request("POST", "/v1/jobs/hello/trigger", "{}");
  EXPECT_EQ(write.status, 503) << write.body;
  EXPECT_NE(write.body.find("\"standby\""), std::string::npos) << write.body;
  EXPECT_NE(write.body.find(a.url().substr(7)), std::string::npos)
      << "the holder is named: " << write.body;
  http::HttpResponse wait = b.Request("GET", "/v1/runs/" + std::to_string(id) + "/wait");
  EXPECT_EQ(wait.status, 503) << wait.body;
  EXPECT_EQ(a.Runs("hello").size(), 1u);
  // Given only the standby, jobctl says what it is; given only standbys, it says that no
  // coordinator could be reached, and why, with status 69.
  ProcessResult refused = testing::Run(
      {JOBCTL_BIN, "--coordinator", b.url(), "--token", a.admin_token(), "trigger", "hello"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("standby"), std::string::npos) << refused.err;
  ProcessResult none = testing::Run({JOBCTL_BIN, "--coordinator", b.url() + "," + b.url(),
                                     "--token", a.admin_token(), "trigger", "hello"});
  EXPECT_EQ(none.exit_code, 69) << none.err;
  EXPECT_NE(none.err.find("no coordinator could be reached"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("is a standby"), std::string::npos) << none.err;
}

// Retention runs only in the coordinator that holds the database: a standby, though its
// coordinator.toml would delete every ended run at once, deletes nothing (it writes nothing)
// and is not stopped by trying to; once it takes over, it prunes.
TEST_F(PostgresStoreTest, OnlyTheHolderPrunesAndAStandbyPrunesOnceItTakesOver) {
  TempDir da;
  TempDir db;
  // a keeps everything; b would keep no ended run past a second.
  Coordinator a(da, Config("runs_for = \"0s\"\nlogs_for = \"0s\"\nlogs_max = 0\n"));
  a.set_port(FreeLoopbackPort());
  a.Start();
  Coordinator b(db, Config("runs_for = \"1s\"\nkeep_last = 0\nprune_every = \"100ms\"\n"));
  b.set_port(FreeLoopbackPort());
  CopyAdminToken(a, db);
  b.Start();
  ASSERT_TRUE(Holds(a));
  AgentProcess agent(a, da, "h1");
  a.Apply("[[job]]\nname = \"hello\"\nschedule = \"@yearly\"\nshell = \"echo hello\"\n");
  // Two runs: retention never deletes the store's newest run (nor a job's newest success).
  int64_t id = a.PostJson("/v1/jobs/hello/trigger", json::object())["id"];
  ASSERT_EQ(a.WaitRun(id, seconds(60))["state"], "succeeded") << a.Logs() << agent.Logs();
  int64_t newest = a.PostJson("/v1/jobs/hello/trigger", json::object())["id"];
  ASSERT_EQ(a.WaitRun(newest, seconds(60))["state"], "succeeded") << a.Logs() << agent.Logs();
  std::string path = "/v1/runs/" + std::to_string(id);
  ASSERT_TRUE(
      Coordinator::Eventually([&] { return b.Request("GET", path).status == 200; }, seconds(10)));
  // Past runs_for many times over, at b's prune_every: the run stays, b stays a standby.
  bool changed = Coordinator::Eventually(
      [&] {
        return b.Request("GET", path).status != 200 || Holds(b) ||
               b.Metric("jobctl_pruned_runs_total") != 0 ||
               b.Request("GET", "/readyz").status != 503;
      },
      seconds(3));
  EXPECT_FALSE(changed) << b.Logs();
  EXPECT_EQ(a.Request("GET", path).status, 200);

  a.Kill9();
  ASSERT_GE(WaitForHold(b, seconds(20)), 0) << b.Logs();
  EXPECT_TRUE(
      Coordinator::Eventually([&] { return b.Request("GET", path).status == 404; }, seconds(20)))
      << b.Logs();
  EXPECT_EQ(b.Metric("jobctl_pruned_runs_total"), 1);
  // Nothing a standby tried to write was left to fail the holder's first commit.
  EXPECT_EQ(b.Logs().find("commit failed"), std::string::npos) << b.Logs();
  // The store's size is the tables' on disk; nothing is given back (autovacuum reuses it).
  json stats = b.GetJson("/v1/store/stats");
  EXPECT_EQ(stats["backend"], "postgresql") << stats.dump();
  EXPECT_GT(stats["store_bytes"].get<int64_t>(), 0);
  EXPECT_GT(stats["logs_bytes"].get<int64_t>(), 0);
  EXPECT_EQ(stats["store_free_bytes"], 0);
  EXPECT_FALSE(stats["reclaims_space"].get<bool>());
  EXPECT_EQ(stats["runs"], 1);  // the newest
  ProcessResult table = testing::Run(
      {JOBCTL_BIN, "--coordinator", b.url(), "--token", a.admin_token(), "store", "stats"});
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("store tables"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("reused after autovacuum"), std::string::npos) << table.out;
}

TEST_F(PostgresStoreTest, ACoordinatorThatLostItsHoldToAnotherWritesNothingAndExits75) {
  Pair p(Config());
  Coordinator& a = p.a;
  Coordinator& b = p.b;
  a.Apply("[[job]]\nname = \"hello\"\nschedule = \"@yearly\"\nshell = \"echo hi\"\n");
  // The database loses sight of a's session (as when a was frozen or cut off past the
  // server's keepalive): b takes over. a is stopped meanwhile, so that it cannot take the
  // free lock back first (its hold check would: the epoch is still its own until b's).
  a.process().Signal(SIGSTOP);
  ProcessResult ended = testing::Run(
      {FindPostgresBin() + "/psql", pg_->Url("jobctl"), "-Atc",
       "SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory' "
       "AND granted AND classid = 1 AND objid = 3167051988 AND objsubid = 1"});
  ASSERT_EQ(ended.exit_code, 0) << ended.err;
  ASSERT_EQ(ended.out, "1\n");
  double took = WaitForHold(b, seconds(20));
  a.process().Signal(SIGCONT);
  ASSERT_GE(took, 0) << b.Logs();
  // a does not know yet; its next write (or hold check) finds the connection gone, cannot
  // hold the database again, commits nothing and stops.
  try {
    http::HttpResponse refused = a.Request("POST", "/v1/jobs/hello/trigger", "{}");
    EXPECT_NE(refused.status, 200) << refused.body;
  } catch (const std::exception&) {
    // Its hold check came first: it is gone already.
  }
  EXPECT_EQ(a.process().Wait(seconds(20)), 75) << a.Logs();
  EXPECT_NE(a.Logs().find("lost its hold on the database"), std::string::npos) << a.Logs();
  EXPECT_EQ(b.Runs("hello").size(), 0u) << b.Runs("hello").dump();
}

TEST_F(PostgresStoreTest, ACoordinatorStoppedPastItsHoldTtlIsReplacedAndWritesNothingWhenResumed) {
  Pair p(Config("hold_ttl = \"3s\"\n"));
  Coordinator& a = p.a;
  Coordinator& b = p.b;
  a.Apply("[[job]]\nname = \"hello\"\nschedule = \"@yearly\"\nshell = \"echo hi\"\n");
  a.process().Signal(SIGSTOP);
  double took = WaitForHold(b, seconds(20));
  ASSERT_GE(took, 0) << b.Logs();
  std::printf("takeover after SIGSTOP: %.2f s (hold_ttl 3 s)\n", took);
  EXPECT_GE(took, 2.0);
  EXPECT_LE(took, 3.0 + 1.0) << "hold_ttl plus a second";
  // b serves and writes.
  int64_t id = b.PostJson("/v1/jobs/hello/trigger", json::object())["id"];
  // a resumes: within a second it finds its session gone and the epoch moved on, and stops
  // without writing; whatever it is asked meanwhile is not stored.
  a.process().Signal(SIGCONT);
  std::string late;
  try {
    http::HttpResponse r = a.Request("POST", "/v1/jobs/hello/trigger", "{}");
    late = std::to_string(r.status) + " " + r.body;
  } catch (const std::exception& e) {
    late = e.what();  // it may be gone already
  }
  EXPECT_EQ(a.process().Wait(seconds(20)), 75) << a.Logs();
  json runs = b.Runs("hello");
  ASSERT_EQ(runs.size(), 1u) << "a stored a run after it lost the database: " << runs.dump()
                             << " (its answer: " << late << ")";
  EXPECT_EQ(runs[0]["id"], id);
}

// agentd's claim is held open by the coordinator that gets SIGSTOPped. Once the standby
// serves, the agent's next heartbeat (it runs a shard) is served there, and the claim moves
// with it: a shard triggered then starts within seconds, not when the claim held by the
// stopped coordinator times out (kWaitMs + 15 s after it was sent, 45 s).
TEST_F(PostgresStoreTest, AnAgentsClaimMovesToTheStandbyThatTookOverFromAStoppedCoordinator) {
  Pair p(Config("hold_ttl = \"3s\"\nlease_ttl = \"8s\"\nheartbeat = \"2s\"\n"));
  Coordinator& a = p.a;
  Coordinator& b = p.b;
  AgentProcess agent(a, p.da, "h1", {"--coordinator", b.url(), "--slots", "4"});
  a.Apply(
      "[[job]]\nname = \"long\"\nschedule = \"@yearly\"\n"
      "shell = \"echo started; sleep 30\"\n"
      "[[job]]\nname = \"next\"\nschedule = \"@yearly\"\nshell = \"echo next\"\n");
  int64_t id = a.PostJson("/v1/jobs/long/trigger", json::object())["id"];
  // Running: the agent heartbeats, and its claim for the free slots is open at a.
  ASSERT_TRUE(Coordinator::Eventually([&] { return a.Output(id, 0, "stdout") == "started\n"; },
                                      seconds(20)))
      << agent.Logs();

  a.process().Signal(SIGSTOP);
  ASSERT_GE(WaitForHold(b, seconds(20)), 0) << b.Logs();
  auto triggered = std::chrono::steady_clock::now();
  int64_t next = b.PostJson("/v1/jobs/next/trigger", json::object())["id"];
  json done = b.WaitRun(next, seconds(60));
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - triggered).count();
  std::printf("shard triggered after the takeover ran in %.2f s\n", took);
  EXPECT_EQ(done["state"], "succeeded") << done.dump() << agent.Logs();
  EXPECT_LE(took, 10.0) << "the agent's claim stayed with the stopped coordinator\n"
                        << agent.Logs();

  a.process().Signal(SIGCONT);
  EXPECT_EQ(a.process().Wait(seconds(20)), 75) << a.Logs();
}

}  // namespace
}  // namespace jobctl::testing
