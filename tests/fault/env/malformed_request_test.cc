// Malformed requests against a running coordinator over raw TCP: truncated, oversized,
// mistyped, unauthenticated, slow and idle, and replays with an old fencing token. After each
// the coordinator must still be alive and serving, and every refusal must carry its documented
// status and a JSON body {"error", "message"} (man/jobctl-api.7.scd).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "coordinator/api.h"
#include "fault/env/env_fault_test.h"
#include "fault/env/raw_connection.h"

namespace jobctl::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

class MalformedRequestTest : public EnvFaultTest {
 protected:
  void SetUp() override {
    UseEventLogs();
    StartCoordinator(
        "lease_ttl = \"3s\"\nheartbeat = \"1s\"\nheader_timeout = \"2s\"\n"
        "idle_timeout = \"3s\"\nbody_timeout = \"3s\"\n");
  }

  std::unique_ptr<RawConnection> Connect() {
    return std::make_unique<RawConnection>("127.0.0.1", coord_->port());
  }
  // Sends `bytes` on a new connection and reads the one answer.
  RawResponse Exchange(const std::string& bytes, milliseconds timeout = milliseconds(5000)) {
    auto c = Connect();
    c->Send(bytes);
    return c->Read(timeout);
  }
  RawResponse Post(const std::string& path, const std::string& token, const std::string& body) {
    return Exchange(HttpRequest("POST", path, token, body));
  }

  // The documented error shape: the status, JSON, a stable code and a message for people.
  static void ExpectError(const RawResponse& r, int status, const std::string& code,
                          const std::string& what) {
    EXPECT_EQ(r.status, status) << what << ": " << r.body;
    EXPECT_EQ(r.headers.count("content-type") ? r.headers.at("content-type") : "",
              "application/json")
        << what;
    json j = json::parse(r.body, nullptr, false);
    ASSERT_TRUE(j.is_object()) << what << ": " << r.body;
    EXPECT_EQ(j.value("error", ""), code) << what << ": " << r.body;
    EXPECT_TRUE(j.contains("message") && j["message"].is_string() &&
                !j["message"].get<std::string>().empty())
        << what << ": " << r.body;
  }

  // The coordinator process is alive and answers /healthz on a fresh connection.
  void ExpectServing(const std::string& after) {
    ASSERT_TRUE(coord_->process().running()) << "the coordinator died after: " << after;
    RawResponse r = Exchange(HttpRequest("GET", "/healthz", "", ""), milliseconds(2000));
    EXPECT_EQ(r.status, 200) << "no /healthz after: " << after;
  }

  // An agent's own credential (enrolled through the join token).
  std::string Agent() const { return coord_->AgentCredential("m"); }
  std::string Admin() const { return coord_->admin_token(); }
};

TEST_F(MalformedRequestTest, TruncatedRequestsAreDroppedAndNothingOfThemIsKept) {
  const std::string body = R"({"agent":"t","run":1,"shard":0,"attempt":1,"token":1,)"
                           R"("outcome":"exited","exit_code":0})";
  std::string full = HttpRequest("POST", "/v1/agent/result", Agent(), body);
  // Cut everywhere that matters: in the request line, in a header, before the blank line and
  // in the body; the client then gives up (half-close) or vanishes (close).
  for (size_t cut : {size_t{5}, size_t{30}, full.find("\r\n\r\n"), full.size() - body.size() / 2}) {
    for (bool vanish : {false, true}) {
      std::string what =
          "request cut at byte " + std::to_string(cut) + (vanish ? ", closed" : ", half-closed");
      auto c = Connect();
      ASSERT_TRUE(c->Send(full.substr(0, cut)));
      if (vanish) {
        c.reset();
      } else {
        c->CloseWrite();
        RawResponse r = c->Read(milliseconds(3000));
        EXPECT_TRUE(r.status == 0 || r.status == 400) << what << ": " << r.status;
        EXPECT_TRUE(r.closed) << what << ": the connection stayed open";
      }
      ExpectServing(what);
    }
  }
  EXPECT_EQ(coord_->Request("GET", "/v1/runs/1").status, 404) << "a cut request made a run";
}

TEST_F(MalformedRequestTest, GarbageAndUnsupportedFramingGetAJsonErrorAndAClose) {
  struct Case {
    std::string bytes;
    int status;
    std::string code;
  };
  std::string nul_and_escapes("\x00\x1b[2J\xff\xfe GET /\r\n\r\n", 16);
  std::vector<Case> cases = {
      {"HELLO THERE\r\n\r\n", 400, "bad_request"},
      {nul_and_escapes, 400, "bad_request"},
      {"GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n", 505, "http_version_not_supported"},
      {"POST /v1/agent/claim HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: "
       "chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
       411, "length_required"},
      {"POST /v1/agent/claim HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n", 400,
       "bad_request"},
      {"POST /v1/agent/claim HTTP/1.1\r\nHost: x\r\nContent-Length: "
       "99999999999999999999999\r\n\r\n",
       400, "bad_request"},
      {"GET /v1/jobs%00/x HTTP/1.1\r\nHost: x\r\n\r\n", 400, "bad_request"},
  };
  for (const Case& c : cases) {
    std::string what =
        "request " + json(c.bytes).dump(-1, ' ', false, json::error_handler_t::replace);
    auto conn = Connect();
    conn->Send(c.bytes);
    RawResponse r = conn->Read(milliseconds(5000));
    if (r.status == 413 && c.status == 400) r.status = 400;  // an overflowing length is either
    ExpectError(r, r.status == 413 ? 413 : c.status, r.status == 413 ? "payload_too_large" : c.code,
                what);
    EXPECT_TRUE(r.closed || conn->WaitClosed(milliseconds(3000))) << what << ": not closed";
    ExpectServing(what);
  }
}

TEST_F(MalformedRequestTest, OversizedHeadsAndBodiesAreRefusedBeforeTheyAreRead) {
  // A head over 16 KiB: 431, and the connection is closed.
  std::string big_header = "X-Filler: " + std::string(17 << 10, 'a') + "\r\n";
  RawResponse head = Exchange(HttpRequest("GET", "/v1/jobs", Admin(), "", big_header));
  ExpectError(head, 431, "headers_too_large", "17 KiB header");
  EXPECT_TRUE(head.closed);
  ExpectServing("17 KiB header");

  // Bodies over their route's limit: 413 from the Content-Length alone (no body byte sent).
  struct Case {
    std::string path;
    size_t length;
  };
  for (const Case& c :
       {Case{"/v1/agent/claim", (1u << 20) + 1}, Case{"/v1/agent/heartbeat", 2u << 20},
        Case{"/v1/agent/result", 1u << 30}, Case{"/v1/agent/logs?run=1", (256u << 10) + 1},
        Case{"/v1/jobfile", 11u << 20}, Case{"/v1/jobs/x/trigger", 5u << 20}}) {
    std::string what = "POST " + c.path + " with " + std::to_string(c.length) + " bytes";
    std::string req = "POST " + c.path + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                      (c.path.find("/agent/") != std::string::npos ? Agent() : Admin()) +
                      "\r\nContent-Length: " + std::to_string(c.length) + "\r\n\r\n";
    auto conn = Connect();
    conn->Send(req);
    RawResponse r = conn->Read(milliseconds(5000));
    ExpectError(r, 413, "payload_too_large", what);
    EXPECT_TRUE(r.closed || conn->WaitClosed(milliseconds(3000))) << what;
    ExpectServing(what);
  }

  // A body really sent past the limit: the answer comes and the rest is never read into memory.
  int64_t rss_before = RssKib(coord_->process().pid());
  auto conn = Connect();
  std::string req = "POST /v1/agent/heartbeat HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                    Agent() + "\r\nContent-Length: " + std::to_string(4u << 20) + "\r\n\r\n";
  conn->Send(req);
  conn->Send(std::string(4u << 20, '['));  // may fail once the server closed: fine
  RawResponse r = conn->Read(milliseconds(5000));
  ExpectError(r, 413, "payload_too_large", "4 MiB heartbeat");
  ExpectServing("4 MiB heartbeat");
  // Against the coordinator's own size just before (its libraries and, in the sanitizer build,
  // their shadow memory vary), not a fixed figure: the 4 MiB sent must not grow it by what a
  // buffered body would take.
  int64_t rss_after = RssKib(coord_->process().pid());
  std::printf("RSS before the oversized body %lld KiB, after %lld KiB\n",
              static_cast<long long>(rss_before), static_cast<long long>(rss_after));
  EXPECT_LT(rss_after - rss_before, 2 * 1024) << "the coordinator buffered an oversized body";
}

TEST_F(MalformedRequestTest, WrongJsonTypesInEveryAgentRouteGet400) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> bodies = {
      {"/v1/agent/claim",
       {"not json", "[]", "\"agent\"", "{\"agent\":5}", "{\"agent\":[]}",
        "{\"agent\":\"t\",\"slots\":\"2\"}", "{\"agent\":\"t\",\"labels\":[\"a\"]}",
        "{\"agent\":\"t\",\"labels\":{\"a\":1}}", "{\"agent\":\"t\",\"wait_ms\":1e30}",
        "{\"agent\":\"t\",\"free\":true}", "{\"agent\":\"t\",\"free\":1.5}",
        "{\"agent\":\"t\",\"version\":{}}", "{\"agent\":\"t\",\"slots\":99999999999999999999}"}},
      {"/v1/agent/heartbeat",
       {"not json", "[]", "{\"agent\":[]}", "{\"agent\":\"t\",\"leases\":{}}",
        "{\"agent\":\"t\",\"leases\":[1]}",
        "{\"agent\":\"t\",\"leases\":[{\"run\":\"1\",\"shard\":0,\"token\":1}]}",
        "{\"agent\":\"t\",\"leases\":[{\"run\":1,\"shard\":0.5,\"token\":1}]}",
        "{\"agent\":\"t\",\"leases\":[{\"run\":1,\"shard\":0}]}",
        "{\"agent\":\"t\",\"free\":\"1\"}", std::string(100000, '[') + std::string(100000, ']')}},
      {"/v1/agent/result",
       {"not json", "{}",
        "{\"agent\":\"t\",\"run\":\"1\",\"shard\":0,\"attempt\":1,\"token\":1,\"outcome\":"
        "\"exited\"}",
        "{\"agent\":\"t\",\"run\":1,\"shard\":0,\"attempt\":1,\"token\":1,\"outcome\":5}",
        "{\"agent\":\"t\",\"run\":1,\"shard\":0,\"attempt\":1,\"token\":1,\"outcome\":"
        "\"exploded\"}",
        "{\"agent\":\"t\",\"run\":1,\"shard\":0,\"attempt\":1,\"token\":1,\"outcome\":\"exited\","
        "\"exit_code\":\"0\"}",
        "{\"agent\":\"t\",\"run\":1,\"shard\":0,\"attempt\":1,\"token\":-1e300,\"outcome\":"
        "\"exited\"}",
        "{\"agent\":\"t\",\"run\":1,\"shard\":[],\"attempt\":1,\"token\":1,\"outcome\":\"exited\"}",
        "{\"agent\":\"t\",\"run\":1,\"shard\":0,\"attempt\":1,\"token\":1,\"outcome\":\"exited\","
        "\"message\":7}"}},
  };
  for (const auto& [path, list] : bodies) {
    for (const std::string& body : list) {
      std::string what = "POST " + path + " " + body.substr(0, 120);
      ExpectError(Post(path, Agent(), body), 400, "bad_request", what);
    }
    ExpectServing(path);
  }
  // Log chunks carry their key in the query: each part missing or mistyped.
  for (std::string query :
       {"", "?run=abc&shard=0&attempt=1&seq=1&token=1&stream=stdout",
        "?run=1&shard=0&attempt=1&seq=1&stream=stdout",
        "?run=1&shard=0&attempt=1&seq=1&token=1&stream=video",
        "?run=99999999999999999999&shard=0&attempt=1&seq=1&token=1&stream=stdout",
        "?run=1&shard=0x1&attempt=1&seq=1&token=1&stream=stdout",
        "?run=1&shard=0&attempt=1&seq=1.5&token=1&stream=stdout"}) {
    std::string what = "POST /v1/agent/logs" + std::string(query);
    ExpectError(
        Exchange(HttpRequest("POST", "/v1/agent/logs" + std::string(query), Agent(), "data")), 400,
        "bad_request", what);
  }
  ExpectServing("log chunks");
}

// Open: health, readiness and the console's files (which hold no secret; "/" redirects to
// them). Every other route refuses a missing, unknown, malformed or too weak token.
TEST_F(MalformedRequestTest,
       EveryRouteButHealthReadinessAndTheConsoleRefusesMissingWrongOrWeakTokens) {
  std::string read = coord_->PostJson("/v1/tokens", {{"role", "read"}})["token"];
  for (const coordinator::Api::Route& route : coordinator::Api::Routes()) {
    std::string path = route.pattern;
    for (auto [from, to] : {std::pair<std::string, std::string>{"{name}", "x"},
                            {"{id}", "1"},
                            {"{file}", "app.js"}}) {
      if (size_t at = path.find(from); at != std::string::npos) path.replace(at, from.size(), to);
    }
    std::string what = std::string(route.method) + " " + path;
    std::string body = std::string(route.method) == "GET" ? "" : "{}";
    if (route.role == coordinator::Role::kOpen) {
      EXPECT_EQ(Exchange(HttpRequest(route.method, path, "", body)).status, path == "/" ? 302 : 200)
          << what;
      continue;
    }
    ExpectError(Exchange(HttpRequest(route.method, path, "", body)), 401, "unauthenticated",
                what + " without a token");
    ExpectError(Exchange(HttpRequest(route.method, path, "jc_" + std::string(32, '0'), body)), 401,
                "unauthenticated", what + " with an unknown token");
    ExpectError(Exchange(HttpRequest(route.method, path, "not a token", body)), 401,
                "unauthenticated", what + " with a malformed token");
    // A token of the wrong role: agent tokens only reach agent routes (and enrolment), the
    // join token only enrolment, read tokens only read.
    bool agent_route =
        route.role == coordinator::Role::kAgent || route.role == coordinator::Role::kJoin;
    if (!agent_route) {
      ExpectError(Exchange(HttpRequest(route.method, path, Agent(), body)), 403, "forbidden",
                  what + " with an agent token");
    }
    if (route.role != coordinator::Role::kJoin) {
      ExpectError(Exchange(HttpRequest(route.method, path, coord_->agent_token(), body)), 403,
                  "forbidden", what + " with the join token");
    }
    if (route.role != coordinator::Role::kRead) {
      ExpectError(Exchange(HttpRequest(route.method, path, read, body)), 403, "forbidden",
                  what + " with a read token");
    }
  }
  ExpectServing("every route without a valid token");
}

TEST_F(MalformedRequestTest, SlowAndIdleConnectionsAreClosedWhileHealthzStaysFast) {
  // /healthz on fresh connections every 20 ms while the slow clients hang on.
  std::atomic<bool> done{false};
  std::vector<double> healthz_ms;
  int failures = 0;
  std::thread prober([&] {
    while (!done) {
      auto t0 = Clock::now();
      RawConnection c("127.0.0.1", coord_->port());
      c.Send(HttpRequest("GET", "/healthz", "", ""));
      RawResponse r = c.Read(milliseconds(2000));
      if (r.status != 200) ++failures;
      healthz_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      std::this_thread::sleep_for(milliseconds(20));
    }
  });
  auto start = Clock::now();
  // Slowloris: heads dripping one byte every 200 ms (header_timeout 2 s); connections that
  // send nothing, one that stalls in its body, one idle after a request (idle_timeout 3 s).
  std::vector<std::unique_ptr<RawConnection>> drips, silent;
  for (int i = 0; i < 20; ++i) drips.push_back(Connect());
  for (int i = 0; i < 200; ++i) silent.push_back(Connect());
  auto stalled = Connect();
  stalled->Send("POST /v1/agent/claim HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + Agent() +
                "\r\nContent-Length: 100\r\n\r\n{\"agent\"");
  auto kept = Connect();
  kept->Send(HttpRequest("GET", "/healthz", "", ""));
  EXPECT_EQ(kept->Read(milliseconds(2000)).status, 200);
  auto idle_since = Clock::now();

  std::string head = HttpRequest("GET", "/v1/jobs", Admin(), "");
  std::vector<double> drip_closed_s(drips.size(), -1);
  for (size_t byte = 0; byte < head.size() && Clock::now() - start < seconds(8); ++byte) {
    for (size_t i = 0; i < drips.size(); ++i) {
      if (drip_closed_s[i] >= 0) continue;
      if (!drips[i]->Send(head.substr(byte, 1)) || drips[i]->WaitClosed(milliseconds(1))) {
        drip_closed_s[i] = std::chrono::duration<double>(Clock::now() - start).count();
      }
    }
    std::this_thread::sleep_for(milliseconds(200));
  }
  for (size_t i = 0; i < drips.size(); ++i) {
    EXPECT_GE(drip_closed_s[i], 1.5) << "slow head " << i << " closed too early";
    EXPECT_LE(drip_closed_s[i], 4.0) << "slow head " << i << " not closed after header_timeout";
  }
  for (size_t i = 0; i < silent.size(); ++i) {
    EXPECT_TRUE(silent[i]->WaitClosed(milliseconds(3000))) << "silent connection " << i;
  }
  EXPECT_TRUE(stalled->WaitClosed(milliseconds(3000))) << "a stalled body kept its connection";
  EXPECT_TRUE(kept->WaitClosed(milliseconds(3000))) << "an idle keep-alive connection stayed";
  EXPECT_GE(Clock::now() - idle_since, milliseconds(2500)) << "idle connection closed too early";
  done = true;
  prober.join();

  ASSERT_FALSE(healthz_ms.empty());
  std::sort(healthz_ms.begin(), healthz_ms.end());
  double p50 = healthz_ms[healthz_ms.size() / 2], max = healthz_ms.back();
  double p99 = healthz_ms[healthz_ms.size() * 99 / 100];
  std::cout << "healthz under slow clients: n=" << healthz_ms.size() << " p50=" << p50
            << "ms p99=" << p99 << "ms max=" << max << "ms\n";
  EXPECT_EQ(failures, 0);
  EXPECT_LT(p50, 50.0);
  EXPECT_LT(max, 1000.0);
  ExpectServing("slow and idle connections");
}

TEST_F(MalformedRequestTest, ReplaysWithAnOldTokenGet409AndStoreNothing) {
  coord_->Apply(
      "[[job]]\nname = \"work\"\nschedule = \"@yearly\"\nroute = \"failover\"\n"
      "shell = \"sleep 30\"\n");
  int64_t id = Trigger("work")["id"];
  TestAgent a(*coord_, "a"), b(*coord_, "b");
  std::vector<json> first = a.Claim(1, 5000);
  ASSERT_EQ(first.size(), 1u);
  json old = first[0];
  ASSERT_EQ(a.Log(old, 1, "stdout", "before\n").status, 200);
  // a stops renewing: past the TTL the shard goes to b with a new token.
  std::vector<json> second = b.Claim(1, 10000);
  ASSERT_EQ(second.size(), 1u) << "the shard was not re-granted";
  json now = second[0];
  ASSERT_GT(now["token"].get<int64_t>(), old["token"].get<int64_t>());

  // A refusal says why, and never which token is current (nor echoes the caller's).
  auto expect_conflict = [&](const http::HttpResponse& r, const std::string& what) {
    RawResponse raw{r.status, {{"content-type", "application/json"}}, r.body, false};
    ExpectError(raw, 409, "conflict", what);
    std::string current = std::to_string(now["token"].get<int64_t>());
    EXPECT_EQ(r.body.find("token " + current), std::string::npos) << what << ": " << r.body;
    EXPECT_EQ(r.body.find("token: "), std::string::npos) << what << ": " << r.body;
  };
  expect_conflict(a.Log(old, 1, "stdout", "before\n"), "replayed log chunk");
  expect_conflict(a.Log(old, 2, "stdout", "after\n"), "new chunk with the old token");
  expect_conflict(a.Finish(old, 0), "result with the old token");
  http::HttpResponse beat = a.Heartbeat({old});
  ASSERT_EQ(beat.status, 200);
  json hb = json::parse(beat.body);
  EXPECT_TRUE(hb["renewed"].empty()) << beat.body;
  ASSERT_EQ(hb["revoked"].size(), 1u) << beat.body;
  EXPECT_EQ(hb["revoked"][0]["reason"], "stale");
  // The claim replayed: nothing (b holds the only shard).
  EXPECT_TRUE(a.Claim(1, 0).empty());

  json run = GetRun(id);
  EXPECT_EQ(run["shards"][0]["agent"], "b");
  EXPECT_EQ(run["shards"][0]["state"], "running");
  EXPECT_EQ(run["shards"][0]["token"], now["token"]);
  EXPECT_EQ(Output(id, 0, "stdout", old["attempt"].get<int>()), "before\n");

  // The current holder's result is taken once, and a retry of it gets the same answer.
  ASSERT_EQ(b.Log(now, 1, "stdout", "done\n").status, 200);
  http::HttpResponse fin = b.Finish(now, 0);
  ASSERT_EQ(fin.status, 200) << fin.body;
  http::HttpResponse again = b.Finish(now, 0);
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(json::parse(again.body)["state"], json::parse(fin.body)["state"]);
  expect_conflict(a.Finish(old, 1, "exited"), "old token after the run ended");
  json end = WaitRun(id, seconds(10));
  EXPECT_EQ(end["state"], "succeeded") << end.dump();
  EXPECT_EQ(end["shards"][0]["exit_code"], 0);
  EXPECT_EQ(Output(id, 0, "stdout"), "before\ndone\n");
  ExpectServing("replays");
  CheckInvariants();  // I4, I5: nothing with the old token, one result
}

}  // namespace
}  // namespace jobctl::testing
