// The coordinator's data directory as operators handle it: one `jobctl serve` per directory,
// a restart after kill -9, and `jobctl backup` of the embedded store while serve runs,
// restored into a new directory.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "testlib/cluster.h"

namespace jobctl::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

class DataDirTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (HasFailure()) std::cerr << "---- coordinator ----\n" << coord_.Logs();
  }
  // jobctl as an operator on the coordinator's host runs it; `coordinator` is the one its
  // client commands talk to.
  ProcessResult Jobctl(std::vector<std::string> args, const Coordinator* coordinator = nullptr) {
    args.insert(args.begin(), JOBCTL_BIN);
    RunOptions o;
    o.env = {{"HOME", dir_.path()}, {"NO_COLOR", "1"}};
    if (coordinator != nullptr) {
      o.env["JOBCTL_COORDINATOR"] = coordinator->url();
      o.env["JOBCTL_TOKEN"] = coordinator->admin_token();
    }
    o.unset_env = {"JOBCTL_DATA_DIR", "JOBCTL_LISTEN"};
    o.cwd = dir_.path();
    o.timeout = seconds(60);
    return jobctl::testing::Run(args, o);
  }
  TempDir dir_;
  Coordinator coord_{dir_};
};

TEST_F(DataDirTest, SecondServeOnTheSameDataDirectoryIsRefusedNamingTheFirstsPid) {
  coord_.Start();
  std::string empty_config = dir_.Write("empty.toml", "");
  ProcessResult second = Jobctl(
      {"serve", "--config", empty_config, "--listen", "127.0.0.1:0", "--data", coord_.data_dir()});
  EXPECT_EQ(second.exit_code, 75) << second.err;
  EXPECT_NE(second.err.find("jobctl: serve " + coord_.data_dir() +
                            ": data directory in use by another jobctl serve (pid " +
                            std::to_string(coord_.process().pid()) + ")"),
            std::string::npos)
      << second.err;
  EXPECT_EQ(second.out.find("listening"), std::string::npos) << second.out;
  // The first one never noticed.
  EXPECT_EQ(coord_.Request("GET", "/v1/jobs").status, 200);
  // Its lock dies with it: a restart after kill -9 finds the directory free.
  coord_.Kill9();
  coord_.Start();
  EXPECT_EQ(coord_.Request("GET", "/v1/jobs").status, 200);
}

const char* kJobs =
    "[[job]]\n"
    "name = \"nightly\"\n"
    "schedule = \"@yearly\"\n"
    "shell = \"echo nightly\"\n"
    "\n"
    "[[job]]\n"
    "name = \"report\"\n"
    "schedule = \"@yearly\"\n"
    "shell = \"exit 3\"\n";

// What `jobctl list` and `jobctl runs` print, as JSON, from `coordinator`.
struct Listing {
  json jobs;
  json nightly_runs;
  json report_runs;
};

TEST_F(DataDirTest, BackupTakenWhileServingRestoresTheSameJobsAndRunsInANewDataDirectory) {
  coord_.Start();
  coord_.Apply(kJobs);
  TestAgent agent(coord_, "host-1");
  // Runs recorded: one succeeded with output, one failed, one still waiting for an agent.
  std::vector<int64_t> finished;
  for (auto [job, exit_code] : {std::pair{"nightly", 0}, std::pair{"report", 3}}) {
    json run = coord_.PostJson(std::string("/v1/jobs/") + job + "/trigger", json::object());
    std::vector<json> a = agent.Claim(1, 5000);
    ASSERT_EQ(a.size(), 1u);
    ASSERT_EQ(agent.Log(a[0], 1, "stdout", std::string(job) + " says hello\n").status, 200);
    ASSERT_EQ(agent.Finish(a[0], exit_code).status, 200);
    finished.push_back(run["id"].get<int64_t>());
  }
  coord_.PostJson("/v1/jobs/nightly/trigger", json::object());

  std::string dest = dir_.path() + "/backup";
  ProcessResult backup = Jobctl({"backup", "--data", coord_.data_dir(), "--logs", dest});
  ASSERT_EQ(backup.exit_code, 0) << backup.err;
  EXPECT_NE(backup.out.find(dest + "/jobctl.db"), std::string::npos) << backup.out;
  EXPECT_NE(backup.out.find(dest + "/logs.db"), std::string::npos) << backup.out;
  // A second backup into the same place is refused and keeps the first.
  ProcessResult again = Jobctl({"backup", "--data", coord_.data_dir(), dest});
  EXPECT_EQ(again.exit_code, 73);
  EXPECT_NE(again.err.find(dest + "/jobctl.db already exists; --force replaces it"),
            std::string::npos)
      << again.err;

  auto listing = [&](const Coordinator& c) {
    Listing l;
    for (auto [args, out] :
         {std::pair{std::vector<std::string>{"list"}, &l.jobs},
          std::pair{std::vector<std::string>{"runs", "nightly"}, &l.nightly_runs},
          std::pair{std::vector<std::string>{"runs", "report"}, &l.report_runs}}) {
      args.insert(args.end(), {"-o", "json"});
      ProcessResult r = Jobctl(args, &c);
      EXPECT_EQ(r.exit_code, 0) << r.err;
      *out = json::parse(r.out, nullptr, false);
    }
    return l;
  };
  Listing before = listing(coord_);
  ASSERT_EQ(before.jobs.size(), 2u) << before.jobs.dump();
  ASSERT_EQ(before.nightly_runs.size(), 2u) << before.nightly_runs.dump();
  ASSERT_EQ(before.report_runs.size(), 1u) << before.report_runs.dump();
  // What happens after the backup is not in it.
  coord_.PostJson("/v1/jobs/report/trigger", json::object());
  ASSERT_EQ(coord_.Runs("report").size(), 2u);
  coord_.Stop();

  // Restore as the README says: a new, empty data directory with the copies in it, and the
  // admin token the operator kept.
  TempDir restored_dir;
  Coordinator restored(restored_dir);
  ASSERT_EQ(::mkdir(restored.data_dir().c_str(), 0700), 0);
  for (const char* name : {"jobctl.db", "logs.db"}) {
    std::filesystem::copy_file(dest + "/" + name, restored.data_dir() + "/" + name);
  }
  std::filesystem::copy_file(coord_.data_dir() + "/admin.token",
                             restored.data_dir() + "/admin.token");
  restored.Start();
  Listing after = listing(restored);
  EXPECT_EQ(after.jobs, before.jobs);
  EXPECT_EQ(after.nightly_runs, before.nightly_runs);
  EXPECT_EQ(after.report_runs, before.report_runs);
  EXPECT_EQ(restored.Output(finished[0], 0, "stdout"), "nightly says hello\n");
  EXPECT_EQ(restored.Output(finished[1], 0, "stdout"), "report says hello\n");
  if (HasFailure()) std::cerr << "---- restored coordinator ----\n" << restored.Logs();
}

}  // namespace
}  // namespace jobctl::testing
