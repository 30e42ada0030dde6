// The coordinator's data directory as operators handle it: one `jobctl serve` per directory,
// a restart after kill -9, and `jobctl backup` of the embedded store while serve runs,
// restored into a new directory.
#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "testlib/cluster.h"

namespace jobctl::testing {
namespace {

using std::chrono::seconds;

class DataDirTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (HasFailure()) std::cerr << "---- coordinator ----\n" << coord_.Logs();
  }
  ProcessResult Jobctl(std::vector<std::string> args) {
    args.insert(args.begin(), JOBCTL_BIN);
    RunOptions o;
    o.env = {{"HOME", dir_.path()}, {"NO_COLOR", "1"}};
    o.unset_env = {"JOBCTL_DATA_DIR", "JOBCTL_LISTEN", "JOBCTL_COORDINATOR", "JOBCTL_TOKEN"};
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

}  // namespace
}  // namespace jobctl::testing
