// Output that reaches the coordinator after its attempt's result (Issue 19): a result says
// where the attempt's output ends ("output_seq"), the coordinator still takes the output up
// to there from the agent that reported it, and readers (`jobctl trigger --wait --follow`,
// `jobctl logs -f`, GET /v1/runs/{id}/logs) are done only once it is all stored. The agent
// here speaks the protocol by hand, so that its log appends can be held back behind its
// result; the coordinator and the CLI are the real binaries.
#include <gtest/gtest.h>

#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/base64.h"
#include "store/log_store.h"
#include "store/store.h"
#include "testlib/coordinator_fixture.h"

namespace jobctl::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

class TrailingOutputTest : public CoordinatorFixture {
 protected:
  // Runs jobctl in the background against the coordinator, as a user's shell would.
  std::future<ProcessResult> JobctlInBackground(std::vector<std::string> args) {
    args.insert(args.begin(), JOBCTL_BIN);
    RunOptions o;
    o.env = {{"JOBCTL_COORDINATOR", coord_->url()},
             {"JOBCTL_TOKEN", coord_->admin_token()},
             {"HOME", dir_.path()},
             {"NO_COLOR", "1"}};
    o.cwd = dir_.path();
    o.timeout = seconds(60);
    return std::async(std::launch::async, [args, o] { return jobctl::testing::Run(args, o); });
  }
  // One read of the run's output from `after` without waiting.
  json ReadLogs(int64_t run, int64_t after = 0) {
    return coord_->GetJson("/v1/runs/" + std::to_string(run) +
                           "/logs?after=" + std::to_string(after));
  }
  // Reads the run's output to its end the way a follower does; the chunks' data.
  std::string ReadAll(int64_t run) {
    std::string all;
    int64_t after = 0;
    for (int i = 0; i < 100; ++i) {
      json page = ReadLogs(run, after);
      for (const json& ch : page["chunks"])
        all += Base64Decode(ch["data"].get<std::string>()) + "|";
      after = page["next"].get<int64_t>();
      if (page["done"].get<bool>()) break;
    }
    return all;
  }
  json ResultWithEnd(TestAgent& agent, const json& lease, int64_t output_seq) {
    json body = agent.ResultBody(lease, 0);
    body["output_seq"] = output_seq;
    return body;
  }
};

// The issue's run: three shards whose results arrive before any of their output (held back,
// as a log batch not yet committed would be). The run ends, but the follower keeps following
// until every shard's declared output is stored, prints all of it, then the summary.
TEST_F(TrailingOutputTest, Issue19_TriggerWaitFollowPrintsOutputThatArrivesAfterTheResults) {
  Start();
  coord_->Apply(
      "[[job]]\nname = \"sharded-hello\"\nschedule = \"@yearly\"\n"
      "shell = \"echo hello\"\nshards = 3\n");
  std::future<ProcessResult> follower =
      JobctlInBackground({"trigger", "sharded-hello", "--wait", "--follow"});
  ASSERT_TRUE(
      Coordinator::Eventually([&] { return !coord_->Runs("sharded-hello").empty(); }, seconds(20)));
  int64_t run = coord_->Runs("sharded-hello")[0]["id"].get<int64_t>();
  TestAgent agent(*coord_, "host-1");
  std::vector<json> leases = agent.ClaimUpTo(3);
  ASSERT_EQ(leases.size(), 3u);
  for (const json& a : leases) {
    http::HttpResponse r = agent.PostResult(ResultWithEnd(agent, a, 2));
    ASSERT_EQ(r.status, 200) << r.body;
  }
  ASSERT_EQ(coord_->WaitRun(run, seconds(10))["state"], "succeeded");
  // The run has ended, but none of its declared output is stored yet: not done.
  json early = ReadLogs(run);
  EXPECT_TRUE(early["chunks"].empty()) << early.dump();
  EXPECT_FALSE(early["done"].get<bool>()) << early.dump();
  EXPECT_EQ(follower.wait_for(milliseconds(0)), std::future_status::timeout);

  for (const json& a : leases) {
    std::string shard = std::to_string(a["shard"].get<int>());
    for (int64_t seq : {1, 2}) {
      http::HttpResponse r =
          agent.Log(a, seq, "stdout", "shard " + shard + " line " + std::to_string(seq) + "\n");
      ASSERT_EQ(r.status, 200) << r.body;
    }
  }
  ASSERT_EQ(follower.wait_for(seconds(30)), std::future_status::ready);
  ProcessResult out = follower.get();
  EXPECT_EQ(out.exit_code, 0) << out.err;
  for (const char* line : {"shard 0 line 1", "shard 0 line 2", "shard 1 line 1", "shard 1 line 2",
                           "shard 2 line 1", "shard 2 line 2"}) {
    EXPECT_NE(out.out.find(line), std::string::npos) << line << " missing from:\n" << out.out;
  }
  EXPECT_NE(out.err.find("succeeded"), std::string::npos) << out.err;
}

// Output held by the agent through a coordinator outage (kill -9 and restart) and sent after
// the coordinator is back, after the result that declared it: the declared end survives the
// restart, `jobctl logs -f` is not done until the rest arrives, then prints every line.
TEST_F(TrailingOutputTest, Issue19_OutputSentAfterACoordinatorOutageIsFollowedToItsEnd) {
  Start();
  coord_->Apply("[[job]]\nname = \"report\"\nschedule = \"@yearly\"\nshell = \"true\"\n");
  int64_t run = coord_->PostJson("/v1/jobs/report/trigger", json::object())["id"].get<int64_t>();
  TestAgent agent(*coord_, "host-1");
  std::vector<json> a = agent.Claim(1, 5000);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(agent.Log(a[0], 1, "stdout", "before the outage\n").status, 200);
  http::HttpResponse result = agent.PostResult(ResultWithEnd(agent, a[0], 3));
  ASSERT_EQ(result.status, 200) << result.body;

  coord_->Kill9();
  coord_->Start();
  ASSERT_EQ(coord_->WaitRun(run, seconds(10))["state"], "succeeded");
  json partial = ReadLogs(run);
  ASSERT_EQ(partial["chunks"].size(), 1u) << partial.dump();
  EXPECT_FALSE(ReadLogs(run, partial["next"].get<int64_t>())["done"].get<bool>());
  std::future<ProcessResult> follower = JobctlInBackground({"logs", "-f", std::to_string(run)});

  ASSERT_EQ(agent.Log(a[0], 2, "stderr", "spooled line 2\n").status, 200);
  EXPECT_FALSE(ReadLogs(run, partial["next"].get<int64_t>() + 1)["done"].get<bool>());
  ASSERT_EQ(agent.Log(a[0], 3, "stdout", "spooled line 3\n").status, 200);
  ASSERT_EQ(follower.wait_for(seconds(30)), std::future_status::ready);
  ProcessResult out = follower.get();
  EXPECT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(out.out, "before the outage\nspooled line 3\n");
  EXPECT_EQ(out.err, "spooled line 2\n");
  EXPECT_EQ(ReadAll(run), "before the outage\n|spooled line 2\n|spooled line 3\n|");
}

// Output after a result is taken only from the agent that reported it, under that lease, and
// not past the end it declared; every refusal is a 409 and stores nothing.
TEST_F(TrailingOutputTest, OutputAfterTheResultIsTakenOnlyFromItsAgentUpToTheDeclaredEnd) {
  Start();
  coord_->Apply("[[job]]\nname = \"report\"\nschedule = \"@yearly\"\nshell = \"true\"\n");
  int64_t run = coord_->PostJson("/v1/jobs/report/trigger", json::object())["id"].get<int64_t>();
  TestAgent agent(*coord_, "host-1");
  TestAgent other(*coord_, "host-2");
  std::vector<json> a = agent.Claim(1, 5000);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(agent.PostResult(ResultWithEnd(agent, a[0], 2)).status, 200);
  EXPECT_EQ(other.Log(a[0], 1, "stdout", "not mine\n").status, 409);
  EXPECT_EQ(agent.Log(a[0], 1, "stdout", "old lease\n", a[0]["token"].get<int64_t>() + 1).status,
            409);
  EXPECT_EQ(agent.Log(a[0], 3, "stdout", "past the end\n").status, 409);
  EXPECT_TRUE(ReadLogs(run)["chunks"].empty());
  EXPECT_EQ(agent.Log(a[0], 1, "stdout", "one\n").status, 200);
  EXPECT_FALSE(ReadLogs(run, ReadLogs(run)["next"].get<int64_t>())["done"].get<bool>());
  EXPECT_EQ(agent.Log(a[0], 2, "stdout", "two\n").status, 200);
  EXPECT_EQ(agent.Log(a[0], 2, "stdout", "two\n").status, 200);  // a resend: stored once
  EXPECT_EQ(ReadAll(run), "one\n|two\n|");
}

// Once the shard went on to another attempt (a retry), output of the earlier attempt is no
// longer taken, and readers do not wait for it.
TEST_F(TrailingOutputTest, OutputOfAnAttemptThatWasRetriedIsNotTakenAfterItsResult) {
  Start();
  coord_->Apply(
      "[[job]]\nname = \"flaky\"\nschedule = \"@yearly\"\nshell = \"false\"\n"
      "retry = { max = 1, initial = \"100ms\", max_delay = \"100ms\" }\n");
  int64_t run = coord_->PostJson("/v1/jobs/flaky/trigger", json::object())["id"].get<int64_t>();
  TestAgent agent(*coord_, "host-1");
  std::vector<json> first = agent.Claim(1, 5000);
  ASSERT_EQ(first.size(), 1u);
  json failed = ResultWithEnd(agent, first[0], 1);
  failed["exit_code"] = 1;
  ASSERT_EQ(agent.PostResult(failed).status, 200);
  EXPECT_EQ(agent.Log(first[0], 1, "stdout", "too late\n").status, 409);
  std::vector<json> second = agent.Claim(1, 5000);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0]["attempt"], 2);
  ASSERT_EQ(agent.Finish(second[0], 0).status, 200);
  ASSERT_EQ(coord_->WaitRun(run, seconds(10))["state"], "succeeded");
  json page = ReadLogs(run);
  EXPECT_TRUE(page["chunks"].empty()) << page.dump();
  EXPECT_TRUE(page["done"].get<bool>()) << page.dump();
}

// The end is a bounded count checked at the wire; a result without it (an older agent) is
// taken as before, and its run's output is done at the run's end.
TEST_F(TrailingOutputTest, TheDeclaredEndIsValidatedAndResultsWithoutItAreDoneAtTheRunsEnd) {
  Start();
  coord_->Apply("[[job]]\nname = \"report\"\nschedule = \"@yearly\"\nshell = \"true\"\n");
  int64_t run = coord_->PostJson("/v1/jobs/report/trigger", json::object())["id"].get<int64_t>();
  TestAgent agent(*coord_, "host-1");
  std::vector<json> a = agent.Claim(1, 5000);
  ASSERT_EQ(a.size(), 1u);
  for (const json& bad : {json(-1), json(int64_t{1'000'000'001}), json("3"), json(1.5)}) {
    json body = agent.ResultBody(a[0], 0);
    body["output_seq"] = bad;
    http::HttpResponse r = agent.PostResult(body);
    EXPECT_EQ(r.status, 400) << bad.dump() << ": " << r.body;
    EXPECT_NE(r.body.find("output_seq"), std::string::npos) << r.body;
  }
  ASSERT_EQ(agent.Log(a[0], 1, "stdout", "only line\n").status, 200);
  ASSERT_EQ(agent.Finish(a[0], 0).status, 200);  // no output_seq
  ASSERT_EQ(coord_->WaitRun(run, seconds(10))["state"], "succeeded");
  json page = ReadLogs(run);
  ASSERT_EQ(page["chunks"].size(), 1u);
  EXPECT_TRUE(ReadLogs(run, page["next"].get<int64_t>())["done"].get<bool>());
  EXPECT_EQ(agent.Log(a[0], 2, "stdout", "after\n").status, 409);  // as before: lease gone
}

// A real agentd declares where each attempt's output ends: the seq of its last chunk, which
// the log store holds by the time the result arrives (agentd sends a result only after its
// output was acknowledged), so readers are done as soon as the run ends.
TEST_F(TrailingOutputTest, AgentdDeclaresTheEndOfEachAttemptsOutputWithItsResult) {
  Start();
  AgentProcess agentd(*coord_, dir_, "host-1");
  coord_->Apply(
      "[[job]]\nname = \"chatty\"\nschedule = \"@yearly\"\nshards = 2\n"
      "shell = \"echo one; echo two >&2; echo three\"\n");
  int64_t run = coord_->PostJson("/v1/jobs/chatty/trigger", json::object())["id"].get<int64_t>();
  ASSERT_EQ(coord_->WaitRun(run, seconds(30))["state"], "succeeded") << agentd.Logs();
  std::string all = ReadAll(run);
  EXPECT_NE(all.find("three"), std::string::npos) << all;
  coord_->Stop();

  Result<std::unique_ptr<store::Store>> st =
      store::OpenStore({.path = coord_->data_dir() + "/jobctl.db"});
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  Result<std::unique_ptr<store::LogStore>> logs =
      store::OpenLogStore({.path = coord_->data_dir() + "/logs.db", .run_cap_bytes = 1 << 20});
  ASSERT_TRUE(logs.ok()) << logs.status().ToString();
  Result<std::vector<store::OutputEndRow>> ends = (*st)->OutputEnds(run);
  Result<std::vector<store::LogStore::AttemptSeq>> stored = (*logs)->LastSeqs(run);
  ASSERT_TRUE(ends.ok() && stored.ok());
  ASSERT_EQ(ends->size(), 2u) << agentd.Logs();
  ASSERT_EQ(stored->size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ((*ends)[i].agent, "host-1");
    EXPECT_GE((*ends)[i].last_seq, 1);
    bool reached = false;
    for (const store::LogStore::AttemptSeq& s : *stored) {
      if (s.shard == (*ends)[i].shard && s.attempt == (*ends)[i].attempt) {
        reached = s.max_seq == (*ends)[i].last_seq;
      }
    }
    EXPECT_TRUE(reached) << "shard " << (*ends)[i].shard << " declared " << (*ends)[i].last_seq;
  }
}

}  // namespace
}  // namespace jobctl::testing
