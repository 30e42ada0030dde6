// Agent identity over HTTP against the real `jobctl serve`: an agent is whoever its credential
// says, never what a request body says. The join token only enrols; each enrolled agent gets
// a credential of its own; only a lease's holder renews it, reports its result or appends its
// output, and only while the lease lives; refusals never tell a fencing token; tokens expire,
// are revoked (closing a claim parked with them) and go with `agents rm`.
#include <gtest/gtest.h>

#include <future>
#include <regex>

#include "testlib/cluster.h"
#include "testlib/coordinator_fixture.h"

namespace jobctl::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

class IdentityTest : public CoordinatorFixture {
 protected:
  json Trigger(const std::string& job) {
    return coord_->PostJson("/v1/jobs/" + job + "/trigger", json::object());
  }
  json GetRun(int64_t id) { return coord_->GetJson("/v1/runs/" + std::to_string(id)); }
  // An agent token bound to `agent`, created by the admin; {} when refused.
  json CreateToken(const json& body) {
    http::HttpResponse r = coord_->Request("POST", "/v1/tokens", body.dump());
    EXPECT_EQ(r.status, 201) << r.body;
    return r.status == 201 ? json::parse(r.body) : json::object();
  }
  static json Body(const http::HttpResponse& r) { return json::parse(r.body, nullptr, false); }
  // Whether `text` holds `number` as a number of its own (not as part of a longer one).
  static bool MentionsNumber(const std::string& text, int64_t number) {
    return std::regex_search(text,
                             std::regex("(^|[^0-9])" + std::to_string(number) + "([^0-9]|$)"));
  }
};

TEST_F(IdentityTest, PosingAsAnotherAgentByNameOrLabelsGetsNoneOfItsWork) {
  Start();
  // db-1 is the only db host; a broadcast job belongs to it alone.
  TestAgent db(*coord_, "db-1", {{"role", "db"}});
  ASSERT_TRUE(db.Claim(1, 0).empty());
  coord_->Apply(
      "[[job]]\nname = \"dump\"\nschedule = \"@yearly\"\non = [\"role=db\"]\n"
      "route = \"broadcast\"\nshell = \"true\"\nenv = { SECRET = \"s3cr3t\" }\n");
  int64_t id = Trigger("dump")["id"];
  // An agent with a credential of its own names db-1 in the body: refused, it is not db-1.
  TestAgent evil(*coord_, "evil", {{"role", "db"}});
  TestAgent posing(*coord_, "db-1", {{"role", "db"}}, evil.token());
  http::HttpResponse r = posing.ClaimRaw(1, 0);
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_NE(Body(r)["message"].get<std::string>().find("this credential is agent \"evil\""),
            std::string::npos)
      << r.body;
  EXPECT_EQ(r.body.find("s3cr3t"), std::string::npos);
  // As itself with db-1's labels it gets nothing of db-1's shard.
  EXPECT_TRUE(evil.Claim(1, 500).empty());
  // The join token cannot claim at all.
  TestAgent joiner(*coord_, "db-1", {{"role", "db"}}, coord_->agent_token());
  EXPECT_EQ(joiner.ClaimRaw(1, 0).status, 403);
  // db-1 itself gets its shard.
  std::vector<json> mine = db.Claim(1, 5000);
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_EQ(mine[0]["run"], id);
  EXPECT_EQ(mine[0]["env"]["SECRET"], "s3cr3t");
  EXPECT_EQ(db.Finish(mine[0], 0).status, 200);
}

TEST_F(IdentityTest, AnAgentTokenLimitedToSomeLabelsCannotClaimWithOthers) {
  Start();
  json web = CreateToken({{"role", "agent"}, {"agent", "web-1"}, {"labels", {{"role", "web*"}}}});
  TestAgent ok(*coord_, "web-1", {{"role", "web-eu"}}, web["token"]);
  EXPECT_EQ(ok.ClaimRaw(1, 0).status, 200);
  TestAgent bad(*coord_, "web-1", {{"role", "db"}}, web["token"]);
  http::HttpResponse r = bad.ClaimRaw(1, 0);
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_NE(r.body.find("role=db"), std::string::npos) << r.body;
  // A join token limited to some labels enrols only agents with those labels, and passes its
  // limit on to them.
  json join = CreateToken({{"role", "join"}, {"labels", {{"zone", "eu"}}}});
  EXPECT_EQ(coord_->Enrol("x-1", {{"zone", "us"}}, join["token"]).status, 403);
  http::HttpResponse e = coord_->Enrol("x-1", {{"zone", "eu"}}, join["token"]);
  ASSERT_EQ(e.status, 201) << e.body;
  TestAgent x(*coord_, "x-1", {{"zone", "us"}}, Body(e)["token"]);
  EXPECT_EQ(x.ClaimRaw(1, 0).status, 403);
}

TEST_F(IdentityTest, ForgedResultRenewalAndOutputForAnotherAgentsShardAreRefusedAndItKeepsRunning) {
  Start("lease_ttl = \"3s\"\nheartbeat = \"1s\"\n");
  coord_->Apply("[[job]]\nname = \"work\"\nschedule = \"@yearly\"\nshell = \"sleep 30\"\n");
  int64_t id = Trigger("work")["id"];
  TestAgent a(*coord_, "a");
  std::vector<json> got = a.Claim(1, 5000);
  ASSERT_EQ(got.size(), 1u);
  json lease = got[0];
  TestAgent evil(*coord_, "evil");
  // Naming the holder in the body is refused outright; as itself, it holds no such lease.
  json forged = evil.ResultBody(lease, 0);
  forged["agent"] = "a";
  http::HttpResponse batch = evil.FinishAll({forged});  // each result of a batch answers alone
  EXPECT_EQ(batch.status, 200) << batch.body;
  EXPECT_EQ(Body(batch)["results"][0]["status"], 403) << batch.body;
  http::HttpResponse result = evil.Finish(lease, 0);
  EXPECT_EQ(result.status, 409) << result.body;
  EXPECT_EQ(evil.Finish(lease, 1, "lease_lost").status, 409);
  EXPECT_EQ(evil.Log(lease, 1, "stdout", "forged\n").status, 409);
  json hb = Body(evil.Heartbeat({lease}));
  EXPECT_TRUE(hb["renewed"].empty()) << hb.dump();
  // a goes on as if nothing happened: its output and renewals are taken, the shard runs on,
  // and its own result ends it.
  EXPECT_EQ(a.Log(lease, 1, "stdout", "real\n").status, 200);
  EXPECT_EQ(Body(a.Heartbeat({lease}))["renewed"].size(), 1u);
  json run = GetRun(id);
  EXPECT_EQ(run["shards"][0]["state"], "running") << run.dump();
  EXPECT_EQ(run["shards"][0]["agent"], "a");
  EXPECT_EQ(coord_->Output(id, 0, "stdout"), "real\n");
  EXPECT_EQ(a.Finish(lease, 0).status, 200);
  EXPECT_EQ(coord_->WaitRun(id, seconds(10))["state"], "succeeded");
}

TEST_F(IdentityTest, NothingIsAppendedToAnAttemptThatEnded) {
  Start();
  coord_->Apply("[[job]]\nname = \"work\"\nschedule = \"@yearly\"\nshell = \"true\"\n");
  int64_t id = Trigger("work")["id"];
  TestAgent a(*coord_, "a");
  std::vector<json> got = a.Claim(1, 5000);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(a.Log(got[0], 1, "stdout", "during\n").status, 200);
  ASSERT_EQ(a.Finish(got[0], 0).status, 200);
  ASSERT_EQ(coord_->WaitRun(id, seconds(10))["state"], "succeeded");
  // Not even from the holder, not even a chunk it never sent before.
  http::HttpResponse late = a.Log(got[0], 2, "stdout", "after the end\n");
  EXPECT_EQ(late.status, 409) << late.body;
  EXPECT_EQ(coord_->Output(id, 0, "stdout"), "during\n");
}

TEST_F(IdentityTest, ConflictRepliesNeverTellAFencingToken) {
  Start("lease_ttl = \"2s\"\nheartbeat = \"1s\"\n");
  // Push the token counter past the small numbers a run id or shard index could be.
  coord_->Apply(
      "[[job]]\nname = \"wide\"\nschedule = \"@yearly\"\nshards = 20\nshell = \"true\"\n"
      "[[job]]\nname = \"work\"\nschedule = \"@yearly\"\nroute = \"failover\"\nshell = \"sleep "
      "30\"\n");
  Trigger("wide");
  TestAgent a(*coord_, "a"), b(*coord_, "b");
  for (const json& s : a.ClaimUpTo(20)) ASSERT_EQ(a.Finish(s, 0).status, 200);
  Trigger("work");
  std::vector<json> first = a.Claim(1, 5000);
  ASSERT_EQ(first.size(), 1u);
  // a stops renewing; past the TTL b gets the shard under a new token.
  std::vector<json> second = b.Claim(1, 10000);
  ASSERT_EQ(second.size(), 1u);
  int64_t old_token = first[0]["token"], new_token = second[0]["token"];
  ASSERT_GT(old_token, 20);
  for (const http::HttpResponse& r :
       {a.Finish(first[0], 0), a.Log(first[0], 1, "stdout", "x"),
        b.Finish(second[0], 0, "exited", old_token), b.Log(second[0], 1, "stdout", "x", old_token),
        a.Finish(second[0], 0)}) {
    EXPECT_EQ(r.status, 409) << r.body;
    EXPECT_FALSE(MentionsNumber(r.body, old_token)) << r.body;
    EXPECT_FALSE(MentionsNumber(r.body, new_token)) << r.body;
    EXPECT_EQ(r.body.find("token:"), std::string::npos) << r.body;
  }
  EXPECT_EQ(b.Finish(second[0], 0).status, 200);
}

TEST_F(IdentityTest, EnrollingANameThatHasACredentialIsRefused) {
  Start();
  http::HttpResponse first = coord_->Enrol("web-1");
  ASSERT_EQ(first.status, 201) << first.body;
  std::string secret = Body(first)["token"];
  http::HttpResponse again = coord_->Enrol("web-1");
  EXPECT_EQ(again.status, 409) << again.body;
  EXPECT_EQ(again.body.find("jc_"), std::string::npos);
  EXPECT_NE(again.body.find("jobctl agents rm web-1"), std::string::npos) << again.body;
  // Its own credential asks who it is: itself, and nobody else.
  http::HttpResponse self = coord_->Enrol("web-1", {}, secret);
  ASSERT_EQ(self.status, 200) << self.body;
  EXPECT_EQ(Body(self)["agent"], "web-1");
  EXPECT_EQ(Body(self)["enrolled"], false);
  EXPECT_EQ(coord_->Enrol("web-2", {}, secret).status, 403);
  // An admin cannot mint a second credential for it either.
  EXPECT_EQ(
      coord_->Request("POST", "/v1/tokens", json{{"role", "agent"}, {"agent", "web-1"}}.dump())
          .status,
      409);
  // Names are bounded and plain.
  EXPECT_EQ(coord_->Enrol(std::string(65, 'a')).status, 400);
  EXPECT_EQ(coord_->Enrol("a/../b").status, 400);
}

TEST_F(IdentityTest, AgentsRmRefusesWhileLeasesLiveThenForgetsTheAgentAndItsCredential) {
  Start();
  coord_->Apply("[[job]]\nname = \"work\"\nschedule = \"@yearly\"\nshell = \"sleep 30\"\n");
  int64_t id = Trigger("work")["id"];
  TestAgent a(*coord_, "a");
  ASSERT_EQ(a.Claim(1, 5000).size(), 1u);
  http::HttpResponse busy = coord_->Request("DELETE", "/v1/agents/a");
  EXPECT_EQ(busy.status, 409) << busy.body;
  EXPECT_NE(busy.body.find("--force"), std::string::npos) << busy.body;
  http::HttpResponse gone = coord_->Request("DELETE", "/v1/agents/a?force=1");
  ASSERT_EQ(gone.status, 200) << gone.body;
  EXPECT_EQ(Body(gone)["credentials_revoked"], 1);
  EXPECT_EQ(a.ClaimRaw(1, 0).status, 401);
  for (const json& agent : coord_->GetJson("/v1/agents")) EXPECT_NE(agent["name"], "a");
  // Its shard did not stay with it: it went back to be run again.
  json shard = GetRun(id)["shards"][0];
  EXPECT_EQ(shard["state"], "pending") << shard.dump();
  EXPECT_EQ(shard["attempt"], 2);
  // The name is free again.
  EXPECT_EQ(coord_->Enrol("a").status, 201);
  EXPECT_EQ(coord_->Request("DELETE", "/v1/agents/nobody").status, 404);
}

TEST_F(IdentityTest, AnExpiredTokenIsRefusedAsExpired) {
  Start();
  json t = CreateToken({{"role", "agent"}, {"agent", "brief"}, {"expires_in_ms", 3000}});
  EXPECT_FALSE(t.value("expires_at", "").empty()) << t.dump();
  TestAgent brief(*coord_, "brief", {}, t["token"]);
  EXPECT_EQ(brief.ClaimRaw(1, 0).status, 200);
  http::HttpResponse r;
  ASSERT_TRUE(Coordinator::Eventually([&] { return (r = brief.ClaimRaw(1, 0)).status == 401; },
                                      seconds(10)));
  EXPECT_EQ(Body(r)["message"], "token expired");
}

TEST_F(IdentityTest, AClaimParkedBeforeItsTokenWasRevokedIsClosedAtRevocation) {
  Start();
  json t = CreateToken({{"role", "agent"}, {"agent", "p"}});
  TestAgent p(*coord_, "p", {}, t["token"]);
  double before = coord_->Metric("jobctl_claims_total");
  auto parked = std::async(std::launch::async, [&] { return p.ClaimRaw(1, 30'000); });
  ASSERT_TRUE(Coordinator::Eventually(
      [&] { return coord_->Metric("jobctl_claims_total") >= before + 1; }, seconds(5)));
  auto revoked_at = std::chrono::steady_clock::now();
  ASSERT_EQ(
      coord_->Request("DELETE", "/v1/tokens/" + std::to_string(t["id"].get<int64_t>())).status,
      200);
  ASSERT_EQ(parked.wait_for(seconds(5)), std::future_status::ready) << "the parked claim was kept";
  http::HttpResponse r = parked.get();
  EXPECT_EQ(r.status, 401) << r.body;
  EXPECT_LT(std::chrono::steady_clock::now() - revoked_at, seconds(5));
  EXPECT_EQ(Body(r)["message"], "token revoked");
}

TEST_F(IdentityTest, AgentsNotSeenForAgentExpiryLeaveTheRegistry) {
  Start("lease_ttl = \"2s\"\nheartbeat = \"1s\"\nagent_expiry = \"1s\"\n");
  TestAgent a(*coord_, "a");
  ASSERT_TRUE(a.Claim(1, 0).empty());
  ASSERT_EQ(coord_->GetJson("/v1/agents").size(), 1u);
  EXPECT_TRUE(
      Coordinator::Eventually([&] { return coord_->GetJson("/v1/agents").empty(); }, seconds(10)));
  // Its credential still works: it is back as soon as it claims.
  ASSERT_TRUE(a.Claim(1, 0).empty());
  EXPECT_EQ(coord_->GetJson("/v1/agents").size(), 1u);
}

}  // namespace
}  // namespace jobctl::testing
