#include "config/job_file_edit.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "config/job_file.h"
#include "config/toml_lines.h"

namespace jobctl {
namespace {

// Test files start on the line after R"( so that they read naturally.
std::string Text(std::string_view raw) {
  if (!raw.empty() && raw.front() == '\n') raw.remove_prefix(1);
  return std::string(raw);
}

std::string Crlf(std::string_view lf) {
  std::string out;
  for (char c : lf) {
    if (c == '\n') out += '\r';
    out += c;
  }
  return out;
}

Job SimpleJob(std::string name) {
  Job job;
  job.name = std::move(name);
  job.schedule = "15 2 * * *";
  job.command = {"/usr/local/bin/backup", "--full"};
  return job;
}

std::vector<std::string> Names(std::string_view text) {
  JobFileResult r = ParseJobFile(text, "jobs.toml");
  EXPECT_TRUE(r.ok()) << (r.errors.empty() ? "" : r.errors[0].ToString()) << "\n" << text;
  std::vector<std::string> out;
  for (const Job& j : r.file.jobs) out.push_back(j.name);
  return out;
}

// Three jobs, each block written out separately so tests can say exactly which bytes a
// removal takes: everything except the removed block must come back unchanged.
const std::string kHead = Text(R"(
# jobs for the web tier
# owner: ops

[defaults]
timezone = "Europe/Berlin"   # everything runs on Berlin time
env = { PATH = "/usr/local/bin:/usr/bin:/bin" }
)");
const std::string kBackup = Text(R"(
# nightly backup
# (keep it before the report)
[[job]]
name = "backup"   # stable name
schedule = "15 2 * * *"
command = ["/usr/local/bin/backup", "--full"]
description = """
Runs the backup.
[[job]]
name = "not-a-job"
"""
retry = { max = 3, initial = "30s" }

[job.env]
BUCKET = "s3://backups"

)");
const std::string kReport = Text(R"(
# the report
[[job]]
name = 'report'
schedule = "0 7 * * MON-FRI"
shell = '''
cd /srv/report && ./run.sh
[[job]]
'''
on = [
  "role=web",   # [[job]] in a comment in an array
  "k=[[job]]",
]
# a comment inside the job

)");
const std::string kCleanup = Text(R"(
[[job]]
name = "cleanup"
schedule = "@daily"
shell = "find /tmp -mtime +7 -delete"
)");

TEST(JobFileEditTest, FixtureIsAValidJobFile) {
  EXPECT_EQ(Names(kHead + kBackup + kReport + kCleanup),
            (std::vector<std::string>{"backup", "report", "cleanup"}));
}

TEST(JobFileEditTest, RemoveFirstJobTakesItsCommentsAndKeepsTheNextJobsComments) {
  Result<std::string> r = RemoveJob(kHead + "\n" + kBackup + kReport + kCleanup, "backup");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, kHead + "\n" + kReport + kCleanup);
}

TEST(JobFileEditTest, RemoveMiddleJobSkipsHeadersInsideMultiLineStringsAndArrays) {
  Result<std::string> r = RemoveJob(kHead + "\n" + kBackup + kReport + kCleanup, "report");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, kHead + "\n" + kBackup + kCleanup);
  EXPECT_EQ(Names(*r), (std::vector<std::string>{"backup", "cleanup"}));
}

TEST(JobFileEditTest, RemoveLastJobAlsoTakesTheBlankLinesBeforeIt) {
  std::string text = kHead + "\n" + kBackup + kReport + kCleanup;
  Result<std::string> r = RemoveJob(text, "cleanup");
  ASSERT_TRUE(r.ok()) << r.status().message();
  // kReport ends with one blank line; it separated the removed job and goes with it.
  EXPECT_EQ(*r, kHead + "\n" + kBackup + kReport.substr(0, kReport.size() - 1));
}

TEST(JobFileEditTest, RemoveKeepsSubTablesWithTheirJobAndStopsAtDefaults) {
  std::string text = Text(R"(
[[job]]
name = "a"
schedule = "@hourly"
shell = "a"
[job.retry]
max = 2
[job.env]
X = "1"
# about the defaults
[defaults]
timeout = "1h"
)");
  Result<std::string> r = RemoveJob(text, "a");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, "# about the defaults\n[defaults]\ntimeout = \"1h\"\n");
}

TEST(JobFileEditTest, RemoveFindsQuotedHeadersAndKeys) {
  std::string text = Text(R"(
[[ "job" ]]
"name" = "a"
schedule = "@hourly"
shell = "a"
[ "job" . 'env' ]
X = "1"

[[job]]
name = "b"
schedule = "@hourly"
shell = "b"
)");
  Result<std::string> r = RemoveJob(text, "a");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, "[[job]]\nname = \"b\"\nschedule = \"@hourly\"\nshell = \"b\"\n");
}

TEST(JobFileEditTest, RemoveFlowTakesItsStepsAndLeavesTheJobsAround) {
  const std::string job_a = "[[job]]\nname = \"a\"\nschedule = \"@hourly\"\nshell = \"a\"\n\n";
  const std::string flow =
      "# the nightly flow\n"
      "[[flow]]\n"
      "name = \"etl\"\n"
      "schedule = \"@daily\"\n"
      "  [[flow.step]]\n"
      "  name = \"x\"\n"
      "  job = \"a\"\n"
      "  [[flow.step]]\n"
      "  name = \"y\"\n"
      "  shell = \"y\"\n"
      "  [flow.step.retry]\n"
      "  max = 2\n"
      "\n";
  const std::string job_b = "# b\n[[job]]\nname = \"b\"\nschedule = \"@hourly\"\nshell = \"b\"\n";
  Result<std::string> r = RemoveFlow(job_a + flow + job_b, "etl");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, job_a + job_b);
  // A job before a flow stops at the flow's header.
  r = RemoveJob(job_a + flow + job_b, "a");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, flow + job_b);
  // Jobs and flows are looked up each in their own tables.
  EXPECT_EQ(RemoveFlow(job_a + flow, "a").status().message(), "no flow \"a\"");
  EXPECT_EQ(RemoveJob(job_a + flow, "etl").status().code(), Status::Code::kNotFound);
}

TEST(JobFileEditTest, RemoveHandlesCrlfLineEndings) {
  std::string text = Crlf(kHead + "\n" + kBackup + kReport + kCleanup);
  Result<std::string> r = RemoveJob(text, "report");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, Crlf(kHead + "\n" + kBackup + kCleanup));
}

TEST(JobFileEditTest, RemoveOfAnUnknownJobIsNotFound) {
  Result<std::string> r = RemoveJob(kHead + kCleanup, "nightly");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kNotFound);
  EXPECT_EQ(r.status().message(), "no job \"nightly\"");
}

TEST(JobFileEditTest, RemoveRefusesJobsWrittenAsAnInlineArray) {
  Result<std::string> r =
      RemoveJob("job = [ { name = \"a\", schedule = \"@daily\", shell = \"a\" } ]\n", "a");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
}

TEST(JobFileEditTest, EditsRefuseTextThatIsNotToml) {
  Result<std::string> r = RemoveJob("[[job]]\nname = \"a\nx\n", "a");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  EXPECT_TRUE(r.status().message().starts_with("line 2,")) << r.status().message();
  EXPECT_FALSE(AddJob("[[job]\n", SimpleJob("a")).ok());
}

TEST(JobFileEditTest, AddAppendsAfterOneBlankLineAndKeepsEverythingElse) {
  std::string text = kHead + "\n" + kBackup + kReport + kCleanup;
  Result<std::string> r = AddJob(text, SimpleJob("nightly"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, text + "\n" +
                    "[[job]]\n"
                    "name = \"nightly\"\n"
                    "schedule = \"15 2 * * *\"\n"
                    "command = [\"/usr/local/bin/backup\", \"--full\"]\n");
  EXPECT_EQ(Names(*r), (std::vector<std::string>{"backup", "report", "cleanup", "nightly"}));
}

TEST(JobFileEditTest, AddEndsAnUnterminatedLastLineAndAddsNoSecondBlankLine) {
  const std::string block = RenderJob(SimpleJob("a"));
  EXPECT_EQ(*AddJob("# jobs", SimpleJob("a")), "# jobs\n\n" + block);
  EXPECT_EQ(*AddJob("# jobs\n\n", SimpleJob("a")), "# jobs\n\n" + block);
  EXPECT_EQ(*AddJob("# jobs\n  \n", SimpleJob("a")), "# jobs\n  \n" + block);
  EXPECT_EQ(*AddJob("", SimpleJob("a")), block);
}

TEST(JobFileEditTest, AddUsesTheFilesCrlfLineEndings) {
  std::string text = Crlf(kHead + kCleanup);
  Result<std::string> r = AddJob(text, SimpleJob("nightly"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, text + Crlf("\n" + RenderJob(SimpleJob("nightly"))));
  EXPECT_EQ(Names(*r), (std::vector<std::string>{"cleanup", "nightly"}));
}

TEST(JobFileEditTest, AddRefusesADuplicateName) {
  Result<std::string> r = AddJob(kHead + kCleanup, SimpleJob("cleanup"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kConflict);
  EXPECT_EQ(r.status().message(), "job \"cleanup\" already exists");
}

TEST(JobFileEditTest, AddThenRemoveGivesBackTheSameBytes) {
  for (const std::string& text :
       {kHead + "\n" + kBackup + kReport + kCleanup, kHead, std::string("# only a comment\n"),
        Crlf(kHead + kCleanup), std::string()}) {
    Result<std::string> added = AddJob(text, SimpleJob("nightly"));
    ASSERT_TRUE(added.ok()) << added.status().message();
    Result<std::string> removed = RemoveJob(*added, "nightly");
    ASSERT_TRUE(removed.ok()) << removed.status().message();
    EXPECT_EQ(*removed, text);
  }
}

TEST(JobFileEditTest, RenderWritesOnlyKeysThatDifferFromTheDefaults) {
  Job job;
  job.name = "sync";
  job.schedule = "0 */6 * * *";
  job.shell = "rsync -a /src/ \"host:/dst/\"";
  EXPECT_EQ(RenderJob(job),
            "[[job]]\n"
            "name = \"sync\"\n"
            "schedule = \"0 */6 * * *\"\n"
            "shell = 'rsync -a /src/ \"host:/dst/\"'\n");
  job.shards = 4;
  job.timeout = std::chrono::minutes(90);
  job.run_as = "backup";
  job.on = {{"role", "web", false}, {"env", "test", true}};
  job.env = {{"B", "2"}, {"A", "it's \"quoted\""}};
  EXPECT_EQ(RenderJob(job),
            "[[job]]\n"
            "name = \"sync\"\n"
            "schedule = \"0 */6 * * *\"\n"
            "shell = 'rsync -a /src/ \"host:/dst/\"'\n"
            "on = [\"role=web\", \"env!=test\"]\n"
            "shards = 4\n"
            "timeout = \"1h30m\"\n"
            "run_as = \"backup\"\n"
            "env = { A = \"it's \\\"quoted\\\"\", B = \"2\" }\n");
}

TEST(JobFileEditTest, RenderedJobParsesBackToTheSameJob) {
  Job job;
  job.name = "everything";
  job.schedule = "0 0 12 ? * MON-FRI";
  job.dialect = Dialect::kQuartz;
  job.timezone = "America/New_York";
  job.command = {"/bin/echo", "a'b", "tab\there", "new\nline", "back\\slash"};
  job.description = "all the keys";
  job.enabled = false;
  job.on = {{"role", "batch", false}};
  job.shards = 3;
  job.route = Route::kHash;
  job.overlap = Overlap::kAllow;
  job.misfire = Misfire::kFireAll;
  job.misfire_cap = 7;
  job.on_lost = OnLost::kFail;
  job.retry = {.max = 5, .backoff = Backoff::kFixed, .initial = std::chrono::seconds(3)};
  job.timeout = std::chrono::seconds(45);
  job.kill_grace = std::chrono::seconds(2);
  job.log_cap_bytes = 10 << 20;
  job.run_as = "nobody";
  job.cwd = "/srv";
  job.env = {{"LANG", "C.UTF-8"}};
  JobFileResult r = ParseJobFile(RenderJob(job), "jobs.toml");
  ASSERT_TRUE(r.ok()) << r.errors[0].ToString() << "\n" << RenderJob(job);
  ASSERT_EQ(r.file.jobs.size(), 1u);
  EXPECT_EQ(r.file.jobs[0], job);
}

TEST(JobFileEditTest, TomlStringPrefersLiteralStringsOnlyWhenThatSavesEscapes) {
  EXPECT_EQ(TomlString("plain"), "\"plain\"");
  EXPECT_EQ(TomlString("C:\\dir"), "'C:\\dir'");
  EXPECT_EQ(TomlString("it's \"x\""), "\"it's \\\"x\\\"\"");
  EXPECT_EQ(TomlString("a\nb\x01"), "\"a\\nb\\u0001\"");
}

TEST(TomlLinesTest, ClassifiesHeadersCommentsAndContinuations) {
  std::string text = Text(R"(
# c
[[job]]
name = "a" # [[job]]
s = """x
[[job]]
""""
t = '''''
[x]'''''
a = [
  [1], # ]
]

 [ job . "r.s" ]  # comment
)");
  std::vector<TomlLine> lines = SplitTomlLines(text);
  std::vector<TomlLineKind> kinds;
  for (const TomlLine& l : lines) kinds.push_back(l.kind);
  using K = TomlLineKind;
  EXPECT_EQ(kinds,
            (std::vector<K>{K::kComment, K::kHeader, K::kKeyValue, K::kKeyValue, K::kContinuation,
                            K::kContinuation, K::kKeyValue, K::kContinuation, K::kKeyValue,
                            K::kContinuation, K::kContinuation, K::kBlank, K::kHeader}));
  EXPECT_TRUE(lines[1].array_header);
  EXPECT_EQ(lines[1].header, (std::vector<std::string>{"job"}));
  EXPECT_FALSE(lines[12].array_header);
  EXPECT_EQ(lines[12].header, (std::vector<std::string>{"job", "r.s"}));
  EXPECT_EQ(lines.back().end, text.size());
}

}  // namespace
}  // namespace jobctl
