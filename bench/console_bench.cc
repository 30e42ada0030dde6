// console_bench measures the web console (/ui/) in a real headless Chromium against the real
// release binaries on 127.0.0.1. It prints figures; it asserts nothing.
//
//   jobs     a coordinator holding N jobs (one apply); the console's jobs page opened R
//            times, each a fresh load: its first page of the list (GET /v1/jobs?limit=200,
//            request to last byte), the browser's first contentful paint, and the time from
//            navigation to the list drawn (the page's "jobs-rendered" mark: the rows in
//            view); median and each run. Also the whole list in one request, as `jobctl
//            list` reads it (time and size).
//   output   a run that printed M MiB (100 by default), its page opened R times: the time
//            from navigation to its tail drawn, the longest task that held the page's main
//            thread meanwhile, and what the page read and holds.
//   follow   K jobs printing a line every 100 ms for D seconds, run by one agent; K console
//            browsers each following one of the runs' output. The coordinator's CPU over D s
//            with the consoles open, against the same runs with no console, both in this
//            session (the difference is what the consoles cost).
//
//   build/release/bench/console_bench [--only jobs|output|follow] [--jobs 100000] [--runs 3]
//                                     [--output-mib 100] [--consoles 20] [--seconds 60]
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_util.h"
#include "testlib/browser.h"
#include "testlib/cluster.h"

namespace {

using jobctl::bench::Clock;
using jobctl::bench::ParseFlags;
using jobctl::bench::Percentile;
using jobctl::bench::ProcSample;
using jobctl::bench::Sample;
using jobctl::bench::Seconds;
using jobctl::testing::AgentProcess;
using jobctl::testing::Browser;
using jobctl::testing::Coordinator;
using jobctl::testing::TempDir;
using nlohmann::json;

const char* kConfig = "max_jobfile = \"1GiB\"\nrate_limit = 1000000\nrate_burst = 1000000\n";

void JobsPhase(int n, int runs) {
  TempDir dir;
  Coordinator c(dir, kConfig);
  c.Start();
  std::string toml;
  toml.reserve(static_cast<size_t>(n) * 120);
  // Hashed times on 1 January (nothing fires); a tenth have a description and a zone.
  for (int i = 0; i < n; ++i) {
    toml += "[[job]]\nname = \"job-" + std::to_string(i) +
            "\"\nschedule = \"H H 1 1 *\"\ncommand = [\"/bin/true\"]\n";
    if (i % 10 == 0) toml += "description = \"nightly export\"\ntimezone = \"Europe/Berlin\"\n";
  }
  auto t0 = Clock::now();
  jobctl::http::HttpResponse applied =
      c.Request("POST", "/v1/jobfile", json{{"text", toml}, {"base_revision", -1}}.dump());
  if (applied.status != 200) {
    std::fprintf(stderr, "apply: %d %s\n", applied.status, applied.body.substr(0, 300).c_str());
    std::exit(1);
  }
  std::printf("jobs      %d jobs applied in %.1f s\n", n, Seconds(Clock::now() - t0));
  std::fflush(stdout);
  std::vector<double> list_ms, fcp_ms, drawn_ms;
  for (int r = 0; r < runs; ++r) {
    auto a = Clock::now();
    jobctl::http::HttpResponse list = c.Request("GET", "/v1/jobs");
    double curl_ms = Seconds(Clock::now() - a) * 1000;
    TempDir profile;
    Browser b(profile);
    b.Navigate(c.url() + "/ui/#/jobs&token=" + c.admin_token());
    if (!b.WaitFor("document.body.dataset.jobsLoaded === '" + std::to_string(n) + "'",
                   std::chrono::seconds(300))) {
      std::fprintf(stderr, "the list was not drawn within 300 s\n");
      std::exit(1);
    }
    json m = b.Eval(
        "(() => { const p = performance.getEntriesByType('paint')"
        ".find(e => e.name === 'first-contentful-paint');"
        " const r = performance.getEntriesByType('resource')"
        ".find(e => e.name.includes('/v1/jobs?'));"
        " const d = performance.getEntriesByName('jobs-rendered')[0];"
        " return {fcp: p ? p.startTime : -1, list: r ? r.responseEnd - r.startTime : -1,"
        " drawn: d ? d.startTime : -1,"
        " rows: document.querySelectorAll('.jobs-row').length}; })()");
    list_ms.push_back(m["list"].get<double>());
    fcp_ms.push_back(m["fcp"].get<double>());
    drawn_ms.push_back(m["drawn"].get<double>());
    std::printf(
        "jobs      run %d: the console's first page of the list %.0f ms, first contentful paint "
        "%.0f "
        "ms, list drawn %.0f ms after navigation (%d rows in the page); the whole list (GET "
        "/v1/jobs, as jobctl list reads it) %.0f ms, %.1f MiB\n",
        r + 1, m["list"].get<double>(), m["fcp"].get<double>(), m["drawn"].get<double>(),
        m["rows"].get<int>(), curl_ms, static_cast<double>(list.body.size()) / (1 << 20));
    std::fflush(stdout);
  }
  std::printf(
      "jobs      %d jobs, median of %d: first page %.0f ms, first contentful paint %.0f ms, list "
      "drawn %.0f ms after navigation\n",
      n, runs, Percentile(list_ms, 50), Percentile(fcp_ms, 50), Percentile(drawn_ms, 50));
}

// K runs printing every 100 ms for `seconds`; with `consoles`, a tab follows each. The
// coordinator's CPU seconds over the window.
double FollowWindow(Coordinator& c, int k, int seconds, bool consoles) {
  std::vector<int64_t> ids;
  for (int i = 0; i < k; ++i) {
    json run = c.PostJson("/v1/jobs/talk-" + std::to_string(i) + "/trigger", json::object());
    ids.push_back(run["id"].get<int64_t>());
  }
  // One browser per console, as K people's would be: a browser opens at most 6 connections
  // to one origin, and a console in a tab not in view polls instead of waiting (console/app.js).
  std::vector<std::unique_ptr<Browser>> browsers;
  std::vector<std::unique_ptr<TempDir>> profiles;
  if (consoles) {
    for (int64_t id : ids) {
      profiles.push_back(std::make_unique<TempDir>());
      browsers.push_back(std::make_unique<Browser>(*profiles.back()));
      browsers.back()->Navigate(c.url() + "/ui/#/run/" + std::to_string(id) +
                                "&token=" + c.admin_token());
    }
    // Every console is following: its long-poll is parked at the coordinator.
    if (!Coordinator::Eventually([&c, k] { return c.Metric("jobctl_parked_waiters") >= k; },
                                 std::chrono::seconds(60))) {
      std::fprintf(stderr, "the consoles did not all follow within 60 s (%.0f parked)\n",
                   c.Metric("jobctl_parked_waiters"));
    }
  }
  ProcSample s0 = Sample(c.process().pid());
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  ProcSample s1 = Sample(c.process().pid());
  for (int64_t id : ids) c.PostJson("/v1/runs/" + std::to_string(id) + "/cancel", json::object());
  for (int64_t id : ids) c.WaitRun(id, std::chrono::seconds(30));
  return s1.cpu_s - s0.cpu_s;
}

// A run that printed `mib` MiB: its page opened R times in a fresh browser; the time to its
// tail drawn and the longest task that held the page's main thread meanwhile.
void OutputPhase(int mib, int runs) {
  TempDir dir;
  Coordinator c(dir, std::string(kConfig) + "log_cap = \"1GiB\"\n");
  c.Start();
  AgentProcess agent(c, dir, "printer");
  while (c.GetJson("/v1/agents").size() < 1)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  c.Apply(
      "[[job]]\nname = \"loud\"\nschedule = \"@yearly\"\ntimeout = \"30m\"\n"
      "shell = \"head -c " +
      std::to_string(static_cast<int64_t>(mib) << 20) +
      " /dev/zero | tr '\\\\0' x | fold -w 99; echo; echo THE END\"\n");
  json run = c.PostJson("/v1/jobs/loud/trigger", json::object());
  int64_t id = run["id"].get<int64_t>();
  json ended = c.WaitRun(id, std::chrono::minutes(10));
  std::printf("output    a run printed %d MiB: %s\n", mib, ended["state"].dump().c_str());
  std::vector<double> drawn, longest;
  for (int r = 0; r < runs; ++r) {
    TempDir profile;
    Browser b(profile);
    auto t0 = Clock::now();
    b.Navigate(c.url() + "/ui/#/run/" + std::to_string(id) + "&token=" + c.admin_token());
    b.Eval(
        "window.__long = 0; new PerformanceObserver(l => l.getEntries().forEach(e => "
        "window.__long = Math.max(window.__long, e.duration)))"
        ".observe({type: 'longtask', buffered: true})");
    if (!b.WaitFor("document.getElementById('output')?.dataset.done === 'true' && "
                   "document.getElementById('output').textContent.includes('THE END')",
                   std::chrono::seconds(120))) {
      std::fprintf(stderr, "the tail was not drawn within 120 s\n");
      std::exit(1);
    }
    double ms = Seconds(Clock::now() - t0) * 1000;
    json m = b.Eval(
        "({long: window.__long, shown: document.getElementById('output').textContent.length,"
        " read: performance.getEntriesByType('resource').filter(e => e.name.includes('/logs'))"
        ".reduce((n, e) => n + e.encodedBodySize, 0)})");
    drawn.push_back(ms);
    longest.push_back(m["long"].get<double>());
    std::printf(
        "output    run %d: tail drawn %.0f ms after navigation; longest task %.0f ms; %.2f MiB "
        "read, %.2f MiB of text in the page\n",
        r + 1, ms, m["long"].get<double>(), m["read"].get<double>() / (1 << 20),
        m["shown"].get<double>() / (1 << 20));
    std::fflush(stdout);
  }
  std::printf("output    %d MiB, median of %d: tail drawn %.0f ms, longest task %.0f ms\n", mib,
              runs, Percentile(drawn, 50), Percentile(longest, 50));
}

void FollowPhase(int k, int seconds) {
  TempDir dir;
  Coordinator c(dir, kConfig);
  c.Start();
  AgentProcess agent(c, dir, "talker", std::vector<std::string>{"--slots", std::to_string(k + 2)});
  while (c.GetJson("/v1/agents").size() < 1)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::string toml;
  for (int i = 0; i < k; ++i) {
    toml += "[[job]]\nname = \"talk-" + std::to_string(i) +
            "\"\nschedule = \"@yearly\"\ntimeout = \"10m\"\nshell = '''\n"
            "i=0; while :; do i=$((i+1)); printf 'line %d of a job that talks\\n' $i;"
            " sleep 0.1; done\n'''\n";
  }
  c.Apply(toml);
  double without = FollowWindow(c, k, seconds, false);
  double with = FollowWindow(c, k, seconds, true);
  std::printf(
      "follow    %d runs printing 10 lines/s for %d s: coordinator CPU %.2f s (%.2f%% of a "
      "core) without consoles, %.2f s (%.2f%%) with %d consoles following; the consoles cost "
      "%.2f%% of a core\n",
      k, seconds, without, without / seconds * 100, with, with / seconds * 100, k,
      (with - without) / seconds * 100);
}

}  // namespace

int main(int argc, char** argv) {
  jobctl::bench::ExitOnUncaught();
  signal(SIGPIPE, SIG_IGN);
  std::string only;
  int jobs = 100000, runs = 3, consoles = 20, seconds = 60, output_mib = 100;
  if (!ParseFlags(
          argc, argv,
          "[--only jobs|output|follow] [--jobs N] [--runs R] [--output-mib M] [--consoles K] "
          "[--seconds D]",
          [&](const std::string& flag, const std::string& value) {
            if (flag == "--only")
              only = value;
            else if (flag == "--jobs")
              jobs = std::stoi(value);
            else if (flag == "--runs")
              runs = std::stoi(value);
            else if (flag == "--consoles")
              consoles = std::stoi(value);
            else if (flag == "--seconds")
              seconds = std::stoi(value);
            else if (flag == "--output-mib")
              output_mib = std::stoi(value);
            else
              return false;
            return true;
          })) {
    return 64;
  }
  if (Browser::Find().empty()) {
    std::fprintf(stderr, "console_bench: chromium not found (packaging/install-deps)\n");
    return 69;
  }
  if (only.empty() || only == "jobs") JobsPhase(jobs, runs);
  if (only.empty() || only == "output") OutputPhase(output_mib, runs);
  if (only.empty() || only == "follow") FollowPhase(consoles, seconds);
  return 0;
}
