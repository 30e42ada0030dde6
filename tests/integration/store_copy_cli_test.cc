// `jobctl store copy` with the real binaries and a real PostgreSQL server (testlib/postgres.h):
// a coordinator on the embedded store runs a job and is stopped; its store is copied into
// PostgreSQL; a coordinator on that database (another data directory) has the same runs and
// output, and numbers new runs after them. The copy is refused while serve runs on the data
// directory, and into a database that already holds jobctl data.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "testlib/cluster.h"
#include "testlib/postgres.h"

namespace jobctl::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

class StoreCopyCliTest : public ::testing::Test {
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
  void TearDown() override {
    if (HasFailure()) std::cerr << "---- coordinator ----\n" << embedded_.Logs();
  }

  ProcessResult Jobctl(std::vector<std::string> args, const Coordinator* coordinator = nullptr) {
    args.insert(args.begin(), JOBCTL_BIN);
    RunOptions o;
    o.env = {{"HOME", dir_.path()}, {"NO_COLOR", "1"}};
    if (coordinator != nullptr) {
      o.env["JOBCTL_COORDINATOR"] = coordinator->url();
      o.env["JOBCTL_TOKEN"] = coordinator->admin_token();
    }
    o.unset_env = {"JOBCTL_DATA_DIR", "JOBCTL_STORE"};
    o.cwd = dir_.path();
    o.timeout = seconds(60);
    return jobctl::testing::Run(args, o);
  }

  std::unique_ptr<PostgresServer> pg_;
  TempDir dir_;
  Coordinator embedded_{dir_};
};

TEST_F(StoreCopyCliTest, ACopiedStoreServesTheSameRunsAndOutputFromPostgres) {
  embedded_.Start();
  int64_t id = 0;
  {
    AgentProcess agent(embedded_, dir_, "h1");
    embedded_.Apply(
        "[[job]]\nname = \"hello\"\nschedule = \"@yearly\"\n"
        "shell = \"echo hello from $JOB_NAME\"\n");
    id = embedded_.PostJson("/v1/jobs/hello/trigger", json::object())["id"];
    json done = embedded_.WaitRun(id, seconds(60));
    ASSERT_EQ(done["state"], "succeeded") << done.dump();
  }
  std::string url = pg_->Url("jobctl");

  // Not while serve runs on the data directory: the copy is taken with the coordinator
  // stopped, and the database is not touched.
  ProcessResult refused = Jobctl({"store", "copy", "--data", embedded_.data_dir(), "--to", url});
  EXPECT_EQ(refused.exit_code, 75) << refused.err;
  EXPECT_NE(refused.err.find("jobctl: store copy " + embedded_.data_dir() + ": jobctl serve (pid " +
                             std::to_string(embedded_.process().pid()) + ") is running"),
            std::string::npos)
      << refused.err;

  embedded_.Stop();
  // Without a database named, nothing to do.
  ProcessResult no_target = Jobctl({"store", "copy", "--data", embedded_.data_dir()});
  EXPECT_EQ(no_target.exit_code, 64) << no_target.err;
  // The data directory and the database from the coordinator's config file, as serve reads
  // them once it is switched to PostgreSQL.
  std::string config = dir_.Write(
      "switched.toml", "data_dir = \"" + embedded_.data_dir() + "\"\nstore = \"" + url + "\"\n");
  ProcessResult copy = Jobctl({"store", "copy", "--config", config, "-o", "json"});
  ASSERT_EQ(copy.exit_code, 0) << copy.err;
  json summary = json::parse(copy.out, nullptr, false);
  ASSERT_TRUE(summary.is_object()) << copy.out;
  EXPECT_GT(summary["output_bytes"].get<int64_t>(), 0) << copy.out;
  bool runs_seen = false;
  for (const json& t : summary["tables"]) {
    if (t["table"] == "runs") {
      EXPECT_EQ(t["rows"], 1) << copy.out;
      runs_seen = true;
    }
  }
  EXPECT_TRUE(runs_seen) << copy.out;
  EXPECT_NE(copy.err.find("jobctl: store copy: log_chunks: "), std::string::npos) << copy.err;

  // A coordinator on the database, from another data directory with the admin token kept.
  TempDir pg_dir;
  std::filesystem::create_directories(pg_dir.path() + "/data");
  chmod((pg_dir.path() + "/data").c_str(), 0700);
  std::ofstream(pg_dir.path() + "/data/admin.token") << embedded_.admin_token() << "\n";
  chmod((pg_dir.path() + "/data/admin.token").c_str(), 0600);
  Coordinator on_pg(pg_dir, "store = \"" + url + "\"\n");
  on_pg.Start();
  ProcessResult runs = Jobctl({"runs", "hello", "-o", "json"}, &on_pg);
  ASSERT_EQ(runs.exit_code, 0) << runs.err;
  json listed = json::parse(runs.out, nullptr, false);
  ASSERT_EQ(listed.size(), 1u) << runs.out;
  EXPECT_EQ(listed[0]["id"], id);
  EXPECT_EQ(listed[0]["state"], "succeeded");
  ProcessResult logs = Jobctl({"logs", std::to_string(id)}, &on_pg);
  ASSERT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_EQ(logs.out, "hello from hello\n");
  // A new run is numbered after the copied one.
  int64_t next = on_pg.PostJson("/v1/jobs/hello/trigger", json::object())["id"];
  EXPECT_EQ(next, id + 1);

  // The database holds jobctl data now: a second copy is refused.
  on_pg.Stop();
  ProcessResult again = Jobctl({"store", "copy", "--data", embedded_.data_dir(), "--to", url});
  EXPECT_EQ(again.exit_code, 73) << again.err;
  EXPECT_NE(again.err.find("already holds jobctl data"), std::string::npos) << again.err;
}

}  // namespace
}  // namespace jobctl::testing
