// jobctl against a real coordinator and agent, as sysadmins and CI use it.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <nlohmann/json.hpp>

#include "httpclient/blocking_client.h"
#include "testlib/cluster.h"

namespace jobctl::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

class CliE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    coord_ = std::make_unique<Coordinator>(dir_);
    coord_->Start();
    agent_ = std::make_unique<AgentProcess>(*coord_, dir_, "host-1");
    ASSERT_TRUE(Coordinator::Eventually([&] { return !coord_->GetJson("/v1/agents").empty(); },
                                        seconds(20)));
    env_ = {{"JOBCTL_COORDINATOR", coord_->url()},
            {"JOBCTL_TOKEN", coord_->admin_token()},
            {"HOME", dir_.path()},
            {"NO_COLOR", "1"}};
  }
  void TearDown() override {
    if (!HasFailure()) return;
    std::cerr << "---- coordinator ----\n"
              << coord_->Logs() << "---- agent ----\n"
              << agent_->Logs();
  }
  ProcessResult Jobctl(std::vector<std::string> args,
                       std::map<std::string, std::string> extra = {}) {
    args.insert(args.begin(), JOBCTL_BIN);
    RunOptions o;
    o.env = env_;
    for (auto& [k, v] : extra) o.env[k] = v;
    o.cwd = dir_.path();
    o.timeout = seconds(60);
    return jobctl::testing::Run(args, o);
  }
  TempDir dir_;
  std::unique_ptr<Coordinator> coord_;
  std::unique_ptr<AgentProcess> agent_;
  std::map<std::string, std::string> env_;
};

const char* kJobs =
    "# jobs for the CLI tests\n"
    "[[job]]\n"
    "name = \"ok\"\n"
    "schedule = \"@yearly\"\n"
    "shell = \"echo hello from $JOB_NAME; echo to-stderr >&2\"\n"
    "\n"
    "[[job]]\n"
    "name = \"bad\"   # always fails\n"
    "schedule = \"@yearly\"\n"
    "shell = \"echo failing; exit 3\"\n"
    "\n"
    "[[job]]\n"
    "name = \"slow\"\n"
    "schedule = \"@yearly\"\n"
    "shell = \"for i in 1 2 3 4 5; do echo step $i; sleep 0.3; done\"\n"
    "\n"
    "[[job]]\n"
    "name = \"three\"\n"
    "schedule = \"@yearly\"\n"
    "shards = 3\n"
    "shell = \"echo part $JOB_SHARD_INDEX\"\n";

TEST_F(CliE2eTest, TriggerWaitExitsWithTheJobsResultAndFollowPrintsItsOutput) {
  dir_.Write("jobs.toml", kJobs);
  ASSERT_EQ(Jobctl({"apply"}).exit_code, 0);
  ProcessResult ok = Jobctl({"trigger", "ok", "--wait", "--follow"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.out, "hello from ok\n");
  EXPECT_NE(ok.err.find("to-stderr\n"), std::string::npos);
  EXPECT_NE(ok.err.find("succeeded"), std::string::npos) << ok.err;
  ProcessResult bad = Jobctl({"trigger", "bad", "--wait"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("failed"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("exit 3"), std::string::npos) << bad.err;
  // Several shards: each line says which shard printed it.
  ProcessResult three = Jobctl({"trigger", "three", "--wait", "--follow"});
  EXPECT_EQ(three.exit_code, 0) << three.err;
  for (int i = 0; i < 3; ++i) {
    EXPECT_NE(three.out.find("[shard " + std::to_string(i) + "] part " + std::to_string(i) + "\n"),
              std::string::npos)
        << three.out;
  }
  // Without --wait: just the run id.
  ProcessResult id = Jobctl({"trigger", "ok"});
  EXPECT_EQ(id.exit_code, 0);
  EXPECT_NO_THROW((void)std::stoll(id.out));
}

// retry --failed-shards runs again only the shards that failed, with the real agent: each
// shard notes in a file that it ran, and shard 1 fails until a file says it is fixed.
TEST_F(CliE2eTest, RetryOfTheFailedShardsRunsOnlyThose) {
  std::string ran = dir_.path() + "/ran", fixed = dir_.path() + "/fixed";
  dir_.Write("jobs.toml",
             "[[job]]\nname = \"parts\"\nschedule = \"@yearly\"\nshards = 3\n"
             "shell = \"echo $JOB_SHARD_INDEX >> " +
                 ran + "; [ $JOB_SHARD_INDEX != 1 ] || [ -e " + fixed + " ]\"\n");
  ASSERT_EQ(Jobctl({"apply"}).exit_code, 0);
  ProcessResult id = Jobctl({"trigger", "parts"});
  ASSERT_EQ(id.exit_code, 0) << id.err;
  int64_t first = std::stoll(id.out);
  ASSERT_EQ(coord_->WaitRun(first, seconds(30))["state"], "failed");
  auto count = [&](char shard) {
    std::string text = dir_.Read("ran");
    return std::count(text.begin(), text.end(), shard);
  };
  ASSERT_EQ(count('0') + count('1') + count('2'), 3);

  dir_.Write("fixed", "");
  ProcessResult retry = Jobctl({"retry", std::to_string(first), "--failed-shards"});
  ASSERT_EQ(retry.exit_code, 0) << retry.err;
  int64_t second = std::stoll(retry.out);
  json done = coord_->WaitRun(second, seconds(30));
  EXPECT_EQ(done["state"], "succeeded") << done.dump();
  EXPECT_EQ(done["reason"], "retry");
  // Shard 1 ran twice, the others once: they were kept, not run again.
  EXPECT_EQ(count('0'), 1);
  EXPECT_EQ(count('1'), 2);
  EXPECT_EQ(count('2'), 1);
  ASSERT_EQ(done["shards"].size(), 3u);
  for (int i : {0, 2}) {
    EXPECT_EQ(done["shards"][i]["outcome"], "kept") << done.dump();
    EXPECT_EQ(done["shards"][i]["message"], "succeeded in run " + std::to_string(first));
  }
  EXPECT_EQ(done["shards"][1]["outcome"], "exited");
  // A run that succeeded has no shard to retry: refused, and said why.
  ProcessResult again = Jobctl({"retry", std::to_string(second), "--failed-shards"});
  EXPECT_EQ(again.exit_code, 75);
  EXPECT_NE(again.err.find("only failed runs are retried"), std::string::npos) << again.err;
}

// A caller's W3C trace continues into the run: from --traceparent, from $TRACEPARENT and from
// the HTTP header; the real agent hands the trace id to the job in TRACEPARENT, and
// `jobctl runs --trace` finds the runs of a trace.
TEST_F(CliE2eTest, TheCallersTraceContinuesIntoTheRunAndFindsIt) {
  dir_.Write("jobs.toml",
             "[[job]]\nname = \"traced\"\nschedule = \"@yearly\"\nshell = \"echo $TRACEPARENT\"\n");
  ASSERT_EQ(Jobctl({"apply"}).exit_code, 0);
  const std::string kFlag = "4bf92f3577b34da6a3ce929d0e0e4736";
  const std::string kEnv = "0af7651916cd43dd8448eb211c80319c";
  const std::string kHeader = "11111111111111111111111111111111";
  auto run_of = [&](const ProcessResult& r) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    int64_t id = std::stoll(r.out);
    json done = coord_->WaitRun(id, seconds(30));
    EXPECT_EQ(done["state"], "succeeded") << done.dump();
    return done;
  };
  json by_flag = run_of(
      Jobctl({"trigger", "traced", "--traceparent", "00-" + kFlag + "-00f067aa0ba902b7-01"}));
  EXPECT_EQ(by_flag["trace_id"], kFlag);
  // The job sees the same trace, under the shard's own span.
  std::string seen = coord_->Output(by_flag["id"], 0, "stdout");
  EXPECT_EQ(seen.substr(0, 36), "00-" + kFlag + "-") << seen;
  EXPECT_EQ(seen.size(), 56u) << seen;
  // The coordinator's and the agent's own lines about the run carry its trace.
  EXPECT_NE(coord_->Logs().find("trace=" + kFlag), std::string::npos) << coord_->Logs();
  EXPECT_NE(agent_->Logs().find("trace=" + kFlag), std::string::npos) << agent_->Logs();

  json by_env = run_of(
      Jobctl({"trigger", "traced"}, {{"TRACEPARENT", "00-" + kEnv + "-b7ad6b7169203331-01"}}));
  EXPECT_EQ(by_env["trace_id"], kEnv);

  http::BlockingClient client(coord_->url(), coord_->admin_token());
  http::RequestOptions o;
  o.method = "POST";
  o.body = "{}";
  o.headers = {{"traceparent", "00-" + kHeader + "-b7ad6b7169203331-01"}};
  Result<http::HttpResponse> posted = client.Request("/v1/jobs/traced/trigger", o);
  ASSERT_TRUE(posted.ok()) << posted.status().ToString();
  ASSERT_EQ(posted->status, 201) << posted->body;
  EXPECT_EQ(json::parse(posted->body)["trace_id"], kHeader);
  // A header that does not read is ignored (W3C); a body field that does not is a 400.
  o.headers = {{"traceparent", "garbage"}};
  posted = client.Request("/v1/jobs/traced/trigger", o);
  ASSERT_TRUE(posted.ok()) << posted.status().ToString();
  ASSERT_EQ(posted->status, 201) << posted->body;
  EXPECT_EQ(json::parse(posted->body)["trace_id"].get<std::string>().size(), 32u);
  o.headers.clear();
  o.body = R"({"traceparent": "00-xyz"})";
  posted = client.Request("/v1/jobs/traced/trigger", o);
  ASSERT_TRUE(posted.ok()) << posted.status().ToString();
  EXPECT_EQ(posted->status, 400) << posted->body;

  // A bad flag is refused; a bad $TRACEPARENT is said and the run gets a trace of its own.
  ProcessResult bad = Jobctl({"trigger", "traced", "--traceparent", "00-xyz"});
  EXPECT_EQ(bad.exit_code, 64) << bad.err;
  ProcessResult bad_env = Jobctl({"trigger", "traced"}, {{"TRACEPARENT", "garbage"}});
  EXPECT_NE(bad_env.err.find("$TRACEPARENT left out"), std::string::npos) << bad_env.err;
  json own = run_of(bad_env);
  EXPECT_NE(own["trace_id"], kFlag);
  EXPECT_EQ(own["trace_id"].get<std::string>().size(), 32u);

  ProcessResult found = Jobctl({"runs", "--trace", kFlag, "-o", "json"});
  ASSERT_EQ(found.exit_code, 0) << found.err;
  json runs = json::parse(found.out);
  ASSERT_EQ(runs.size(), 1u) << found.out;
  EXPECT_EQ(runs[0]["id"], by_flag["id"]);
  EXPECT_EQ(json::parse(Jobctl({"runs", "--trace", kHeader, "-o", "json"}).out).size(), 1u);
  EXPECT_EQ(Jobctl({"runs", "--trace", "not-a-trace"}).exit_code, 64);
  // A token limited to some jobs, as CI gets, finds the trace's runs of those jobs only.
  auto token_for = [&](const std::string& name, const std::string& jobs) {
    http::HttpResponse made = coord_->Request(
        "POST", "/v1/tokens", json{{"role", "trigger"}, {"name", name}, {"jobs", jobs}}.dump());
    EXPECT_EQ(made.status, 201) << made.body;
    return json::parse(made.body)["token"].get<std::string>();
  };
  ProcessResult mine = Jobctl({"runs", "--trace", kFlag, "-o", "json"},
                              {{"JOBCTL_TOKEN", token_for("ci", "trace*")}});
  ASSERT_EQ(mine.exit_code, 0) << mine.err;
  EXPECT_EQ(json::parse(mine.out).size(), 1u) << mine.out;
  ProcessResult others = Jobctl({"runs", "--trace", kFlag, "-o", "json"},
                                {{"JOBCTL_TOKEN", token_for("other", "deploy-*")}});
  ASSERT_EQ(others.exit_code, 0) << others.err;
  EXPECT_EQ(json::parse(others.out).size(), 0u) << others.out;
}

TEST_F(CliE2eTest, LogsFollowOfARunningJobEndsWhenTheRunEnds) {
  dir_.Write("jobs.toml", kJobs);
  ASSERT_EQ(Jobctl({"apply"}).exit_code, 0);
  ProcessResult id = Jobctl({"trigger", "slow"});
  ASSERT_EQ(id.exit_code, 0);
  std::string run = id.out.substr(0, id.out.find('\n'));
  ProcessResult logs = Jobctl({"logs", "-f", run});
  EXPECT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_EQ(logs.out, "step 1\nstep 2\nstep 3\nstep 4\nstep 5\n");
  // By job name: its latest run.
  EXPECT_EQ(Jobctl({"logs", "slow"}).out, logs.out);
}

TEST_F(CliE2eTest, ApplyDiffPullRoundTripTheFileByteExact) {
  dir_.Write("jobs.toml", kJobs);
  EXPECT_EQ(Jobctl({"diff"}).exit_code, 1);  // all four would be created
  ASSERT_EQ(Jobctl({"apply"}).exit_code, 0);
  EXPECT_EQ(Jobctl({"diff"}).exit_code, 0);
  ASSERT_EQ(Jobctl({"pull", "-o", dir_.path() + "/pulled.toml"}).exit_code, 0);
  EXPECT_EQ(dir_.Read("pulled.toml"), kJobs);
  // A field change shows up field by field.
  std::string changed = kJobs;
  changed.replace(changed.find("shards = 3"), 10, "shards = 4");
  dir_.Write("jobs.toml", changed);
  ProcessResult diff = Jobctl({"diff"});
  EXPECT_EQ(diff.exit_code, 1);
  EXPECT_NE(diff.out.find("shards: 3 -> 4"), std::string::npos) << diff.out;
  // Someone else applies meanwhile: our apply is refused with who did it.
  coord_->PostJson(
      "/v1/jobfile",
      {{"text", kJobs + std::string("\n# touched\n")}, {"base_revision", -1}, {"author", "alice"}});
  ProcessResult stale = Jobctl({"apply"});
  EXPECT_EQ(stale.exit_code, 75);
  EXPECT_NE(stale.err.find("alice"), std::string::npos) << stale.err;
}

// Flows are read and checked everywhere a job file is (validate, diff), applied with the file's
// jobs, listed without their steps' own jobs, and run by `trigger --wait` with its result.
TEST_F(CliE2eTest, FlowsAreValidatedDiffedAppliedAndTriggered) {
  dir_.Write("jobs.toml", kJobs);
  ASSERT_EQ(Jobctl({"apply"}).exit_code, 0);
  std::string with_flow = std::string(kJobs) +
                          "\n[[flow]]\n"
                          "name = \"nightly\"\n"
                          "schedule = \"@daily\"\n"
                          "  [[flow.step]]\n"
                          "  name = \"first\"\n"
                          "  job = \"ok\"\n"
                          "  [[flow.step]]\n"
                          "  name = \"then\"\n"
                          "  needs = [\"first\"]\n"
                          "  shell = \"echo then\"\n";
  dir_.Write("jobs.toml", with_flow);
  ProcessResult valid = Jobctl({"validate"});
  EXPECT_EQ(valid.exit_code, 0) << valid.err;
  EXPECT_NE(valid.out.find("4 jobs and 1 flow (2 steps) OK"), std::string::npos) << valid.out;

  ProcessResult diff = Jobctl({"diff"});
  EXPECT_EQ(diff.exit_code, 1) << diff.err;
  EXPECT_EQ(diff.out, "+ flow nightly\n");
  json diff_json = json::parse(Jobctl({"diff", "-o", "json"}).out);
  EXPECT_EQ(diff_json["flows"]["created"], json::array({"nightly"}));

  ProcessResult apply = Jobctl({"apply"});
  EXPECT_EQ(apply.exit_code, 0) << apply.out << apply.err;
  EXPECT_NE(apply.out.find("created    nightly\n"), std::string::npos) << apply.out;
  EXPECT_NE(apply.out.find("1 created, 0 changed, 0 removed, 4 unchanged"), std::string::npos)
      << apply.out;
  EXPECT_EQ(Jobctl({"diff"}).exit_code, 0);
  json list = json::parse(Jobctl({"list", "-o", "json"}).out);
  std::vector<std::string> names;
  for (const json& j : list) names.push_back(j["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"bad", "nightly", "ok", "slow", "three"}))
      << list.dump();
  ProcessResult show = Jobctl({"show", "nightly"});
  EXPECT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("Name:      nightly (flow)"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("then   its own command  first"), std::string::npos) << show.out;
  json shown = json::parse(Jobctl({"show", "nightly", "-o", "json"}).out);
  EXPECT_EQ(shown["kind"], "flow");
  EXPECT_EQ(shown["flow"]["steps"].size(), 2u);
  // "first" runs the job "ok", "then" its own command; the flow run waits for both, and
  // --follow prints each step's output, prefixed with the step.
  ProcessResult run = Jobctl({"trigger", "nightly", "--wait", "--follow"});
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(run.out, "[first] hello from ok\n[then] then\n");
  EXPECT_NE(run.err.find("[first] to-stderr\n"), std::string::npos) << run.err;
  ProcessResult runs = Jobctl({"runs", "nightly"});
  EXPECT_EQ(runs.exit_code, 0) << runs.err;
  EXPECT_NE(runs.out.find("  first "), std::string::npos) << runs.out;
  EXPECT_NE(runs.out.find("    then "), std::string::npos) << runs.out;
  json listed = json::parse(Jobctl({"runs", "nightly", "-o", "json"}).out);
  ASSERT_EQ(listed.size(), 1u);
  const std::string flow_run = std::to_string(listed[0]["id"].get<int64_t>());
  EXPECT_EQ(listed[0]["steps"][1]["name"], "then");
  EXPECT_EQ(listed[0]["steps"][1]["state"], "succeeded");
  ProcessResult logs = Jobctl({"logs", flow_run});
  EXPECT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_EQ(logs.out, "[first] hello from ok\n[then] then\n");
  // Nothing failed: nothing to retry.
  ProcessResult retry = Jobctl({"retry", flow_run});
  EXPECT_EQ(retry.exit_code, 75) << retry.err;
  EXPECT_NE(retry.err.find("no step of flow run " + flow_run + " failed"), std::string::npos)
      << retry.err;

  // A changed step of the file's own reads as such.
  std::string bad = with_flow;
  bad.replace(bad.find("needs = [\"first\"]"), 17, "needs = [\"frist\"]");
  dir_.Write("jobs.toml", bad);
  ProcessResult invalid = Jobctl({"validate"});
  EXPECT_EQ(invalid.exit_code, 65);
  EXPECT_NE(invalid.err.find("flow \"nightly\": step \"then\": needs[0]: needs \"frist\", which "
                             "is not a step of this flow (did you mean \"first\"?)"),
            std::string::npos)
      << invalid.err;
}

TEST_F(CliE2eTest, JsonOutputParsesAndHasTheDocumentedFields) {
  dir_.Write("jobs.toml", kJobs);
  ASSERT_EQ(Jobctl({"apply"}).exit_code, 0);
  ASSERT_EQ(Jobctl({"trigger", "ok", "--wait"}).exit_code, 0);
  json list = json::parse(Jobctl({"list", "-o", "json"}).out);
  ASSERT_EQ(list.size(), 4u);
  for (const char* f : {"name", "schedule", "next_fire", "paused", "last_state"}) {
    EXPECT_TRUE(list[0].contains(f)) << f;
  }
  json runs = json::parse(Jobctl({"runs", "-o", "json"}).out);
  ASSERT_FALSE(runs.empty());
  for (const char* f : {"id", "job", "reason", "scheduled_at", "state", "shards"}) {
    EXPECT_TRUE(runs[0].contains(f)) << f;
  }
  for (const char* f : {"index", "agent", "state", "attempt", "exit_code"}) {
    EXPECT_TRUE(runs[0]["shards"][0].contains(f)) << f;
  }
  EXPECT_EQ(runs[0]["reason"], "manual");
  json agents = json::parse(Jobctl({"agents", "-o", "json"}).out);
  EXPECT_EQ(agents[0]["name"], "host-1");
}

// `jobctl list --label` keeps the jobs whose `on` has every term (a selector as written or a
// key alone); `runs` and `show` give what a shard's processes used, as its agent measured it.
TEST_F(CliE2eTest, ListKeepsJobsByLabelAndRunsShowWhatAShardUsed) {
  dir_.Write("jobs.toml", R"([[job]]
name = "big"
schedule = "@yearly"
shell = "dd if=/dev/zero of=/dev/null bs=160M count=1 2>/dev/null"
[[job]]
name = "web-a"
schedule = "@yearly"
shell = "true"
on = ["role=web"]
[[job]]
name = "db"
schedule = "@yearly"
shell = "true"
on = ["role!=web", "dc=fra1"]
[[flow]]
name = "nightly"
schedule = "@yearly"
  [[flow.step]]
  name = "only"
  shell = "true"
  on = ["role=web"]
)");
  ASSERT_EQ(Jobctl({"apply"}).exit_code, 0);
  auto names = [this](const std::string& label) {
    ProcessResult r = Jobctl({"list", "--label", label, "-o", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> out;
    for (const json& j : json::parse(r.out)) out.push_back(j["name"]);
    return out;
  };
  // A flow has no `on` of its own: its step's selector does not list it.
  EXPECT_EQ(names("role=web"), std::vector<std::string>{"web-a"});
  EXPECT_EQ(names("role"), (std::vector<std::string>{"db", "web-a"}));
  EXPECT_EQ(names("role!=web dc=fra1"), std::vector<std::string>{"db"});
  EXPECT_EQ(names("dc=fra1 role=web"), std::vector<std::string>{});
  EXPECT_EQ(names("web"), std::vector<std::string>{});  // a value alone is no key
  json all = json::parse(Jobctl({"list", "-o", "json"}).out);
  ASSERT_EQ(all.size(), 4u);  // the flow's step is not listed on its own
  EXPECT_EQ(all[1]["name"], "db");
  EXPECT_EQ(all[1]["on"], json({"role!=web", "dc=fra1"}));
  EXPECT_EQ(all[0]["on"], json::array());
  ProcessResult table = Jobctl({"list", "--label", "role=web"});
  EXPECT_NE(table.out.find("web-a"), std::string::npos);
  EXPECT_EQ(table.out.find("big"), std::string::npos);
  ProcessResult longer = Jobctl({"list", "--label", std::string(257, 'x')});
  EXPECT_EQ(longer.exit_code, 64);
  EXPECT_NE(longer.err.find("--label: longer than 256 bytes"), std::string::npos) << longer.err;

  ASSERT_EQ(Jobctl({"trigger", "big", "--wait"}).exit_code, 0);
  json runs = json::parse(Jobctl({"runs", "big", "-o", "json"}).out);
  ASSERT_EQ(runs.size(), 1u);
  const json& shard = runs[0]["shards"][0];
  ASSERT_TRUE(shard["peak_rss_bytes"].is_number_integer()) << shard.dump();
  EXPECT_GE(shard["peak_rss_bytes"].get<int64_t>(), int64_t{160} << 20);
  EXPECT_TRUE(shard["cpu_ms"].is_number_integer()) << shard.dump();
  ProcessResult listed = Jobctl({"runs", "big"});
  EXPECT_NE(listed.out.find("PEAK MEM"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find(" MiB"), std::string::npos) << listed.out;
  ProcessResult shown = Jobctl({"show", "big"});
  EXPECT_NE(shown.out.find("PEAK MEM"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find(" MiB"), std::string::npos) << shown.out;
}

TEST_F(CliE2eTest, ExitCodesForAuthAndUnreachableCoordinator) {
  ProcessResult denied = Jobctl({"list"}, {{"JOBCTL_TOKEN", "jc_not_a_token"}});
  EXPECT_EQ(denied.exit_code, 77);
  ProcessResult gone = Jobctl({"list"}, {{"JOBCTL_COORDINATOR", "http://127.0.0.1:1"}});
  EXPECT_EQ(gone.exit_code, 69);
  EXPECT_NE(gone.err.find("http://127.0.0.1:1"), std::string::npos) << gone.err;
  ProcessResult missing = Jobctl({"trigger", "nope"});
  EXPECT_EQ(missing.exit_code, 65);
  EXPECT_EQ(missing.err, "jobctl: trigger nope: no such job: nope\n");
}

// A job paused across fire times with misfire = "skip" misses them all when resumed: the
// coordinator records the range, and `jobctl misses` lists it as a table and as JSON.
// trigger --in makes a pending run that starts later: the id on stdout, when it starts and
// how to cancel it on stderr; `runs` lists it pending; `cancel` ends it before it starts.
// Bad --at/--in values are usage errors (64) naming the option.
TEST_F(CliE2eTest, TriggerInDefersARunThatCanBeListedAndCanceledBeforeItStarts) {
  dir_.Write("jobs.toml",
             "[[job]]\nname = \"reindex\"\nschedule = \"@yearly\"\nshell = \"true\"\n");
  ASSERT_EQ(Jobctl({"apply"}).exit_code, 0);
  ProcessResult later = Jobctl({"trigger", "reindex", "--in", "2h"});
  ASSERT_EQ(later.exit_code, 0) << later.err;
  const std::string id = later.out.substr(0, later.out.find('\n'));
  EXPECT_NE(later.err.find("run " + id + " starts at "), std::string::npos) << later.err;
  EXPECT_NE(later.err.find("jobctl cancel " + id), std::string::npos) << later.err;
  json run = coord_->GetJson("/v1/runs/" + id);
  EXPECT_EQ(run["state"], "pending");
  int64_t starts = UnixMs(run["not_before"].get<std::string>());
  EXPECT_NEAR(starts - UnixMs(run["created_at"].get<std::string>()), 7'200'000, 200) << run.dump();
  ProcessResult runs = Jobctl({"runs", "reindex"});
  ASSERT_EQ(runs.exit_code, 0) << runs.err;
  EXPECT_NE(runs.out.find("pending"), std::string::npos) << runs.out;
  ASSERT_EQ(Jobctl({"cancel", id}).exit_code, 0);
  EXPECT_EQ(coord_->GetJson("/v1/runs/" + id)["state"], "canceled");
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"trigger", "reindex", "--in", "soon"},
        std::vector<std::string>{"trigger", "reindex", "--at", "tomorrow"}}) {
    ProcessResult r = Jobctl(bad);
    EXPECT_EQ(r.exit_code, 64) << r.err;
    EXPECT_NE(r.err.find(bad[2]), std::string::npos) << r.err;
  }
  ProcessResult past = Jobctl({"trigger", "reindex", "--at", "2001-01-01T00:00:00Z"});
  EXPECT_EQ(past.exit_code, 65) << past.err;
  EXPECT_NE(past.err.find("is in the past"), std::string::npos) << past.err;
}

TEST_F(CliE2eTest, MissesListsTheFireTimesAJobMissedWhilePaused) {
  dir_.Write("jobs.toml",
             "[[job]]\nname = \"tick\"\nschedule = \"* * * * * *\"\nshell = \"true\"\n"
             "overlap = \"allow\"\nmisfire = \"skip\"\n\n"
             "[[job]]\nname = \"calm\"\nschedule = \"@yearly\"\nshell = \"true\"\n");
  ASSERT_EQ(Jobctl({"apply"}).exit_code, 0);
  ProcessResult none = Jobctl({"misses", "tick"});
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(none.out, "No missed fire times recorded for tick.\n");
  ASSERT_EQ(Jobctl({"pause", "tick"}).exit_code, 0);
  // Paused across at least three fire times (one a second): the first may have had its run
  // created ahead (early dispatch), which the pause cancels; the others are missed.
  auto paused_at = std::chrono::system_clock::now();
  ASSERT_TRUE(Coordinator::Eventually(
      [&] {
        return std::chrono::system_clock::now() >= paused_at + std::chrono::milliseconds(3500);
      },
      seconds(10)));
  ASSERT_EQ(Jobctl({"resume", "tick"}).exit_code, 0);
  json api;
  ASSERT_TRUE(Coordinator::Eventually(
      [&] { return !(api = coord_->GetJson("/v1/misses?job=tick")).empty(); }, seconds(10)));
  int64_t count = 0;
  for (const json& m : api) count += m["count"].get<int64_t>();
  EXPECT_GE(count, 2) << api.dump();

  ProcessResult as_json = Jobctl({"misses", "tick", "-o", "json"});
  ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
  json listed = json::parse(as_json.out);
  EXPECT_EQ(listed, api);
  ASSERT_FALSE(listed.empty());
  for (const char* f : {"first", "last", "first_ms", "last_ms", "count", "reason"}) {
    EXPECT_TRUE(listed[0].contains(f)) << f;
  }
  EXPECT_EQ(listed[0]["reason"], "misfire=skip");
  EXPECT_EQ(UnixMs(listed[0]["first"]), listed[0]["first_ms"].get<int64_t>());
  EXPECT_GE(listed[0]["last_ms"].get<int64_t>(), listed[0]["first_ms"].get<int64_t>());

  ProcessResult table = Jobctl({"misses", "tick", "--since", "1h"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_EQ(table.out.rfind("FIRST MISSED  ", 0), 0u) << table.out;
  EXPECT_NE(table.out.find("misfire=skip"), std::string::npos) << table.out;
  std::string total = std::to_string(count) + " fire times missed in " +
                      std::to_string(listed.size()) + " range" + (listed.size() == 1 ? "" : "s") +
                      "\n";
  EXPECT_NE(table.out.find(total), std::string::npos) << table.out;

  // Unknown job, bad --since, and a token that may read other jobs only.
  ProcessResult unknown = Jobctl({"misses", "nope"});
  EXPECT_EQ(unknown.exit_code, 65);
  EXPECT_EQ(unknown.err, "jobctl: misses nope: no such job: nope\n");
  EXPECT_EQ(Jobctl({"misses", "tick", "--since", "soon"}).exit_code, 64);
  http::HttpResponse made =
      coord_->Request("POST", "/v1/tokens",
                      json{{"role", "read"}, {"name", "calm-reader"}, {"jobs", "calm*"}}.dump());
  ASSERT_EQ(made.status, 201) << made.body;
  std::string scoped = json::parse(made.body)["token"];
  ProcessResult denied = Jobctl({"misses", "tick"}, {{"JOBCTL_TOKEN", scoped}});
  EXPECT_EQ(denied.exit_code, 77) << denied.err;
  EXPECT_EQ(denied.err.rfind("jobctl: misses tick: ", 0), 0u) << denied.err;
  EXPECT_EQ(Jobctl({"misses", "calm"}, {{"JOBCTL_TOKEN", scoped}}).exit_code, 0);
}

// Ctrl-C (SIGINT) during `trigger --wait`: jobctl detaches and exits 130, the run goes on;
// with --cancel-on-interrupt the run is canceled first. `logs -f` interrupted exits 130.
class CliInterruptTest : public CliE2eTest {
 protected:
  // jobctl ARGS... as a child process of its own, its output in NAME.log.
  std::unique_ptr<Daemon> Start(const std::string& name, std::vector<std::string> args) {
    args.insert(args.begin(), JOBCTL_BIN);
    return std::make_unique<Daemon>(args, dir_.path() + "/" + name + ".log", env_);
  }
  // The id of the newest run of `long` once it is running and is not `after`.
  int64_t RunningRun(int64_t after) {
    int64_t id = -1;
    EXPECT_TRUE(Coordinator::Eventually(
        [&] {
          json runs = coord_->Runs("long", 1);
          if (runs.empty() || runs[0]["id"] == after || runs[0]["state"] != "running") return false;
          id = runs[0]["id"].get<int64_t>();
          return true;
        },
        seconds(20)));
    return id;
  }
  std::string State(int64_t run) {
    return coord_->GetJson("/v1/runs/" + std::to_string(run))["state"].get<std::string>();
  }
  // The run's processes are gone: no shard is still running.
  void ExpectStopped(int64_t run) {
    EXPECT_TRUE(Coordinator::Eventually(
        [&] {
          json got = coord_->GetJson("/v1/runs/" + std::to_string(run));
          for (const json& sh : got["shards"]) {
            if (sh["state"] == "running") return false;
          }
          return true;
        },
        seconds(30)));
  }
};

const char* kLongJob =
    "[[job]]\nname = \"long\"\nschedule = \"@yearly\"\nkill_grace = \"1s\"\n"
    "shell = \"echo started; sleep 120\"\n";

TEST_F(CliInterruptTest, TriggerWaitDetachesOnCtrlCAndTheRunGoesOn) {
  dir_.Write("jobs.toml", kLongJob);
  ASSERT_EQ(Jobctl({"apply"}).exit_code, 0);
  std::unique_ptr<Daemon> cli = Start("detach", {"trigger", "long", "--wait"});
  int64_t run = RunningRun(-1);
  ASSERT_GT(run, 0);
  cli->Signal(SIGINT);
  EXPECT_EQ(cli->Wait(seconds(30)), 130);
  std::string r = std::to_string(run);
  EXPECT_EQ(ReadFile(cli->log_path()), "jobctl: trigger long: interrupted; run " + r +
                                           " goes on. Follow it with: jobctl logs -f " + r +
                                           "; cancel it with: jobctl cancel " + r + "\n");
  EXPECT_EQ(State(run), "running");
  coord_->PostJson("/v1/runs/" + r + "/cancel", json::object());
  ExpectStopped(run);
}

TEST_F(CliInterruptTest, TriggerWaitWithCancelOnInterruptCancelsTheRun) {
  dir_.Write("jobs.toml", kLongJob);
  ASSERT_EQ(Jobctl({"apply"}).exit_code, 0);
  std::unique_ptr<Daemon> cli =
      Start("cancel", {"trigger", "long", "--wait", "--cancel-on-interrupt"});
  int64_t run = RunningRun(-1);
  ASSERT_GT(run, 0);
  cli->Signal(SIGINT);
  EXPECT_EQ(cli->Wait(seconds(30)), 130);
  // jobctl exits once the cancel is acknowledged, so the run is canceled by then.
  EXPECT_EQ(State(run), "canceled");
  EXPECT_NE(ReadFile(cli->log_path()).find("interrupted; run " + std::to_string(run) + " canceled"),
            std::string::npos)
      << ReadFile(cli->log_path());
  ExpectStopped(run);
  // --follow as well: the same, after the output so far.
  std::unique_ptr<Daemon> follow =
      Start("follow", {"trigger", "long", "--follow", "--cancel-on-interrupt"});
  int64_t second = RunningRun(run);
  ASSERT_GT(second, 0);
  ASSERT_TRUE(follow->WaitForLog("started\n", seconds(20)));
  follow->Signal(SIGINT);
  EXPECT_EQ(follow->Wait(seconds(30)), 130);
  EXPECT_EQ(State(second), "canceled");
  ExpectStopped(second);
}

// A trigger token may start runs but not cancel them: the cancel is refused, jobctl says the
// run goes on and exits with the refusal's code.
TEST_F(CliInterruptTest, ARefusedCancelOnInterruptSaysSoAndExitsWithItsCode) {
  dir_.Write("jobs.toml", kLongJob);
  ASSERT_EQ(Jobctl({"apply"}).exit_code, 0);
  http::HttpResponse made =
      coord_->Request("POST", "/v1/tokens", json{{"role", "trigger"}, {"name", "ci"}}.dump());
  ASSERT_EQ(made.status, 201) << made.body;
  env_["JOBCTL_TOKEN"] = json::parse(made.body)["token"];
  std::unique_ptr<Daemon> cli =
      Start("refused", {"trigger", "long", "--wait", "--cancel-on-interrupt"});
  int64_t run = RunningRun(-1);
  ASSERT_GT(run, 0);
  cli->Signal(SIGINT);
  EXPECT_EQ(cli->Wait(seconds(30)), 77);
  std::string out = ReadFile(cli->log_path());
  EXPECT_EQ(out.rfind("jobctl: trigger long: interrupted; run " + std::to_string(run) +
                          " was NOT canceled and goes on: ",
                      0),
            0u)
      << out;
  EXPECT_NE(out.find("Cancel it with: jobctl cancel " + std::to_string(run)), std::string::npos)
      << out;
  EXPECT_EQ(State(run), "running");
  coord_->PostJson("/v1/runs/" + std::to_string(run) + "/cancel", json::object());
  ExpectStopped(run);
}

TEST_F(CliInterruptTest, LogsFollowInterruptedExits130) {
  dir_.Write("jobs.toml", kLongJob);
  ASSERT_EQ(Jobctl({"apply"}).exit_code, 0);
  ProcessResult trig = Jobctl({"trigger", "long"});
  ASSERT_EQ(trig.exit_code, 0) << trig.err;
  int64_t run = std::stoll(trig.out);
  std::unique_ptr<Daemon> cli = Start("logs", {"logs", "-f", std::to_string(run)});
  ASSERT_TRUE(cli->WaitForLog("started\n", seconds(20)));
  cli->Signal(SIGINT);
  EXPECT_EQ(cli->Wait(seconds(30)), 130);
  EXPECT_EQ(ReadFile(cli->log_path()), "started\n");
  EXPECT_EQ(State(run), "running");
  coord_->PostJson("/v1/runs/" + std::to_string(run) + "/cancel", json::object());
  ExpectStopped(run);
}

TEST_F(CliE2eTest, AgentTokensAreBoundToANameAndAgentsRmRevokesThem) {
  ProcessResult made = Jobctl({"token", "create", "--role", "agent", "--agent", "web-3", "--labels",
                               "role=web", "--expires", "30d"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_EQ(made.out.rfind("jc_", 0), 0u) << made.out;
  ProcessResult twice = Jobctl({"token", "create", "--role", "agent", "--agent", "web-3"});
  EXPECT_EQ(twice.exit_code, 75) << twice.err;
  EXPECT_NE(twice.err.find("agent web-3 already has a credential"), std::string::npos) << twice.err;
  ProcessResult list = Jobctl({"token", "list", "-o", "json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  bool found = false;
  for (const json& t : json::parse(list.out)) {
    if (t["agent"] != "web-3") continue;
    found = true;
    EXPECT_EQ(t["role"], "agent");
    EXPECT_EQ(t["labels"]["role"], "web");
    EXPECT_NE(t["expires_at"], "");
  }
  EXPECT_TRUE(found) << list.out;
  // The agent the fixture started holds nothing: it goes at once, with its credential.
  ProcessResult rm = Jobctl({"agents", "rm", "host-1"});
  ASSERT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_EQ(rm.out, "agent host-1 removed; 1 credential(s) revoked\n");
  ProcessResult again = Jobctl({"agents", "rm", "host-1"});
  EXPECT_EQ(again.exit_code, 65);
  EXPECT_EQ(again.err, "jobctl: agents rm host-1: no such agent: host-1\n");
}

// Resource limits as a user meets them in the CLI: validate names the line of a bad one,
// show lists them, diff shows a change of one field by field.
TEST_F(CliE2eTest, ResourceLimitsAreValidatedShownAndDiffed) {
  const std::string job =
      "[[job]]\nname = \"etl\"\nschedule = \"@yearly\"\nshell = \"true\"\n"
      "memory_max = \"512MiB\"\ncpu_max = \"150%\"\npids_max = 64\nio_weight = 200\n";
  dir_.Write("jobs.toml", job +
                              "[[job]]\nname = \"bad\"\nschedule = \"@yearly\"\n"
                              "shell = \"true\"\nmemory_max = \"lots\"\n");
  ProcessResult invalid = Jobctl({"validate"});
  EXPECT_EQ(invalid.exit_code, 65);
  EXPECT_NE(invalid.err.find("jobs.toml:13:14: job \"bad\": memory_max: expected a size from "
                             "\"1MiB\" to \"1024GiB\" like \"512MiB\", got \"lots\""),
            std::string::npos)
      << invalid.err;
  dir_.Write("jobs.toml", job);
  ProcessResult apply = Jobctl({"apply"});
  ASSERT_EQ(apply.exit_code, 0) << apply.err;
  ProcessResult show = Jobctl({"show", "etl"});
  EXPECT_NE(show.out.find("Limits:    memory_max 512MiB  cpu_max 150%  pids_max 64  "
                          "io_weight 200 (per shard, in its cgroup)\n"),
            std::string::npos)
      << show.out;
  std::string changed = job;
  changed.replace(changed.find("pids_max = 64"), 13, "pids_max = 32");
  dir_.Write("jobs.toml", changed);
  ProcessResult diff = Jobctl({"diff"});
  EXPECT_EQ(diff.exit_code, 1);
  EXPECT_NE(diff.out.find("pids_max: 64 -> 32"), std::string::npos) << diff.out;
}

// A job's log_cap keeps less of its runs' output than the coordinator's: a job printing 64 KiB
// under a 1 KiB cap keeps what came before the chunk that passed it, plus one marker that
// `jobctl logs` prints on standard error; `jobctl show` names the cap.
TEST_F(CliE2eTest, AJobsLogCapKeepsItsOutputUpToTheCapAndLogsSaysItWasTruncated) {
  // The pause ends the first chunk (agentd cuts one at 200 ms), so it is kept whole.
  dir_.Write("jobs.toml",
             "[[job]]\nname = \"loud\"\nschedule = \"@yearly\"\nlog_cap = \"1KiB\"\n"
             "shell = \"echo start; sleep 0.5; head -c 65536 /dev/zero | tr '\\\\0' x\"\n");
  ProcessResult apply = Jobctl({"apply"});
  ASSERT_EQ(apply.exit_code, 0) << apply.err;
  ProcessResult show = Jobctl({"show", "loud"});
  EXPECT_NE(show.out.find("Log cap:   1KiB of output kept per run\n"), std::string::npos)
      << show.out;
  ProcessResult shown = Jobctl({"show", "loud", "-o", "json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_EQ(json::parse(shown.out)["definition"]["log_cap_bytes"], 1024) << shown.out;
  ProcessResult run = Jobctl({"trigger", "loud", "--wait"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ProcessResult logs = Jobctl({"logs", "loud"});
  EXPECT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_EQ(logs.out, "start\n");
  EXPECT_EQ(logs.err, "[jobctl: output truncated: the run reached its log cap of 1024 bytes]\n");
}

}  // namespace
}  // namespace jobctl::testing
