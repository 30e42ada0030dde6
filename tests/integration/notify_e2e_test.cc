// Notifications end to end: the real coordinator, with [notify.NAME] channels in its
// coordinator.toml, delivers to a real SMTP server (aiosmtpd) and a real HTTP receiver on
// loopback. The agent speaks the protocol by hand (TestAgent), so that which run fails and
// what it printed is decided by the test. Every wait polls against a deadline.
#include <gtest/gtest.h>
#include <openssl/hmac.h>
#include <sys/stat.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "store/store.h"
#include "testlib/coordinator_fixture.h"
#include "testlib/notify_sinks.h"
#include "testlib/postgres.h"
#include "testlib/subprocess.h"

namespace jobctl::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

constexpr const char* kSecret = "webhook-key-for-tests";

std::string Hex(const unsigned char* p, size_t n) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out += kDigits[p[i] >> 4];
    out += kDigits[p[i] & 15];
  }
  return out;
}

// What a receiver computes to check X-Jobctl-Signature.
std::string ExpectedSignature(const std::string& timestamp, const std::string& body) {
  std::string signed_text = timestamp + "." + body;
  unsigned char mac[32];
  unsigned int len = 0;
  HMAC(EVP_sha256(), kSecret, static_cast<int>(std::string(kSecret).size()),
       reinterpret_cast<const unsigned char*>(signed_text.data()), signed_text.size(), mac, &len);
  return "v1=" + Hex(mac, len);
}

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Subject(const std::string& data) {
  size_t at = data.find("\r\nSubject: ");
  if (at == std::string::npos) return "";
  at += 11;
  return data.substr(at, data.find("\r\n", at) - at);
}

class NotifyTest : public CoordinatorFixture {
 protected:
  // Starts the sinks and the coordinator with a mail channel, a webhook channel and
  // mailto_channel; `extra` is appended to coordinator.toml.
  void StartAll(const HttpSink::Options& http = {}, const std::string& extra = "") {
    Result<std::unique_ptr<SmtpSink>> smtp = SmtpSink::Start({});
    if (!smtp.ok()) {
      if (smtp.status().code() != Status::Code::kNotFound || RunningInCi()) {
        FAIL() << smtp.status().ToString();
      }
      GTEST_SKIP() << "no SMTP server for the test: " << smtp.status().message();
    }
    smtp_ = std::move(*smtp);
    Result<std::unique_ptr<HttpSink>> hook = HttpSink::Start(http);
    ASSERT_TRUE(hook.ok()) << hook.status().ToString();
    hook_ = std::move(*hook);
    std::string key = dir_.path() + "/webhook-key";
    { std::ofstream(key) << kSecret << "\n"; }
    chmod(key.c_str(), 0600);
    Start(
        "mailto_channel = \"mail\"\n"
        "public_url = \"https://ctl.example.com:7070\"\n" +
        extra + "\n[notify.mail]\ntype = \"email\"\nurl = \"" + smtp_->url() +
        "\"\nfrom = \"jobctl@example.com\"\nto = [\"ops@example.com\"]\nstarttls = \"no\"\n"
        "\n[notify.hook]\ntype = \"webhook\"\nurl = \"" +
        hook_->url("/hook") + "\"\nsecret_file = \"" + key + "\"\n");
  }
  ProcessResult Jobctl(std::vector<std::string> args) {
    args.insert(args.begin(), JOBCTL_BIN);
    RunOptions o;
    o.env = {{"JOBCTL_COORDINATOR", coord_->url()},
             {"JOBCTL_TOKEN", coord_->admin_token()},
             {"HOME", dir_.path()},
             {"NO_COLOR", "1"}};
    o.cwd = dir_.path();
    o.timeout = seconds(60);
    return jobctl::testing::Run(args, o);
  }
  // Triggers `job`, claims it as `agent`, logs `output` and finishes it with `exit_code`.
  int64_t RunToEnd(TestAgent& agent, const std::string& job, const std::string& output,
                   int exit_code) {
    int64_t id = coord_->PostJson("/v1/jobs/" + job + "/trigger", json::object())["id"];
    std::vector<json> a = agent.Claim(1, 5000);
    EXPECT_EQ(a.size(), 1u);
    if (a.empty()) return id;
    if (!output.empty()) {
      EXPECT_EQ(agent.Log(a[0], 1, "stdout", output).status, 200);
    }
    EXPECT_EQ(agent.Finish(a[0], exit_code).status, 200);
    coord_->WaitRun(id, seconds(10));
    return id;
  }
  json Notifications(const std::string& query = "") {
    return coord_->GetJson("/v1/notifications" + query)["items"];
  }
  void TearDown() override {
    CoordinatorFixture::TearDown();
    if (HasFailure() && smtp_) std::cerr << "---- smtp sink ----\n" << smtp_->Log();
  }
  std::unique_ptr<SmtpSink> smtp_;
  std::unique_ptr<HttpSink> hook_;
};

// A job that fails twice and then succeeds sends one failure mail and one signed webhook, no
// second ones within repeat_after, then "recovered" through both; each names the job, the
// host, the exit and the output's last lines.
TEST_F(NotifyTest, AFailureNotifiesOnceWithItsOutputAndTheRecoveryToo) {
  StartAll();
  if (IsSkipped()) return;
  coord_->Apply(
      "[[job]]\nname = \"backup\"\nschedule = \"@yearly\"\nshell = \"true\"\n"
      "overlap = \"allow\"\nnotify = [\"mail\", \"hook\"]\n");
  TestAgent agent(*coord_, "db-03");
  int64_t first = RunToEnd(agent, "backup", "dumping...\npg_dump: error: connection refused\n", 2);
  ASSERT_TRUE(smtp_->WaitForMail(1, seconds(20)));
  ASSERT_TRUE(hook_->WaitForRequests(1, seconds(20)));
  RunToEnd(agent, "backup", "again\n", 2);

  std::vector<ReceivedMail> mail = smtp_->Received();
  ASSERT_EQ(mail.size(), 1u);
  EXPECT_EQ(mail[0].rcpt_tos, std::vector<std::string>{"ops@example.com"});
  EXPECT_EQ(Subject(mail[0].data), "jobctl: backup failed on db-03 (exit 2)");
  EXPECT_NE(mail[0].data.find("pg_dump: error: connection refused"), std::string::npos);
  EXPECT_NE(mail[0].data.find("jobctl logs " + std::to_string(first)), std::string::npos);

  ReceivedRequest req = hook_->Received()[0];
  EXPECT_EQ(req.headers["x-jobctl-signature"],
            ExpectedSignature(req.headers["x-jobctl-timestamp"], req.body));
  json body = json::parse(req.body);
  EXPECT_EQ(body["event"], "failed");
  EXPECT_EQ(body["job"], "backup");
  EXPECT_EQ(body["run_id"], first);
  EXPECT_EQ(body["state"], "failed");
  EXPECT_EQ(body["shards"][0]["host"], "db-03");
  EXPECT_EQ(body["shards"][0]["exit_code"], 2);
  EXPECT_NE(body["shards"][0]["output_tail"].get<std::string>().find("connection refused"),
            std::string::npos);
  EXPECT_EQ(body["delivery_id"], req.headers["x-jobctl-delivery"]);

  RunToEnd(agent, "backup", "", 0);
  ASSERT_TRUE(smtp_->WaitForMail(2, seconds(20)));
  ASSERT_TRUE(hook_->WaitForRequests(2, seconds(20)));
  EXPECT_EQ(Subject(smtp_->Received()[1].data), "jobctl: backup recovered after 2 failures");
  EXPECT_EQ(json::parse(hook_->Received()[1].body)["event"], "recovered");
  // Two failures and a recovery: two notifications per target, the second failure quiet.
  ASSERT_TRUE(Coordinator::Eventually([&] { return Notifications("?state=sent").size() == 4; },
                                      seconds(10)));
  EXPECT_EQ(smtp_->Received().size(), 2u);
  EXPECT_EQ(hook_->Received().size(), 2u);
  EXPECT_EQ(coord_->Metric("jobctl_notifications_queued_total"), 4);
  EXPECT_EQ(coord_->Metric("jobctl_notifications_sent_total{channel=\"mail\"}"), 2);
  EXPECT_EQ(coord_->Metric("jobctl_notifications_sent_total{channel=\"hook\"}"), 2);
}

// A flow notifies once per flow run, as its own notify keys say, naming the step that failed;
// its steps' own jobs notify nobody unless they say so.
TEST_F(NotifyTest, AFailedFlowRunNotifiesOnceNamingItsFailedStep) {
  StartAll();
  if (IsSkipped()) return;
  coord_->Apply(
      "[[flow]]\nname = \"nightly\"\nschedule = \"@yearly\"\nnotify = [\"hook\"]\n"
      "  [[flow.step]]\n  name = \"extract\"\n  shell = \"true\"\n"
      "  [[flow.step]]\n  name = \"load\"\n  needs = [\"extract\"]\n  shell = \"false\"\n");
  TestAgent agent(*coord_, "db-03");
  int64_t flow_run = coord_->PostJson("/v1/jobs/nightly/trigger", json::object())["id"];
  std::vector<json> a = agent.ClaimUpTo(1, 5000);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(agent.Finish(a[0], 0).status, 200);
  a = agent.ClaimUpTo(1, 5000);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(agent.Finish(a[0], 1).status, 200);
  EXPECT_EQ(coord_->WaitRun(flow_run, seconds(10))["state"], "failed");
  ASSERT_TRUE(hook_->WaitForRequests(1, seconds(20)));
  ASSERT_TRUE(Coordinator::Eventually([&] { return Notifications("?state=sent").size() == 1; },
                                      seconds(10)));
  // The outbox holds that one row: the steps queued none (a second would be pending or sent).
  EXPECT_EQ(Notifications().size(), 1u) << Notifications().dump();
  std::vector<ReceivedRequest> got = hook_->Received();
  ASSERT_EQ(got.size(), 1u);
  json body = json::parse(got[0].body);
  EXPECT_EQ(body["event"], "failed");
  EXPECT_EQ(body["job"], "nightly");
  EXPECT_EQ(body["run_id"], flow_run);
  EXPECT_EQ(body["detail"], "load failed");
  EXPECT_EQ(smtp_->Received().size(), 0u);
}

// The receiver fails the first attempt; the coordinator is killed (SIGKILL) with the row
// still pending; after the restart it is delivered, and `jobctl notifications` shows the
// failed attempt's error while it waits and the delivery once done.
TEST_F(NotifyTest, ANotificationSurvivesAKilledCoordinatorAndIsRetriedUntilTaken) {
  StartAll({.fail_first = 1, .fail_status = 503, .fail_body = "receiver busy"});
  if (IsSkipped()) return;
  coord_->Apply(
      "[[job]]\nname = \"etl\"\nschedule = \"@yearly\"\nshell = \"true\"\n"
      "notify = [\"hook\"]\n");
  TestAgent agent(*coord_, "web-1");
  RunToEnd(agent, "etl", "boom\n", 1);
  ASSERT_TRUE(hook_->WaitForRequests(1, seconds(20)));
  ASSERT_TRUE(Coordinator::Eventually(
      [&] {
        json n = Notifications();
        return n.size() == 1 && n[0]["attempts"] == 1;
      },
      seconds(10)));
  ProcessResult listed = Jobctl({"notifications", "--job", "etl"});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("pending, next"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("HTTP 503: receiver busy"), std::string::npos) << listed.out;

  EXPECT_EQ(coord_->Metric("jobctl_notification_failures_total{channel=\"hook\"}"), 1);
  EXPECT_EQ(coord_->Metric("jobctl_notifications_sent_total{channel=\"hook\"}"), -1);
  coord_->Kill9();
  coord_->Start();
  // The retry comes 10 s after the first attempt.
  ASSERT_TRUE(hook_->WaitForRequests(2, seconds(30)));
  ASSERT_TRUE(Coordinator::Eventually([&] { return Notifications("?state=sent").size() == 1; },
                                      seconds(10)));
  std::vector<ReceivedRequest> got = hook_->Received();
  EXPECT_EQ(got[0].headers["x-jobctl-delivery"], got[1].headers["x-jobctl-delivery"]);
  ProcessResult json_out = Jobctl({"notifications", "-o", "json"});
  ASSERT_EQ(json_out.exit_code, 0) << json_out.err;
  json items = json::parse(json_out.out);
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0]["state"], "sent");
  EXPECT_EQ(items[0]["attempts"], 2);
  EXPECT_EQ(items[0]["target"], "hook");
}

// mailto: targets go through mailto_channel to that address; `jobctl notify test` sends
// through a channel now and says when it could not.
TEST_F(NotifyTest, MailtoTargetsAndTheTestCommandUseTheConfiguredChannels) {
  StartAll();
  if (IsSkipped()) return;
  coord_->Apply(
      "[defaults]\nnotify = [\"mailto:dba@example.com\"]\nnotify_on = [\"timed_out\"]\n"
      "[[job]]\nname = \"vacuum\"\nschedule = \"@yearly\"\nshell = \"true\"\n");
  TestAgent agent(*coord_, "db-01");
  RunToEnd(agent, "vacuum", "", 1);  // failed: not asked
  int64_t id = coord_->PostJson("/v1/jobs/vacuum/trigger", json::object())["id"];
  std::vector<json> a = agent.Claim(1, 5000);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(agent.Finish(a[0], -1, "timeout").status, 200);
  coord_->WaitRun(id, seconds(10));
  ASSERT_TRUE(smtp_->WaitForMail(1, seconds(20)));
  EXPECT_EQ(smtp_->Received()[0].rcpt_tos, std::vector<std::string>{"dba@example.com"});
  EXPECT_NE(Subject(smtp_->Received()[0].data).find("jobctl: vacuum timed out"), std::string::npos);

  ProcessResult ok = Jobctl({"notify", "test", "mail"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("delivered through channel mail"), std::string::npos);
  ASSERT_TRUE(smtp_->WaitForMail(2, seconds(20)));
  EXPECT_EQ(Subject(smtp_->Received()[1].data), "jobctl: test notification from channel mail");
  ProcessResult missing = Jobctl({"notify", "test", "pager"});
  EXPECT_EQ(missing.exit_code, 65);
  EXPECT_NE(missing.err.find("no channel \"pager\""), std::string::npos) << missing.err;
  smtp_.reset();  // the server is gone: the test says why
  ProcessResult down = Jobctl({"notify", "test", "mail"});
  EXPECT_EQ(down.exit_code, 1);
  EXPECT_NE(down.err.find("notify channel \"mail\""), std::string::npos) << down.err;
}

// A job whose last success is older than expect_success_within notifies "overdue" once
// (the check runs every 10 s) and not again within repeat_after; a success ends it.
TEST_F(NotifyTest, AJobWithoutARecentSuccessNotifiesOverdueOnceAndASuccessEndsIt) {
  StartAll();
  if (IsSkipped()) return;
  coord_->Apply(
      "[[job]]\nname = \"backup\"\nschedule = \"@yearly\"\nshell = \"true\"\n"
      "overlap = \"allow\"\nexpect_success_within = \"1m\"\nnotify = [\"hook\"]\n");
  TestAgent agent(*coord_, "db-03");
  int64_t run = RunToEnd(agent, "backup", "", 0);
  coord_->Stop();
  int64_t ten_minutes_ago = NowUnixMs() - 600'000;
  {
    Result<std::unique_ptr<store::Store>> st =
        store::OpenStore({.path = coord_->data_dir() + "/jobctl.db"});
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    ASSERT_TRUE((*st)->Begin().ok());
    ASSERT_TRUE((*st)->UpdateRunState(run, RunState::kSucceeded, ten_minutes_ago, "").ok());
    ASSERT_TRUE((*st)->Commit().ok());
  }
  coord_->Start();
  ASSERT_TRUE(hook_->WaitForRequests(1, seconds(30)));
  json body = json::parse(hook_->Received()[0].body);
  EXPECT_EQ(body["event"], "overdue");
  EXPECT_EQ(body["job"], "backup");
  EXPECT_NE(body["detail"].get<std::string>().find("expect_success_within 1m"), std::string::npos)
      << body.dump();
  // Within repeat_after (1 h) the next checks stay quiet; a success ends the alert, and a
  // success is not a "recovered" (no failure was notified).
  ASSERT_TRUE(Coordinator::Eventually(
      [&] { return coord_->Logs().find("notification sent") != std::string::npos; }, seconds(10)));
  RunToEnd(agent, "backup", "", 0);
  json items = Notifications();
  ASSERT_EQ(items.size(), 1u) << items.dump();
  EXPECT_EQ(items[0]["event"], "overdue");
  EXPECT_EQ(hook_->Received().size(), 1u);
}

// Delivered notifications are deleted with the runs (runs_for); a pending one is kept. (The
// store's newest run is never deleted: a second run stays.)
TEST_F(NotifyTest, DeliveredNotificationsArePrunedWithTheRuns) {
  StartAll({}, "runs_for = \"1s\"\nkeep_last = 0\nprune_every = \"100ms\"\n");
  if (IsSkipped()) return;
  coord_->Apply(
      "[[job]]\nname = \"etl\"\nschedule = \"@yearly\"\nshell = \"true\"\n"
      "notify = [\"hook\"]\n");
  TestAgent agent(*coord_, "web-1");
  RunToEnd(agent, "etl", "boom\n", 1);
  ASSERT_TRUE(hook_->WaitForRequests(1, seconds(20)));
  // The store's newest run is never deleted: a second run follows, and the first goes.
  int64_t last = RunToEnd(agent, "etl", "", 0);
  ASSERT_TRUE(Coordinator::Eventually(
      [&] {
        json runs = coord_->Runs("etl");
        return Notifications().empty() && runs.size() == 1 && runs[0]["id"].get<int64_t>() == last;
      },
      seconds(20)))
      << Notifications().dump() << coord_->Runs("etl").dump();
}

// A job file naming a channel the coordinator lacks is refused at apply, at the line.
TEST_F(NotifyTest, AnUnknownChannelIsRefusedAtApplyWithTheLine) {
  StartAll();
  if (IsSkipped()) return;
  http::HttpResponse r =
      coord_->Request("POST", "/v1/jobfile",
                      json{{"filename", "jobs.toml"},
                           {"text",
                            "[[job]]\nname = \"a\"\nschedule = \"@daily\"\nshell = \"true\"\n"
                            "notify = [\"hook\", \"pager\"]\n"}}
                          .dump());
  EXPECT_EQ(r.status, 400) << r.body;
  json body = json::parse(r.body);
  ASSERT_EQ(body["errors"].size(), 1u) << r.body;
  EXPECT_EQ(body["errors"][0]["text"],
            "jobs.toml:5:19: job \"a\": notify: no channel \"pager\" in the coordinator's "
            "coordinator.toml (it has hook, mail)");
}

// Deliveries while the coordinator is killed again and again: every notification the
// store committed reaches the receiver at least once (by delivery id), and none is left
// pending.
TEST_F(NotifyTest, EveryCommittedNotificationIsDeliveredThoughTheCoordinatorIsKilled) {
  StartAll();
  if (IsSkipped()) return;
  std::string file;
  for (int i = 0; i < 20; ++i) {
    file += "[[job]]\nname = \"j" + std::to_string(i) +
            "\"\nschedule = \"@yearly\"\nshell = \"true\"\nnotify = [\"hook\"]\n"
            "repeat_after = \"0s\"\n";
  }
  coord_->Apply(file);
  TestAgent agent(*coord_, "w1");
  for (int round = 0; round < 4; ++round) {
    for (int i = 0; i < 20; ++i) {
      coord_->PostJson("/v1/jobs/j" + std::to_string(i) + "/trigger", json::object());
    }
    std::vector<json> a = agent.ClaimUpTo(20);
    ASSERT_EQ(a.size(), 20u);
    std::vector<json> results;
    for (const json& x : a) results.push_back(agent.ResultBody(x, 3));
    ASSERT_EQ(agent.FinishAll(results).status, 200);
    // Kill it while it delivers: as soon as the first of this round arrives.
    size_t before = hook_->Received().size();
    ASSERT_TRUE(hook_->WaitForRequests(before + 1, seconds(20)));
    coord_->Kill9();
    coord_->Start();
  }
  ASSERT_TRUE(Coordinator::Eventually([&] { return Notifications("?state=pending").empty(); },
                                      seconds(60)));
  json all = Notifications("?limit=1000");
  ASSERT_EQ(all.size(), 80u);
  std::set<std::string> received;
  for (const ReceivedRequest& r : hook_->Received())
    received.insert(r.headers.at("x-jobctl-delivery"));
  for (const json& n : all) {
    EXPECT_EQ(n["state"], "sent");
    std::string id = "jobctl-" + std::to_string(n["id"].get<int64_t>()) + "-";
    auto it = received.lower_bound(id);
    EXPECT_TRUE(it != received.end() && it->rfind(id, 0) == 0) << "never delivered: " << n.dump();
  }
}

// A channel whose secret file cannot be read is a configuration error: serve stops at once
// with status 78, naming the channel and the file.
TEST(NotifyConfigTest, AChannelWhoseSecretFileCannotBeReadStopsServeWithStatus78) {
  TempDir dir;
  std::string missing = dir.path() + "/missing-key";
  std::string config = dir.Write("coordinator.toml",
                                 "listen = \"127.0.0.1:0\"\n[notify.hook]\ntype = \"webhook\"\n"
                                 "url = \"http://127.0.0.1:9/x\"\nsecret_file = \"" +
                                     missing + "\"\n");
  RunOptions o;
  o.timeout = seconds(60);
  ProcessResult r = jobctl::testing::Run(
      {JOBCTL_BIN, "serve", "--config", config, "--data", dir.path() + "/data"}, o);
  EXPECT_EQ(r.exit_code, 78) << r.err;
  EXPECT_NE(r.err.find("notify channel \"hook\": cannot read secret_file " + missing),
            std::string::npos)
      << r.err;
}

// A channel's secret file that others may read is still used, and the coordinator says so at
// start, naming the channel, the file, its mode and the command that fixes it.
TEST(NotifyConfigTest, ASecretFileOpenToOthersIsUsedAndWarnedAbout) {
  TempDir dir;
  std::string key = dir.path() + "/webhook-key";
  { std::ofstream(key) << "k\n"; }
  ASSERT_EQ(chmod(key.c_str(), 0644), 0);
  Coordinator coord(dir,
                    "[notify.hook]\ntype = \"webhook\"\nurl = \"http://127.0.0.1:9/x\"\n"
                    "secret_file = \"" +
                        key + "\"\n");
  coord.Start();
  coord.Stop();
  std::string log = coord.Logs();
  EXPECT_NE(log.find("secret_file " + key + " is accessible to group and others (mode 0644); " +
                     "make it private: chmod 600 " + key),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("channel=hook"), std::string::npos) << log;
}

}  // namespace
}  // namespace jobctl::testing
