// Hostile clients against the real coordinator and agentd: anonymous uploads, bodies and
// heads trickling in, connection floods from several loopback addresses (127.0.0.2 to
// 127.0.0.9), oversized fields, JSON nested 100,000 deep, long-polls with megabyte bodies and
// tokens over their rate limit. Real traffic goes on next to them (an agent running jobs that
// fire every second, a reader polling runs): its fires must stay on time and the
// coordinator's memory bounded. Every hostile loop is bounded in count and in time.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "fault/env/env_fault_test.h"
#include "fault/env/raw_connection.h"

namespace jobctl::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

// Under AddressSanitizer freed memory waits in a quarantine of up to 256 MiB, which would
// count as the coordinator's; a small one measures what it really holds.
Launch SmallQuarantine() {
  const char* asan = std::getenv("ASAN_OPTIONS");
  return Launch{{}, {{"ASAN_OPTIONS", std::string(asan ? asan : "") + ":quarantine_size_mb=4"}}};
}

std::string Nested(int levels) {
  return "{\"results\":" + std::string(static_cast<size_t>(levels), '[') +
         std::string(static_cast<size_t>(levels), ']') + "}";
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  size_t at = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[at];
}

class HostileClientTest : public EnvFaultTest {
 protected:
  void Start(const std::string& config) {
    StartCoordinator(config, "127.0.0.1", SmallQuarantine());
  }
  std::unique_ptr<RawConnection> Connect(const std::string& from = "") {
    return std::make_unique<RawConnection>("127.0.0.1", coord_->port(), from);
  }
  RawResponse Exchange(const std::string& bytes, const std::string& from = "") {
    auto c = Connect(from);
    c->Send(bytes);
    return c->Read(milliseconds(5000));
  }
  long Rss() { return RssKib(coord_->process().pid()); }

  // Fire lateness (ms) of the runs of `jobs` scheduled in [from_ms, to_ms): from the
  // scheduled instant to the moment the agent started the shard, so it covers the scheduler,
  // the commit and the agent's claim through the HTTP server.
  std::vector<double> Lateness(int jobs, int64_t from_ms, int64_t to_ms) {
    std::vector<double> out;
    for (int j = 0; j < jobs; ++j) {
      for (const json& run : coord_->Runs("tick" + std::to_string(j))) {
        int64_t scheduled = UnixMs(run.value("scheduled_at", ""));
        if (scheduled < from_ms || scheduled >= to_ms || run["shards"].empty()) continue;
        int64_t started = UnixMs(run["shards"][0].value("started_at", ""));
        if (started > 0) out.push_back(static_cast<double>(started - scheduled));
      }
    }
    return out;
  }
};

TEST_F(HostileClientTest, JsonNestedAHundredThousandDeepIsRefusedOnEveryRoute) {
  Start("");
  std::string deep = Nested(100'000);
  std::string agent =
      coord_->PostJson("/v1/tokens", {{"role", "agent"}, {"agent", "deep"}})["token"];
  for (const char* path :
       {"/v1/agent/results", "/v1/agent/result", "/v1/agent/claim", "/v1/agent/heartbeat"}) {
    RawResponse r = Exchange(HttpRequest("POST", path, agent, deep));
    EXPECT_EQ(r.status, 400) << path << ": " << r.body;
    EXPECT_NE(r.body.find("nested deeper than 64"), std::string::npos) << path << ": " << r.body;
    ASSERT_TRUE(coord_->process().running()) << "the coordinator died on " << path;
  }
  coord_->Apply("[[job]]\nname = \"x\"\nschedule = \"@yearly\"\nshell = \"true\"\n");
  for (const char* path : {"/v1/jobfile", "/v1/tokens", "/v1/jobs/x/trigger"}) {
    RawResponse r = Exchange(HttpRequest("POST", path, coord_->admin_token(), deep));
    EXPECT_EQ(r.status, 400) << path << ": " << r.body;
    ASSERT_TRUE(coord_->process().running()) << "the coordinator died on " << path;
  }
  EXPECT_EQ(Exchange(HttpRequest("GET", "/healthz", "", "")).status, 200);
}

TEST_F(HostileClientTest, BearerSchemeIsMatchedInAnyCase) {
  Start("");
  for (const char* scheme : {"bearer", "BEARER", "Bearer", "bEaReR"}) {
    std::string req = "GET /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: " + std::string(scheme) +
                      "  " + coord_->admin_token() + "\r\n\r\n";
    EXPECT_EQ(Exchange(req).status, 200) << scheme;
  }
  std::string wrong = "GET /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Basic " +
                      coord_->admin_token() + "\r\n\r\n";
  EXPECT_EQ(Exchange(wrong).status, 401);
}

// 40 anonymous uploads of a declared 10 MB job file once grew the coordinator by 360 MiB
// while it waited for bodies it would then refuse.
TEST_F(HostileClientTest, AnonymousUploadsAreRefusedAtTheHeadersAndHoldNoMemory) {
  Start("max_jobfile = \"9MiB\"\n");
  long before = Rss();
  std::vector<std::unique_ptr<RawConnection>> uploads;
  int answered = 0;
  for (int i = 0; i < 40; ++i) {
    auto c = Connect("127.0.0." + std::to_string(2 + i % 8));
    c->Send("POST /v1/jobfile HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n");
    c->Send(std::string(64 << 10, 'x'));  // may fail once the server closed: fine
    RawResponse r = c->Read(milliseconds(2000));
    answered += r.status == 401 ? 1 : 0;
    uploads.push_back(std::move(c));
  }
  long after = Rss();
  std::cout << "40 anonymous uploads: RSS " << before / 1024 << " -> " << after / 1024 << " MiB\n";
  EXPECT_EQ(answered, 40) << "anonymous uploads must be answered 401 at their headers";
  EXPECT_LT(after - before, 32 * 1024) << "the coordinator buffered anonymous bodies";
}

TEST_F(HostileClientTest, TricklingHeadsAndBodiesAreClosedAtTheirDeadlines) {
  Start("header_timeout = \"2s\"\nbody_timeout = \"2s\"\nidle_timeout = \"30s\"\n");
  // An agent's own credential: the join token may only enrol, and would be refused at once.
  std::string agent =
      coord_->PostJson("/v1/tokens", {{"role", "agent"}, {"agent", "trickler"}})["token"];
  auto head = Connect();
  auto body = Connect();
  body->Send("POST /v1/agent/claim HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + agent +
             "\r\nContent-Length: 1000\r\n\r\n");
  std::string line = "GET /v1/jobs HTTP/1.1\r\nHost: x\r\n";
  auto start = Clock::now();
  double head_closed = -1, body_closed = -1;
  // A byte every 250 ms from each: before, the body deadline restarted at every byte.
  for (size_t i = 0; Clock::now() - start < seconds(8) && (head_closed < 0 || body_closed < 0);
       ++i) {
    double now_s = std::chrono::duration<double>(Clock::now() - start).count();
    if (head_closed < 0 &&
        (!head->Send(line.substr(i % line.size(), 1)) || head->WaitClosed(milliseconds(125)))) {
      head_closed = now_s;
    }
    if (body_closed < 0 && (!body->Send("x") || body->WaitClosed(milliseconds(125)))) {
      body_closed = now_s;
    }
  }
  EXPECT_GE(head_closed, 1.5);
  EXPECT_LE(head_closed, 4.0) << "a trickling head outlived header_timeout";
  EXPECT_GE(body_closed, 1.5);
  EXPECT_LE(body_closed, 4.0) << "a trickling body outlived body_timeout";
}

TEST_F(HostileClientTest, TriggerTokenOverItsRateLimitGets429WithRetryAfter) {
  Start("trigger_rate_limit = 1\ntrigger_burst = 2\n");
  coord_->Apply("[[job]]\nname = \"t\"\nschedule = \"@yearly\"\nshell = \"true\"\n");
  std::string token = coord_->PostJson("/v1/tokens", {{"role", "trigger"}})["token"];
  std::string trigger = HttpRequest("POST", "/v1/jobs/t/trigger", token, "{}");
  EXPECT_EQ(Exchange(trigger).status, 201);
  EXPECT_EQ(Exchange(trigger).status, 201);
  RawResponse refused = Exchange(trigger);
  EXPECT_EQ(refused.status, 429) << refused.body;
  EXPECT_EQ(refused.headers.count("retry-after") ? refused.headers.at("retry-after") : "", "1");
  EXPECT_NE(refused.body.find("too_many_requests"), std::string::npos) << refused.body;
  // Reads are not triggers: the same token may still list jobs.
  EXPECT_EQ(Exchange(HttpRequest("GET", "/v1/jobs", token, "")).status, 200);
  EXPECT_TRUE(Coordinator::Eventually([&] { return Exchange(trigger).status == 201; }, seconds(3)));
  EXPECT_GE(coord_->Metric("jobctl_rate_limited_total"), 1);
}

// 300 long-polls with 1 MB bodies once held 300 MB until the run ended, and a client that hung
// up left its waiter behind.
TEST_F(HostileClientTest, WaitsReleaseTheirBodiesAndHungUpWaitersAreDropped) {
  Start("");
  AddAgent("a");
  WaitForAgents(1);
  coord_->Apply("[[job]]\nname = \"long\"\nschedule = \"@yearly\"\ntimeout = \"5m\"\nshell = \"" +
                JobPids() + "sleep 120\"\n");
  int64_t id = Trigger("long")["id"];
  long before = Rss();
  std::string body(1'000'000, ' ');
  body[0] = '{';
  body.back() = '}';
  std::vector<std::unique_ptr<RawConnection>> waits;
  long peak = before;
  for (int i = 0; i < 300; ++i) {
    auto c = Connect("127.0.0." + std::to_string(2 + i % 8));
    c->Send(HttpRequest("GET", "/v1/runs/" + std::to_string(id) + "/wait?timeout_ms=120000",
                        coord_->admin_token(), body));
    waits.push_back(std::move(c));
    if (i % 20 == 0) peak = std::max(peak, Rss());
  }
  EXPECT_TRUE(Coordinator::Eventually(
      [&] { return coord_->Metric("jobctl_parked_waiters") == 300; }, seconds(30)))
      << coord_->Metric("jobctl_parked_waiters");
  peak = std::max(peak, Rss());
  std::cout << "300 waits with 1 MB bodies: RSS " << before / 1024 << " -> " << peak / 1024
            << " MiB\n";
  EXPECT_LT(peak - before, 96 * 1024) << "the waits kept their bodies";
  waits.clear();  // the clients hang up
  EXPECT_TRUE(Coordinator::Eventually([&] { return coord_->Metric("jobctl_parked_waiters") == 0; },
                                      seconds(10)))
      << "hung-up waiters stayed: " << coord_->Metric("jobctl_parked_waiters");
}

// The hostile mix, bounded in count and in time, next to real traffic. Fires are measured
// idle first and then under attack, in the same test, on the same machine.
TEST_F(HostileClientTest, HostileClientsNextToRealTrafficKeepFiresOnTimeAndMemoryBounded) {
  Start("header_timeout = \"2s\"\nbody_timeout = \"3s\"\nidle_timeout = \"5s\"\n");
  AddAgent("a", {}, "slots = 32\n");
  WaitForAgents(1);
  constexpr int kJobs = 10;
  std::string jobs;
  for (int j = 0; j < kJobs; ++j) {
    jobs += "[[job]]\nname = \"tick" + std::to_string(j) +
            "\"\nschedule = \"@every 1s\"\n"
            "shell = \"true\"\n";
  }
  coord_->Apply(jobs);
  const auto phase = seconds(15);
  auto wall_ms = [] {
    return std::chrono::duration_cast<milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  // Settle, then the idle phase: real traffic only.
  ASSERT_TRUE(
      Coordinator::Eventually([&] { return !coord_->Runs("tick0", 5).empty(); }, seconds(10)));
  long idle_rss = Rss();
  int64_t idle_from = wall_ms();
  auto until = Clock::now() + phase;
  while (Clock::now() < until) {
    idle_rss = std::max(idle_rss, Rss());
    std::this_thread::sleep_for(milliseconds(100));  // sampling, not waiting for an event
  }
  int64_t idle_to = wall_ms();

  // The hostile phase.
  std::atomic<bool> stop{false};
  std::atomic<int> refused{0}, flood_closed{0}, flood_opened{0};
  auto hostile_until = Clock::now() + phase;
  auto running = [&] { return !stop && Clock::now() < hostile_until; };
  // A stolen agent credential: its requests pass the headers and reach the body limits.
  std::string agent =
      coord_->PostJson("/v1/tokens", {{"role", "agent"}, {"agent", "intruder"}})["token"];
  std::vector<std::thread> threads;
  // Connection floods: 127.0.0.3..9 each open up to 400 silent connections (the per-client
  // cap is 256) and reopen the ones the coordinator closes, 60 rounds at most.
  for (int a = 3; a <= 9; ++a) {
    threads.emplace_back([&, a] {
      std::string from = "127.0.0." + std::to_string(a);
      std::vector<std::unique_ptr<RawConnection>> held;
      for (int round = 0; round < 60 && running(); ++round) {
        for (size_t i = held.size(); i < 400 && running(); ++i) {
          try {
            held.push_back(Connect(from));
            ++flood_opened;
          } catch (const std::exception&) {
            break;
          }
        }
        size_t before = held.size();
        held.erase(std::remove_if(held.begin(), held.end(),
                                  [](auto& c) { return c->WaitClosed(milliseconds(3)); }),
                   held.end());
        flood_closed += static_cast<int>(before - held.size());
        // A refill every 250 ms: about a thousand refused connections a second from the
        // seven addresses, without the test's own threads taking the machine's two cores.
        std::this_thread::sleep_for(milliseconds(250));
      }
    });
  }
  // Slow bodies and anonymous uploads from 127.0.0.2: agent-token log chunks trickling in
  // and declared 10 MB job files without a token, at most 200 of each.
  threads.emplace_back([&] {
    std::vector<std::unique_ptr<RawConnection>> slow;
    for (int i = 0; i < 200 && running(); ++i) {
      auto c = Connect("127.0.0.2");
      c->Send("POST /v1/agent/logs?run=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + agent +
              "\r\nContent-Length: 200000\r\n\r\nx");
      slow.push_back(std::move(c));
      auto anon = Connect("127.0.0.2");
      anon->Send("POST /v1/jobfile HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n");
      if (anon->Read(milliseconds(1000)).status == 401) ++refused;
      for (auto& s : slow) s->Send("x");
    }
  });
  // Oversized fields and deep JSON from 127.0.0.9, at most 300 requests.
  threads.emplace_back([&] {
    std::string deep = Nested(100'000);
    std::string big_header = "X-Filler: " + std::string(17 << 10, 'a') + "\r\n";
    for (int i = 0; i < 100 && running(); ++i) {
      if (Exchange(HttpRequest("POST", "/v1/agent/results", agent, deep), "127.0.0.9").status ==
          400)
        ++refused;
      if (Exchange(HttpRequest("GET", "/v1/jobs", agent, "", big_header), "127.0.0.9").status ==
          431)
        ++refused;
      if (Exchange("POST /v1/agent/heartbeat HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                       agent + "\r\nContent-Length: 4194304\r\n\r\n",
                   "127.0.0.9")
              .status == 413)
        ++refused;
    }
  });
  int64_t hostile_from = wall_ms();
  long hostile_rss = idle_rss;
  std::vector<double> reads_ms;
  int read_failures = 0;
  while (Clock::now() < hostile_until) {
    hostile_rss = std::max(hostile_rss, Rss());
    // A real reader next to the attack, from 127.0.0.1.
    auto t0 = Clock::now();
    RawResponse r = Exchange(HttpRequest("GET", "/v1/runs?limit=5", coord_->admin_token(), ""));
    if (r.status != 200) ++read_failures;
    reads_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    std::this_thread::sleep_for(milliseconds(100));  // sampling, not waiting for an event
  }
  int64_t hostile_to = wall_ms();
  stop = true;
  for (auto& t : threads) t.join();
  ASSERT_TRUE(coord_->process().running());
  // The last fires of the hostile phase have had time to start.
  ASSERT_TRUE(Coordinator::Eventually(
      [&] { return Lateness(1, hostile_to - 1000, hostile_to).size() >= 1; }, seconds(10)));

  std::vector<double> idle = Lateness(kJobs, idle_from, idle_to);
  std::vector<double> hostile = Lateness(kJobs, hostile_from, hostile_to);
  double idle_p99 = Percentile(idle, 0.99), hostile_p99 = Percentile(hostile, 0.99);
  std::cout << "fire lateness (scheduled -> shard started): idle n=" << idle.size()
            << " p50=" << Percentile(idle, 0.5) << "ms p90=" << Percentile(idle, 0.9)
            << "ms p99=" << idle_p99 << "ms max=" << Percentile(idle, 1.0)
            << "ms; hostile n=" << hostile.size() << " p50=" << Percentile(hostile, 0.5)
            << "ms p90=" << Percentile(hostile, 0.9) << "ms p99=" << hostile_p99
            << "ms max=" << Percentile(hostile, 1.0) << "ms\ncoordinator RSS: idle "
            << idle_rss / 1024 << " MiB, hostile max " << hostile_rss / 1024
            << " MiB\nreader: n=" << reads_ms.size() << " p99=" << Percentile(reads_ms, 0.99)
            << "ms failures=" << read_failures << "\nhostile requests refused: " << refused
            << "; flood connections opened: " << flood_opened
            << ", closed at once: " << flood_closed << "\n";
  ASSERT_GE(idle.size(), static_cast<size_t>(kJobs * 10));
  ASSERT_GE(hostile.size(), static_cast<size_t>(kJobs * 10)) << "fires went missing under attack";
  // The ten jobs share every instant, so 150 samples hold only 15 instants and their p99 is
  // the worst instant of the phase: one slow scheduling of the shared two-core machine, on
  // which the attack's own threads run, decides it. So the typical fire (p90) must keep its
  // idle pace, twice the idle figure with 20 ms of slack, and no fire may wait for the
  // attack: a loop that blocked on a hostile client (a trickled body, a deep parse) would
  // hold every fire behind it for hundreds of milliseconds.
  double idle_p90 = Percentile(idle, 0.9), hostile_p90 = Percentile(hostile, 0.9);
  EXPECT_LE(hostile_p90, std::max(2 * idle_p90, idle_p90 + 20)) << "fires were late under attack";
  EXPECT_LE(Percentile(hostile, 1.0), Percentile(idle, 1.0) + 250)
      << "a fire waited for the attack";
  EXPECT_EQ(read_failures, 0);
  EXPECT_LT(hostile_rss - idle_rss, 128 * 1024) << "the coordinator grew under attack";
  EXPECT_GT(refused, 0);
  EXPECT_GT(flood_closed, 0) << "no address reached its connection cap";
}

}  // namespace
}  // namespace jobctl::testing
