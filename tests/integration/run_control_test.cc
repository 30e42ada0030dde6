// The controls users have over runs, as users and agents meet them over HTTP against the real
// `jobctl serve`: cancel, retry, pause and resume, scoped tokens, log chunks (duplicates, the
// per-run cap, following), on_lost = "fail", the timeout backstop and apply's dry run. The
// agent side is a test agent that speaks the agent protocol by hand.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <ctime>
#include <functional>
#include <thread>

#include "base/base64.h"
#include "testlib/cluster.h"
#include "testlib/coordinator_fixture.h"

namespace jobctl::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

int64_t NowMs() {
  return std::chrono::duration_cast<milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Path(const std::string& prefix, const json& run, const std::string& suffix = "") {
  return prefix + std::to_string(run["id"].get<int64_t>()) + suffix;
}

// One HTTP/1.1 request on a connection of its own, written in full before Send returns, so
// that a test knows the request is on its way before it does the next thing; Read then
// blocks for the answer. (The blocking client gives no such moment: it writes and reads in
// one call.)
class RawRequest {
 public:
  RawRequest(int port, const std::string& method, const std::string& path,
             const std::string& token) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      throw std::runtime_error("cannot connect to the coordinator");
    }
    std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
                      "Authorization: Bearer " + token + "\r\nConnection: close\r\n\r\n";
    for (size_t sent = 0; sent < req.size();) {
      ssize_t n = ::send(fd_, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("cannot send the request");
      sent += static_cast<size_t>(n);
    }
  }
  ~RawRequest() { ::close(fd_); }
  RawRequest(const RawRequest&) = delete;
  RawRequest& operator=(const RawRequest&) = delete;

  // The status and body of the answer; status 0 when none came whole before the deadline.
  std::pair<int, std::string> Read(milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string buf;
    while (true) {
      size_t head_end = buf.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        std::string head = buf.substr(0, head_end);
        for (char& ch : head) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        size_t cl = head.find("content-length:");
        size_t length = cl == std::string::npos ? 0 : std::stoul(head.substr(cl + 15));
        if (buf.size() >= head_end + 4 + length) {
          return {std::stoi(buf.substr(9, 3)), buf.substr(head_end + 4, length)};
        }
      }
      int left = static_cast<int>(
          std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now())
              .count());
      pollfd p{fd_, POLLIN, 0};
      if (left <= 0 || ::poll(&p, 1, left) <= 0) return {0, buf};
      char chunk[4096];
      ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n <= 0) return {0, buf};
      buf.append(chunk, static_cast<size_t>(n));
    }
  }

 private:
  int fd_ = -1;
};

class RunControlTest : public CoordinatorFixture {
 protected:
  json Trigger(const std::string& job, const json& body = json::object()) {
    return coord_->PostJson("/v1/jobs/" + job + "/trigger", body);
  }
};

// ---- cancel ----

// POST /v1/runs/{id}/cancel while one shard is leased and one pending: the run ends canceled
// at once; the holder learns it at its next heartbeat (revoked, reason "canceled") and its
// result is taken as canceled; the pending shard is never handed out and neither shard is
// retried, although the job allows retries.
TEST_F(RunControlTest, CancelRevokesTheLeaseAtTheNextHeartbeatAndTheRunIsNotRetried) {
  Start();
  coord_->Apply(
      "[[job]]\nname = \"long\"\nschedule = \"@yearly\"\nshell = \"sleep 600\"\nshards = 2\n"
      "retry = { max = 3, initial = \"100ms\", max_delay = \"100ms\" }\n");
  json run = Trigger("long");
  TestAgent agent(*coord_, "a");
  std::vector<json> a = agent.Claim(1, 5000);
  ASSERT_EQ(a.size(), 1u);
  json hb = json::parse(agent.Heartbeat(a).body);
  ASSERT_EQ(hb["renewed"].size(), 1u) << hb.dump();

  http::HttpResponse cancel = coord_->Request("POST", Path("/v1/runs/", run, "/cancel"));
  ASSERT_EQ(cancel.status, 200) << cancel.body;
  json canceled = json::parse(cancel.body);
  EXPECT_EQ(canceled["state"], "canceled");
  EXPECT_NE(canceled["finished_at"], "");
  EXPECT_EQ(canceled["note"].get<std::string>().rfind("canceled by ", 0), 0u) << canceled.dump();
  ASSERT_EQ(canceled["shards"].size(), 2u);
  for (const json& s : canceled["shards"]) EXPECT_EQ(s["state"], "canceled") << canceled.dump();
  EXPECT_EQ(coord_->GetJson(Path("/v1/runs/", run))["state"], "canceled");

  hb = json::parse(agent.Heartbeat(a).body);
  EXPECT_TRUE(hb["renewed"].empty()) << hb.dump();
  ASSERT_EQ(hb["revoked"].size(), 1u) << hb.dump();
  EXPECT_EQ(hb["revoked"][0]["reason"], "canceled");
  EXPECT_EQ(hb["revoked"][0]["shard"], a[0]["shard"]);
  // The agent stops the process and reports it; that frees its slot.
  http::HttpResponse result = agent.Finish(a[0], 143, "canceled");
  ASSERT_EQ(result.status, 200) << result.body;
  EXPECT_EQ(json::parse(result.body)["state"], "canceled");
  EXPECT_EQ(coord_->GetJson("/v1/agents")[0]["running"], 0);

  EXPECT_EQ(coord_->Request("POST", Path("/v1/runs/", run, "/cancel")).status, 409);
  // Neither the pending shard nor a retry of either shard comes (a retry would after 100 ms).
  EXPECT_TRUE(agent.Claim(2, 1500).empty());
  json end = coord_->GetJson(Path("/v1/runs/", run));
  EXPECT_EQ(end["state"], "canceled");
  for (const json& s : end["shards"]) EXPECT_EQ(s["attempt"], 1) << end.dump();
  EXPECT_EQ(coord_->Runs("long").size(), 1u);
}

// ---- retry ----

// POST /v1/runs/{id}/retry of a run that failed after its retries starts a new run (reason
// retry, the same scheduled_at and trigger env, the job's current definition, attempt 1) that
// an agent can claim; the failed run stays as it was. Open and succeeded runs get 409.
TEST_F(RunControlTest, RetryOfAFailedRunStartsANewClaimableRun) {
  Start();
  coord_->Apply(
      "[[job]]\nname = \"flaky\"\nschedule = \"@yearly\"\nshell = \"false\"\n"
      "params = { DAY = {} }\n"
      "retry = { max = 1, initial = \"100ms\", max_delay = \"100ms\" }\n");
  json run = Trigger("flaky", {{"params", {{"DAY", "2024-03-09"}}}});
  TestAgent agent(*coord_, "a");
  std::vector<json> first = agent.ClaimUpTo(1);
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(agent.Finish(first[0], 1).status, 200);
  // Waiting for its automatic retry: still open, so not retried by hand.
  EXPECT_EQ(coord_->Request("POST", Path("/v1/runs/", run, "/retry")).status, 409);
  std::vector<json> second = agent.ClaimUpTo(1);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0]["attempt"], 2);
  ASSERT_EQ(agent.Finish(second[0], 1).status, 200);
  json failed = coord_->WaitRun(run["id"], seconds(5));
  ASSERT_EQ(failed["state"], "failed") << failed.dump();

  // The new run is made from the job's current definition.
  coord_->Apply(
      "[[job]]\nname = \"flaky\"\nschedule = \"@yearly\"\nshell = \"exit 0\"\n"
      "params = { DAY = {} }\n"
      "retry = { max = 1, initial = \"100ms\", max_delay = \"100ms\" }\n");
  http::HttpResponse r = coord_->Request("POST", Path("/v1/runs/", run, "/retry"));
  ASSERT_EQ(r.status, 201) << r.body;
  json retry = json::parse(r.body);
  EXPECT_NE(retry["id"], run["id"]);
  EXPECT_EQ(retry["job"], "flaky");
  EXPECT_EQ(retry["reason"], "retry");
  EXPECT_EQ(retry["scheduled_at"], run["scheduled_at"]);
  EXPECT_EQ(retry["state"], "pending");
  ASSERT_EQ(retry["shards"].size(), 1u);
  EXPECT_EQ(retry["shards"][0]["attempt"], 1);
  json old = coord_->GetJson(Path("/v1/runs/", run));
  EXPECT_EQ(old["state"], "failed");
  EXPECT_EQ(old["shards"][0]["attempt"], 2);

  std::vector<json> again = agent.ClaimUpTo(1);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0]["run"], retry["id"]);
  EXPECT_EQ(again[0]["attempt"], 1);
  EXPECT_EQ(again[0]["env"]["DAY"], "2024-03-09");
  EXPECT_EQ(again[0]["shell"], "exit 0");
  ASSERT_EQ(agent.Finish(again[0], 0).status, 200);
  EXPECT_EQ(coord_->WaitRun(retry["id"], seconds(5))["state"], "succeeded");
  EXPECT_EQ(coord_->Request("POST", Path("/v1/runs/", retry, "/retry")).status, 409);
  EXPECT_EQ(coord_->Request("POST", "/v1/runs/999999/retry").status, 404);
  EXPECT_EQ(coord_->Runs("flaky").size(), 2u);
}

// retry with {"failed_shards": true}: a new run with every shard of the old one, those that
// succeeded kept as they ended and never handed out, the others pending; refused when the job's
// shard count changed since, and for a misspelt field.
TEST_F(RunControlTest, RetryOfFailedShardsKeepsTheShardsThatSucceeded) {
  Start();
  const std::string kJob =
      "[[job]]\nname = \"wide\"\nschedule = \"@yearly\"\nshards = 3\nshell = \"true\"\n";
  coord_->Apply(kJob);
  json run = Trigger("wide");
  TestAgent agent(*coord_, "a");
  std::vector<json> first = agent.ClaimUpTo(3);
  ASSERT_EQ(first.size(), 3u);
  for (const json& a : first) ASSERT_EQ(agent.Finish(a, a["shard"] == 1 ? 2 : 0).status, 200);
  ASSERT_EQ(coord_->WaitRun(run["id"], seconds(5))["state"], "failed");

  const std::string path = Path("/v1/runs/", run, "/retry");
  http::HttpResponse typo = coord_->Request("POST", path, R"({"failed_shard": true})");
  EXPECT_EQ(typo.status, 400) << typo.body;
  EXPECT_EQ(coord_->Request("POST", path, R"({"failed_shards": "yes"})").status, 400);

  http::HttpResponse r = coord_->Request("POST", path, R"({"failed_shards": true})");
  ASSERT_EQ(r.status, 201) << r.body;
  json retry = json::parse(r.body);
  EXPECT_EQ(retry["reason"], "retry");
  EXPECT_EQ(retry["scheduled_at"], run["scheduled_at"]);
  ASSERT_EQ(retry["shards"].size(), 3u);
  for (int i : {0, 2}) {
    EXPECT_EQ(retry["shards"][i]["state"], "succeeded") << retry.dump();
    EXPECT_EQ(retry["shards"][i]["outcome"], "kept");
    EXPECT_EQ(retry["shards"][i]["exit_code"], 0);
    EXPECT_EQ(retry["shards"][i]["agent"], "a");
  }
  EXPECT_EQ(retry["shards"][1]["state"], "pending");

  // Only shard 1 is handed out.
  std::vector<json> again = agent.ClaimUpTo(3, 1000);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0]["run"], retry["id"]);
  EXPECT_EQ(again[0]["shard"], 1);
  ASSERT_EQ(agent.Finish(again[0], 0).status, 200);
  json done = coord_->WaitRun(retry["id"], seconds(5));
  EXPECT_EQ(done["state"], "succeeded") << done.dump();

  // The old run again, after the job got a fourth shard: its shards no longer fit.
  coord_->Apply(kJob.substr(0, kJob.find("shards = 3")) + "shards = 4\nshell = \"true\"\n");
  http::HttpResponse changed = coord_->Request("POST", path, R"({"failed_shards": true})");
  EXPECT_EQ(changed.status, 409) << changed.body;
  EXPECT_NE(changed.body.find("had 3 shards"), std::string::npos) << changed.body;
  // A whole retry still fits; both kinds of retry stay in the retried run's trace.
  http::HttpResponse whole = coord_->Request("POST", path, "{}");
  ASSERT_EQ(whole.status, 201) << whole.body;
  EXPECT_EQ(json::parse(whole.body)["trace_id"], run["trace_id"]);
  EXPECT_EQ(retry["trace_id"], run["trace_id"]);
}

// ---- trigger parameters ----

// A trigger sets only the parameters the job declares, within their limits; the review's
// reproduction (a deploy-* trigger token posting {"env": {"LD_PRELOAD": ...}}) is a 400 that
// names the variable, and nothing runs.
TEST_F(RunControlTest, TriggerSetsOnlyTheParametersTheJobDeclares) {
  Start();
  coord_->Apply(
      "[[job]]\nname = \"deploy-web\"\nschedule = \"@yearly\"\nshell = \"true\"\n"
      "env = { STAGE = \"prod\" }\n"
      "params = { VERSION = \"latest\", REGION = { max_length = 4 } }\n");
  http::HttpResponse made = coord_->Request(
      "POST", "/v1/tokens", json{{"role", "trigger"}, {"jobs", "deploy-*"}, {"name", "ci"}}.dump());
  ASSERT_EQ(made.status, 201) << made.body;
  std::string ci = json::parse(made.body)["token"];
  auto trigger = [&](const json& body) {
    return coord_->Request("POST", "/v1/jobs/deploy-web/trigger", body.dump(), ci);
  };
  for (const json& bad :
       {json{{"env", {{"LD_PRELOAD", "/tmp/x.so"}}}}, json{{"params", {{"LD_AUDIT", "/tmp/x.so"}}}},
        json{{"params", {{"PATH", "/tmp"}}}}, json{{"params", {{"STAGE", "dev"}}}},
        json{{"params", {{"X=Y", "z"}}}}, json{{"params", {{"REGION", "toolong"}}}}}) {
    http::HttpResponse r = trigger(bad);
    EXPECT_EQ(r.status, 400) << bad.dump() << " -> " << r.body;
    std::string name = bad.begin().value().begin().key();
    EXPECT_NE(json::parse(r.body)["message"].get<std::string>().find("\"" + name + "\""),
              std::string::npos)
        << r.body;
  }
  EXPECT_EQ(coord_->Runs("deploy-web").size(), 0u) << "a refused trigger started a run";

  TestAgent agent(*coord_, "a");
  ASSERT_EQ(trigger({{"params", {{"REGION", "eu"}}}}).status, 201);
  std::vector<json> got = agent.ClaimUpTo(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["env"], (json{{"STAGE", "prod"}, {"VERSION", "latest"}, {"REGION", "eu"}}));
  ASSERT_EQ(agent.Finish(got[0], 0).status, 200);
  // Not given: the default, and nothing for a parameter without one.
  ASSERT_EQ(trigger(json::object()).status, 201);
  got = agent.ClaimUpTo(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["env"], (json{{"STAGE", "prod"}, {"VERSION", "latest"}}));
  ASSERT_EQ(agent.Finish(got[0], 0).status, 200);
}

// Names the dynamic loader or the C library read are refused in env and params when the job
// file is applied, with the file, line and name.
TEST_F(RunControlTest, ApplyRefusesLoaderVariables) {
  Start();
  for (const char* bad : {"env = { LD_PRELOAD = \"/tmp/x.so\" }", "env = { GCONV_PATH = \"/tmp\" }",
                          "params = { LD_LIBRARY_PATH = \"\" }",
                          "params = { GLIBC_TUNABLES = { required = true } }"}) {
    std::string text = std::string("[[job]]\nname = \"j\"\nschedule = \"@yearly\"\n") +
                       "shell = \"true\"\n" + bad + "\n";
    http::HttpResponse r =
        coord_->Request("POST", "/v1/jobfile", json{{"text", text}, {"base_revision", -1}}.dump());
    EXPECT_EQ(r.status, 400) << bad << " -> " << r.body;
    EXPECT_NE(r.body.find("dynamic loader"), std::string::npos) << r.body;
    EXPECT_NE(r.body.find("jobs.toml:5:"), std::string::npos) << r.body;
  }
}

// ---- pause and resume ----

class PauseTest : public RunControlTest {
 protected:
  struct PausedWindow {
    int64_t paused_at = 0;   // the pause had been committed
    int64_t resumed_at = 0;  // taken before the resume was sent
    int64_t instants = 0;    // instants of the job in [paused_at, resumed_at]
  };
  // Applies an every-second job with this misfire policy, pauses it, checks that it does not
  // fire for about 2 s (passing at least two instants), resumes it, and waits for its first
  // fire on schedule after the resume (by then the resume's catch-up is done).
  PausedWindow PauseAndResume(const std::string& misfire) {
    coord_->Apply(
        "[[job]]\nname = \"tick\"\nschedule = \"*/1 * * * * *\"\nshell = \"true\"\n"
        "overlap = \"allow\"\nmisfire = \"" +
        misfire + "\"\n");
    PausedWindow w;
    // Pause and resume half-way between two instants, so that neither request straddles one.
    SleepUntilMidSecond(NowMs());
    json paused = coord_->PostJson("/v1/jobs/tick/pause", json::object());
    w.paused_at = NowMs();
    EXPECT_EQ(paused["paused"], true);
    EXPECT_EQ(paused["next_fire"], "");
    size_t before = coord_->Runs("tick").size();
    SleepUntilMidSecond(w.paused_at + 1500);  // the assertion: nothing fires meanwhile
    EXPECT_EQ(coord_->Runs("tick").size(), before) << coord_->Runs("tick").dump();
    w.resumed_at = NowMs();
    json resumed = coord_->PostJson("/v1/jobs/tick/resume", json::object());
    EXPECT_EQ(resumed["paused"], false);
    EXPECT_TRUE(Coordinator::Eventually(
        [&] { return !RunsBetween(w.resumed_at + 1, w.resumed_at + 5000).empty(); }, seconds(4)))
        << "no fire after the resume";
    w.instants = w.resumed_at / 1000 - (w.paused_at + 999) / 1000 + 1;
    EXPECT_GE(w.instants, 2);
    return w;
  }
  // Sleeps until the first x.500 s after `after_ms`.
  static void SleepUntilMidSecond(int64_t after_ms) {
    int64_t target = after_ms / 1000 * 1000 + 500;
    if (target <= after_ms) target += 1000;
    std::this_thread::sleep_for(milliseconds(std::max<int64_t>(target - NowMs(), 0)));
  }
  // The job's scheduled runs for instants in [from, to].
  std::vector<json> RunsBetween(int64_t from, int64_t to) {
    std::vector<json> out;
    for (const json& r : coord_->Runs("tick")) {
      int64_t at = UnixMs(r["scheduled_at"]);
      if (r["reason"] == "schedule" && at >= from && at <= to) out.push_back(r);
    }
    return out;
  }
  // Instants in [from, to] inside a recorded miss range with this reason.
  int64_t MissedBetween(int64_t from, int64_t to, const std::string& reason) {
    int64_t n = 0;
    for (int64_t t = (from + 999) / 1000 * 1000; t <= to; t += 1000) {
      for (const json& m : coord_->GetJson("/v1/misses?job=tick")) {
        if (m["reason"] == reason && m["first_ms"] <= t && t <= m["last_ms"]) ++n;
      }
    }
    return n;
  }
};

// misfire = "fire-once": the instants that passed while the job was paused become one run at
// the resume, the others are recorded as missed, and the job then fires on schedule again.
// The pause is far shorter than misfire_grace (30 s by default): the policy applies all the
// same, since these instants were held back on purpose, not fired late.
// These two run with early dispatch off: with it on, the instant just after the pause may
// have its run already (AJobPausedInsideTheEarlyDispatchWindow... below).
TEST_F(PauseTest, ResumeOfAFireOnceJobMakesOneRunForTheInstantsMissedWhilePaused) {
  Start("early_dispatch = \"0s\"\n");
  PausedWindow w = PauseAndResume("fire-once");
  ASSERT_FALSE(HasFailure());
  std::vector<json> made_up = RunsBetween(w.paused_at, w.resumed_at);
  ASSERT_EQ(made_up.size(), 1u) << coord_->Runs("tick").dump();
  EXPECT_GE(UnixMs(made_up[0]["created_at"]), w.resumed_at);
  EXPECT_EQ(MissedBetween(w.paused_at, w.resumed_at, "misfire=fire-once: folded into one run"),
            w.instants - 1)
      << coord_->GetJson("/v1/misses?job=tick").dump();
}

// misfire = "skip": no run for the instants that passed while paused, each recorded as missed;
// the job fires again at its next instant after the resume.
TEST_F(PauseTest, ResumeOfASkipJobRunsNothingForThePausedInstantsAndRecordsThemMissed) {
  Start("early_dispatch = \"0s\"\n");
  PausedWindow w = PauseAndResume("skip");
  ASSERT_FALSE(HasFailure());
  EXPECT_TRUE(RunsBetween(w.paused_at, w.resumed_at).empty()) << coord_->Runs("tick").dump();
  EXPECT_EQ(MissedBetween(w.paused_at, w.resumed_at, "misfire=skip"), w.instants)
      << coord_->GetJson("/v1/misses?job=tick").dump();
}

// With early dispatch on (1 s, the default), a pause half a second before an instant finds
// that instant's run created already: the pause cancels it, saying why, and it is the one
// instant of the pause that has a run; each other one is missed, as without early dispatch.
// No instant is both.
TEST_F(PauseTest, AJobPausedInsideTheEarlyDispatchWindowHasThatRunCanceledAndTheRestMissed) {
  Start();
  PausedWindow w = PauseAndResume("skip");
  ASSERT_FALSE(HasFailure());
  std::vector<json> runs = RunsBetween(w.paused_at, w.resumed_at);
  EXPECT_LE(runs.size(), 1u) << coord_->Runs("tick").dump();
  int64_t missed = MissedBetween(w.paused_at, w.resumed_at, "misfire=skip");
  EXPECT_EQ(static_cast<int64_t>(runs.size()) + missed, w.instants)
      << coord_->Runs("tick").dump() << coord_->GetJson("/v1/misses?job=tick").dump();
  for (const json& r : runs) {
    EXPECT_EQ(r["state"], "canceled") << r.dump();
    EXPECT_NE(r["note"].get<std::string>().find("paused before this run's instant"),
              std::string::npos)
        << r.dump();
    EXPECT_LT(UnixMs(r["created_at"]), w.paused_at) << r.dump();
    int64_t at = UnixMs(r["scheduled_at"]);
    EXPECT_EQ(MissedBetween(at, at, "misfire=skip"), 0) << "both a run and a miss: " << r.dump();
  }
}

// ---- scoped tokens ----

// A trigger token limited to backup-*: triggers backup-db and reads, 403 for report and for
// admin and agent routes; the token list never shows a secret; once revoked, 401.
TEST_F(RunControlTest, TriggerTokenLimitedToAGlobThenRevoked) {
  Start();
  coord_->Apply(
      "[[job]]\nname = \"backup-db\"\nschedule = \"@yearly\"\nshell = \"true\"\n"
      "[[job]]\nname = \"report\"\nschedule = \"@yearly\"\nshell = \"true\"\n");
  http::HttpResponse made = coord_->Request(
      "POST", "/v1/tokens", json{{"role", "trigger"}, {"jobs", "backup-*"}, {"name", "ci"}}.dump());
  ASSERT_EQ(made.status, 201) << made.body;
  json token = json::parse(made.body);
  std::string secret = token["token"];
  EXPECT_EQ(token["role"], "trigger");
  EXPECT_EQ(token["jobs"], "backup-*");
  EXPECT_EQ(secret.rfind("jc_", 0), 0u);

  http::HttpResponse trig = coord_->Request("POST", "/v1/jobs/backup-db/trigger", "{}", secret);
  ASSERT_EQ(trig.status, 201) << trig.body;
  json run = json::parse(trig.body);
  EXPECT_EQ(run["job"], "backup-db");
  // It reads what it may trigger, and nothing else.
  http::HttpResponse jobs = coord_->Request("GET", "/v1/jobs", "", secret);
  ASSERT_EQ(jobs.status, 200);
  ASSERT_EQ(json::parse(jobs.body).size(), 1u) << jobs.body;
  EXPECT_EQ(json::parse(jobs.body)[0]["name"], "backup-db");
  EXPECT_EQ(coord_->Request("GET", "/v1/jobs/backup-db", "", secret).status, 200);
  EXPECT_EQ(coord_->Request("GET", Path("/v1/runs/", run), "", secret).status, 200);
  EXPECT_EQ(coord_->Request("GET", "/v1/runs?job=backup-db", "", secret).status, 200);
  json report_run = coord_->PostJson("/v1/jobs/report/trigger", json::object());
  for (const std::string& path :
       {std::string("/v1/jobs/report"), std::string("/v1/runs?job=report"), std::string("/v1/runs"),
        Path("/v1/runs/", report_run), Path("/v1/runs/", report_run, "/logs"),
        Path("/v1/runs/", report_run, "/wait"), std::string("/v1/misses?job=report"),
        std::string("/v1/jobfile")}) {
    http::HttpResponse r = coord_->Request("GET", path, "", secret);
    EXPECT_EQ(r.status, 403) << path << ": " << r.body;
  }

  http::HttpResponse other = coord_->Request("POST", "/v1/jobs/report/trigger", "{}", secret);
  EXPECT_EQ(other.status, 403) << other.body;
  EXPECT_EQ(json::parse(other.body)["error"], "forbidden");
  const std::vector<std::pair<std::string, std::string>> admin_routes = {
      {"POST", "/v1/jobs/backup-db/pause"},
      {"POST", "/v1/jobs/backup-db/resume"},
      {"POST", "/v1/jobfile"},
      {"POST", Path("/v1/runs/", run, "/cancel")},
      {"POST", Path("/v1/runs/", run, "/retry")},
      {"POST", "/v1/agents/x/drain"},
      {"GET", "/v1/tokens"},
      {"POST", "/v1/tokens"},
      {"DELETE", "/v1/tokens/1"},
      {"POST", "/v1/agent/claim"}};
  for (const auto& [method, path] : admin_routes) {
    EXPECT_EQ(coord_->Request(method, path, "{}", secret).status, 403) << method << " " << path;
  }
  EXPECT_EQ(coord_->Runs("backup-db").size(), 1u);
  EXPECT_EQ(coord_->Runs("report").size(), 1u);  // the admin's
  EXPECT_EQ(coord_->GetJson("/v1/jobs/backup-db")["paused"], false);

  http::HttpResponse list = coord_->Request("GET", "/v1/tokens");
  ASSERT_EQ(list.status, 200);
  EXPECT_EQ(list.body.find(secret), std::string::npos) << list.body;
  EXPECT_EQ(list.body.find(secret.substr(3)), std::string::npos) << list.body;
  bool listed = false;
  for (const json& t : json::parse(list.body)) {
    EXPECT_FALSE(t.contains("token")) << t.dump();
    if (t["id"] == token["id"]) {
      listed = true;
      EXPECT_EQ(t["name"], "ci");
      EXPECT_EQ(t["jobs"], "backup-*");
      EXPECT_EQ(t["revoked_at"], "");
    }
  }
  EXPECT_TRUE(listed) << list.body;

  http::HttpResponse revoked = coord_->Request("DELETE", Path("/v1/tokens/", token));
  ASSERT_EQ(revoked.status, 200) << revoked.body;
  EXPECT_EQ(json::parse(revoked.body)["revoked"], true);
  EXPECT_EQ(coord_->Request("POST", "/v1/jobs/backup-db/trigger", "{}", secret).status, 401);
  EXPECT_EQ(coord_->Request("GET", "/v1/jobs", "", secret).status, 401);
  EXPECT_EQ(coord_->Runs("backup-db").size(), 1u);
  EXPECT_EQ(coord_->Request("DELETE", Path("/v1/tokens/", token)).status, 404);
  for (const json& t : coord_->GetJson("/v1/tokens")) {
    if (t["id"] == token["id"]) {
      EXPECT_NE(t["revoked_at"], "") << t.dump();
    }
  }
}

// Read routes return no secret a reader need not have: a job's env values and shards'
// fencing tokens are for admins only; the job file itself is the admin's.
TEST_F(RunControlTest, ReadTokensSeeNeitherEnvValuesNorFencingTokens) {
  Start();
  coord_->Apply(
      "[[job]]\nname = \"db\"\nschedule = \"@yearly\"\nshell = \"true\"\n"
      "env = { DB_PASSWORD = \"s3cret\" }\n");
  http::HttpResponse made =
      coord_->Request("POST", "/v1/tokens", json{{"role", "read"}, {"name", "viewer"}}.dump());
  ASSERT_EQ(made.status, 201) << made.body;
  std::string reader = json::parse(made.body)["token"];
  json run = coord_->PostJson("/v1/jobs/db/trigger", json::object());
  TestAgent agent(*coord_, "a");
  ASSERT_EQ(agent.ClaimUpTo(1).size(), 1u);
  for (const std::string& path :
       {std::string("/v1/jobs/db"), std::string("/v1/runs?job=db"), Path("/v1/runs/", run),
        Path("/v1/runs/", run, "/wait?timeout_ms=0")}) {
    http::HttpResponse r = coord_->Request("GET", path, "", reader);
    ASSERT_EQ(r.status, 200) << path << ": " << r.body;
    EXPECT_EQ(r.body.find("s3cret"), std::string::npos) << path << ": " << r.body;
    int tokens = 0;
    std::function<void(const json&)> walk = [&](const json& j) {
      if (j.is_object() && j.contains("token") && !j["token"].is_null()) ++tokens;
      if (j.is_structured()) {
        for (const json& v : j) walk(v);
      }
    };
    walk(json::parse(r.body));
    EXPECT_EQ(tokens, 0) << path << ": " << r.body;
  }
  EXPECT_EQ(coord_->GetJson("/v1/jobs/db")["definition"]["env"]["DB_PASSWORD"], "s3cret");
  EXPECT_EQ(coord_->Request("GET", "/v1/jobfile", "", reader).status, 403);
}

// ---- log chunks ----

// A chunk sent again with the same seq (the agent did not see the answer) is acknowledged
// with "stored": false and kept once. After the shard's result nothing more is taken, a
// resend neither (agentd sends a result only once all its output was acknowledged).
TEST_F(RunControlTest, RepeatedLogSeqIsAcknowledgedAndStoredOnce) {
  Start();
  coord_->Apply("[[job]]\nname = \"j\"\nschedule = \"@yearly\"\nshell = \"true\"\n");
  json run = Trigger("j");
  TestAgent agent(*coord_, "a");
  std::vector<json> a = agent.ClaimUpTo(1);
  ASSERT_EQ(a.size(), 1u);
  auto send = [&](int64_t seq, const std::string& data) {
    http::HttpResponse r = agent.Log(a[0], seq, "stdout", data);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? json::parse(r.body) : json();
  };
  EXPECT_EQ(send(1, "hello\n")["stored"], true);
  json again = send(1, "hello\n");
  EXPECT_EQ(again["stored"], false);
  EXPECT_EQ(again["truncated"], false);
  EXPECT_EQ(send(2, "world\n")["stored"], true);
  ASSERT_EQ(agent.Finish(a[0], 0).status, 200);
  EXPECT_EQ(agent.Log(a[0], 2, "stdout", "world\n").status, 409);
  EXPECT_EQ(coord_->Output(run["id"], 0, "stdout"), "hello\nworld\n");
}

// Past log_cap (per run, over all shards) a chunk's bytes are not kept: it is answered
// "truncated", one marker saying so is stored the first time, and the bytes stored before
// the cap are intact, up to a chunk that fills the cap exactly.
TEST_F(RunControlTest, LogCapStoresOneTruncationMarkerAndKeepsTheBytesBeforeIt) {
  Start("log_cap = \"100B\"\n");
  coord_->Apply("[[job]]\nname = \"loud\"\nschedule = \"@yearly\"\nshell = \"true\"\nshards = 2\n");
  json run = Trigger("loud");
  TestAgent agent(*coord_, "a");
  std::vector<json> a = agent.ClaimUpTo(2);
  ASSERT_EQ(a.size(), 2u);
  const json& s0 = a[0]["shard"] == 0 ? a[0] : a[1];
  const json& s1 = a[0]["shard"] == 0 ? a[1] : a[0];
  auto send = [&](const json& lease, int64_t seq, const std::string& data) {
    http::HttpResponse r = agent.Log(lease, seq, "stdout", data);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? json::parse(r.body) : json();
  };
  std::string kept = std::string(60, 'a') + std::string(30, 'b');
  EXPECT_EQ(send(s0, 1, kept.substr(0, 60)), json({{"stored", true}, {"truncated", false}}));
  EXPECT_EQ(send(s1, 1, kept.substr(60)), json({{"stored", true}, {"truncated", false}}));
  EXPECT_EQ(send(s0, 2, std::string(10, 'c')), json({{"stored", true}, {"truncated", false}}));
  // 100 bytes now: the cap is reached, not passed. One byte more is over it, on any shard.
  json over = send(s1, 2, "d");
  EXPECT_EQ(over["truncated"], true);
  EXPECT_EQ(over["stored"], false);
  EXPECT_EQ(send(s0, 3, std::string(50, 'e'))["truncated"], true);
  EXPECT_EQ(send(s1, 3, "f")["truncated"], true);

  EXPECT_EQ(coord_->Output(run["id"], 0, "stdout"), std::string(60, 'a') + std::string(10, 'c'));
  EXPECT_EQ(coord_->Output(run["id"], 1, "stdout"), std::string(30, 'b'));
  std::string markers =
      coord_->Output(run["id"], 0, "marker") + coord_->Output(run["id"], 1, "marker");
  size_t first = markers.find("truncated");
  EXPECT_NE(first, std::string::npos) << markers;
  EXPECT_EQ(markers.find("truncated", first + 1), std::string::npos)
      << "more than one marker says so: " << markers;
  EXPECT_NE(markers.find("100"), std::string::npos) << "the marker names the cap: " << markers;
}

// A reader following the output (GET /v1/runs/{id}/logs with after and wait_ms, as
// `jobctl logs -f` does) that has everything gets, in the same request, a chunk appended while
// it waited; after the run ends it is told done.
TEST_F(RunControlTest, LogFollowerWaitingFromItsCursorGetsTheNextChunkWithoutPolling) {
  Start();
  coord_->Apply("[[job]]\nname = \"j\"\nschedule = \"@yearly\"\nshell = \"true\"\n");
  json run = Trigger("j");
  TestAgent agent(*coord_, "a");
  std::vector<json> a = agent.ClaimUpTo(1);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(agent.Log(a[0], 1, "stdout", "first\n").status, 200);
  json read = coord_->GetJson(Path("/v1/runs/", run, "/logs?after=0"));
  ASSERT_EQ(read["chunks"].size(), 1u) << read.dump();
  int64_t cursor = read["next"];

  auto follow_from = [&](int64_t after) {
    return Path("/v1/runs/", run, "/logs?after=" + std::to_string(after) + "&wait_ms=20000");
  };
  RawRequest follow(coord_->port(), "GET", follow_from(cursor), coord_->admin_token());
  // The coordinator serves one request at a time, in arrival order: once a request sent after
  // the follower's is answered, the follower's has been read and is waiting.
  EXPECT_EQ(coord_->Request("GET", "/healthz", "", "").status, 200);
  auto appended = std::chrono::steady_clock::now();
  ASSERT_EQ(agent.Log(a[0], 2, "stderr", "second\n").status, 200);
  auto [status, body] = follow.Read(seconds(15));
  auto answered = std::chrono::steady_clock::now();
  ASSERT_EQ(status, 200) << body;
  json got = json::parse(body);
  ASSERT_EQ(got["chunks"].size(), 1u) << body;
  EXPECT_EQ(got["chunks"][0]["seq"], 2);
  EXPECT_EQ(got["chunks"][0]["stream"], "stderr");
  EXPECT_EQ(Base64Decode(got["chunks"][0]["data"].get<std::string>()), "second\n");
  EXPECT_GT(got["next"].get<int64_t>(), cursor);
  EXPECT_EQ(got["done"], false);
  EXPECT_LT(answered - appended, seconds(5)) << "woken by the chunk, not by its wait_ms";

  // The run ends while the follower waits again: it is answered done.
  RawRequest tail(coord_->port(), "GET", follow_from(got["next"].get<int64_t>()),
                  coord_->admin_token());
  EXPECT_EQ(coord_->Request("GET", "/healthz", "", "").status, 200);
  ASSERT_EQ(agent.Finish(a[0], 0).status, 200);
  auto [tail_status, tail_body] = tail.Read(seconds(15));
  ASSERT_EQ(tail_status, 200) << tail_body;
  json last = json::parse(tail_body);
  EXPECT_TRUE(last["chunks"].empty()) << tail_body;
  EXPECT_EQ(last["done"], true) << tail_body;
}

// ---- on_lost = "fail" ----

// A shard whose holder stops heartbeating loses its lease; with on_lost = "fail" the run ends
// lost (not handed to another agent, not retried, although the job allows retries); the old
// holder's heartbeat is told its lease is stale and its late result changes nothing.
TEST_F(RunControlTest, OnLostFailEndsTheRunLostInsteadOfRerunningIt) {
  Start("lease_ttl = \"2s\"\nheartbeat = \"1s\"\n");
  coord_->Apply(
      "[[job]]\nname = \"once-only\"\nschedule = \"@yearly\"\nshell = \"true\"\n"
      "on_lost = \"fail\"\n"
      "retry = { max = 2, initial = \"100ms\", max_delay = \"100ms\" }\n");
  json run = Trigger("once-only");
  TestAgent dead(*coord_, "dead"), alive(*coord_, "alive");
  std::vector<json> a = dead.ClaimUpTo(1);
  ASSERT_EQ(a.size(), 1u);
  auto claimed = std::chrono::steady_clock::now();
  // The other agent waits for work until the run ends; a re-run would be handed to it.
  std::vector<json> b;
  while (b.empty() && std::chrono::steady_clock::now() - claimed < seconds(8) &&
         coord_->GetJson(Path("/v1/runs/", run))["finished_at"] == "") {
    b = alive.Claim(1, 500);
  }
  EXPECT_TRUE(b.empty()) << "re-run: " << b[0].dump();
  json end = coord_->WaitRun(run["id"], seconds(5));
  ASSERT_EQ(end["state"], "lost") << end.dump();
  ASSERT_EQ(end["shards"].size(), 1u);
  EXPECT_EQ(end["shards"][0]["state"], "lost");
  EXPECT_EQ(end["shards"][0]["attempt"], 1);
  EXPECT_EQ(end["shards"][0]["agent"], "dead");
  EXPECT_EQ(end["shards"][0]["outcome"], "lease_lost");
  // Ended by the lease's expiry, within TTL + heartbeat + 1 s of the grant.
  EXPECT_LE(UnixMs(end["finished_at"]) - UnixMs(end["shards"][0]["started_at"]),
            2000 + 1000 + 1000);
  EXPECT_GE(UnixMs(end["finished_at"]) - UnixMs(end["shards"][0]["started_at"]), 2000);
  // The old holder comes back: its heartbeat is told the lease is stale, and its late report
  // of success is refused as stale and changes nothing.
  json hb = json::parse(dead.Heartbeat(a).body);
  ASSERT_EQ(hb["revoked"].size(), 1u) << hb.dump();
  EXPECT_EQ(hb["revoked"][0]["reason"], "stale");
  http::HttpResponse late = dead.Finish(a[0], 0);
  EXPECT_EQ(late.status, 409) << late.body;
  json after = coord_->GetJson(Path("/v1/runs/", run));
  EXPECT_EQ(after["state"], "lost") << after.dump();
  EXPECT_EQ(after["shards"][0]["outcome"], "lease_lost") << after.dump();
  EXPECT_EQ(after["shards"][0]["exit_code"], nullptr) << after.dump();
  EXPECT_TRUE(alive.Claim(1, 0).empty());
}

// ---- timeout backstop ----

// A holder that keeps renewing its lease but never reports a result: the coordinator ends
// the shard as timed out once timeout + kill_grace + timeout_grace have passed since the
// grant, and the holder's next heartbeat is told the lease is over (so it stops the process).
TEST_F(RunControlTest, TimeoutBackstopEndsAShardWhoseHolderRenewsButNeverReports) {
  Start("lease_ttl = \"2s\"\nheartbeat = \"1s\"\ntimeout_grace = \"1s\"\n");
  coord_->Apply(
      "[[job]]\nname = \"hung\"\nschedule = \"@yearly\"\nshell = \"sleep 600\"\n"
      "timeout = \"1s\"\nkill_grace = \"500ms\"\n");
  json run = Trigger("hung");
  TestAgent agent(*coord_, "a");
  std::vector<json> a = agent.ClaimUpTo(1);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0]["timeout_ms"], 1000);
  // Heartbeat every 500 ms, as an agent whose process hangs does, until one renews nothing.
  json last_hb;
  int renewals = 0;
  auto deadline = std::chrono::steady_clock::now() + seconds(8);
  while (std::chrono::steady_clock::now() < deadline) {
    last_hb = json::parse(agent.Heartbeat(a).body);
    if (last_hb["renewed"].size() != 1) break;
    ++renewals;
    std::this_thread::sleep_for(milliseconds(500));  // the heartbeat interval
  }
  ASSERT_EQ(last_hb["revoked"].size(), 1u) << last_hb.dump();
  EXPECT_EQ(last_hb["revoked"][0]["reason"], "finished") << last_hb.dump();
  // Renewed at least at 0, 0.5 and 1 s: still renewed once the job's timeout had passed.
  EXPECT_GE(renewals, 3) << "the lease was not renewed all along";

  json end = coord_->WaitRun(run["id"], seconds(5));
  ASSERT_EQ(end["state"], "timed_out") << end.dump();
  const json& shard = end["shards"][0];
  EXPECT_EQ(shard["state"], "timed_out");
  EXPECT_EQ(shard["outcome"], "timeout");
  EXPECT_NE(shard["message"].get<std::string>().find("backstop"), std::string::npos) << end.dump();
  int64_t ran = UnixMs(shard["finished_at"]) - UnixMs(shard["started_at"]);
  EXPECT_GE(ran, 1000 + 500 + 1000) << end.dump();
  EXPECT_LT(ran, 1000 + 500 + 1000 + 1500) << end.dump();
  EXPECT_EQ(coord_->Metric("jobctl_leases_expired_total"), 0) << "the lease never lapsed";
}

// ---- apply --dry-run ----

// A dry-run apply (what `jobctl diff` sends) reports created, changed (with the fields),
// removed and unchanged jobs, and changes nothing: same revision and text, same jobs.
TEST_F(RunControlTest, DryRunApplyReportsTheDiffAndChangesNothing) {
  Start();
  const std::string current =
      "[[job]]\nname = \"same\"\nschedule = \"@daily\"\nshell = \"true\"\n"
      "[[job]]\nname = \"edited\"\nschedule = \"@daily\"\nshell = \"echo old\"\n"
      "[[job]]\nname = \"dropped\"\nschedule = \"@daily\"\nshell = \"true\"\n";
  json applied = coord_->Apply(current);
  int64_t revision = applied["revision"];
  ASSERT_GT(revision, 0);
  json jobs_before = coord_->GetJson("/v1/jobs");
  const std::string proposed =
      "[[job]]\nname = \"same\"\nschedule = \"@daily\"\nshell = \"true\"\n"
      "[[job]]\nname = \"edited\"\nschedule = \"@hourly\"\nshell = \"echo new\"\n"
      "[[job]]\nname = \"added\"\nschedule = \"@daily\"\nshell = \"true\"\n";
  json diff = coord_->PostJson(
      "/v1/jobfile", {{"text", proposed}, {"base_revision", revision}, {"dry_run", true}});
  EXPECT_EQ(diff["dry_run"], true);
  EXPECT_EQ(diff["revision"], revision);
  EXPECT_EQ(diff["created"], json({"added"}));
  EXPECT_EQ(diff["removed"], json({"dropped"}));
  EXPECT_EQ(diff["unchanged"], json({"same"}));
  ASSERT_EQ(diff["changed"].size(), 1u) << diff.dump();
  EXPECT_EQ(diff["changed"][0]["name"], "edited");
  std::vector<std::string> fields = diff["changed"][0]["fields"];
  std::sort(fields.begin(), fields.end());
  EXPECT_EQ(fields, (std::vector<std::string>{"schedule", "shell"})) << diff.dump();

  json file = coord_->GetJson("/v1/jobfile");
  EXPECT_EQ(file["revision"], revision);
  EXPECT_EQ(file["text"], current);
  EXPECT_EQ(coord_->GetJson("/v1/jobs"), jobs_before);
  EXPECT_EQ(coord_->Request("GET", "/v1/jobs/added").status, 404);
  json edited = coord_->GetJson("/v1/jobs/edited");
  EXPECT_EQ(edited["definition"]["shell"], "echo old");
  EXPECT_EQ(edited["definition"]["schedule"], "@daily");
  // The dry run did not move the base revision: the real apply from it still goes through.
  json real = coord_->PostJson("/v1/jobfile", {{"text", proposed}, {"base_revision", revision}});
  EXPECT_EQ(real["revision"], revision + 1);
  EXPECT_EQ(real["created"], json({"added"}));
}

}  // namespace
}  // namespace jobctl::testing
