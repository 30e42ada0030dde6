// coordinator_bench measures `jobctl serve` the way users and agents meet it: the real binary
// on 127.0.0.1, a fresh data directory, everything over HTTP. It prints figures; it asserts
// nothing. Phases (each on its own coordinator):
//
//   register  apply a job file of N jobs; RSS; CPU while idle with nothing due; restart time;
//             CPU while idle after the restart
//   burst     M jobs due at the same instant: durable fires per second
//   steady    R fires/s spread evenly (@every with per-job anchors) for D seconds, agents
//             claiming and finishing every shard: due -> claimed lateness, and the
//             coordinator's own due -> committed histogram
//   claims    pending shards claimed by G agents (4), one per request and then up to B per
//             request (an agent with B free slots): requests per second and shards per second
//   heartbeat A agents heartbeating every 5 s: coordinator CPU
//   standby   (PostgreSQL only) N jobs (--standby-jobs, 100000): a second coordinator on the
//             same database as a standby: time until its view holds them, its RSS and CPU,
//             and the time from the holder's SIGKILL until it is ready as the holder
//   failover  (PostgreSQL only) N jobs every second (--failover-jobs, 1000) on two coordinators;
//             the holder killed with SIGKILL K times (--kills, 10): time until the other fires,
//             and until it fires on time again
//   prune     (only with --only prune) the steady phase twice, without and then with
//             retention deleting every ended run as it goes (runs_for 1s, keep_last 0, a
//             slice every 100 ms): the fire lateness that pruning adds. With --prune-mib M
//             (embedded store only), both start on a log store filled beforehand with M MiB
//             of old output (64 KiB chunks, agentd's largest, of runs ended 8 to 15 days
//             ago): the second deletes all of it while it fires; the figures add the log
//             store's size on disk before and after, and how fast it was pruned. A third
//             phase, logs-only, prunes that output alone (logs_for 1s, every run kept).
//             After the window, the pruning phases wait up to --prune-wait S seconds (900)
//             for all of the prefill to be deleted and given back. --prune-phases picks
//             which of the three run and in what order (no-prune,pruning,logs-only)
//
//   build/release/bench/coordinator_bench [--jobs 1000,100000,1000000] [--burst 100000]
//       [--rate 2000] [--seconds 20] [--claims 50000] [--claim-batch 16]
//       [--claim-agents 4] [--agents 10000]
//       [--only PHASE] [--postgres true] [--standby-jobs N] [--failover-jobs N] [--kills K]
//       [--prune-mib M] [--prune-wait S] [--prune-phases no-prune,pruning,logs-only]
//
// With --postgres true, every phase's coordinator keeps its store in a database of its own on one
// PostgreSQL server started for the run (tests/testlib/postgres.h: initdb in a temporary
// directory, 127.0.0.1, fsync on, synchronous_commit on), on the same machine.
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "bench/bench_util.h"
#include "model/time_format.h"
#include "store/log_store.h"
#include "testlib/cluster.h"
#include "testlib/postgres.h"
#include "testlib/store_fill.h"

namespace {

using jobctl::bench::Clock;
using jobctl::bench::NowMs;
using jobctl::bench::ParseFlags;
using jobctl::bench::ParseList;
using jobctl::bench::Percentile;
using jobctl::bench::ProcSample;
using jobctl::bench::Sample;
using jobctl::bench::Seconds;
using jobctl::testing::Coordinator;
using jobctl::testing::TempDir;
using jobctl::testing::TestAgent;
using nlohmann::json;

double NowMsPrecise() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string JobName(int i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "j%07d", i);
  return buf;
}

// p50/p99 upper bounds from a Prometheus histogram in /metrics.
std::string HistogramQuantiles(Coordinator& c, const std::string& name) {
  std::string text = c.Request("GET", "/metrics").body;
  std::vector<std::pair<std::string, double>> buckets;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with(name + "_bucket{le=\"")) continue;
    size_t q = line.find('"') + 1;
    buckets.emplace_back(line.substr(q, line.find('"', q) - q),
                         std::stod(line.substr(line.rfind(' '))));
  }
  if (buckets.empty() || buckets.back().second == 0) return "no observations";
  double total = buckets.back().second;
  auto bound = [&](double p) {
    for (const auto& [le, n] : buckets) {
      if (n >= total * p) return le == "+Inf" ? std::string("> largest bucket") : "<= " + le + " s";
    }
    return std::string("?");
  };
  return "p50 " + bound(0.50) + ", p99 " + bound(0.99) + " (" + std::to_string(int64_t(total)) +
         " observations)";
}

// Applies a job file with a client that waits as long as it takes.
double ApplyTimed(Coordinator& c, const std::string& toml) {
  jobctl::http::BlockingClient client(c.url(), c.admin_token());
  jobctl::http::RequestOptions o;
  o.method = "POST";
  o.body = json{{"text", toml}, {"base_revision", -1}}.dump();
  o.timeout = std::chrono::milliseconds(0);
  auto t0 = Clock::now();
  auto r = client.Request("/v1/jobfile", o);
  double s = Seconds(Clock::now() - t0);
  if (!r.ok() || r->status != 200) {
    std::fprintf(stderr, "apply failed: %s\n",
                 r.ok() ? r->body.substr(0, 400).c_str() : r.status().ToString().c_str());
    std::exit(1);
  }
  return s;
}

bool Ready(Coordinator& c) {
  try {
    return c.Request("GET", "/readyz", "", "").status == 200;
  } catch (const std::exception&) {
    return false;
  }
}

// The claims phase has a handful of agents ask as fast as they can, far beyond what one real
// agent does, and the heartbeat phase enrols thousands of agents with one join token: the
// per-agent and per-token rate limits are lifted so that the coordinator, not the limiter, is
// measured.
const char* kBaseConfig =
    "max_jobfile = \"1GiB\"\nlog_level = \"info\"\n"
    "agent_rate_limit = 1000000\nagent_burst = 1000000\n"
    "rate_limit = 1000000\nrate_burst = 1000000\n";

// --postgres: the server every phase's database is on (null: the embedded store).
std::unique_ptr<jobctl::testing::PostgresServer> g_postgres;

// The coordinator.toml of one phase: with --postgres, a fresh database of its own.
std::string PhaseConfig() {
  if (g_postgres == nullptr) return kBaseConfig;
  static int phases = 0;
  std::string db = "bench" + std::to_string(++phases);
  if (jobctl::Status s = g_postgres->CreateDatabase(db); !s.ok()) {
    std::fprintf(stderr, "cannot create database %s: %s\n", db.c_str(), s.ToString().c_str());
    std::exit(69);
  }
  return std::string(kBaseConfig) + "store = \"" + g_postgres->Url(db) + "\"\n";
}

// ---- register: N jobs, RSS, idle CPU, restart --------------------------------------------

void RegisterPhase(int n) {
  TempDir dir;
  Coordinator c(dir, PhaseConfig());
  c.Start();
  std::string toml;
  toml.reserve(static_cast<size_t>(n) * 80);
  // Hashed minute and hour on 1 January: one schedule per job, nothing due for weeks.
  for (int i = 0; i < n; ++i) {
    toml += "[[job]]\nname = \"" + JobName(i) +
            "\"\nschedule = \"H H 1 1 *\"\ncommand = [\"/bin/true\"]\n";
  }
  double mib = static_cast<double>(toml.size()) / (1 << 20);
  double reg = ApplyTimed(c, toml);
  toml = std::string();
  ProcSample after = Sample(c.process().pid());
  std::this_thread::sleep_for(std::chrono::seconds(2));  // let the apply's work settle
  ProcSample idle0 = Sample(c.process().pid());
  std::this_thread::sleep_for(std::chrono::seconds(10));
  ProcSample idle1 = Sample(c.process().pid());
  double idle_pct = (idle1.cpu_s - idle0.cpu_s) / 10 * 100;

  c.Stop();
  auto t0 = Clock::now();
  c.Start();
  while (!Ready(c)) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  double restart = Seconds(Clock::now() - t0);
  ProcSample restarted = Sample(c.process().pid());
  double jobs = c.Metric("jobctl_jobs");
  // Idle again after the restart: the state a coordinator with this many jobs lives in.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  ProcSample rest0 = Sample(c.process().pid());
  std::this_thread::sleep_for(std::chrono::seconds(30));
  ProcSample rest1 = Sample(c.process().pid());
  double rest_pct = (rest1.cpu_s - rest0.cpu_s) / 30 * 100;
  std::printf(
      "register  jobs %-8d file %6.1f MiB  apply %7.2f s (%8.0f jobs/s)  RSS after apply %7.1f MiB "
      "(peak %7.1f)  idle CPU %.3f%% of a core  restart to ready %6.2f s  RSS after restart %7.1f "
      "MiB"
      "  jobs loaded %.0f  idle CPU after restart (30 s) %.3f%% of a core\n",
      n, mib, reg, n / reg, after.rss_mib, after.hwm_mib, idle_pct, restart, restarted.rss_mib,
      jobs, rest_pct);
  std::fflush(stdout);
}

// ---- standby: a second coordinator on the same PostgreSQL database ----------------------

// Gives the coordinator to be started in `dir` the admin token of `holder` (the bootstrap
// token files are a data directory's own), so the bench can ask it as it asks the holder.
void ShareAdminToken(Coordinator& holder, const TempDir& dir) {
  std::filesystem::create_directories(dir.path() + "/data");
  chmod((dir.path() + "/data").c_str(), 0700);
  std::ofstream(dir.path() + "/data/admin.token") << holder.admin_token() << "\n";
  chmod((dir.path() + "/data/admin.token").c_str(), 0600);
}

// N jobs applied to the holder; a standby started on the same database: how long until its
// view holds them all, its RSS and CPU while it keeps that view current (30 s), then the
// holder killed with SIGKILL and the time until the standby answers /readyz as the holder.
void StandbyPhase(int n) {
  if (g_postgres == nullptr) {
    std::printf("standby   needs --postgres true\n");
    return;
  }
  std::string config = PhaseConfig();
  TempDir da;
  Coordinator a(da, config);
  a.set_port(jobctl::testing::FreeLoopbackPort());
  a.Start();
  std::string toml;
  for (int i = 0; i < n; ++i) {
    toml += "[[job]]\nname = \"" + JobName(i) +
            "\"\nschedule = \"H H 1 1 *\"\ncommand = [\"/bin/true\"]\n";
  }
  ApplyTimed(a, toml);
  toml = std::string();
  TempDir db;
  ShareAdminToken(a, db);
  Coordinator b(db, config);
  b.set_port(jobctl::testing::FreeLoopbackPort());
  auto t0 = Clock::now();
  b.Start();
  while (b.Metric("jobctl_jobs") < n) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  double view = Seconds(Clock::now() - t0);
  ProcSample s0 = Sample(b.process().pid());
  std::this_thread::sleep_for(std::chrono::seconds(30));
  ProcSample s1 = Sample(b.process().pid());
  double cpu_pct = (s1.cpu_s - s0.cpu_s) / 30 * 100;
  a.Kill9();
  auto killed = Clock::now();
  while (!Ready(b)) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  double takeover = Seconds(Clock::now() - killed);
  ProcSample s2 = Sample(b.process().pid());
  std::printf(
      "standby   jobs %-8d view complete %6.2f s after start  RSS %7.1f MiB (peak %7.1f)  CPU "
      "keeping it current %.1f%% of a core  holder killed -> standby ready %6.2f s  jobs %.0f\n",
      n, view, s1.rss_mib, s1.hwm_mib, cpu_pct, takeover, b.Metric("jobctl_jobs"));
  std::printf("          RSS after taking over %7.1f MiB (peak %7.1f)\n", s2.rss_mib, s2.hwm_mib);
  std::fflush(stdout);
  b.Stop();
}

// "p50 X s, p99 Y s, max Z s (n)" of samples in seconds (nearest rank).
std::string Quantiles(std::vector<double> v) {
  if (v.empty()) return "no samples";
  std::sort(v.begin(), v.end());
  auto at = [&](double p) {
    size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size()))) - 1;
    return v[std::min(i, v.size() - 1)];
  };
  char buf[128];
  std::snprintf(buf, sizeof buf, "p50 %.2f s, p99 %.2f s, max %.2f s (%zu)", at(0.5), at(0.99),
                v.back(), v.size());
  return buf;
}

// ---- failover: the holder killed, the standby fires ----------------------------------------

// Two coordinators on one database, N jobs firing every second. K times: the holder is killed
// with SIGKILL at a random instant, and the time is taken until the other one has fired (its
// first durable fire) and until it fires on time again (a fire committed within a second of
// its instant); then the killed one is started again
// as the standby for the next round.
void FailoverPhase(int n, int kills) {
  if (g_postgres == nullptr) {
    std::printf("failover  needs --postgres true\n");
    return;
  }
  std::string config = PhaseConfig() + "hold_ttl = \"3s\"\n";
  TempDir da, db;
  Coordinator a(da, config);
  a.set_port(jobctl::testing::FreeLoopbackPort());
  a.Start();
  std::string toml;
  for (int i = 0; i < n; ++i) {
    int64_t offset_ms = static_cast<int64_t>(i) * 1000 / n;
    toml += "[[job]]\nname = \"" + JobName(i) + "\"\nschedule = \"@every 1s\"\nanchor = \"" +
            jobctl::FormatUtc(jobctl::FromUnixMs(1767225600000 + offset_ms)) +
            "\"\noverlap = \"allow\"\ncommand = [\"/bin/true\"]\n";
  }
  ApplyTimed(a, toml);
  ShareAdminToken(a, db);
  Coordinator b(db, config);
  b.set_port(jobctl::testing::FreeLoopbackPort());
  b.Start();
  while (b.Metric("jobctl_jobs") < n) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::mt19937 rng(42);
  std::vector<double> first_fire, on_time;
  Coordinator* holder = &a;
  Coordinator* standby = &b;
  for (int k = 0; k < kills; ++k) {
    std::this_thread::sleep_for(
        std::chrono::milliseconds(2000 + std::uniform_int_distribution<int>(0, 999)(rng)));
    auto killed = Clock::now();
    holder->Kill9();
    while (standby->Metric("jobctl_fires_total") < 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    first_fire.push_back(Seconds(Clock::now() - killed));
    // On time again: the standby, which fired nothing before, committed a fire within a
    // second of its instant.
    while (standby->Metric("jobctl_fire_lateness_seconds_bucket{le=\"1\"}") < 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    on_time.push_back(Seconds(Clock::now() - killed));
    holder->Start();  // the standby of the next round
    std::swap(holder, standby);
  }
  std::printf("failover  %d jobs firing every second, hold_ttl 3 s, %d SIGKILLs of the holder:\n",
              n, kills);
  std::printf("          killed -> first fire by the standby %s\n", Quantiles(first_fire).c_str());
  std::printf("          killed -> fires on time again %s\n", Quantiles(on_time).c_str());
  std::fflush(stdout);
  holder->Stop();
  standby->Stop();
}

// ---- burst: M jobs due at one instant -----------------------------------------------------

void BurstPhase(int m) {
  TempDir dir;
  Coordinator c(dir, PhaseConfig());
  c.Start();
  // @every 1h anchored a few seconds after the apply: all M due at the same millisecond.
  int64_t due = (NowMs() / 1000 + 8 + m / 20000) * 1000;
  std::string anchor = jobctl::FormatUtc(jobctl::FromUnixMs(due));
  std::string toml;
  for (int i = 0; i < m; ++i) {
    toml += "[[job]]\nname = \"" + JobName(i) + "\"\nschedule = \"@every 1h\"\nanchor = \"" +
            anchor + "\"\ncommand = [\"/bin/true\"]\n";
  }
  ApplyTimed(c, toml);
  if (NowMs() >= due) {
    std::printf("burst     apply took past the due instant; raise the lead time\n");
    return;
  }
  double fires = 0;
  int64_t done_ms = 0;
  while (true) {
    fires = c.Metric("jobctl_fires_total");
    if (fires >= m) {
      done_ms = NowMs();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  double span = static_cast<double>(done_ms - due) / 1000;
  std::printf(
      "burst     %d jobs due at one instant: all committed %.2f s after it = %.0f durable fires/s; "
      "due -> committed %s\n",
      m, span, m / span, HistogramQuantiles(c, "jobctl_fire_lateness_seconds").c_str());
  std::printf("          group commits: %s\n",
              HistogramQuantiles(c, "jobctl_store_commit_seconds").c_str());
  std::fflush(stdout);
}

// ---- steady: R fires/s, agents claim and finish -------------------------------------------

// Shards claimed by one thread, finished by another, as an agent's process would.
struct Handoff {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<json> queue;
  bool closed = false;
};

// Retention that deletes every run as soon as it ended, a slice every 100 ms.
const char* kPruneEverything =
    "runs_for = \"1s\"\nkeep_last = 0\nlogs_for = \"1s\"\nprune_every = \"100ms\"\n";
// Retention of output only, every run kept: what deleting a big log store alone costs.
const char* kPruneOutput =
    "runs_for = \"0s\"\nlogs_for = \"1s\"\nlogs_max = 0\nprune_every = \"100ms\"\n";
// Retention as good as off: nothing is old enough within a run of the bench.
const char* kPruneNothing = "runs_for = \"0s\"\nlogs_for = \"0s\"\nlogs_max = 0\n";

// A coordinator's data directory holding `mib` MiB of output of runs that ended long ago (100
// jobs, 16 chunks of 64 KiB per run, 8 to 15 days old), written through the store API as the
// coordinator would have, made once and copied into each phase's data directory
// (prefill_dir: where it is; prefill_bytes: its output bytes). The runs are real, so that only
// retention deletes their output.
std::string g_prefill_dir;
int64_t g_prefill_bytes = 0;
int g_prune_wait_s = 900;  // --prune-wait

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(item);
  return out;
}

int64_t FileBytes(const std::string& path) {
  std::error_code ec;
  int64_t n = 0;
  for (const char* suffix : {"", "-wal"}) {
    auto size = std::filesystem::file_size(path + suffix, ec);
    if (!ec) n += static_cast<int64_t>(size);
  }
  return n;
}

void MakePrefill(const TempDir& dir, int mib) {
  auto t0 = Clock::now();
  const int kJobs = 100, kChunk = 64 * 1024, kChunksPerRun = 16;
  {
    Coordinator c(dir, PhaseConfig());
    c.Start();
    std::string toml;
    for (int j = 0; j < kJobs; ++j) {
      toml += "[[job]]\nname = \"old-" + std::to_string(j) +
              "\"\nschedule = \"@yearly\"\ncommand = [\"/bin/true\"]\n";
    }
    c.Apply(toml);
    c.Stop();
    g_prefill_dir = c.data_dir();
  }
  int64_t runs = static_cast<int64_t>(mib) * (1 << 20) / (int64_t{kChunk} * kChunksPerRun);
  int64_t now = NowMs(), day = 86400000;
  std::vector<jobctl::testing::RunToFill> plan;
  for (int64_t r = 0; r < runs; ++r) {
    // Spread over a week, 15 to 8 days ago, oldest first: all of it past logs_for 1s.
    plan.push_back({"old-" + std::to_string(r % kJobs), now - 15 * day + r * 7 * day / runs,
                    kChunksPerRun, kChunk});
  }
  auto filled = jobctl::testing::FillStores(g_prefill_dir, plan);
  if (!filled.ok()) {
    std::fprintf(stderr, "--prune-mib: %s\n", filled.status().ToString().c_str());
    std::exit(70);
  }
  g_prefill_bytes = 0;
  for (const auto& f : *filled) g_prefill_bytes += f.output_bytes;
  std::printf(
      "prefill   %lld MiB of output of %lld runs, in chunks of 64 KiB (%.1f s); logs.db %.0f MiB\n",
      static_cast<long long>(g_prefill_bytes >> 20), static_cast<long long>(runs),
      Seconds(Clock::now() - t0),
      static_cast<double>(FileBytes(g_prefill_dir + "/logs.db")) / (1 << 20));
  std::fflush(stdout);
}

void SteadyPhase(int rate, int seconds, const std::string& retention = "",
                 const char* label = "steady") {
  TempDir dir;
  Coordinator c(dir, PhaseConfig() + retention);
  std::string logs_db = c.data_dir() + "/logs.db";
  int64_t logs_before = 0;
  if (!g_prefill_dir.empty()) {
    std::filesystem::create_directories(c.data_dir());
    std::filesystem::permissions(c.data_dir(), std::filesystem::perms::owner_all);
    for (const auto& f : std::filesystem::directory_iterator(g_prefill_dir)) {
      std::string to = c.data_dir() + "/" + f.path().filename().string();
      std::filesystem::copy_file(f.path(), to);
      // On disk before the phase, as a store at rest is: otherwise the coordinator's first
      // fsync of the file writes the whole copy out, and the phase measures the copy.
      int fd = ::open(to.c_str(), O_RDONLY);
      if (fd < 0 || ::fsync(fd) != 0) {
        std::perror(to.c_str());
        std::exit(70);
      }
      ::close(fd);
    }
    logs_before = FileBytes(logs_db);
  }
  auto started = Clock::now();
  c.Start();
  // Pruning's progress, sampled every 100 ms: when all the prefilled output was deleted.
  std::atomic<bool> sampling{!g_prefill_dir.empty()};
  std::atomic<double> pruned_s{-1};
  std::thread sampler([&] {
    while (sampling) {
      try {
        if (pruned_s < 0 &&
            c.Metric("jobctl_pruned_log_bytes_total") >= static_cast<double>(g_prefill_bytes)) {
          pruned_s = Seconds(Clock::now() - started);
        }
      } catch (const std::exception&) {
        // A request that failed on a busy machine: asked again.
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  const int period_s = 10;
  const int n = rate * period_s;
  std::string toml;
  for (int i = 0; i < n; ++i) {
    int64_t offset_ms = static_cast<int64_t>(i) * period_s * 1000 / n;
    std::string anchor = jobctl::FormatUtc(jobctl::FromUnixMs(1767225600000 + offset_ms));
    toml += "[[job]]\nname = \"" + JobName(i) + "\"\nschedule = \"@every " +
            std::to_string(period_s) + "s\"\nanchor = \"" + anchor +
            "\"\noverlap = \"allow\"\ncommand = [\"/bin/true\"]\n";
  }
  ApplyTimed(c, toml);
  toml = std::string();

  const int kAgents = 2;
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::vector<double> lateness_ms;
  int64_t window_start = NowMs() + 3000, window_end = window_start + seconds * 1000LL;
  std::vector<std::thread> threads;
  std::vector<std::unique_ptr<Handoff>> handoffs;
  std::atomic<int64_t> finished{0};
  for (int a = 0; a < kAgents; ++a) {
    handoffs.push_back(std::make_unique<Handoff>());
    Handoff* h = handoffs.back().get();
    std::string name = "bench-" + std::to_string(a);
    threads.emplace_back([&, h, name] {
      TestAgent agent(c, name);
      std::vector<double> mine;
      while (!stop) {
        std::vector<json> got = agent.Claim(512, 1000);
        double now = NowMsPrecise();
        for (json& a2 : got) {
          int64_t scheduled =
              jobctl::ToUnixMs(*jobctl::ParseInstant(a2["scheduled_at"].get<std::string>()));
          if (scheduled >= window_start && scheduled < window_end)
            mine.push_back(now - static_cast<double>(scheduled));
        }
        std::lock_guard lock(h->mu);
        for (json& a2 : got) h->queue.push_back(std::move(a2));
        h->cv.notify_one();
      }
      {
        std::lock_guard lock(h->mu);
        h->closed = true;
        h->cv.notify_one();
      }
      std::lock_guard lock(mu);
      lateness_ms.insert(lateness_ms.end(), mine.begin(), mine.end());
    });
    // Results as agentd reports them: what is ready at a time in one batch, one batch in
    // flight.
    threads.emplace_back([&, h, name] {
      TestAgent agent(c, name);
      while (true) {
        std::vector<json> batch;
        {
          std::unique_lock lock(h->mu);
          h->cv.wait(lock, [&] { return h->closed || !h->queue.empty(); });
          if (h->queue.empty()) return;
          while (!h->queue.empty() && batch.size() < 1000) {
            batch.push_back(agent.ResultBody(h->queue.front(), 0));
            h->queue.pop_front();
          }
        }
        agent.FinishAll(batch);
        finished += static_cast<int64_t>(batch.size());
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(window_start - NowMs()));
  ProcSample s0 = Sample(c.process().pid());
  std::this_thread::sleep_for(std::chrono::milliseconds(window_end - NowMs()));
  ProcSample s1 = Sample(c.process().pid());
  std::this_thread::sleep_for(std::chrono::seconds(2));  // late claims of the window's fires
  stop = true;
  for (std::thread& t : threads) t.join();
  int64_t expected = static_cast<int64_t>(rate) * seconds;
  std::printf(
      "%-9s %d fires/s for %d s (%d jobs, @every %ds, anchors spread): claimed %zu of %lld; "
      "due -> claimed by an agent p50 %.1f ms p99 %.1f ms max %.1f ms; coordinator CPU %.0f%% of a "
      "core, "
      "RSS %.1f MiB\n",
      label, rate, seconds, n, period_s, lateness_ms.size(), static_cast<long long>(expected),
      Percentile(lateness_ms, 50), Percentile(lateness_ms, 99), Percentile(lateness_ms, 100),
      (s1.cpu_s - s0.cpu_s) / seconds * 100, s1.rss_mib);
  std::printf("          due -> committed (coordinator histogram, whole run): %s\n",
              HistogramQuantiles(c, "jobctl_fire_lateness_seconds").c_str());
  std::printf("          group commit (whole run): %s\n",
              HistogramQuantiles(c, "jobctl_store_commit_seconds").c_str());
  if (!retention.empty()) {
    std::printf("          retention slice on the loop, its commit apart (whole run): %s\n",
                HistogramQuantiles(c, "jobctl_prune_slice_seconds").c_str());
    std::printf("          runs pruned %.0f, store rows pruned %.0f\n",
                c.Metric("jobctl_pruned_runs_total"), c.Metric("jobctl_pruned_rows_total"));
  }
  if (!g_prefill_dir.empty()) {
    double pruned_mib = c.Metric("jobctl_pruned_log_bytes_total") / (1 << 20);
    double window_end_s = Seconds(Clock::now() - started);
    double reclaimed_s = -1;
    if (std::string(label) != "no-prune") {
      // Until the reclaimed bytes stop growing for 3 s after all output went, at most
      // --prune-wait seconds.
      double last = -1;
      int still = 0;
      for (int i = 0; i < g_prune_wait_s && still < 3; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1000));
        double now = c.Metric("jobctl_reclaimed_bytes_total");
        still = pruned_s >= 0 && now == last ? still + 1 : 0;
        if (now != last) reclaimed_s = Seconds(Clock::now() - started);
        last = now;
      }
    }
    sampling = false;
    sampler.join();
    double reclaimed_mib = c.Metric("jobctl_reclaimed_bytes_total") / (1 << 20);
    double end_pruned_mib = c.Metric("jobctl_pruned_log_bytes_total") / (1 << 20);
    double end_s = Seconds(Clock::now() - started);
    c.Stop();  // the WAL is checkpointed and removed: the file alone is what is kept
    std::string all;
    if (pruned_s > 0) {
      all = fmt::format("all {} MiB by {:.1f} s ({:.1f} MiB/s)", g_prefill_bytes >> 20,
                        static_cast<double>(pruned_s),
                        static_cast<double>(g_prefill_bytes >> 20) / pruned_s);
    } else if (std::string(label) != "no-prune") {
      all = fmt::format(
          "not all {} MiB within --prune-wait {} s: {:.0f} MiB by {:.1f} s "
          "({:.1f} MiB/s)",
          g_prefill_bytes >> 20, g_prune_wait_s, end_pruned_mib, end_s, end_pruned_mib / end_s);
    } else {
      all = "none of it, as asked";
    }
    std::printf(
        "          log store on disk before %.0f MiB, after %.0f MiB; %.0f MiB of output pruned "
        "by the window's end (%.0f s after start), %s; %.0f MiB given back to the file system by "
        "%.1f s\n",
        static_cast<double>(logs_before) / (1 << 20),
        static_cast<double>(FileBytes(logs_db)) / (1 << 20), pruned_mib, window_end_s, all.c_str(),
        reclaimed_mib, reclaimed_s);
  } else {
    sampling = false;
    sampler.join();
  }
  std::fflush(stdout);
}

// ---- claims: one or several shards per claim request ---------------------------------------

void ClaimsPhase(int total, int per_request, int agents) {
  TempDir dir;
  Coordinator c(dir, PhaseConfig());
  c.Start();
  const int per_run = 10000;
  c.Apply("[[job]]\nname = \"wide\"\nschedule = \"0 0 1 1 *\"\nshards = " +
          std::to_string(per_run) + "\noverlap = \"allow\"\ncommand = [\"/bin/true\"]\n");
  for (int i = 0; i < (total + per_run - 1) / per_run; ++i)
    c.PostJson("/v1/jobs/wide/trigger", json::object());
  std::atomic<int64_t> granted{0}, requests{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  ProcSample s0 = Sample(c.process().pid());
  auto t0 = Clock::now();
  for (int a = 0; a < agents; ++a) {
    threads.emplace_back([&, a] {
      TestAgent agent(c, "claim-" + std::to_string(a));
      while (!stop) {
        std::vector<json> got = agent.Claim(per_request, 0);
        if (got.empty()) break;
        ++requests;
        granted += static_cast<int64_t>(got.size());
        if (granted >= total) break;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  double s = Seconds(Clock::now() - t0);
  ProcSample s1 = Sample(c.process().pid());
  std::printf(
      "claims    %lld shards granted to %d agents asking for up to %d each, in %lld requests, "
      "%.2f s: %.0f claim requests/s, %.0f durable shard claims/s; coordinator CPU %.0f%% of a "
      "core\n",
      static_cast<long long>(granted.load()), agents, per_request,
      static_cast<long long>(requests.load()), s, static_cast<double>(requests) / s,
      static_cast<double>(granted) / s, (s1.cpu_s - s0.cpu_s) / s * 100);
  std::fflush(stdout);
}

// ---- heartbeat: many agents renewing (nothing held) ---------------------------------------

void HeartbeatPhase(int agents) {
  TempDir dir;
  Coordinator c(dir, PhaseConfig());
  c.Start();
  const int seconds = 10;
  const double per_s = agents / 5.0;  // one heartbeat every 5 s per agent
  const int kThreads = 2;
  std::atomic<int64_t> sent{0}, failed{0};
  std::vector<std::thread> threads;
  // Each agent speaks with its own credential: enrolled first, outside the measurement.
  std::vector<std::string> credentials(static_cast<size_t>(agents));
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; i < agents; i += kThreads) {
        credentials[static_cast<size_t>(i)] = c.AgentCredential("hb-" + std::to_string(i));
      }
    });
  }
  for (std::thread& th : threads) th.join();
  threads.clear();
  ProcSample s0 = Sample(c.process().pid());
  auto t0 = Clock::now();
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      jobctl::http::BlockingClient client(c.url(), "");
      jobctl::http::RequestOptions o;
      o.method = "POST";
      int64_t i = t;
      while (true) {
        auto due = t0 + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(static_cast<double>(i) / per_s));
        if (due - t0 >= std::chrono::seconds(seconds)) return;
        std::this_thread::sleep_until(due);
        o.body = json{{"free", 4}, {"leases", json::array()}}.dump();
        o.headers = {{"Authorization", "Bearer " + credentials[static_cast<size_t>(i % agents)]}};
        auto r = client.Request("/v1/agent/heartbeat", o);
        ++sent;
        if (!r.ok() || r->status != 200) ++failed;
        i += kThreads;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  double s = Seconds(Clock::now() - t0);
  ProcSample s1 = Sample(c.process().pid());
  std::printf(
      "heartbeat %d agents (%.0f heartbeats/s for %.1f s, %lld refused): coordinator CPU %.1f%% of "
      "a core\n",
      agents, static_cast<double>(sent) / s, s, static_cast<long long>(failed.load()),
      (s1.cpu_s - s0.cpu_s) / s * 100);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  jobctl::bench::ExitOnUncaught();
  signal(SIGPIPE, SIG_IGN);
  std::vector<int> jobs = {1000, 100000, 1000000};
  int burst = 100000, rate = 2000, seconds = 20, claims = 50000, agents = 10000, claim_batch = 16,
      claim_agents = 4;
  std::string only;
  bool postgres = false;
  int standby_jobs = 100000;
  int failover_jobs = 1000, kills = 10, prune_mib = 0;
  std::vector<std::string> prune_phases = {"no-prune", "pruning", "logs-only"};
  bool flags_ok = ParseFlags(
      argc, argv,
      "[--jobs N,N] [--burst M] [--rate R] [--seconds D] [--claims C] [--claim-batch B]\n"
      "  [--claim-agents G] [--agents A]\n"
      "  [--only register|burst|steady|claims|heartbeat|standby|failover|prune]\n"
      "  [--postgres true] [--standby-jobs N] [--failover-jobs N] [--kills K] [--prune-mib M]\n"
      "  [--prune-wait S] [--prune-phases no-prune,pruning,logs-only]",
      [&](const std::string& flag, const std::string& value) {
        if (flag == "--jobs")
          jobs = ParseList(value);
        else if (flag == "--burst")
          burst = std::stoi(value);
        else if (flag == "--rate")
          rate = std::stoi(value);
        else if (flag == "--seconds")
          seconds = std::stoi(value);
        else if (flag == "--claims")
          claims = std::stoi(value);
        else if (flag == "--claim-batch")
          claim_batch = std::stoi(value);
        else if (flag == "--claim-agents")
          claim_agents = std::stoi(value);
        else if (flag == "--agents")
          agents = std::stoi(value);
        else if (flag == "--only")
          only = value;
        else if (flag == "--postgres")
          postgres = value != "false";
        else if (flag == "--standby-jobs")
          standby_jobs = std::stoi(value);
        else if (flag == "--failover-jobs")
          failover_jobs = std::stoi(value);
        else if (flag == "--kills")
          kills = std::stoi(value);
        else if (flag == "--prune-mib")
          prune_mib = std::stoi(value);
        else if (flag == "--prune-wait")
          g_prune_wait_s = std::stoi(value);
        else if (flag == "--prune-phases")
          prune_phases = SplitList(value);
        else
          return false;
        return true;
      });
  if (!flags_ok) return 64;
  if (postgres) {
    auto pg = jobctl::testing::PostgresServer::Start({.fsync = true, .extra_conf = ""});
    if (!pg.ok()) {
      std::fprintf(stderr, "--postgres: %s\n", pg.status().ToString().c_str());
      return 69;
    }
    g_postgres = std::move(*pg);
    std::printf("store: PostgreSQL on 127.0.0.1:%d (fsync on)\n", g_postgres->port());
  }
  std::printf("coordinator_bench on %u cores (figures from one run; repeat and take medians)\n",
              std::thread::hardware_concurrency());
  if (only.empty() || only == "register") {
    for (int n : jobs) RegisterPhase(n);
  }
  if (only.empty() || only == "burst") BurstPhase(burst);
  if (only.empty() || only == "steady") SteadyPhase(rate, seconds);
  if (only.empty() || only == "claims") {
    ClaimsPhase(claims, 1, claim_agents);
    ClaimsPhase(claims, claim_batch, claim_agents);
  }
  if (only.empty() || only == "heartbeat") HeartbeatPhase(agents);
  if ((only.empty() && postgres) || only == "standby") StandbyPhase(standby_jobs);
  if ((only.empty() && postgres) || only == "failover") FailoverPhase(failover_jobs, kills);
  if (only == "prune") {
    TempDir prefill;
    if (prune_mib > 0 && postgres) {
      std::fprintf(stderr, "--prune-mib: the embedded store only\n");
      return 64;
    }
    if (prune_mib > 0) MakePrefill(prefill, prune_mib);
    for (const std::string& phase : prune_phases) {
      if (phase == "no-prune") {
        SteadyPhase(rate, seconds, kPruneNothing, "no-prune");
      } else if (phase == "pruning") {
        SteadyPhase(rate, seconds, kPruneEverything, "pruning");
      } else if (phase == "logs-only") {
        if (prune_mib > 0) SteadyPhase(rate, seconds, kPruneOutput, "logs-only");
      } else {
        std::fprintf(stderr, "--prune-phases: unknown phase \"%s\"\n", phase.c_str());
        return 64;
      }
    }
  }
  return 0;
}
