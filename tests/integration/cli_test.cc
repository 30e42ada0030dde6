// jobctl run as a user runs it: real binary, real files, exit codes and output checked.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testlib/subprocess.h"

namespace jobctl::testing {
namespace {

ProcessResult Jobctl(std::vector<std::string> args, const RunOptions& options = {}) {
  args.insert(args.begin(), JOBCTL_BIN);
  return Run(args, options);
}

TEST(CliScheduleNextTest, PrintsLocalTimesWithOffsetAcrossDst) {
  ProcessResult r = Jobctl({"schedule", "next", "--tz", "America/New_York", "--from",
                            "2024-03-09T12:00:00-05:00", "-n", "2", "--", "30 2 * * *"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "2024-03-10T03:00:00-04:00\n2024-03-11T02:30:00-04:00\n");
}

TEST(CliScheduleNextTest, AcceptsTheExpressionAsSeparateWords) {
  ProcessResult r = Jobctl({"schedule", "next", "--from", "2024-01-01T00:00:00Z", "-n", "1",
                            "--", "0", "12", "?", "*", "MON-FRI", "--dialect", "quartz"});
  // Options after "--" are words of the expression, so this is a 6-word cron expression.
  EXPECT_EQ(r.exit_code, 65);
  r = Jobctl({"schedule", "next", "--dialect", "quartz", "--from", "2024-01-01T00:00:00Z", "-n",
              "1", "--", "0", "0", "12", "?", "*", "MON-FRI"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "2024-01-01T12:00:00Z\n");
}

TEST(CliScheduleNextTest, HashedValuesFollowTheName) {
  auto next = [](const std::string& name) {
    return Jobctl({"schedule", "next", "--from", "2024-01-01T00:00:00Z", "-n", "3", "--name",
                   name, "--", "H H * * *"})
        .out;
  };
  EXPECT_EQ(next("backup"), next("backup"));
  EXPECT_NE(next("backup"), next("report"));
}

TEST(CliScheduleNextTest, InvalidExpressionIsDataErrorWithFieldAndRange) {
  ProcessResult r = Jobctl({"schedule", "next", "--", "0 25 * * *"});
  EXPECT_EQ(r.exit_code, 65);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "jobctl: schedule next: schedule \"0 25 * * *\": field 2 (hour): 25 is out "
                   "of range 0-23\n");
}

TEST(CliScheduleNextTest, JsonOutputParses) {
  ProcessResult r = Jobctl({"schedule", "next", "-o", "json", "--from", "2024-01-01T00:00:00Z",
                            "-n", "2", "--", "@daily"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["fires"], nlohmann::json({"2024-01-02T00:00:00Z", "2024-01-03T00:00:00Z"}));
  EXPECT_EQ(j["timezone"], "UTC");
}

TEST(CliUsageTest, UnknownCommandAndBadOptionAreUsageErrors) {
  EXPECT_EQ(Jobctl({"frobnicate"}).exit_code, 64);
  EXPECT_EQ(Jobctl({"schedule", "next", "--count", "0", "--", "@daily"}).exit_code, 64);
  EXPECT_EQ(Jobctl({}).exit_code, 64);
  ProcessResult help = Jobctl({"schedule", "next", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("Examples:"), std::string::npos);
}

TEST(CliValidateTest, ExampleFileIsValid) {
  ProcessResult r = Jobctl({"validate", std::string(EXAMPLES_DIR) + "/jobs.toml"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("jobs OK"), std::string::npos) << r.out;
}

TEST(CliValidateTest, ReportsEveryErrorWithLocationAndExits65) {
  TempDir dir;
  std::string path = dir.Write("jobs.toml",
                               "[[job]]\n"
                               "name = \"a\"\n"
                               "schedule = \"0 25 * * *\"\n"
                               "command = [\"/bin/true\"]\n"
                               "\n"
                               "[[job]]\n"
                               "name = \"b\"\n"
                               "schedule = \"@daily\"\n"
                               "shell = \"true\"\n"
                               "timout = \"1h\"\n");
  ProcessResult r = Jobctl({"validate", path});
  EXPECT_EQ(r.exit_code, 65);
  EXPECT_NE(r.err.find(path + ":3:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("25 is out of range 0-23"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(path + ":10:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did you mean \"timeout\"?"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("2 errors"), std::string::npos) << r.err;
}

TEST(CliValidateTest, FileFromEnvironmentAndMissingFile) {
  TempDir dir;
  std::string path = dir.Write("mine.toml",
                               "[[job]]\nname = \"x\"\nschedule = \"@hourly\"\nshell = \"true\"\n");
  ProcessResult r = Jobctl({"validate"}, {.env = {{"JOBCTL_FILE", path}}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, path + ": 1 job OK\n");
  ProcessResult missing = Jobctl({"validate", dir.path() + "/nope.toml"});
  EXPECT_EQ(missing.exit_code, 66);
  EXPECT_NE(missing.err.find("nope.toml"), std::string::npos);
}

TEST(CliValidateTest, JsonListsErrors) {
  ProcessResult r = Jobctl({"validate", "-o", "json", "-"},
                           {.stdin_text = "[[job]]\nname = \"Bad Name\"\n"});
  EXPECT_EQ(r.exit_code, 65);
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j["ok"].get<bool>());
  ASSERT_EQ(j["errors"].size(), 3u);  // bad name, missing schedule, missing command
  bool name_error_on_line_2 = false;
  for (const auto& e : j["errors"]) {
    if (e["line"] == 2 && e["message"].get<std::string>().find("Bad Name") != std::string::npos) {
      name_error_on_line_2 = true;
    }
  }
  EXPECT_TRUE(name_error_on_line_2) << j.dump();
}

}  // namespace
}  // namespace jobctl::testing
