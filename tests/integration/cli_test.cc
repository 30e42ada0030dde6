// jobctl run as a user runs it: real binary, real files, exit codes and output checked.
#include <gtest/gtest.h>
#include <sys/stat.h>

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

TEST(CliScheduleNextTest, Issue19_GapFiresWhenTheSearchStartsTheSecondBeforeIt) {
  ProcessResult r = Jobctl({"schedule", "next", "--tz", "America/New_York", "--from",
                            "2024-03-10T06:59:59Z", "-n", "2", "--", "30 2 * * *"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "2024-03-10T03:00:00-04:00\n2024-03-11T02:30:00-04:00\n");
  r = Jobctl({"schedule", "next", "--tz", "Australia/Lord_Howe", "--from",
              "2024-10-06T01:59:59+10:30", "-n", "2", "--", "0,15 2 * * *"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "2024-10-06T02:30:00+11:00\n2024-10-07T02:00:00+11:00\n");
}

TEST(CliScheduleNextTest, Issue19_DayOfWeekRangesWrapToSunday) {
  for (const char* expr : {"0 0 * * sat-sun", "0 0 * * 6-0"}) {
    ProcessResult r =
        Jobctl({"schedule", "next", "--from", "2024-01-01T00:00:00Z", "-n", "3", "--", expr});
    EXPECT_EQ(r.exit_code, 0) << expr << ": " << r.err;
    EXPECT_EQ(r.out, "2024-01-06T00:00:00Z\n2024-01-07T00:00:00Z\n2024-01-13T00:00:00Z\n") << expr;
  }
  ProcessResult r = Jobctl(
      {"schedule", "next", "--from", "2024-01-01T00:00:00Z", "-n", "3", "--", "0 0 * * fri-sun"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "2024-01-05T00:00:00Z\n2024-01-06T00:00:00Z\n2024-01-07T00:00:00Z\n");
  r = Jobctl({"schedule", "next", "--", "0 5-0 * * *"});
  EXPECT_EQ(r.exit_code, 65);
  EXPECT_EQ(r.err,
            "jobctl: schedule next: schedule \"0 5-0 * * *\": field 2 (hour): range 5-0 "
            "is reversed (write the smaller value first)\n");
}

TEST(CliScheduleNextTest, AcceptsTheExpressionAsSeparateWords) {
  ProcessResult r = Jobctl({"schedule", "next", "--from", "2024-01-01T00:00:00Z", "-n", "1", "--",
                            "0", "12", "?", "*", "MON-FRI", "--dialect", "quartz"});
  // Options after "--" are words of the expression, so this is a 6-word cron expression.
  EXPECT_EQ(r.exit_code, 65);
  r = Jobctl({"schedule", "next", "--dialect", "quartz", "--from", "2024-01-01T00:00:00Z", "-n",
              "1", "--", "0", "0", "12", "?", "*", "MON-FRI"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "2024-01-01T12:00:00Z\n");
}

TEST(CliScheduleNextTest, HashedValuesFollowTheName) {
  auto next = [](const std::string& name) {
    return Jobctl({"schedule", "next", "--from", "2024-01-01T00:00:00Z", "-n", "3", "--name", name,
                   "--", "H H * * *"})
        .out;
  };
  EXPECT_EQ(next("backup"), next("backup"));
  EXPECT_NE(next("backup"), next("report"));
}

TEST(CliScheduleNextTest, InvalidExpressionIsDataErrorWithFieldAndRange) {
  ProcessResult r = Jobctl({"schedule", "next", "--", "0 25 * * *"});
  EXPECT_EQ(r.exit_code, 65);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "jobctl: schedule next: schedule \"0 25 * * *\": field 2 (hour): 25 is out "
            "of range 0-23\n");
}

TEST(CliScheduleNextTest, AtDelayAndJitterShowWhatTheCoordinatorWillDo) {
  ProcessResult at = Jobctl({"schedule", "next", "--tz", "Europe/Paris", "--from",
                             "2026-01-01T00:00:00Z", "--", "@at 2026-12-24 18:00"});
  ASSERT_EQ(at.exit_code, 0) << at.err;
  EXPECT_EQ(at.out, "2026-12-24T18:00:00+01:00\n");
  EXPECT_NE(at.err.find("no more fires"), std::string::npos) << at.err;
  ProcessResult gone = Jobctl(
      {"schedule", "next", "--from", "2027-01-01T00:00:00Z", "--", "@at 2026-12-24T17:00:00Z"});
  EXPECT_EQ(gone.exit_code, 0);
  EXPECT_EQ(gone.out, "");

  ProcessResult delay =
      Jobctl({"schedule", "next", "--from", "2026-01-01T00:00:00Z", "-n", "3", "--", "@delay 10m"});
  ASSERT_EQ(delay.exit_code, 0) << delay.err;
  EXPECT_EQ(delay.out, "2026-01-01T00:10:00Z\n");
  EXPECT_NE(delay.err.find("10m after the job's previous run ended"), std::string::npos)
      << delay.err;

  ProcessResult jitter = Jobctl({"schedule", "next", "--from", "2026-01-01T00:00:00Z", "-n", "2",
                                 "--jitter", "5m", "-o", "json", "--", "@hourly"});
  ASSERT_EQ(jitter.exit_code, 0) << jitter.err;
  nlohmann::json j = nlohmann::json::parse(jitter.out);
  EXPECT_EQ(j["jitter_ms"], 300000);
  EXPECT_EQ(j["fires"], nlohmann::json({"2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z"}));
  EXPECT_EQ(j["latest_starts"], nlohmann::json({"2026-01-01T01:05:00Z", "2026-01-01T02:05:00Z"}));
  EXPECT_EQ(Jobctl({"schedule", "next", "--jitter", "25h", "--", "@hourly"}).exit_code, 64);
  ProcessResult gap =
      Jobctl({"schedule", "next", "--tz", "America/New_York", "--", "@at 2024-03-10 02:30"});
  EXPECT_EQ(gap.exit_code, 65);
  EXPECT_NE(gap.err.find("does not happen in America/New_York"), std::string::npos) << gap.err;
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
  std::string path =
      dir.Write("mine.toml", "[[job]]\nname = \"x\"\nschedule = \"@hourly\"\nshell = \"true\"\n");
  ProcessResult r = Jobctl({"validate"}, {.env = {{"JOBCTL_FILE", path}}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, path + ": 1 job OK\n");
  ProcessResult missing = Jobctl({"validate", dir.path() + "/nope.toml"});
  EXPECT_EQ(missing.exit_code, 66);
  EXPECT_NE(missing.err.find("nope.toml"), std::string::npos);
}

TEST(CliValidateTest, JsonListsErrors) {
  ProcessResult r =
      Jobctl({"validate", "-o", "json", "-"}, {.stdin_text = "[[job]]\nname = \"Bad Name\"\n"});
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

// ---- add, rm, edit (no coordinator: --no-apply) ---------------------------------------------

const char kJobFile[] =
    "# jobs for the web tier\n"
    "\n"
    "[defaults]\n"
    "timezone = \"Europe/Berlin\"  # all of them\n"
    "\n"
    "# the report\n"
    "[[job]]\n"
    "name = \"report\"\n"
    "schedule = \"0 7 * * MON-FRI\"\n"
    "shell = '''\n"
    "cd /srv && ./report\n"
    "[[job]]\n"
    "'''\n";

TEST(CliAddRmTest, AddAndRmKeepTheRestOfTheFileByteIdentical) {
  TempDir dir;
  std::string path = dir.Write("jobs.toml", kJobFile);
  ASSERT_EQ(chmod(path.c_str(), 0640), 0);
  ProcessResult add =
      Jobctl({"add", "nightly", "--schedule", "15 2 * * *", "--timeout", "2h", "--on", "role=db",
              "--no-apply", "--", "/usr/local/bin/backup", "--full"},
             {.cwd = dir.path()});
  ASSERT_EQ(add.exit_code, 0) << add.err;
  EXPECT_EQ(add.out, "added job \"nightly\" to jobs.toml\n");
  EXPECT_EQ(dir.Read("jobs.toml"), std::string(kJobFile) +
                                       "\n"
                                       "[[job]]\n"
                                       "name = \"nightly\"\n"
                                       "schedule = \"15 2 * * *\"\n"
                                       "command = [\"/usr/local/bin/backup\", \"--full\"]\n"
                                       "on = [\"role=db\"]\n"
                                       "timeout = \"2h\"\n");
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_EQ(Jobctl({"validate", path}).exit_code, 0);

  ProcessResult rm = Jobctl({"rm", "nightly", "--no-apply"}, {.cwd = dir.path()});
  ASSERT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_EQ(rm.out, "removed job \"nightly\" from jobs.toml\n");
  EXPECT_EQ(dir.Read("jobs.toml"), kJobFile);
  rm = Jobctl({"--file", path, "rm", "report", "--no-apply"});
  ASSERT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_EQ(dir.Read("jobs.toml"),
            "# jobs for the web tier\n\n[defaults]\ntimezone = \"Europe/Berlin\"  # all of them\n");
}

// rm takes a flow with its steps; a job a step names stays, since the file would be invalid.
TEST(CliAddRmTest, RmRemovesAFlowButNotAJobAStepNames) {
  TempDir dir;
  const std::string job = "[[job]]\nname = \"extract\"\ncommand = [\"/opt/etl/extract\"]\n\n";
  const std::string flow =
      "# nightly\n[[flow]]\nname = \"etl\"\nschedule = \"@daily\"\n"
      "  [[flow.step]]\n  name = \"x\"\n  job = \"extract\"\n"
      "  [[flow.step]]\n  name = \"y\"\n  needs = [\"x\"]\n  shell = \"true\"\n";
  dir.Write("jobs.toml", job + flow);
  ProcessResult kept = Jobctl({"rm", "extract", "--no-apply"}, {.cwd = dir.path()});
  EXPECT_EQ(kept.exit_code, 65);
  EXPECT_NE(kept.err.find("flow \"etl\": step \"x\": job: \"extract\" is not a [[job]] of this "
                          "file"),
            std::string::npos)
      << kept.err;
  EXPECT_EQ(dir.Read("jobs.toml"), job + flow);

  ProcessResult rm = Jobctl({"rm", "etl", "--no-apply"}, {.cwd = dir.path()});
  ASSERT_EQ(rm.exit_code, 65) << rm.err;  // extract is left with no schedule and no step
  EXPECT_NE(rm.err.find("job \"extract\": missing required key \"schedule\""), std::string::npos)
      << rm.err;
  dir.Write("jobs.toml",
            "[[job]]\nname = \"extract\"\nschedule = \"@daily\"\ncommand = "
            "[\"/opt/etl/extract\"]\n\n" +
                flow);
  rm = Jobctl({"rm", "etl", "--no-apply"}, {.cwd = dir.path()});
  ASSERT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_EQ(rm.out, "removed flow \"etl\" from jobs.toml\n");
  EXPECT_EQ(dir.Read("jobs.toml"),
            "[[job]]\nname = \"extract\"\nschedule = \"@daily\"\ncommand = "
            "[\"/opt/etl/extract\"]\n");
}

TEST(CliAddRmTest, ErrorsNameTheCommandAndTheJob) {
  TempDir dir;
  dir.Write("jobs.toml", kJobFile);
  ProcessResult dup = Jobctl({"add", "report", "--schedule", "@daily", "--no-apply", "--", "true"},
                             {.cwd = dir.path()});
  EXPECT_EQ(dup.exit_code, 65);
  EXPECT_EQ(dup.err, "jobctl: add report: job \"report\" already exists in jobs.toml\n");
  ProcessResult missing = Jobctl({"rm", "nightly", "--no-apply"}, {.cwd = dir.path()});
  EXPECT_EQ(missing.exit_code, 65);
  EXPECT_EQ(missing.err, "jobctl: rm nightly: no job or flow \"nightly\" in jobs.toml\n");
  ProcessResult bad = Jobctl({"add", "x", "--schedule", "0 25 * * *", "--no-apply", "--", "true"},
                             {.cwd = dir.path()});
  EXPECT_EQ(bad.exit_code, 65);
  EXPECT_EQ(bad.err,
            "jobctl: add x: schedule \"0 25 * * *\": field 2 (hour): 25 is out of range "
            "0-23\n");
  ProcessResult no_command =
      Jobctl({"add", "x", "--schedule", "@daily", "--no-apply"}, {.cwd = dir.path()});
  EXPECT_EQ(no_command.exit_code, 64);
  // A value only the whole file can judge: reported at its line, and nothing is written.
  ProcessResult zero =
      Jobctl({"add", "x", "--schedule", "@daily", "--timeout", "0s", "--no-apply", "--", "true"},
             {.cwd = dir.path()});
  EXPECT_EQ(zero.exit_code, 65);
  EXPECT_NE(zero.err.find("jobs.toml:19:11: job \"x\": timeout: expected a duration > 0"),
            std::string::npos)
      << zero.err;
  EXPECT_EQ(dir.Read("jobs.toml"), kJobFile);
}

TEST(CliAddRmTest, AddCreatesAMissingFile) {
  TempDir dir;
  ProcessResult r =
      Jobctl({"add", "hello", "--schedule", "@hourly", "--shell", "echo hi", "--no-apply"},
             {.cwd = dir.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(dir.Read("jobs.toml"),
            "[[job]]\nname = \"hello\"\nschedule = \"@hourly\"\nshell = \"echo hi\"\n");
}

TEST(CliAddRmTest, RepeatedOptionsTakeOneValueEach) {
  TempDir dir;
  ProcessResult r = Jobctl({"add", "x", "--schedule", "@daily", "--on", "role=web", "--env", "A=1",
                            "--env", "B=2", "--no-apply", "/bin/echo", "hi"},
                           {.cwd = dir.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(dir.Read("jobs.toml"),
            "[[job]]\nname = \"x\"\nschedule = \"@daily\"\ncommand = [\"/bin/echo\", \"hi\"]\n"
            "on = [\"role=web\"]\nenv = { A = \"1\", B = \"2\" }\n");
}

TEST(CliAddRmTest, AddAppliesAndSaysSoWhenTheCoordinatorIsDown) {
  TempDir dir;
  ProcessResult r = Jobctl({"--coordinator", "http://127.0.0.1:9", "add", "hello", "--schedule",
                            "@hourly", "--", "/bin/true"},
                           {.cwd = dir.path()});
  EXPECT_EQ(r.exit_code, 69);
  EXPECT_NE(r.err.find("jobctl: add hello: jobs.toml was written but not applied"),
            std::string::npos)
      << r.err;
  EXPECT_NE(dir.Read("jobs.toml").find("name = \"hello\""), std::string::npos);
}

// An $EDITOR that saves an invalid file first and a valid one the second time.
std::string WriteScriptedEditor(const TempDir& dir) {
  std::string editor = dir.Write("editor.sh",
                                 "#!/bin/sh\n"
                                 "count=\"$(dirname \"$0\")/count\"\n"
                                 "n=$(cat \"$count\" 2>/dev/null || echo 0)\n"
                                 "echo $((n + 1)) > \"$count\"\n"
                                 "if [ \"$n\" = 0 ]; then\n"
                                 "  printf '\\n[[job]]\\nname = \"late\"\\n"
                                 "schedule = \"0 25 * * *\"\\nshell = \"true\"\\n' >> \"$1\"\n"
                                 "else\n"
                                 "  sed -i 's/0 25 \\* \\* \\*/0 23 * * */' \"$1\"\n"
                                 "fi\n");
  chmod(editor.c_str(), 0755);
  return editor;
}

TEST(CliEditTest, InvalidSaveIsShownAndEditedAgainLikeCrontab) {
  TempDir dir;
  std::string path = dir.Write("jobs.toml", kJobFile);
  ProcessResult r =
      Jobctl({"edit", path, "--no-apply"}, {.env = {{"EDITOR", WriteScriptedEditor(dir)}},
                                            .unset_env = {"VISUAL"},
                                            .stdin_text = "y\n"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(path + ":17:12: job \"late\": schedule \"0 25 * * *\": field 2 (hour): "
                              "25 is out of range 0-23\n"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("edit again? [Y/n] "), std::string::npos) << r.err;
  EXPECT_EQ(dir.Read("count"), "2\n");
  EXPECT_EQ(dir.Read("jobs.toml"), std::string(kJobFile) +
                                       "\n[[job]]\nname = \"late\"\nschedule = \"0 23 * * *\"\n"
                                       "shell = \"true\"\n");
  EXPECT_EQ(r.out, "wrote " + path + "\n");
}

TEST(CliEditTest, NoAnswerLeavesTheFileAloneAndExits65) {
  TempDir dir;
  std::string path = dir.Write("jobs.toml", kJobFile);
  ProcessResult r = Jobctl({"edit", path, "--no-apply"},
                           {.env = {{"VISUAL", WriteScriptedEditor(dir)}, {"EDITOR", "false"}}});
  EXPECT_EQ(r.exit_code, 65) << r.err;
  EXPECT_NE(r.err.find("jobctl: edit " + path + ": nothing was changed"), std::string::npos)
      << r.err;
  EXPECT_EQ(dir.Read("count"), "1\n");
  EXPECT_EQ(dir.Read("jobs.toml"), kJobFile);
}

TEST(CliEditTest, UnchangedSaveSaysNoChanges) {
  TempDir dir;
  std::string path = dir.Write("jobs.toml", kJobFile);
  ProcessResult r = Jobctl({"edit", path}, {.env = {{"EDITOR", "true"}}, .unset_env = {"VISUAL"}});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, "jobctl: edit " + path + ": no changes\n");
  ProcessResult failed =
      Jobctl({"edit", path}, {.env = {{"EDITOR", "false"}}, .unset_env = {"VISUAL"}});
  EXPECT_EQ(failed.exit_code, 1);
  EXPECT_EQ(failed.err, "jobctl: edit " + path +
                            ": editor \"false\" exited with status 1; "
                            "nothing was changed\n");
}

// ---- import-crontab ------------------------------------------------------------------------

const char kUserCrontab[] =
    "# m h dom mon dow command\n"
    "SHELL=/bin/sh\n"
    "PATH=/usr/local/bin:/usr/bin:/bin\n"
    "MAILTO=ops@example.com\n"
    "CRON_TZ=Europe/Berlin\n"
    "\n"
    "# nightly backup\n"
    "30 2 * * * /usr/local/bin/backup.sh --full >> /var/log/backup.log 2>&1\n"
    "*/15 9-17 * * mon-fri cd /srv/app && ./bin/poll --quiet\n"
    "@reboot /usr/local/bin/start-agent\n"
    "0 6 1 jan,jul * cat%first line%it's 100\\% done\n";

const char kSystemCrontab[] =
    "SHELL=/bin/sh\n"
    "PATH=/usr/local/sbin:/usr/local/bin:/sbin:/bin:/usr/sbin:/usr/bin\n"
    "17 *\t* * *\troot    cd / && run-parts --report /etc/cron.hourly\n"
    "25 6\t* * *\troot\ttest -x /usr/sbin/anacron || "
    "{ cd / && run-parts --report /etc/cron.daily; }\n";

// The value of `key = "..."` in TOML text (basic strings with the escapes jobctl writes).
std::string TomlValue(const std::string& text, const std::string& key, size_t from = 0) {
  size_t at = text.find("\n" + key + " = \"", from);
  if (at == std::string::npos) return "";
  std::string out;
  for (size_t i = at + key.size() + 5; i < text.size() && text[i] != '"'; ++i) {
    if (text[i] == '\\') {
      char c = text[++i];
      out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
    } else {
      out += text[i];
    }
  }
  return out;
}

TEST(CliImportCrontabTest, UserCrontabPrintsAValidJobFileAndWarnsAboutReboot) {
  TempDir dir;
  std::string crontab = dir.Write("crontab.txt", kUserCrontab);
  ProcessResult r = Jobctl({"import-crontab", crontab, "--user", "alice"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "jobctl: import-crontab: " + crontab +
                       ":10: @reboot has no equivalent in jobctl (nothing runs at boot); line "
                       "skipped\n");
  EXPECT_NE(r.out.find("# MAILTO=ops@example.com: the jobs below notify it"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("notify = [\"mailto:ops@example.com\"]\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[defaults]\ntimezone = \"Europe/Berlin\"\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# nightly backup\n[[job]]\nname = \"backup.sh\"\n"
                       "schedule = \"30 2 * * *\"\n"),
            std::string::npos)
      << r.out;
  ProcessResult valid = Jobctl({"validate", "-o", "json", "-"}, {.stdin_text = r.out});
  ASSERT_EQ(valid.exit_code, 0) << valid.err << r.out;
  nlohmann::json j = nlohmann::json::parse(valid.out);
  ASSERT_EQ(j["jobs"].size(), 3u);
  EXPECT_EQ(j["jobs"][1]["name"], "poll");
  EXPECT_EQ(j["jobs"][2]["name"], "cat");
  EXPECT_EQ(j["jobs"][2]["schedule"], "0 6 1 jan,jul *");
}

TEST(CliImportCrontabTest, TextAfterPercentReachesTheCommandsStdinAsCronSendsIt) {
  ProcessResult r =
      Jobctl({"import-crontab", "--user", "alice", "-"}, {.stdin_text = kUserCrontab});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string shell = TomlValue(r.out, "shell", r.out.find("name = \"cat\""));
  ASSERT_NE(shell, "") << r.out;
  ProcessResult ran = testing::Run({"/bin/sh", "-c", shell});
  EXPECT_EQ(ran.exit_code, 0);
  EXPECT_EQ(ran.out, "first line\nit's 100% done\n");
}

TEST(CliImportCrontabTest, SystemCrontabAppendsToAJobFile) {
  TempDir dir;
  std::string path = dir.Write("jobs.toml", kJobFile);
  std::string crontab = dir.Write("system", kSystemCrontab);
  ProcessResult r =
      Jobctl({"import-crontab", crontab, "--system", "--append", path, "--timezone", "UTC"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "added 2 jobs to " + path + " (not applied yet: jobctl apply " + path + ")\n");
  std::string text = dir.Read("jobs.toml");
  EXPECT_EQ(text.substr(0, sizeof(kJobFile) - 1), kJobFile);  // untouched
  EXPECT_EQ(text.find("[defaults]", sizeof(kJobFile)), std::string::npos);
  EXPECT_NE(text.find("name = \"cron.hourly\"\nschedule = \"17 * * * *\"\ntimezone = \"UTC\"\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("run_as = \"root\""), std::string::npos);
  ProcessResult valid = Jobctl({"validate", path});
  EXPECT_EQ(valid.exit_code, 0) << valid.err;
  EXPECT_EQ(valid.out, path + ": 3 jobs OK\n");
}

TEST(CliImportCrontabTest, NothingImportableExits65) {
  ProcessResult r = Jobctl({"import-crontab"}, {.stdin_text = "@reboot /bin/x\nMAILTO=root\n"});
  EXPECT_EQ(r.exit_code, 65);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("jobctl: import-crontab <stdin>: no job to import"), std::string::npos)
      << r.err;
}

// ---- completion ------------------------------------------------------------------------------

// Completes `words` (the last one being typed) the way bash would, with the script
// `jobctl completion bash` prints.
std::string BashComplete(const std::string& words) {
  std::string script = std::string("source <(\"") + JOBCTL_BIN + "\" completion bash) || exit 9\n" +
                       "COMP_WORDS=(" + words + ")\n" +
                       "COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n"
                       "_jobctl\n"
                       "echo \"${COMPREPLY[*]}\"\n";
  ProcessResult r = Run({"/bin/bash", "-c", script});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  return r.out;
}

TEST(CliCompletionTest, BashCompletesCommandsNestedCommandsAndOptions) {
  EXPECT_EQ(BashComplete("jobctl tr"), "trigger\n");
  EXPECT_EQ(BashComplete("jobctl add --s"), "--schedule --shards --shell\n");
  EXPECT_EQ(BashComplete("jobctl schedule ''"), "next\n");
  EXPECT_EQ(BashComplete("jobctl --file x.toml -o json token r"), "revoke\n");
  EXPECT_EQ(BashComplete("jobctl agents d"), "drain\n");
  EXPECT_EQ(BashComplete("jobctl import-crontab --a"), "--append\n");
  EXPECT_EQ(BashComplete("jobctl add --schedule ''"), "\n");  // a value: bash offers files
}

TEST(CliCompletionTest, EveryShellGetsAScript) {
  for (std::string shell : {"bash", "zsh", "fish"}) {
    ProcessResult r = Jobctl({"completion", shell});
    EXPECT_EQ(r.exit_code, 0) << shell;
    EXPECT_NE(r.out.find("import-crontab"), std::string::npos) << shell;
  }
  EXPECT_EQ(Jobctl({"completion", "tcsh"}).exit_code, 64);
}

}  // namespace
}  // namespace jobctl::testing
